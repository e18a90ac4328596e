package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/bench"
	"github.com/gpurent/gpurent/internal/catalog"
	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/measure"
	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/render"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/specs"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/usage"
)

// offerOrder fills the order from an offer of the catalog (--catalog
// files merged over the embedded one): the GPU it sells, with the memory
// it states, how many an instance has, and what joins them where the
// catalog says. A flag the user gave wins. An offer whose GPU names no
// datasheet row is bad usage: bench could not judge the card against it,
// so --expect must say what it is.
func offerOrder(g *globals, fs *pflag.FlagSet, tab *specs.Table, id string, order *bench.Order) error {
	cat, err := loadCatalog(g)
	if err != nil {
		return err
	}
	o, err := catalog.ByID(cat.Offers, id)
	if err != nil {
		return usagef("--offer: %v", err)
	}
	if !fs.Changed("expect") {
		order.GPU = o.OrderedGPU()
		if len(tab.Match(order.GPU)) == 0 {
			return usagef("--offer %s: its GPU %q is no model of the datasheet table, so the card cannot be judged against it: say which it is with --expect", o.ID, o.GPU)
		}
	}
	if !fs.Changed("expect-gpus") {
		order.GPUs = o.GPUs
	}
	if !fs.Changed("expect-interconnect") && o.Interconnect != "" {
		order.Interconnect, order.InterconnectSource = o.Interconnect, "offer "+o.ID+": "+o.InterconnectSource
	}
	return nil
}

// exitCode carries an exit code through cobra without a message: the
// report already said everything.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// benchOptions are bench's flags.
type benchOptions struct {
	expect, offerID                             string
	expectGPUs, expectCPUs                      int
	expectRAM, expectCUDA, expectDisk, duration string
	expectInterconnect                          string
	dataDir, record, replay, backend, probes    string
	soak                                        string
	diskMB                                      int
	noHistory, full, memtest, links             bool
}

