package compute

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/i18n"
)

// ProbeSoak is bench --soak: a GEMM loop for minutes, every result
// checked, with the card's power, clocks and temperature sampled beside it.
const ProbeSoak = "soak"

// Soak is what a soak measured on one GPU. Samples come from NVML
// (measure fills them in); the rest from the GEMM loop.
type Soak struct {
	Seconds float64 `json:"seconds"`
	GEMM    string  `json:"gemm"`
	// Slots is how many results the loop keeps in device memory, in
	// turn, each compared with the first: the loop's memory, MemoryGiB,
	// is most of the free memory.
	Slots      int     `json:"slots"`
	MemoryGiB  float64 `json:"memory_gib"`
	Iterations int     `json:"iterations"`
	// Mismatches counts results unlike the first beyond the tolerance;
	// FirstMismatch says where the first was.
	Mismatches    int           `json:"mismatches"`
	FirstMismatch *SoakMismatch `json:"first_mismatch,omitempty"`
	// ReferenceChecked elements of the first result were computed again
	// on the CPU in FP64; ReferenceBad of them were beyond the tolerance,
	// the worst by ReferenceMaxErr (relative, as the tolerance is).
	ReferenceChecked int     `json:"reference_checked"`
	ReferenceBad     int     `json:"reference_bad"`
	ReferenceMaxErr  float64 `json:"reference_max_err"`
	Tolerance        float64 `json:"tolerance"`
	// Intervals is the GEMM throughput over the run, a second or so
	// each.
	Intervals []SoakInterval `json:"intervals"`
	Samples   []SoakSample   `json:"samples,omitempty"`
	// Stopped says why the loop ended before its time, where it did.
	Stopped string `json:"stopped,omitempty"`
	// FP32 is the FP32 GEMM that runs beside a BF16 loop, one after each
	// batch, on the CUDA cores rather than the tensor cores: checked the
	// same way, its own first result and slot.
	FP32 *Soak `json:"fp32,omitempty"`
	// Began and Ended are when the loop ran, on this host's clock, for
	// measure to keep the NVML samples taken meanwhile (not set-up's).
	Began time.Time `json:"-"`
	Ended time.Time `json:"-"`
}

// SoakMismatch is the first result that differed from the first result.
type SoakMismatch struct {
	Iteration int     `json:"iteration"`
	Elements  uint64  `json:"elements"`
	Element   uint64  `json:"element"` // the first wrong element (column-major index)
	MaxDiff   float64 `json:"max_diff"`
}

// SoakInterval is a second or so of the loop: when it ended, seconds
// into the loop, and the GEMM throughput its batches reached.
type SoakInterval struct {
	AtS    float64 `json:"at_s"`
	TFLOPS float64 `json:"tflops"`
}

// SoakSample is one NVML reading during a soak; a field NVML would not
// give is absent.
type SoakSample struct {
	AtS         float64  `json:"at_s"`
	PowerW      *float64 `json:"power_w,omitempty"`
	SMClockMHz  *uint32  `json:"sm_clock_mhz,omitempty"`
	MemClockMHz *uint32  `json:"mem_clock_mhz,omitempty"`
	TempC       *int     `json:"temp_c,omitempty"`
	ClockEvents *uint64  `json:"clock_events,omitempty"`
}

// soakTolerance is how far two results of one element may differ,
// relative to their size plus one, before the card is said to compute
// wrong: 1/64, several BF16 rounding steps. cuBLAS documents bitwise
// reproducibility on one GPU architecture, but the heuristic's algorithm
// is not promised to keep one reduction order, and an order that changes
// moves a BF16 result by a rounding step or so; a flipped exponent or
// leading mantissa bit, silent data corruption, moves it far more.
const soakTolerance = 1.0 / 64

// soakSlotsMax caps the results kept (128 GiB of 8192² BF16 results).
const soakSlotsMax = 1024

// Soak runs a GEMM loop on device for d (less if ctx ends first), in BF16
// with an FP32 GEMM after each batch (FP32 alone on cards before compute
// capability 8.0), over most of the free memory, checking every result
// against its precision's first and the first against a tile computed on
// the CPU.
func (cu CUDA) Soak(ctx context.Context, device int, d time.Duration) Result {
	r := Result{Probe: ProbeSoak, Unit: "TFLOPS"}
	c, err := openCUDA(cu.Library, device)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer c.close()
	p := &cudaProber{c: c, ltPath: cu.CublasLt}
	if err := p.setup(); err != nil {
		r.Error = err.Error()
		return r
	}
	defer p.teardown()
	start := time.Now()
	r = p.soak(ctx, d)
	r.WallMs = float64(time.Since(start).Microseconds()) / 1e3
	return r
}

