package compute

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/i18n"
)

// CUDA is the backend that measures through the CUDA driver API with the
// embedded PTX kernels.
type CUDA struct {
	// Library is the driver library to load; libcuda.so.1 from the
	// loader's search path when empty. Tests point it at a simulated
	// driver.
	Library string
	// CublasLt is the cuBLASLt library for the GEMM probes; when empty it
	// is searched for (cublasLtCandidates).
	CublasLt string
}

// Name is "cuda".
func (CUDA) Name() string { return "cuda" }

// Run measures every probe the card supports. A probe that fails records its
// error and the others still run.
func (cu CUDA) Run(ctx context.Context, opt Options) Results {
	res := Results{Backend: "cuda", Results: []Result{}}
	c, err := openCUDA(cu.Library, opt.Device)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer c.close()
	res.Available = true
	res.Device, res.BusID = c.name(), c.busID()
	res.Driver = fmt.Sprintf("CUDA %d.%d", c.version/1000, c.version%1000/10)
	p := &cudaProber{c: c, opt: opt, ltPath: cu.CublasLt}
	// Residue first of all, before setup loads the kernels: nothing this
	// process wrote and freed can be read back as someone else's.
	if opt.Wants(ProbeResidue) && !opt.Memtest && ctx.Err() == nil {
		start := time.Now()
		r := c.residue()
		r.WallMs = float64(time.Since(start).Microseconds()) / 1e3
		res.Results = append(res.Results, r)
	}
	// The memory test's memory is taken before setup loads a kernel or
	// writes a byte, so that its residue read over all of it cannot
	// meet this process's own data; setup fits in the margin left.
	var mt memtestMemory
	if opt.Memtest && ctx.Err() == nil {
		mt = c.allocMemtest()
		defer func() { c.freePieces(mt.pieces) }()
	}
	if err := p.setup(); err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.teardown()
	if opt.Memtest && ctx.Err() == nil {
		start := time.Now()
		rs := p.memtest(ctx, mt)
		c.freePieces(mt.pieces) // the other probes need the memory
		mt.pieces = nil
		for i := range rs {
			rs[i].WallMs = float64(time.Since(start).Microseconds()) / 1e3
		}
		if !opt.Wants(ProbeResidue) {
			rs = rs[1:]
		}
		res.Results = append(res.Results, rs...)
	}
	steps := map[string]func() Result{
		ProbeFP32: p.fp32, ProbeCopy: p.copyKernel, ProbeDtoD: p.dtod,
		ProbeH2D: func() Result { return p.hostCopy(true) }, ProbeD2H: func() Result { return p.hostCopy(false) },
		ProbeSustain: func() Result { return p.sustained(ctx) }, ProbeAlloc: p.alloc,
	}
	for _, prec := range []string{"bf16", "fp16", "tf32", "fp8"} {
		steps[tensorProbe(prec)] = func() Result { return p.tensor(prec) }
	}
	for _, g := range gemmPrecisions() {
		steps[g.probe] = func() Result { return p.gemm(g) }
	}
	for _, name := range AllProbes() {
		if ctx.Err() != nil {
			break
		}
		if opt.Wants(name) && name != ProbeResidue {
			start := time.Now()
			r := steps[name]()
			r.WallMs = float64(time.Since(start).Microseconds()) / 1e3
			res.Results = append(res.Results, r)
		}
	}
	return res
}

type cudaProber struct {
	c          *cudaLib
	opt        Options
	sms        int
	major      int
	minor      int
	common     module
	mma80      module
	mma89      module
	mma89Err   error
	scratch    uint64
	scratchLen uint64
	// lt is cuBLASLt, opened by the first GEMM probe from ltPath or, when
	// that is empty, the places it is usually installed; ltErr says why not.
	ltPath string
	lt     *blasLt
	ltErr  error
}

