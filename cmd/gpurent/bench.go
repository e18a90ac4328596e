package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/atomicfile"
	"github.com/gpurent/gpurent/internal/bench"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/gpu"
	"github.com/gpurent/gpurent/internal/kernlog"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/specs"
	"github.com/gpurent/gpurent/internal/units"
)

// offerOrder is the order an offer of the catalog (--catalog files merged
// over the embedded one) makes: the GPU it sells, with the memory it
// states, and how many an instance has. A flag the user gave wins. An
// offer whose GPU names no datasheet row is bad usage: bench could not
// judge the card against it, so --expect must say what it is.
func offerOrder(g *globals, fs *pflag.FlagSet, tab *specs.Table, id, expect string, gpus int) (string, int, error) {
	cat, err := loadCatalog(g.catalogs)
	if err != nil {
		return "", 0, err
	}
	o, err := catalog.ByID(cat.Offers, id)
	if err != nil {
		return "", 0, usagef("--offer: %v", err)
	}
	if !fs.Changed("expect") {
		expect = o.OrderedGPU()
		if len(tab.Match(expect)) == 0 {
			return "", 0, usagef("--offer %s: its GPU %q is no model of the datasheet table, so the card cannot be judged against it: say which it is with --expect", o.ID, o.GPU)
		}
	}
	if !fs.Changed("expect-gpus") {
		gpus = o.GPUs
	}
	return expect, gpus, nil
}

// exitCode carries an exit code through cobra without a message: the
// report already said everything.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