func (p *cudaProber) soak(ctx context.Context, d time.Duration) Result {
	r := Result{Probe: ProbeSoak, Unit: "TFLOPS"}
	fail := func(err error) Result {
		r.Error = err.Error()
		return r
	}
	// BF16 on the tensor cores, and beside it an FP32 GEMM after each
	// batch, which runs on the CUDA cores: a fault in either is found.
	// Before compute capability 8.0, FP32 alone.
	main, err := p.newSoakLoop(gemmPrecisions()[2], "cmp_bf16", 0)
	if p.major < 8 {
		main, err = p.newSoakLoop(gemmPrecisions()[0], "cmp_f32", 0)
	}
	if err != nil {
		return fail(err)
	}
	defer main.close()
	var side *soakLoop
	if p.major >= 8 {
		if side, err = p.newSoakLoop(gemmPrecisions()[0], "cmp_f32", 1); err != nil {
			return fail(fmt.Errorf("FP32: %w", err))
		}
		defer side.close()
		main.s.FP32 = side.s
	}
	// The slots take what is left of the free memory, less the margin.
	if err := main.addSlots(); err != nil {
		return fail(err)
	}
	r.Soak = main.s
	t0, err := main.first()
	if err == nil && side != nil {
		_, err = side.first()
	}
	if err != nil {
		return fail(err)
	}
	const batchMax = 128
	batch := int(math.Max(1, math.Min(batchMax, 250/math.Max(t0, 1e-3))))
	k, err := newChecker(p.c, p.common, p.sms, batch+1)
	if err != nil {
		return fail(err)
	}
	defer k.close()
	ev, err := newEventPairs(p.c, batch+1)
	if err != nil {
		return fail(err)
	}
	defer ev.close()
	start := time.Now()
	main.s.Began = start
	defer func() { main.s.Ended = time.Now() }()
	deadline := start.Add(d)
	rounds := batch
	if side != nil {
		rounds++ // the last round is the FP32 GEMM
	}
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			main.s.Stopped = "interrupted: " + ctx.Err().Error()
			break
		}
		if err := k.reset(); err != nil {
			return fail(err)
		}
		loop := func(j int) *soakLoop {
			if j == batch {
				return side
			}
			return main
		}
		ms, err := ev.batch(rounds, func(j int) error { return loop(j).enqueue(j) },
			func(j int) error { return loop(j).compare(j, k) })
		if err == nil {
			err = k.read()
		}
		if err != nil {
			return fail(fmt.Errorf("iteration %d: %w", main.iter, err))
		}
		last := !time.Now().Before(deadline)
		main.record(k.host[:batch], ms[:batch], start, last)
		if side != nil {
			side.record(k.host[batch:batch+1], ms[batch:], start, last)
		}
	}
	for _, l := range []*soakLoop{main, side} {
		if l != nil {
			l.s.Iterations, l.s.Seconds = l.iter, round3(time.Since(start).Seconds())
		}
	}
	s := main.s
	var tf []float64
	for _, in := range s.Intervals {
		tf = append(tf, in.TFLOPS)
	}
	if len(tf) > 0 {
		sum := Summarize(tf)
		r.Value, r.Timing = sum.Median, Summary{N: len(tf), Median: sum.Median, Spread: sum.Spread}
	}
	r.Notes = i18n.Textf("%s loop for %.1f s: %d iterations over %d results in %.1f GiB, each compared with the first (tolerance 1/64 of size + 1); %d of the first result's elements checked against FP64 on the CPU",
		s.GEMM, s.Seconds, s.Iterations, s.Slots, s.MemoryGiB, s.ReferenceChecked)
	if f := s.FP32; f != nil {
		r.Notes = i18n.Textf("%s%s", r.Notes, i18n.Textf("; beside it %s, one after each batch: %d iterations, checked the same way", f.GEMM, f.Iterations))
	}
	return r
}

// soakLoop is one precision's GEMM loop of a soak: its operands, the
// first result and the slots later results go to in turn, each compared
// with the first.
type soakLoop struct {
	p     *cudaProber
	g     gemmPrecision
	run   *gemmRun
	cmp   uintptr
	slots []uint64 // slots[0] is the first result (run's D)
	s     *Soak
	iter  int
	acc   struct {
		n  int
		ms float64
	}
	lastAt float64
}