func (p *cudaProber) setup() error {
	var err error
	if p.sms, err = p.c.attr(cuAttrSMCount); err != nil {
		return err
	}
	if p.major, err = p.c.attr(cuAttrCCMajor); err != nil {
		return err
	}
	if p.minor, err = p.c.attr(cuAttrCCMinor); err != nil {
		return err
	}
	if p.common, err = p.c.load(ptxCommon); err != nil {
		return err
	}
	if p.major >= 8 {
		if p.mma80, err = p.c.load(ptxMMA80); err != nil {
			return err
		}
	}
	if native, _ := fp8MMA(p.major, p.minor); native {
		p.mma89, p.mma89Err = p.c.load(ptxMMA89) // PTX 8.4 needs a CUDA 12.4 driver
	}
	// The kernels store to out only when a sum equals -1, which never
	// happens; the buffer is sized for every thread all the same.
	p.scratchLen = uint64(p.sms) * 8 * 256 * 4
	p.scratch, err = p.c.alloc(p.scratchLen)
	return err
}

func (p *cudaProber) teardown() {
	if p.lt != nil {
		p.lt.close()
	}
	p.c.free(p.scratch)
	for _, m := range []module{p.common, p.mma80, p.mma89} {
		if m != 0 {
			p.c.unload(m)
		}
	}
}

func (p *cudaProber) reps() int {
	if p.opt.Full {
		return 10
	}
	return 5
}

func (p *cudaProber) target() float64 { // ms per repetition
	if p.opt.Full {
		return 50
	}
	return 20
}

