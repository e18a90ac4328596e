// Package measure gathers the facts gpurent bench judges: the host, the
// GPUs as NVML describes them, and what the GPUs deliver when the compute
// backends (internal/compute) run their probes. Judgement is internal/bench's;
// this package only measures, so that a replay judges the same facts.
package measure

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/atomicfile"
	"github.com/gpurent/gpurent/internal/compute"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/kernlog"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/usage"
	"github.com/gpurent/gpurent/internal/userfile"
)

// Options say how long and how much to measure.
type Options struct {
	// Window is how long GPU utilization and CPU steal are sampled, and
	// the sustained probe runs.
	Window time.Duration
	// DataDir is the directory whose disk is measured, with DiskBytes
	// written and read back (0 skips).
	DataDir   string
	DiskBytes int64
	// Backend runs the compute probes: auto, cuda, torch, cpu or none.
	Backend string
	// Full probes every GPU, with longer repetitions; Probes, when set,
	// runs only those.
	Full   bool
	Probes []string
	// Memtest runs the memory test on every GPU; Soak, when positive,
	// a checked GEMM loop on every GPU at once for that long, with NVML
	// sampled every second beside it.
	Memtest bool
	Soak    time.Duration
	// Links measures the links between GPUs (copies, NCCL's all-reduce)
	// even with one GPU, where NCCL runs one rank: the binding proved on
	// a one-GPU machine. With two or more they are always measured.
	Links bool
}

// Machine measures this machine: the facts first (utilization is sampled
// while gpurent is idle), then the compute probes, then the kernel log,
// which then holds what the probes' load made the driver report too. An
// Xid while the GPU is measured, and under load, is a fault the kernel log
// may hide from a container: NVML's events are recorded throughout.
func Machine(ctx context.Context, o Options) probe.Facts {
	stopXids := probe.RecordXids("")
	f := gather(ctx, o.Window, o.DataDir, o.DiskBytes)
	// The sustained probe launches for the window, as long as the
	// sampling: both look for the same thing, sharing over time.
	// The memory test and the soak cover every GPU, as full mode does.
	every := o.Full || o.Memtest || o.Soak > 0
	f.Compute = computeProbes(ctx, o.Backend, compute.Options{Full: o.Full, Sustained: o.Window, Probes: o.Probes, Memtest: o.Memtest}, every, f.GPU)
	if o.Soak > 0 {
		soakAll(ctx, f.Compute, o.Soak, time.Second)
	}
	if (len(f.GPU.Devices) > 1 || o.Links) && (o.Backend == "auto" || o.Backend == "cuda") && ctx.Err() == nil {
		// The links between the GPUs, after the probes (each GPU's own
		// figures are measured without this traffic), then the NVLink
		// counters again: errors that rose under the load.
		if p := (compute.CUDA{}).Peers(ctx, compute.DefaultPeerOptions()); p.Devices > 1 || p.Error != "" || o.Links {
			for i := range p.Pairs {
				x := &p.Pairs[i]
				x.SrcGPU, x.DstGPU = nvmlIndex(x.SrcBus, x.Src, f.GPU), nvmlIndex(x.DstBus, x.Dst, f.GPU)
			}
			f.Peers = &p
		}
		f.AllReduce = allReduce(ctx, f.Peers, o.Links)
		if hasNVLinks(f.GPU) {
			f.NVLinkErrorsAfter = probe.NVLinkErrors("")
		}
	}
	f.KernelLog = probe.ReadKernelLog(kernlog.Path())
	f.XidEvents = stopXids()
	return f
}