func (p *cudaProber) newSoakLoop(g gemmPrecision, cmpName string, extraSlots int) (*soakLoop, error) {
	run, err := p.newGEMM(g, 8192)
	if err != nil {
		return nil, err
	}
	l := &soakLoop{p: p, g: g, run: run, slots: []uint64{run.bufs[2]}, iter: 1}
	if l.cmp, err = p.c.function(p.common, cmpName); err != nil {
		l.close()
		return nil, err
	}
	for range extraSlots {
		if err := l.addSlot(); err != nil {
			l.close()
			return nil, err
		}
	}
	l.s = &Soak{GEMM: fmt.Sprintf("%s %d³ %s", p.lt, run.n, strings.ToUpper(g.prec)), Tolerance: soakTolerance, Intervals: []SoakInterval{}}
	l.setSize()
	return l, nil
}

func (l *soakLoop) size() uint64 { return l.run.n * l.run.n * l.g.elem }

func (l *soakLoop) setSize() {
	l.s.Slots, l.s.MemoryGiB = len(l.slots), gibf(uint64(len(l.slots)+2)*l.size()+gemmWorkspace)
}

func (l *soakLoop) addSlot() error {
	d, err := l.p.c.alloc(l.size())
	if err == nil {
		l.slots = append(l.slots, d)
	}
	return err
}

// addSlots fills the free memory, less the margin, with slots: at least
// one beside the first result, at most soakSlotsMax.
func (l *soakLoop) addSlots() error {
	if free, total, err := l.p.c.memInfo(); err == nil {
		for left := free - min(free, allocMargin(total)); left >= l.size() && len(l.slots) < soakSlotsMax; left -= l.size() {
			if l.addSlot() != nil {
				break
			}
		}
	}
	if len(l.slots) < 2 {
		if err := l.addSlot(); err != nil {
			return fmt.Errorf("no memory for a second %d MiB result: %v", l.size()>>20, err)
		}
	}
	l.setSize()
	return nil
}

func (l *soakLoop) close() {
	for _, d := range l.slots[1:] {
		l.p.c.free(d)
	}
	l.run.close()
}

// first computes the first result, checks its tile against the CPU, and
// returns how long the GEMM took (ms).
func (l *soakLoop) first() (float64, error) {
	t, err := l.p.c.timed(l.run.enqueue)
	if err != nil {
		return 0, err
	}
	if err := l.p.referenceTile(l.run, l.g, l.s); err != nil {
		return 0, fmt.Errorf("reference tile: %w", err)
	}
	return t, nil
}

// slot is where round j of the current batch writes its result.
func (l *soakLoop) slot(j int) uint64 { return l.slots[1+(l.iter+j-1)%(len(l.slots)-1)] }

func (l *soakLoop) enqueue(j int) error {
	r := l.run
	return r.p.lt.matmul(r.plan, r.bufs[0], r.bufs[1], l.slot(j), r.bufs[3], gemmWorkspace, 0)
}

func (l *soakLoop) compare(j int, k *checker) error {
	tol := uint64(math.Float32bits(soakTolerance))
	return l.p.c.launch(l.cmp, k.grid, 256, l.slot(j), l.slots[0], l.run.n*l.run.n, tol, k.result(j))
}

// record counts this batch's results that differed from the first, adds
// its GEMM time, and closes an interval each second or so (and at the
// last batch): a soak of an hour keeps 3,600 of them, not one a batch.
func (l *soakLoop) record(results []checkResult, ms []float64, start time.Time, last bool) {
	for j, w := range results {
		if w.words() > 0 {
			l.s.Mismatches++
			if l.s.FirstMismatch == nil {
				l.s.FirstMismatch = &SoakMismatch{Iteration: l.iter + j, Elements: w.words(), Element: w.first(),
					MaxDiff: float64(math.Float32frombits(uint32(w[5])))}
			}
		}
	}
	l.iter += len(results)
	l.acc.n += len(results)
	for _, t := range ms {
		l.acc.ms += t
	}
	if at := time.Since(start).Seconds(); at-l.lastAt >= 1 || last {
		n := float64(l.run.n)
		l.s.Intervals = append(l.s.Intervals, SoakInterval{AtS: round3(at), TFLOPS: round3(float64(l.acc.n) * 2 * n * n * n / (l.acc.ms / 1e3) / 1e12)})
		l.acc.n, l.acc.ms, l.lastAt = 0, 0, at
	}
}