func newBench(g *globals) *cobra.Command {
	var (
		expect     string
		offerID    string
		expectGPUs int
		expectCPUs int
		expectRAM  string
		expectCUDA string
		expectDisk string
		duration   string
		dataDir    string
		diskMB     int
		record     string
		replay     string
		noHistory  bool
		backend    string
		full       bool
		probes     string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Acceptance test of a fresh instance: the GPU you paid for, whole, unshared, healthy",
		Long: `bench checks, in seconds, that this machine is what you rented: the GPU model,
memory and count (by PCI id, not only by name), that it is whole (no MIG slice,
no vGPU, no MPS, no API-hooking layer such as HAMi's libvgpu.so, no other
tenant's processes or activity), unthrottled (power limit, clock slowdowns,
PCIe link) and healthy (ECC, retired pages, remapped rows); that its driver runs
the CUDA your PyTorch was built with (--expect-cuda for other software); and
that the host's CPUs are not oversold (steal), the container may use the CPUs
and RAM the offer promised (--expect-cpus, --expect-ram), its RAM fits the GPUs
and its data disk is as large as promised (--expect-disk), local and fast. Every check prints its evidence and, when
it is not a pass, advice.

Exit codes: 0 pass or warn, 3 fail, 2 bad usage. Each run is added to a local
history (gpurent bench history); --record saves the raw facts, and --replay
judges saved facts anywhere, without a GPU.`,
		Example: `  gpurent bench
  gpurent bench --expect "H100 SXM" --expect-gpus 8
  gpurent bench --expect "RTX 4090" --expect-cpus 16 --expect-ram 120GB
  gpurent bench --offer lambda-gpu_8x_h100_sxm5
  gpurent bench --record facts.json -o json > report.json
  gpurent bench --replay facts.json --expect "A100 80GB SXM"`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if expectGPUs < 0 || (expectGPUs == 0 && cmd.Flags().Changed("expect-gpus")) {
				return usagef("--expect-gpus: want a positive number of GPUs, got %d", expectGPUs)
			}
			if expectCPUs < 0 || (expectCPUs == 0 && cmd.Flags().Changed("expect-cpus")) {
				return usagef("--expect-cpus: want a positive number of CPUs, got %d", expectCPUs)
			}
			ram, err := sizeFlag(cmd.Flags(), "expect-ram", expectRAM)
			if err != nil {
				return err
			}
			disk, err := sizeFlag(cmd.Flags(), "expect-disk", expectDisk)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("expect-cuda") && !cudaVersionRe.MatchString(expectCUDA) {
				return usagef("--expect-cuda: want a CUDA version such as 12.8 or 13.0, got %q", expectCUDA)
			}
			window, err := units.ParseDuration(duration)
			if err != nil || window <= 0 || window > 10*time.Minute {
				return usagef("--duration: want a positive duration up to 10m such as 3s or 30s, got %q", duration)
			}
			switch backend {
			case "auto", "cuda", "torch", "cpu", "none":
			default:
				return usagef("--backend: want auto, cuda, torch, cpu or none, got %q", backend)
			}
			only, err := parseProbes(probes)
			if err != nil {
				return err
			}
			if full && !cmd.Flags().Changed("duration") {
				window = 10 * time.Second
			}
			if diskMB < 0 {
				return usagef("--disk-mb: want 0 (skip) or more, got %d", diskMB)
			}
			if err := notThere("--record", record); err != nil {
				return err
			}
			tab, err := specs.Load()
			if err != nil {
				return err
			}
			if offerID != "" {
				if expect, expectGPUs, err = offerOrder(g, cmd.Flags(), tab, offerID, expect, expectGPUs); err != nil {
					return err
				}
			}
			order := bench.Order{GPU: expect, GPUs: expectGPUs, CPUs: expectCPUs, RAM: ram, Disk: disk, CUDA: expectCUDA}
			// An order nobody can match is bad usage, before any measuring.
			if expect != "" && len(tab.Match(expect)) == 0 {
				_, err := bench.Judge(probe.Facts{}, tab, order, bench.DefaultLimits())
				return usageError{err}
			}
			var facts probe.Facts
			if replay != "" {
				if facts, err = readFacts(replay); err != nil {
					return err
				}
			} else {
				if runtime.GOOS == "windows" {
					// The probes read Linux's /proc and /sys and the driver's
					// Linux libraries; rented GPUs run Linux.
					return fmt.Errorf("gpurent bench measures the rented Linux machine, not Windows: run it there (--record facts.json), and judge the facts here with --replay")
				}
				if st, err := os.Stat(dataDir); err != nil || !st.IsDir() {
					return usagef("--data-dir %s: not a directory", dataDir)
				}
				// An Xid while the GPU is measured, and under load, is a
				// fault the kernel log may hide from this container.
				stopXids := probe.RecordXids("")
				facts = gather(cmd.Context(), window, dataDir, int64(diskMB)<<20)
				// The sustained probe launches for --duration, as long as the
				// sampling: both look for the same thing, sharing over time.
				facts.Compute = computeProbes(cmd.Context(), backend, gpu.Options{Full: full, Sustained: window, Probes: only}, facts.GPU)
				// Read last, the log holds what the probes' load made the
				// driver report too.
				facts.KernelLog = probe.ReadKernelLog(kernelLogPath())
				facts.XidEvents = stopXids()
			}
			if record != "" {
				if err := writeFacts(record, facts); err != nil {
					return err
				}
			}
			rep, err := bench.Judge(facts, tab, order, bench.DefaultLimits())
			if err != nil {
				return usageError{err}
			}
			if replay == "" && !noHistory {
				if path, err := bench.HistoryPath(); err == nil {
					if err := bench.AppendHistory(path, rep.Entry()); err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), "gpurent: warning:", err)
					}
				}
			}
			if g.output == report.JSON {
				if err := report.WriteJSON(g.stdout, rep); err != nil {
					return err
				}
			} else if err := writeBench(g.stdout, rep, colorful(g.stdout)); err != nil {
				return err
			}
			if rep.Verdict == bench.Fail {
				return exitCode(exitVerdictFail)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&expect, "expect", "", `the GPU you ordered, e.g. "A100 80GB SXM", "H100 SXM", "RTX 4090"`)
	f.IntVar(&expectGPUs, "expect-gpus", 0, "the number of GPUs you ordered")
	f.StringVar(&offerID, "offer", "", "the catalog offer you rented, by its id as quote prints it: its GPU model, memory and count are the order (--expect, --expect-gpus override)")
	f.IntVar(&expectCPUs, "expect-cpus", 0, "the CPUs (vCPUs, cores) the offer promised: fails when this container may use fewer")
	f.StringVar(&expectCUDA, "expect-cuda", "", "the CUDA version your software is built with, e.g. 12.8: fails when the driver is too old for it (PyTorch installs found are judged too)")
	f.StringVar(&expectDisk, "expect-disk", "", "the size of the disk --data-dir is on, as the offer promised, e.g. 50GB (a bare number is GB): fails below 95% of it")
	f.StringVar(&expectRAM, "expect-ram", "", "the RAM the offer promised, e.g. 120GB or 128GiB (a bare number is GB): fails below 95% of it")
	f.StringVar(&duration, "duration", "3s", "how long to sample GPU activity and CPU steal, and to run the sustained-launch probe (10s with --full)")
	f.StringVar(&dataDir, "data-dir", ".", "directory whose disk is measured (where your data and checkpoints go)")
	f.IntVar(&diskMB, "disk-mb", 256, "MB written and read back to measure the disk (0 skips)")
	f.StringVar(&record, "record", "", "save the raw facts to this JSON file")
	f.StringVar(&replay, "replay", "", "judge facts saved with --record instead of measuring")
	f.BoolVar(&noHistory, "no-history", false, "do not add this run to the local history")
	f.StringVar(&backend, "backend", "auto", "compute probes: auto (cuda, else torch, where a GPU is found), cuda, torch, cpu or none")
	f.BoolVar(&full, "full", false, "full mode: probe every GPU, longer repetitions, a 10 s --duration unless set")
	f.StringVar(&probes, "probes", "", "run only these compute probes, comma-separated (e.g. sustained to check for sharing); all when empty")
	cmd.AddCommand(newBenchHistory(g))
	return cmd
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
	return f
}