// allReduce runs NCCL's all-reduce over every GPU, unless copies between
// them hung or failed: NCCL would hang on the same path, or queue behind
// what the copies left on the GPUs.
func allReduce(ctx context.Context, peers *compute.Peers, always bool) *compute.AllReduce {
	if peers != nil && peers.Hung != "" {
		return &compute.AllReduce{Error: "not run: copies between the GPUs hung (" + peers.Hung + "), and NCCL would hang on the same path"}
	}
	for _, x := range pairsOf(peers) {
		if x.Error != "" {
			return &compute.AllReduce{Error: fmt.Sprintf("not run: copies from CUDA device %d to %d failed (%s), and NCCL would wait behind what they left on the GPUs", x.Src, x.Dst, x.Error)}
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	a := compute.CUDA{}.AllReduce(ctx, compute.DefaultAllReduceOptions())
	if a.Ranks < 2 && a.Error == "" && !always {
		return nil
	}
	return &a
}

func pairsOf(p *compute.Peers) []compute.Peer {
	if p == nil {
		return nil
	}
	return p.Pairs
}

func hasNVLinks(g probe.GPUFacts) bool {
	for _, d := range g.Devices {
		if len(d.NVLinks) > 0 {
			return true
		}
	}
	return false
}

// gather measures this machine: GPU utilization and CPU steal are sampled
// over the same window, side by side.
func gather(ctx context.Context, window time.Duration, dataDir string, diskBytes int64) probe.Facts {
	f := probe.Facts{Version: probe.FactsVersion, CollectedAt: time.Now().UTC(), DurationS: window.Seconds()}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		f.GPU = probe.GPU(ctx, probe.GPUOptions{Window: window, Settle: probe.UtilizationPeriodMax})
	}()
	go func() {
		defer wg.Done()
		f.Host = probe.Host(ctx, probe.HostOptions{DataDir: dataDir, Window: window, DiskBytes: diskBytes})
	}()
	f.Sharing = probe.Sharing(probe.RealEnviron())
	home, _ := os.UserHomeDir()
	f.Torch = probe.Torch("/", home, os.LookupEnv)
	wg.Wait()
	if len(f.GPU.Devices) > 1 {
		f.GPU.NICs = probe.NICs("/sys", f.GPU.Devices)
	}
	return f
}

// computeProbes measures what the GPUs deliver, after the NVML facts were
// read (utilization is sampled while gpurent is idle). Quick mode probes the
// first GPU; full mode every one.
func computeProbes(ctx context.Context, backend string, opt compute.Options, full bool, g probe.GPUFacts) []compute.Results {
	if backend == "none" {
		return nil
	}
	if backend == "cpu" {
		return []compute.Results{compute.CPU{}.Run(ctx, opt)}
	}
	if backend == "auto" && !g.Available {
		return nil
	}
	// Number CUDA devices like NVML does (PCI bus order), unless the user
	// chose an order.
	if _, set := os.LookupEnv("CUDA_DEVICE_ORDER"); !set {
		os.Setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
	}
	// CUDA's devices by PCI address, asked for only where needed: cuInit
	// can take seconds on a large machine, and quick mode rarely needs it.
	cudaBuses := sync.OnceValue(func() []string {
		b, _ := compute.CUDA{}.Devices()
		return b
	})
	// Full mode measures every GPU CUDA shows this process; NVML may see
	// more (CUDA_VISIBLE_DEVICES), and those are named, not measured.
	n := 1
	if full {
		n = max(1, len(g.Devices))
		if b := cudaBuses(); len(b) > 0 {
			n = len(b)
		}
	}
	var cuda []compute.Results
	if backend != "torch" && n > 1 {
		cuda = cudaParallel(ctx, opt, n)
	}
	var out []compute.Results
	for i := 0; i < n && ctx.Err() == nil; i++ {
		opt.Device = i
		var r compute.Results
		switch {
		case backend == "torch":
			r = compute.Torch{}.Run(ctx, opt)
		case cuda != nil:
			r = cuda[i]
		default:
			r = compute.CUDA{}.Run(ctx, opt)
		}
		if backend == "auto" && !r.Available {
			if t := (compute.Torch{}).Run(ctx, opt); t.Available {
				r = t
			}
		}
		if r.BusID == "" && i < len(cudaBuses()) { // a run that failed early is still filed under its GPU
			r.BusID = cudaBuses()[i]
		}
		r.Index = nvmlIndex(r.BusID, i, g)
		out = append(out, r)
	}
	if full && ctx.Err() == nil {
		out = append(out, hiddenFromCUDA(out, g, backend)...)
	}
	return out
}

// cudaParallel runs the cuda backend on CUDA devices 0..n-1 at once: each
// has its own context on its own OS thread, and a node of eight measured
// one GPU after another would take eight times as long (the sustained
// probe alone is 10 s a GPU). The host links are the exception: H2D and
// D2H of all GPUs share the host's PCIe switches and memory, so they run
// one GPU at a time afterwards, each judged against its own link. nil when
// the probes asked for are all link probes (nothing to run at once).
func cudaParallel(ctx context.Context, opt compute.Options, n int) []compute.Results {
	var shared, links []string
	for _, p := range compute.AllProbes() {
		switch {
		case !opt.Wants(p):
		case p == compute.ProbeH2D || p == compute.ProbeD2H:
			links = append(links, p)
		default:
			shared = append(shared, p)
		}
	}
	if len(shared) == 0 {
		return nil
	}
	out := make([]compute.Results, n)
	var wg sync.WaitGroup
	for i := range n {
		o := opt
		o.Device, o.Probes = i, shared
		wg.Go(func() { out[i] = compute.CUDA{}.Run(ctx, o) })
	}
	wg.Wait()
	for i := 0; i < n && len(links) > 0 && ctx.Err() == nil; i++ {
		if !out[i].Available {
			continue
		}
		o := opt
		o.Device, o.Probes = i, links
		r := compute.CUDA{}.Run(ctx, o)
		if !r.Available {
			for _, p := range links {
				r.Results = append(r.Results, compute.Result{Probe: p, Error: r.Error})
			}
		}
		out[i].Results = append(out[i].Results, r.Results...)
		order := compute.AllProbes()
		slices.SortStableFunc(out[i].Results, func(a, b compute.Result) int {
			return slices.Index(order, a.Probe) - slices.Index(order, b.Probe)
		})
	}
	return out
}

// soakAll runs the soak on every GPU the cuda backend measured, all at
// once (a node's GPUs share its power and cooling, and a slow one shows
// only beside the others), and samples each GPU's power, clocks and
// temperature from NVML beside it. Each GPU's soak result joins its
// results; a GPU another backend measured gets the reason it was not
// soaked.
func soakAll(ctx context.Context, rs []compute.Results, d, every time.Duration) {
	soaks := make([]compute.Result, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		switch {
		case r.CPU:
			continue
		case !r.Available:
			soaks[i] = compute.Result{Probe: compute.ProbeSoak, Unit: "TFLOPS", Error: "not soaked: " + r.Error}
			continue
		case r.Backend != "cuda":
			soaks[i] = compute.Result{Probe: compute.ProbeSoak, Unit: "TFLOPS", Error: "the soak runs in the cuda backend only (libcuda.so.1, cuBLASLt and gpurent's own kernels)"}
			continue
		}
		cudaIndex := i // computeProbes measured CUDA device i as rs[i]
		wg.Go(func() { soaks[i] = compute.CUDA{}.Soak(ctx, cudaIndex, d) })
	}
	done := make(chan struct{})
	samples := make(map[int][]compute.SoakSample)
	var sampler sync.WaitGroup
	t0 := time.Now()
	sampler.Go(func() { sampleNVML(ctx, done, every, t0, rs, samples) })
	wg.Wait()
	close(done)
	sampler.Wait()
	for i := range rs {
		if soaks[i].Probe == "" {
			continue
		}
		if s := soaks[i].Soak; s != nil {
			s.Samples = whileLooping(samples[rs[i].Index], t0, s.Began, s.Ended)
		}
		rs[i].Results = append(rs[i].Results, soaks[i])
	}
}

// whileLooping keeps the samples taken (at_s after t0) while a GPU's soak
// loop ran, from began to ended, with at_s from began: set-up and
// teardown, and the time a faster GPU waits for the others, are idle
// clocks and power, not the card under load.
func whileLooping(xs []compute.SoakSample, t0, began, ended time.Time) []compute.SoakSample {
	from, to := began.Sub(t0).Seconds(), ended.Sub(t0).Seconds()
	var out []compute.SoakSample
	for _, x := range xs {
		if x.AtS >= from && x.AtS <= to {
			x.AtS = math.Round((x.AtS-from)*1000) / 1000
			out = append(out, x)
		}
	}
	return out
}

// sampleNVML reads every measured GPU's power, clocks and temperature
// every interval until done, into out by NVML index. Without NVML the
// soak still runs, judged on its GEMMs alone.
func sampleNVML(ctx context.Context, done <-chan struct{}, every time.Duration, start time.Time, rs []compute.Results, out map[int][]compute.SoakSample) {
	n, err := probe.OpenNVML("")
	if err != nil {
		return
	}
	defer n.Close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		at := math.Round(time.Since(start).Seconds()*1000) / 1000
		for _, r := range rs {
			if r.CPU || !r.Available {
				continue
			}
			if s, err := n.Sample(r.Index); err == nil {
				s.AtS = at // rounded to 1 ms
				out[r.Index] = append(out[r.Index], s)
			}
		}
	}
}