// eventPairs time each GEMM of a batch on its own, so that the
// comparisons between them do not count against its throughput.
type eventPairs struct {
	c          *cudaLib
	start, end []event
}

func newEventPairs(c *cudaLib, n int) (*eventPairs, error) {
	e := &eventPairs{c: c}
	for range n {
		a, err := c.newEvent()
		if err != nil {
			e.close()
			return nil, err
		}
		e.start = append(e.start, a)
		b, err := c.newEvent()
		if err != nil {
			e.close()
			return nil, err
		}
		e.end = append(e.end, b)
	}
	return e, nil
}

func (e *eventPairs) close() {
	for _, x := range append(e.start, e.end...) {
		e.c.destroy(x)
	}
}

// batch enqueues n rounds of timed work, each followed by untimed after,
// and returns each round's work in milliseconds.
func (e *eventPairs) batch(n int, work, after func(j int) error) ([]float64, error) {
	for j := range n {
		if err := e.c.record(e.start[j]); err != nil {
			return nil, err
		}
		if err := work(j); err != nil {
			return nil, err
		}
		if err := e.c.record(e.end[j]); err != nil {
			return nil, err
		}
		if err := after(j); err != nil {
			return nil, err
		}
	}
	ms := make([]float64, n)
	for j := range n {
		t, err := e.c.elapsed(e.start[j], e.end[j])
		if err != nil {
			return nil, err
		}
		ms[j] = t
	}
	return ms, nil
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// referenceTile reads an 8×8 tile of the first result, at a random place,
// and computes it again on the CPU in FP64 from the operands' known values
// (the fill kernels' hash, reproduced by fillValue): a card that computes
// the same wrong answer every time agrees with itself, not with this.
func (p *cudaProber) referenceTile(run *gemmRun, g gemmPrecision, s *Soak) error {
	const tile = 8
	n := run.n
	if n < tile {
		return fmt.Errorf("a %d×%d GEMM is smaller than the tile", n, n)
	}
	r0, c0 := rand.Uint64N(n-tile+1), rand.Uint64N(n-tile+1)
	bf16 := g.elem == 2
	buf := make([]byte, tile*g.elem)
	var pin runtime.Pinner
	pin.Pin(&buf[0])
	defer pin.Unpin()
	seedA, seedB := gemmSeed(0), gemmSeed(1)
	for c := c0; c < c0+tile; c++ {
		at := run.bufs[2] + (c*n+r0)*g.elem // column-major: column c, rows r0..
		if err := p.c.check("cuMemcpyDtoH_v2", uintptr(unsafe.Pointer(&buf[0])), uintptr(at), uintptr(len(buf))); err != nil {
			return err
		}
		for i := range uint64(tile) {
			var got float64
			if bf16 {
				got = float64(math.Float32frombits(uint32(buf[2*i])<<16 | uint32(buf[2*i+1])<<24))
			} else {
				got = float64(math.Float32frombits(uint32(buf[4*i]) | uint32(buf[4*i+1])<<8 | uint32(buf[4*i+2])<<16 | uint32(buf[4*i+3])<<24))
			}
			var want float64
			row := r0 + i
			for k := range n {
				want += fillValue(row+k*n, seedA, bf16) * fillValue(k+c*n, seedB, bf16)
			}
			e := math.Abs(got-want) / (math.Abs(want) + 1)
			if math.IsNaN(e) {
				e = math.Inf(1)
			}
			s.ReferenceChecked++
			s.ReferenceMaxErr = math.Max(s.ReferenceMaxErr, e)
			if e > soakTolerance {
				s.ReferenceBad++
			}
		}
	}
	s.ReferenceMaxErr = math.Round(s.ReferenceMaxErr*1e6) / 1e6
	return nil
}

// fillValue is element i of a buffer fill_f32 or fill_bf16 filled with
// seed (kernels/common.cu): hash32 of the index, mapped to [-1, 1), the
// BF16 value its FP32 one truncated.
func fillValue(i uint64, seed uint32, bf16 bool) float64 {
	h := hash32(uint32(i)^seed) ^ uint32(i>>32)
	f := float32(h>>8)*(2.0/16777216.0) - 1
	if bf16 {
		f = math.Float32frombits(math.Float32bits(f) &^ 0xffff)
	}
	return float64(f)
}

// hash32 is kernels/common.cu's integer mix ("lowbias32").
func hash32(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}