// kernelLogPath is the kernel log bench and run read the NVIDIA driver's
// Xid reports and the kernel's hardware errors from: /dev/kmsg, or
// $GPURENT_KMSG, a file of records in the same format, for tests.
func kernelLogPath() string {
	if p := os.Getenv("GPURENT_KMSG"); p != "" {
		return p
	}
	return kernlog.DefaultPath
}

// sizeFlag reads a size flag such as --expect-ram 120GB (a bare number is
// GB), 0 when it is not given.
func sizeFlag(fs *pflag.FlagSet, name, v string) (float64, error) {
	if !fs.Changed(name) {
		return 0, nil
	}
	n, err := units.ParseSize(v, 1e9)
	if err != nil {
		return 0, usagef("--%s: %v", name, err)
	}
	return n, nil
}

// cudaVersionRe is a CUDA version as toolkits and wheels name it.
var cudaVersionRe = regexp.MustCompile(`^[1-9][0-9]?(\.[0-9]{1,2})?$`)

// computeProbes measures what the GPUs deliver, after the NVML facts were
// read (utilization is sampled while gpurent is idle). Quick mode probes the
// first GPU; full mode every one.
func computeProbes(ctx context.Context, backend string, opt gpu.Options, g probe.GPUFacts) []gpu.Results {
	if backend == "none" {
		return nil
	}
	full := opt.Full
	if backend == "cpu" {
		return []gpu.Results{gpu.CPU{}.Run(ctx, opt)}
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
		b, _ := gpu.CUDA{}.Devices()
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
	var cuda []gpu.Results
	if backend != "torch" && n > 1 {
		cuda = cudaParallel(ctx, opt, n)
	}
	var out []gpu.Results
	for i := 0; i < n && ctx.Err() == nil; i++ {
		opt.Device = i
		var r gpu.Results
		switch {
		case backend == "torch":
			r = gpu.Torch{}.Run(ctx, opt)
		case cuda != nil:
			r = cuda[i]
		default:
			r = gpu.CUDA{}.Run(ctx, opt)
		}
		if backend == "auto" && !r.Available {
			if t := (gpu.Torch{}).Run(ctx, opt); t.Available {
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
func cudaParallel(ctx context.Context, opt gpu.Options, n int) []gpu.Results {
	var shared, links []string
	for _, p := range gpu.AllProbes() {
		switch {
		case !opt.Wants(p):
		case p == gpu.ProbeH2D || p == gpu.ProbeD2H:
			links = append(links, p)
		default:
			shared = append(shared, p)
		}
	}
	if len(shared) == 0 {
		return nil
	}
	out := make([]gpu.Results, n)
	var wg sync.WaitGroup
	for i := range n {
		o := opt
		o.Device, o.Probes = i, shared
		wg.Go(func() { out[i] = gpu.CUDA{}.Run(ctx, o) })
	}
	wg.Wait()
	for i := 0; i < n && len(links) > 0 && ctx.Err() == nil; i++ {
		if !out[i].Available {
			continue
		}
		o := opt
		o.Device, o.Probes = i, links
		r := gpu.CUDA{}.Run(ctx, o)
		if !r.Available {
			for _, p := range links {
				r.Results = append(r.Results, gpu.Result{Probe: p, Error: r.Error})
			}
		}
		out[i].Results = append(out[i].Results, r.Results...)
		order := gpu.AllProbes()
		slices.SortStableFunc(out[i].Results, func(a, b gpu.Result) int {
			return slices.Index(order, a.Probe) - slices.Index(order, b.Probe)
		})
	}
	return out
}

// hiddenFromCUDA names each GPU NVML sees that no backend result is for:
// CUDA_VISIBLE_DEVICES hid it from CUDA (or CUDA cannot use it), so full
// mode could not measure it.
func hiddenFromCUDA(measured []gpu.Results, g probe.GPUFacts, backend string) []gpu.Results {
	if len(measured) > 0 {
		backend = measured[0].Backend // what auto chose
	}
	var out []gpu.Results
	for _, d := range g.Devices {
		if slices.ContainsFunc(measured, func(r gpu.Results) bool { return r.Index == d.Index }) {
			continue
		}
		why := "CUDA does not show this GPU to this process, so it was not measured"
		if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
			why += fmt.Sprintf(" (CUDA_VISIBLE_DEVICES=%q)", v)
		}
		out = append(out, gpu.Results{Backend: backend, Index: d.Index, Error: why, Results: []gpu.Result{}})
	}
	return out
}

// parseProbes reads --probes: known probe names, comma-separated.
func parseProbes(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(gpu.AllProbes(), p) {
			return nil, usagef("--probes: unknown probe %q; the probes are %s", p, strings.Join(gpu.AllProbes(), ", "))
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
		if gpu.SameBusID(d.BusID, busID) {
			return d.Index
		}
	}
	return cudaIndex
}

func readFacts(path string) (probe.Facts, error) {
	var f probe.Facts
	data, err := readFile("--replay", path, probe.MaxFactsSize)
	if err != nil {
		return f, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, usagef("--replay %s: not a gpurent facts file: %v", path, err)
	}
	if f.Version != probe.FactsVersion {
		return f, usagef("--replay %s: facts version %d, this gpurent reads version %d", path, f.Version, probe.FactsVersion)
	}
	// Judgement needs facts: missing or impossible ones would pass.
	if err := f.Validate(); err != nil {
		return f, usagef("--replay %s: facts that cannot be judged: %s", path, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return f, nil
}

// notThere refuses an output file that already exists, before any work:
// a bench record or a wipe report may be the evidence of a refund claim or
// of a clean release, and a second run must not replace it unasked.
func notThere(flag, path string) error {
	if path == "" {
		return nil
	}
	if _, err := os.Lstat(path); err == nil {
		return usagef("%s %s: the file exists and is not overwritten (it may be the record of an earlier run); choose a new name or move it away", flag, path)
	}
	// Found before measuring, not after.
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return usagef("%s %s: %s is not a directory", flag, path, filepath.Dir(path))
	}
	return nil
}

// writeFacts saves facts with a temporary file, fsync and rename, so an
// interrupted run never leaves half a file where a good one was.
func writeFacts(path string, f probe.Facts) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("--record %s: %w", path, err)
	}
	return nil
}

// colorful reports whether w is a terminal that wants colour (NO_COLOR unset).
func colorful(w io.Writer) bool {
	if _, off := os.LookupEnv("NO_COLOR"); off {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

func paint(s string, color bool) string {
	if !color {
		return s
	}
	code := map[string]string{bench.Pass: "32", bench.Warn: "33", bench.Fail: "31;1", bench.Skip: "2"}[strings.ToLower(s)]
	if code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func writeBench(w io.Writer, r *bench.Report, color bool) error {
	if err := writeChecks(w, r.Checks, r.Verdict, color, true); err != nil {
		return err
	}
	for _, c := range r.Checks {
		if c.ID == "gpu.present" && c.Status == bench.Skip {
			// A container started without GPU access passes every host
			// check; the verdict alone would read as "the GPU is fine".
			_, err := fmt.Fprintln(w, "(the host only: no GPU was found, so none was checked; --expect MODEL or --expect-gpus N makes that a failure)")
			return err
		}
	}
	return nil
}

// writeChecks prints checks as a table, the advice of those that are not
// a pass, and the verdict; bench and audit share it. withValues adds the
// measured and expected columns.
func writeChecks(w io.Writer, checks []bench.Check, verdict string, color, withValues bool) error {
	tab := report.NewTab("CHECK", "STATUS", "EVIDENCE")
	if withValues {
		tab = report.NewTab("CHECK", "STATUS", "MEASURED", "EXPECTED", "EVIDENCE")
	}
	for _, c := range checks {
		if withValues {
			tab.Row(c.ID, c.Status, value(c.Measured, c.Unit), value(c.Expected, c.Unit), c.Evidence)
		} else {
			tab.Row(c.ID, c.Status, c.Evidence)
		}
	}
	tab.Paint(1, func(s string) string { return paint(s, color) })
	if err := tab.Write(w); err != nil {
		return err
	}
	var advice []string
	for _, c := range checks {
		if c.Advice != "" && (c.Status == bench.Fail || c.Status == bench.Warn) {
			advice = append(advice, fmt.Sprintf("  %s %s: %s", paint(c.Status, color), c.ID, report.Safe(c.Advice)))
		}
	}
	if len(advice) > 0 {
		fmt.Fprintf(w, "\nadvice:\n%s\n", strings.Join(advice, "\n"))
	}
	fmt.Fprintf(w, "\nverdict: %s\n", paint(strings.ToUpper(verdict), color))
	return nil
}

func value(v any, unit string) string {
	if v == nil {
		return "-"
	}
	s := fmt.Sprint(v)
	if s == "" {
		return "-"
	}
	if unit != "" && unit != "model" && unit != "link" {
		s += " " + unit
	}
	return s
}

func newBenchHistory(g *globals) *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Past bench runs side by side, newest last",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 {
				return usagef("--last (-n): want at least 1, got %d", n)
			}
			path, err := bench.HistoryPath()
			if err != nil {
				return err
			}
			entries, skipped, err := bench.ReadHistory(path)
			if err != nil {
				return err
			}
			if len(entries) > n {
				entries = entries[len(entries)-n:]
			}
			if g.output == report.JSON {
				if entries == nil {
					entries = []bench.HistoryEntry{}
				}
				return report.WriteJSON(g.stdout, map[string]any{"path": path, "runs": entries, "skipped_lines": skipped})
			}
			if len(entries) == 0 {
				fmt.Fprintf(g.stdout, "no bench runs yet (%s)\n", path)
				return nil
			}
			tab := report.NewTab("TIME", "VERDICT", "GPUS", "EXPECT", "CPUS", "STEAL", "DISK", "FAILED", "WARNED")
			for _, e := range entries {
				var gpus []string
				for _, x := range e.GPUs {
					gpus = append(gpus, x.Name)
				}
				gs := "-"
				if len(gpus) > 0 {
					gs = fmt.Sprintf("%d× %s", len(gpus), gpus[0])
				}
				tab.Row(e.Time.Local().Format("2006-01-02 15:04"), e.Verdict, gs, orDash(e.Expect), fmt.Sprint(e.CPUs),
					value(e.Measure["host.steal"], "%"), value(e.Measure["host.disk"], "MB/s"), orDash(strings.Join(e.Failed, ",")), orDash(strings.Join(e.Warned, ",")))
			}
			if err := tab.Write(g.stdout); err != nil {
				return err
			}
			if skipped > 0 {
				fmt.Fprintf(g.stdout, "\n%d unreadable lines skipped in %s\n", skipped, path)
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&n, "last", "n", 20, "show the last N runs")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