// throughput calibrates a kernel's iteration count to the target time,
// warms up, and times repetitions. flops(iters) is the work of one launch.
func (p *cudaProber) throughput(probe, precision string, f uintptr, grid, block uint32, flops func(iters float64) float64, args func(iters int) []uint64) Result {
	r := Result{Probe: probe, Precision: precision, Unit: "TFLOPS"}
	run := func(iters int) (float64, error) {
		return p.c.timed(func() error { return p.c.launch(f, grid, block, args(iters)...) })
	}
	iters := 256
	t, err := fastest(2, func() error { return p.c.launch(f, grid, block, args(iters)...) }, p.c.timed) // also the warm-up
	for err == nil && t < p.target()/4 && iters < 1<<26 {
		iters *= 4
		t, err = fastest(2, func() error { return p.c.launch(f, grid, block, args(iters)...) }, p.c.timed)
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	iters = int(math.Max(1, float64(iters)*p.target()/t))
	ms := make([]float64, 0, p.reps())
	tf := make([]float64, 0, p.reps())
	for range p.reps() {
		t, err := run(iters)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		ms = append(ms, t)
		tf = append(tf, flops(float64(iters))/(t/1e3)/1e12)
	}
	r.Timing = Summarize(ms)
	r.Value = Summarize(tf).Median
	return r
}

func (p *cudaProber) fp32() Result {
	f, err := p.c.function(p.common, "fma32")
	if err != nil {
		return Result{Probe: ProbeFP32, Precision: "fp32", Unit: "TFLOPS", Error: err.Error()}
	}
	grid, block := uint32(p.sms*8), uint32(256)
	r := p.throughput(ProbeFP32, "fp32", f, grid, block,
		func(it float64) float64 { return float64(grid) * float64(block) * it * 8 * 2 },
		func(it int) []uint64 { return []uint64{p.scratch, uint64(uint32(it)), uint64(math.Float32bits(1.5))} })
	r.Notes = i18n.Textf("8 independent register FMA chains per thread; 2 FLOPs per FMA")
	return r
}

// fastest is the shortest of n timings of op. Calibration sizes kernels
// on it: on a shared GPU any one launch may wait out another tenant's time
// slice, and a size chosen from that wait would be far too small.
func fastest(n int, op func() error, timed func(func() error) (float64, error)) (float64, error) {
	best := math.Inf(1)
	for range n {
		t, err := timed(op)
		if err != nil {
			return 0, err
		}
		best = min(best, t)
	}
	return best, nil
}

// tensorProbe names the mma.sync probe of a precision.
func tensorProbe(prec string) string {
	return map[string]string{"bf16": ProbeBF16, "fp16": ProbeFP16, "tf32": ProbeTF32, "fp8": ProbeFP8}[prec]
}

// fp8MMA reports whether mma.sync takes FP8 operands natively on compute
// capability major.minor, and where it does not, why the FP8 probe does
// not run ("" below 8.9, where FP8 does not exist at all). Hopper has no
// FP8 mma.sync: its compiler converts the operands to FP16 and uses the
// FP16 tensor cores (NVIDIA in CUTLASS issue 1986; ptxas 12.4 turns the
// kernel into F2FP and HMMA), so a figure there would be neither FP8 nor
// the kernel's arithmetic. Ada (8.9) runs it as QMMA; consumer Blackwell
// (12.x) runs FP8 mma.sync at twice its FP16 rate (Triton PR 7409,
// measured on an RTX 5070 Ti). For 10.x it is not known.
func fp8MMA(major, minor int) (native bool, why string) {
	switch {
	case major == 8 && minor >= 9, major == 12:
		return true, ""
	case major < 9:
		return false, ""
	case major == 9:
		return false, "not measured on Hopper: it has no FP8 mma.sync (the compiler converts FP8 operands to FP16 for the FP16 tensor cores); its FP8 peak is reached only through wgmma"
	}
	return false, fmt.Sprintf("not measured on compute capability %d.%d: whether its mma.sync takes FP8 natively is not verified", major, minor)
}

// tensor measures mma.sync: 8 warps a block, 4 blocks an SM, 4 chains a
// warp; one instruction is 2·M·N·K FLOPs.
func (p *cudaProber) tensor(prec string) Result {
	probe := tensorProbe(prec)
	r := Result{Probe: probe, Precision: prec, Unit: "TFLOPS"}
	mod, kernel, mnk := p.mma80, "mma_"+prec, 16.0*8*16
	switch prec {
	case "fp16":
		kernel = "mma_f16"
	case "tf32":
		mnk = 16 * 8 * 8
	case "fp8":
		mod, mnk = p.mma89, 16*8*32
		if native, why := fp8MMA(p.major, p.minor); !native && why != "" {
			r.Error = why
			return r
		}
		if p.mma89Err != nil {
			r.Error = "FP8 kernels did not load (PTX 8.4 needs a CUDA 12.4 or newer driver): " + p.mma89Err.Error()
			return r
		}
	}
	if mod == 0 {
		r.Error = fmt.Sprintf("not supported on compute capability %d.%d", p.major, p.minor)
		return r
	}
	f, err := p.c.function(mod, kernel)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	grid, block := uint32(p.sms*4), uint32(256)
	warps := float64(grid) * float64(block) / 32
	out := p.throughput(probe, prec, f, grid, block,
		func(it float64) float64 { return warps * it * 4 * 2 * mnk },
		func(it int) []uint64 { return []uint64{p.scratch, uint64(uint32(it))} })
	out.Notes = i18n.Textf("mma.sync with register operands, FP32 accumulate; mma.sync does not reach Hopper's wgmma peak")
	return out
}

// gemmRun is a GEMM ready to enqueue: operands filled, algorithm chosen.
type gemmRun struct {
	p    *cudaProber
	plan *gemmPlan
	bufs []uint64 // A, B, D, workspace
	n    uint64
}

const gemmWorkspace = 32 << 20

// newGEMM opens cuBLASLt on first use, allocates n×n operands (n halves
// from maxN while they would take over half the free memory), fills A and
// B with pseudo-random values in [-1, 1) and plans the matmul. Random
// operands matter: a GEMM over constants toggles fewer bits, draws less
// power and can run faster than users' real matmuls.
func (p *cudaProber) newGEMM(g gemmPrecision, maxN uint64) (*gemmRun, error) {
	if p.major < 8 && g.prec != "fp32" {
		return nil, fmt.Errorf("%s GEMMs need compute capability 8.0 or newer (this card is %d.%d)", strings.ToUpper(g.prec), p.major, p.minor)
	}
	if p.lt == nil && p.ltErr == nil {
		candidates, tooNew := []string{p.ltPath}, []string(nil)
		if p.ltPath == "" {
			candidates, tooNew = cublasLtCandidates(os.DirFS("/"), os.Getenv, int(p.c.version/1000), pythonSitePackages(context.Background()))
		}
		p.lt, p.ltErr = openBlasLt(candidates)
		if major := p.c.version / 1000; p.ltErr != nil && p.ltPath == "" && major > 0 {
			p.ltErr = fmt.Errorf("%w (only cuBLASLt for CUDA %d or older, this driver's, was looked for)", p.ltErr, major)
			if len(tooNew) > 0 {
				// The usual cause on a rented box: a PyTorch built for a
				// newer CUDA than the host's driver. Said first.
				var libs []string
				for _, l := range tooNew {
					libs = append(libs, fmt.Sprintf("%s (CUDA %d)", l, soMajor(path.Base(l))))
				}
				p.ltErr = fmt.Errorf("%s: newer than this driver's CUDA %d; update the driver, or install cuBLASLt for CUDA %d (e.g. pip's nvidia-cublas-cu%d); %w",
					strings.Join(libs, ", "), major, major, major, p.ltErr)
			}
		}
	}
	if p.ltErr != nil {
		return nil, p.ltErr
	}
	n := maxN
	if free, _, err := p.c.memInfo(); err == nil {
		for n > 1024 && 3*n*n*g.elem+gemmWorkspace > free/2 {
			n /= 2
		}
	}
	run := &gemmRun{p: p, n: n}
	size := n * n * g.elem
	for _, bytes := range []uint64{size, size, size, gemmWorkspace} {
		b, err := p.c.alloc(bytes)
		if err != nil {
			run.close()
			return nil, err
		}
		run.bufs = append(run.bufs, b)
	}
	fill := "fill_f32"
	if g.data == cudaR16BF {
		fill = "fill_bf16"
	}
	f, err := p.c.function(p.common, fill)
	for i := 0; i < 2 && err == nil; i++ { // A and B; D is overwritten (beta = 0)
		err = p.c.launch(f, uint32(p.sms*8), 256, run.bufs[i], n*n, uint64(gemmSeed(i)))
	}
	if err == nil {
		run.plan, err = p.lt.plan(g, n, gemmWorkspace)
	}
	if err != nil {
		run.close()
		return nil, err
	}
	return run, nil
}

// gemmSeed is the fill seed of newGEMM's operand i (A 0, B 1), which the
// soak's CPU reference reproduces.
func gemmSeed(i int) uint32 { return 0x9e3779b9 * uint32(i+1) }

// enqueue adds one D = A·B to the legacy stream.
func (g *gemmRun) enqueue() error {
	return g.p.lt.matmul(g.plan, g.bufs[0], g.bufs[1], g.bufs[2], g.bufs[3], gemmWorkspace, 0)
}

func (g *gemmRun) close() {
	if g.plan != nil {
		g.p.lt.destroy(g.plan)
	}
	for _, b := range g.bufs {
		g.p.c.free(b)
	}
}

// gemm times an 8192³ cuBLASLt matmul in one precision, set up as torch
// runs a @ b.
func (p *cudaProber) gemm(g gemmPrecision) Result {
	r := Result{Probe: g.probe, Precision: g.prec, Unit: "TFLOPS"}
	run, err := p.newGEMM(g, 8192)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer run.close()
	n := run.n
	r = p.repeat(r, 2*float64(n*n*n)/1e12, run.enqueue)
	r.Notes = i18n.Textf("%s %d³ GEMM, %s, heuristic's first algorithm, %d MiB workspace; 2·n³ FLOPs", p.lt, n, g.what, gemmWorkspace>>20)
	return r
}

// copyBytes is the buffer size of the bandwidth probes.
func (p *cudaProber) copyBytes() uint64 {
	size := uint64(512 << 20)
	if p.opt.Full {
		size = 1 << 30
	}
	if free, _, err := p.c.memInfo(); err == nil && free/4 < size {
		size = free / 4 &^ 15
	}
	return size
}

// deviceBuffers allocates two device buffers of n bytes, filled.
func (p *cudaProber) deviceBuffers(n uint64) (a, b uint64, err error) {
	if a, err = p.c.alloc(n); err != nil {
		return 0, 0, err
	}
	if b, err = p.c.alloc(n); err != nil {
		p.c.free(a)
		return 0, 0, err
	}
	if err = p.c.check("cuMemsetD8_v2", uintptr(a), 0x5a, uintptr(n)); err == nil {
		err = p.c.check("cuMemsetD8_v2", uintptr(b), 0, uintptr(n))
	}
	if err != nil {
		p.c.free(a)
		p.c.free(b)
	}
	return a, b, err
}

// repeat times op reps times after one warm-up. work is what one op does
// in r's unit times seconds (GB for GB/s, TFLOP for TFLOPS); r gets the
// timing and the median rate.
func (p *cudaProber) repeat(r Result, work float64, op func() error) Result {
	if _, err := p.c.timed(op); err != nil {
		r.Error = err.Error()
		return r
	}
	ms := make([]float64, 0, p.reps())
	rates := make([]float64, 0, p.reps())
	for range p.reps() {
		t, err := p.c.timed(op)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		ms = append(ms, t)
		rates = append(rates, work/(t/1e3))
	}
	r.Timing = Summarize(ms)
	r.Value = Summarize(rates).Median
	return r
}

func (p *cudaProber) copyKernel() Result {
	f, err := p.c.function(p.common, "copy16")
	if err != nil {
		return Result{Probe: ProbeCopy, Unit: "GB/s", Error: err.Error()}
	}
	return p.deviceCopy(ProbeCopy, "16-byte grid-stride copy", func(in, out, n uint64) error {
		return p.c.launch(f, uint32(p.sms*8), 256, in, out, n/16)
	})
}

func (p *cudaProber) dtod() Result {
	return p.deviceCopy(ProbeDtoD, "cuMemcpyDtoD_v2", func(in, out, n uint64) error {
		return p.c.check("cuMemcpyDtoD_v2", uintptr(out), uintptr(in), uintptr(n))
	})
}

// deviceCopy times move(in, out, n) between two filled device buffers of
// the bandwidth probes' size; bytes are counted read + written.
func (p *cudaProber) deviceCopy(probe, what string, move func(in, out, n uint64) error) Result {
	r := Result{Probe: probe, Unit: "GB/s"}
	n := p.copyBytes()
	in, out, err := p.deviceBuffers(n)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer p.c.free(in)
	defer p.c.free(out)
	r = p.repeat(r, 2*float64(n)/1e9, func() error { return move(in, out, n) })
	r.Notes = i18n.Textf("%s of %d MiB; bytes counted read + written", what, n>>20)
	return r
}

// hostCopy measures pinned host-device bandwidth in one direction.
func (p *cudaProber) hostCopy(toDevice bool) Result {
	r := Result{Probe: ProbeD2H, Unit: "GB/s"}
	if toDevice {
		r.Probe = ProbeH2D
	}
	n := uint64(256 << 20)
	host, err := p.c.hostAlloc(n)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer p.c.hostFree(host)
	dev, err := p.c.alloc(n)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer p.c.free(dev)
	op := func() error { return p.c.check("cuMemcpyDtoH_v2", host, uintptr(dev), uintptr(n)) }
	if toDevice {
		op = func() error { return p.c.check("cuMemcpyHtoD_v2", uintptr(dev), host, uintptr(n)) }
	}
	r = p.repeat(r, float64(n)/1e9, op)
	r.Notes = i18n.Textf("%d MiB pinned host buffer (cuMemHostAlloc), synchronous copies", n>>20)
	return r
}

// alloc allocates and touches what cuMemGetInfo calls free, minus a margin,
// in 1 GiB pieces. An MPS or HAMi memory limit shows as free far below
// total.
func (p *cudaProber) alloc() Result {
	r := Result{Probe: ProbeAlloc, Unit: "GiB"}
	free, total, err := p.c.memInfo()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	margin := allocMargin(total)
	if free <= margin {
		r.Notes = i18n.Textf("free %.2f GiB of %.2f GiB total: nothing to allocate beyond the margin", gibf(free), gibf(total))
		return r
	}
	want := free - margin
	var got uint64
	var ptrs []uint64
	start := time.Now()
	for got < want {
		n := min(uint64(1<<30), want-got)
		d, err := p.c.alloc(n)
		if err != nil {
			break
		}
		ptrs = append(ptrs, d)
		if err := p.c.check("cuMemsetD8_v2", uintptr(d), 0xa5, uintptr(n)); err != nil {
			r.Error = err.Error()
			break
		}
		got += n
	}
	p.c.call("cuCtxSynchronize")
	for _, d := range ptrs {
		p.c.free(d)
	}
	r.Value = gibf(got)
	r.Timing = Summary{N: 1, Median: float64(time.Since(start).Milliseconds())}
	r.Notes = i18n.Textf("cuMemGetInfo: free %.2f GiB of %.2f GiB total; allocated and touched %.2f GiB (margin %.2f GiB)",
		gibf(free), gibf(total), gibf(got), gibf(margin))
	return r
}

func gibf(b uint64) float64 { return float64(b) / (1 << 30) }

// allocMargin is what alloc and residue leave of the free memory for the
// driver and the context: 2% of the card, at least 512 MiB. The torch
// backend's residue leaves the same (torch_probe.py).
func allocMargin(total uint64) uint64 { return max(uint64(512<<20), total/50) }

// Residue sampling: up to residueSamples reads of residueRead bytes from
// each GiB allocated, 1 MiB a GiB (about 140 MiB on an H200): little to
// copy, and a previous tenant's weights or data, which fill gigabytes,
// cannot lie between the samples. Each sample sits at a random MiB of its
// stretch, so a driver cannot clear just the places read.
const (
	residueRead    = 64 << 10
	residueSamples = 16
)

// residue allocates what cuMemGetInfo calls free, minus allocMargin,
// and reads a sample of it before anything writes it. CUDA documents that
// cuMemAlloc does not clear memory; a driver that scrubs between processes
// hands out zeros, and anything else is what another process left there.
// It says how many bytes were not zero and where, never what they held.
// Run runs it before setup loads the kernels, so that nothing of this
// process's own can have been written and freed.
func (c *cudaLib) residue() Result {
	r := Result{Probe: ProbeResidue, Unit: "bytes"}
	free, total, err := c.memInfo()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	margin := allocMargin(total)
	if free <= margin {
		r.Error = fmt.Sprintf("free %.2f GiB of %.2f GiB total: nothing to sample beyond the margin", gibf(free), gibf(total))
		return r
	}
	var ptrs []uint64
	defer func() {
		for _, d := range ptrs {
			c.free(d)
		}
	}()
	// The driver copies into buf: runtime.Pinner keeps it in place on
	// the heap (pageable memory, which the driver stages).
	buf := make([]byte, residueRead)
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	defer pin.Unpin()
	var got, read, dirty uint64
	var samples, dirtySamples int
	var first, short i18n.Text
	start := time.Now()
	for got < free-margin {
		n := min(uint64(1<<30), free-margin-got)
		d, err := c.alloc(n)
		if err != nil {
			// Out of memory ends the sampling (a limit below what
			// cuMemGetInfo said); anything else is a fault to report.
			if !strings.HasSuffix(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
				r.Error = err.Error()
				return r
			}
			short = i18n.Textf("; only %.2f of the %.2f GiB free beyond the margin could be allocated", gibf(got), gibf(free-margin))
			break
		}
		ptrs = append(ptrs, d)
		// One sample a MiB at most, in stretches of equal size, each at
		// a random whole MiB of its stretch.
		k := max(1, min(residueSamples, n>>20))
		stretch := n / k
		for i := range k {
			off := i*stretch + (rand.Uint64N(max(1, stretch>>20)) << 20)
			size := min(uint64(residueRead), n-off)
			if err := c.check("cuMemcpyDtoH_v2", uintptr(unsafe.Pointer(&buf[0])), uintptr(d+off), uintptr(size)); err != nil {
				r.Error = err.Error()
				return r
			}
			read += size
			samples++
			if nz := nonZero(buf[:size]); nz > 0 {
				dirty += nz
				if dirtySamples++; first.IsZero() {
					first = i18n.Textf("; the first at %.2f GiB into the memory sampled", gibf(got+off))
				}
			}
		}
		got += n
	}
	if got == 0 {
		r.Error = fmt.Sprintf("no memory could be allocated of the %.2f GiB free", gibf(free))
		return r
	}
	r.Value = float64(dirty)
	r.Timing = Summary{N: 1, Median: float64(time.Since(start).Microseconds()) / 1e3}
	r.Notes = i18n.Textf("read %.1f MiB in %d samples over %.2f GiB of fresh allocations before writing them, in %.0f ms: %d of %d samples held non-zero bytes%s%s",
		float64(read)/(1<<20), samples, gibf(got), r.Timing.Median, dirtySamples, samples, first, short)
	return r
}

// nonZero counts the bytes of b that are not zero.
func nonZero(b []byte) uint64 {
	var n uint64
	for _, c := range b {
		if c != 0 {
			n++
		}
	}
	return n
}

// sustained launches one fixed ~1 ms kernel back to back for the duration
// and times every launch with its own events.
func (p *cudaProber) sustained(ctx context.Context) Result {
	r := Result{Probe: ProbeSustain, Unit: "ms"}
	f, err := p.c.function(p.common, "fma32")
	if err != nil {
		r.Error = err.Error()
		return r
	}
	dur := p.opt.Sustained
	if dur <= 0 {
		dur = 2 * time.Second
		if p.opt.Full {
			dur = 10 * time.Second
		}
	}
	grid, block := uint32(p.sms*2), uint32(256)
	args := func(it int) []uint64 { return []uint64{p.scratch, uint64(uint32(it)), uint64(math.Float32bits(1.5))} }
	// Calibrate on the fastest of three launches (see fastest): a kernel
	// sized on one that waited out another tenant's slice would be a
	// hundred times too short, and launch overhead would dominate what the
	// probe then measures.
	iters := 64
	launch := func() error { return p.c.launch(f, grid, block, args(iters)...) }
	t, err := fastest(3, launch, p.c.timed)
	for err == nil && t < 0.25 && iters < 1<<24 {
		iters *= 2
		t, err = fastest(3, launch, p.c.timed)
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	iters = int(math.Max(1, float64(iters)/t)) // about 1 ms
	const batch = 128
	starts, ends := make([]event, batch), make([]event, batch)
	for i := range starts {
		if starts[i], err = p.c.newEvent(); err == nil {
			ends[i], err = p.c.newEvent()
		}
		if err != nil {
			r.Error = err.Error()
			return r
		}
	}
	defer func() {
		for i := range starts {
			p.c.destroy(starts[i])
			p.c.destroy(ends[i])
		}
	}()
	var ms []float64
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for i := 0; i < batch; i++ {
			if err := p.c.record(starts[i]); err != nil {
				r.Error = err.Error()
				return r
			}
			if err := p.c.launch(f, grid, block, args(iters)...); err != nil {
				r.Error = err.Error()
				return r
			}
			if err := p.c.record(ends[i]); err != nil {
				r.Error = err.Error()
				return r
			}
		}
		for i := 0; i < batch; i++ {
			t, err := p.c.elapsed(starts[i], ends[i])
			if err != nil {
				r.Error = err.Error()
				return r
			}
			ms = append(ms, t)
		}
	}
	c := AnalyzeLaunches(ms, DefaultContentionLimits())
	r.Contention = &c
	r.Timing = Summarize(ms)
	r.Value = c.P50Ms
	r.Notes = i18n.Textf("%d launches of an FP32 FMA kernel (%d blocks of %d threads) over %s", len(ms), grid, block, dur)
	return r
}

// Burn keeps a GPU busy until ctx ends or d passes: the co-tenant
// scripts/gpu-check.sh uses to prove the sustained probe catches sharing.
// Its work is what another tenant's training would run: a 4096³ cuBLASLt
// GEMM loop (BF16 from sm_80, FP32 before), or, without cuBLASLt,
// back-to-back mma.sync (FMA before sm_80) kernels. It reports which.
func (cu CUDA) Burn(ctx context.Context, device int, d time.Duration) (string, error) {
	c, err := openCUDA(cu.Library, device)
	if err != nil {
		return "", err
	}
	defer c.close()
	p := &cudaProber{c: c, ltPath: cu.CublasLt}
	if err := p.setup(); err != nil {
		return "", err
	}
	defer p.teardown()
	var enqueue func() error
	var what string
	g := gemmPrecisions()[2] // BF16
	if p.major < 8 {
		g = gemmPrecisions()[0]
	}
	if run, gerr := p.newGEMM(g, 4096); gerr == nil {
		defer run.close()
		enqueue, what = run.enqueue, fmt.Sprintf("%s %d³ %s GEMM loop", p.lt, run.n, strings.ToUpper(g.prec))
	} else {
		mod, name, grid := p.common, "fma32", uint32(p.sms*8)
		args := []uint64{p.scratch, 1 << 14, uint64(math.Float32bits(1.5))}
		if p.mma80 != 0 {
			mod, name, grid = p.mma80, "mma_bf16", uint32(p.sms*4)
			args = []uint64{p.scratch, 1 << 12}
		}
		f, err := c.function(mod, name)
		if err != nil {
			return "", err
		}
		enqueue = func() error { return c.launch(f, grid, 256, args...) }
		what = fmt.Sprintf("%s kernel loop (no cuBLASLt: %v)", name, gerr)
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		for range 16 {
			if err := enqueue(); err != nil {
				return what, err
			}
		}
		if err := c.check("cuCtxSynchronize"); err != nil {
			return what, err
		}
	}
	return what, nil
}