func newBench(g *globals) *cobra.Command {
	var o benchOptions
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
  gpurent bench --soak 2m --memtest
  gpurent bench --record facts.json -o json > report.json
  gpurent bench --replay facts.json --expect "A100 80GB SXM"`,
		Args: args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, g, &o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.expect, "expect", "", `the GPU you ordered, e.g. "A100 80GB SXM", "H100 SXM", "RTX 4090"`)
	f.IntVar(&o.expectGPUs, "expect-gpus", 0, "the number of GPUs you ordered")
	f.StringVar(&o.offerID, "offer", "", "the catalog offer you rented, by its id as quote prints it: its GPU model, memory, count and, where the catalog says, interconnect are the order (--expect, --expect-gpus, --expect-interconnect override)")
	f.StringVar(&o.expectInterconnect, "expect-interconnect", "", "what the offer promised joins its GPUs: nvlink (fails when a GPU has none to another) or pcie; any sets aside what --offer's catalog entry promises")
	f.IntVar(&o.expectCPUs, "expect-cpus", 0, "the CPUs (vCPUs, cores) the offer promised: fails when this container may use fewer")
	f.StringVar(&o.expectCUDA, "expect-cuda", "", "the CUDA version your software is built with, e.g. 12.8: fails when the driver is too old for it (PyTorch installs found are judged too)")
	f.StringVar(&o.expectDisk, "expect-disk", "", "the size of the disk --data-dir is on, as the offer promised, e.g. 50GB (a bare number is GB): fails below 95% of it")
	f.StringVar(&o.expectRAM, "expect-ram", "", "the RAM the offer promised, e.g. 120GB or 128GiB (a bare number is GB): fails below 95% of it")
	f.StringVar(&o.duration, "duration", "3s", "how long to sample GPU activity and CPU steal, and to run the sustained-launch probe (10s with --full)")
	f.StringVar(&o.dataDir, "data-dir", ".", "directory whose disk is measured (where your data and checkpoints go)")
	f.IntVar(&o.diskMB, "disk-mb", 256, "MB written and read back to measure the disk (0 skips)")
	f.StringVar(&o.record, "record", "", "save the raw facts to this JSON file")
	f.StringVar(&o.replay, "replay", "", "judge facts saved with --record instead of measuring")
	f.BoolVar(&o.noHistory, "no-history", false, "do not add this run to the local history")
	f.StringVar(&o.backend, "backend", "auto", "compute probes: auto (cuda, else torch, where a GPU is found), cuda, torch, cpu or none")
	f.BoolVar(&o.full, "full", false, "full mode: probe every GPU, longer repetitions, a 10 s --duration unless set")
	f.StringVar(&o.probes, "probes", "", "run only these compute probes, comma-separated (e.g. sustained to check for sharing); all when empty")
	f.StringVar(&o.soak, "soak", "", "also run a checked GEMM loop on every GPU at once for this long (e.g. 2m), with power, clocks and temperature sampled: throttling, power caps and wrong results show only under minutes of load")
	f.BoolVar(&o.memtest, "memtest", false, "also test the free memory of every GPU with 73 pattern passes, after reading all of it for residue")
	f.BoolVar(&o.links, "links", false, "measure the links between GPUs (copies, NCCL's all-reduce) even with one GPU, where NCCL runs one rank; with two or more they are always measured")
	cmd.AddCommand(newBenchHistory(g))
	return cmd
}

// runBench measures this machine (or reads --replay's facts), judges them
// against the order and renders the verdict: exit 3 on a fail.
func runBench(cmd *cobra.Command, g *globals, o *benchOptions) error {
	if o.expectGPUs < 0 || (o.expectGPUs == 0 && cmd.Flags().Changed("expect-gpus")) {
		return usagef("--expect-gpus: want a positive number of GPUs, got %d", o.expectGPUs)
	}
	if o.expectCPUs < 0 || (o.expectCPUs == 0 && cmd.Flags().Changed("expect-cpus")) {
		return usagef("--expect-cpus: want a positive number of CPUs, got %d", o.expectCPUs)
	}
	ram, err := sizeFlag(cmd.Flags(), "expect-ram", o.expectRAM)
	if err != nil {
		return err
	}
	disk, err := sizeFlag(cmd.Flags(), "expect-disk", o.expectDisk)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("expect-interconnect") &&
		!slices.Contains([]string{bench.InterconnectNVLink, bench.InterconnectPCIe, bench.InterconnectAny}, o.expectInterconnect) {
		return usagef("--expect-interconnect: want nvlink, pcie or any, got %q", o.expectInterconnect)
	}
	if cmd.Flags().Changed("expect-cuda") && !cudaVersionRe.MatchString(o.expectCUDA) {
		return usagef("--expect-cuda: want a CUDA version such as 12.8 or 13.0, got %q", o.expectCUDA)
	}
	window, err := units.ParseDuration(o.duration)
	if err != nil || window <= 0 || window > 10*time.Minute {
		return usagef("--duration: want a positive duration up to 10m such as 3s or 30s, got %q", o.duration)
	}
	switch o.backend {
	case "auto", "cuda", "torch", "cpu", "none":
	default:
		return usagef("--backend: want auto, cuda, torch, cpu or none, got %q", o.backend)
	}
	only, err := measure.ParseProbes(o.probes)
	if err != nil {
		return err
	}
	var soak time.Duration
	if cmd.Flags().Changed("soak") {
		if soak, err = units.ParseDuration(o.soak); err != nil || soak < 10*time.Second || soak > time.Hour {
			return usagef("--soak: want a duration from 10s to 1h such as 2m, got %q", o.soak)
		}
	}
	if (soak > 0 || o.memtest || o.links) && o.replay != "" {
		return usagef("--soak, --memtest and --links measure this machine; --replay judges facts measured before (their soak, memory test and links, where they were measured)")
	}
	if (soak > 0 || o.memtest || o.links) && (o.backend == "none" || o.backend == "cpu") {
		return usagef("--soak, --memtest and --links run on the GPUs: --backend %s runs nothing there", o.backend)
	}
	if o.links && o.backend == "torch" {
		return usagef("--links measures through the CUDA driver and NCCL: --backend torch does not; use auto or cuda")
	}
	if o.full && !cmd.Flags().Changed("duration") {
		window = 10 * time.Second
	}
	if o.diskMB < 0 {
		return usagef("--disk-mb: want 0 (skip) or more, got %d", o.diskMB)
	}
	if err := notThere("--record", o.record); err != nil {
		return err
	}
	tab, err := specs.Load()
	if err != nil {
		return err
	}
	order := bench.Order{GPU: o.expect, GPUs: o.expectGPUs, CPUs: o.expectCPUs, RAM: ram, Disk: disk, CUDA: o.expectCUDA, Interconnect: o.expectInterconnect}
	if order.Interconnect != "" {
		order.InterconnectSource = "--expect-interconnect"
	}
	if o.offerID != "" {
		if err := offerOrder(g, cmd.Flags(), tab, o.offerID, &order); err != nil {
			return err
		}
	}
	// An order nobody can match is bad usage, before any measuring.
	if order.GPU != "" && len(tab.Match(order.GPU)) == 0 {
		_, err := bench.Judge(probe.Facts{}, tab, order, bench.DefaultLimits())
		return usage.Wrap(err)
	}
	var facts probe.Facts
	if o.replay != "" {
		if facts, err = measure.ReadFacts(o.replay); err != nil {
			return err
		}
	} else {
		if runtime.GOOS == "windows" {
			// The probes read Linux's /proc and /sys and the driver's
			// Linux libraries; rented GPUs run Linux.
			return i18n.Errorf("gpurent bench measures the rented Linux machine, not Windows: run it there (--record facts.json), and judge the facts here with --replay")
		}
		if st, err := os.Stat(o.dataDir); err != nil || !st.IsDir() {
			return usagef("--data-dir %s: not a directory", o.dataDir)
		}
		facts = measure.Machine(cmd.Context(), measure.Options{Window: window, DataDir: o.dataDir, DiskBytes: int64(o.diskMB) << 20,
			Backend: o.backend, Full: o.full, Probes: only, Memtest: o.memtest, Soak: soak, Links: o.links})
	}
	if o.record != "" {
		if err := measure.WriteFacts(o.record, facts); err != nil {
			return err
		}
	}
	rep, err := bench.Judge(facts, tab, order, bench.DefaultLimits())
	if err != nil {
		return usage.Wrap(err)
	}
	if o.replay == "" && !o.noHistory {
		if path, err := bench.HistoryPath(); err == nil {
			if err := bench.AppendHistory(path, rep.Entry()); err != nil {
				g.tr.Fprintf(cmd.ErrOrStderr(), "gpurent: warning: %v\n", err)
			}
		}
	}
	if g.output == report.JSON {
		if err := report.WriteJSON(g.stdout, rep); err != nil {
			return err
		}
	} else if err := render.Bench(g.stdout, g.tr, rep, render.Colorful(g.stdout)); err != nil {
		return err
	}
	if rep.Verdict == bench.Fail {
		return exitCode(exitcode.VerdictFail)
	}
	return nil
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

func newBenchHistory(g *globals) *cobra.Command {
	var last int
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Past bench runs side by side, newest last",
		Args:  args(noArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchHistory(g, last)
		},
	}
	cmd.Flags().IntVarP(&last, "last", "n", 20, "show the last N runs")
	return cmd
}

// runBenchHistory prints the last runs of the local history.
func runBenchHistory(g *globals, last int) error {
	if last < 1 {
		return usagef("--last (-n): want at least 1, got %d", last)
	}
	path, err := bench.HistoryPath()
	if err != nil {
		return err
	}
	entries, skipped, err := bench.ReadHistory(path)
	if err != nil {
		return err
	}
	if len(entries) > last {
		entries = entries[len(entries)-last:]
	}
	if g.output == report.JSON {
		if entries == nil {
			entries = []bench.HistoryEntry{}
		}
		return report.WriteJSON(g.stdout, benchHistoryJSON{Path: path, Runs: entries, SkippedLines: skipped})
	}
	return render.BenchHistory(g.stdout, g.tr, entries, skipped, path)
}