// hiddenFromCUDA names each GPU NVML sees that no backend result is for:
// CUDA_VISIBLE_DEVICES hid it from CUDA (or CUDA cannot use it), so full
// mode could not measure it.
func hiddenFromCUDA(measured []compute.Results, g probe.GPUFacts, backend string) []compute.Results {
	if len(measured) > 0 {
		backend = measured[0].Backend // what auto chose
	}
	var out []compute.Results
	for _, d := range g.Devices {
		if slices.ContainsFunc(measured, func(r compute.Results) bool { return r.Index == d.Index }) {
			continue
		}
		why := "CUDA does not show this GPU to this process, so it was not measured"
		if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
			why += fmt.Sprintf(" (CUDA_VISIBLE_DEVICES=%q)", v)
		}
		out = append(out, compute.Results{Backend: backend, Index: d.Index, Error: why, Results: []compute.Result{}})
	}
	return out
}

// ParseProbes reads --probes: known probe names, comma-separated.
func ParseProbes(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(compute.AllProbes(), p) {
			return nil, usage.Errorf("--probes: unknown probe %q; the probes are %s", p, strings.Join(compute.AllProbes(), ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// nvmlIndex is the NVML index of the device a backend measured as CUDA
// device cudaIndex: the one at the same PCI address. Without
// CUDA_VISIBLE_DEVICES the two orders agree (CUDA_DEVICE_ORDER is
// PCI_BUS_ID); with it, CUDA's device 0 may be NVML's device 3, whose
// datasheet, memory and link the results must be judged against.
func nvmlIndex(busID string, cudaIndex int, g probe.GPUFacts) int {
	for _, d := range g.Devices {
		if compute.SameBusID(d.BusID, busID) {
			return d.Index
		}
	}
	return cudaIndex
}

// ReadFacts reads facts saved with --record, for --replay: a file that
// cannot be read, or holds facts that cannot be judged, is bad usage.
func ReadFacts(path string) (probe.Facts, error) {
	var f probe.Facts
	data, err := userfile.Read(path, probe.MaxFactsSize)
	if err != nil {
		return f, usage.Errorf("--replay: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, usage.Errorf("--replay %s: not a gpurent facts file: %v", path, err)
	}
	if f.Version != probe.FactsVersion {
		return f, usage.Errorf("--replay %s: facts version %d, this gpurent reads version %d", path, f.Version, probe.FactsVersion)
	}
	// Judgement needs facts: missing or impossible ones would pass.
	if err := f.Validate(); err != nil {
		return f, usage.Errorf("--replay %s: facts that cannot be judged: %s", path, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return f, nil
}

// WriteFacts saves facts with a temporary file, fsync and rename, so an
// interrupted run never leaves half a file where a good one was.
func WriteFacts(path string, f probe.Facts) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return i18n.Errorf("--record %s: %w", path, err)
	}
	return nil
}
