// Package gpuwatch keeps an eye on the GPUs while a training command runs.
// A rented GPU is billed by the hour whether its kernels run or it waits:
// on a DataLoader with too few workers, on one CPU core decoding images,
// on a slow disk, on a collective that will never finish, or on nothing
// because the command runs on the CPU (a CPU-only PyTorch wheel,
// device="cpu"). NVML's utilization, the share of a sample period in which
// a kernel ran, shows each of these, and nothing else gpurent watches does:
// the command still prints and saves checkpoints. And a card that passed
// gpurent bench idle may overheat after twenty minutes of training; the
// hardware then slows it down (NVML's clock event reasons), and the hours
// bought at full speed run at less.
package gpuwatch

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Reading is one GPU at one moment.
type Reading struct {
	Index int    // NVML's index
	UUID  string // "GPU-5b8c9a3e-..."
	Busy  float64
	// HeldBack names the slowdowns active that are not the work's or the
	// power limit's doing: the hardware's or the driver's for heat, the
	// power brake (hw_thermal_slowdown, ...); empty when none is.
	HeldBack []string
	// Lost: the GPU fell off the bus and answers nothing (Busy and
	// HeldBack mean nothing then).
	Lost bool
}

// Meter reads the GPUs' utilization now (NVML in gpurent).
type Meter interface {
	Read(ctx context.Context) ([]Reading, error)
}

// Config is one watch.
type Config struct {
	Meter Meter
	// Every is the sampling interval (10 s if zero).
	Every time.Duration
	// Window is the span judged (10 min if zero), and Warmup what follows
	// each start of the command unjudged (5 min if zero): loading data and
	// the model and compiling keep the GPU waiting, and that is no fault.
	Window, Warmup time.Duration
	// Min is the utilization (percent) under which a GPU's mean over the
	// Window is warned of; zero never warns of idle GPUs.
	Min float64
	// Repeat is how often a warning of one kind may come again while its
	// cause lasts (1 h if zero).
	Repeat time.Duration
	// Running says whether the command runs now: between a failure and
	// the restart the GPU is idle by design.
	Running func() bool
	Log     func(format string, args ...any)
	// Event hears the warnings, kind "gpu_idle", "gpu_throttled" or
	// "gpu_lost"; nil hears nothing.
	Event func(kind string, text i18n.Text)
	// CPU reads the machine's cumulative CPU time and the part of it the
	// hypervisor stole for other guests (/proc/stat); a GPU that waits on
	// an oversold host's CPUs is said to. Nil reads nothing.
	CPU func() (total, steal uint64, ok bool)
	// Price is what the machine costs an hour (gpurent run --price), to
	// put a price on waiting GPUs; zero says nothing of money.
	Price    float64
	Currency string
}

// stealSaid is the share of CPU time stolen over the window from which an
// idle warning names it: bench's host.steal warns from 5%.
const stealSaid = 0.05

// throttledShare is the share of a window's samples with a slowdown
// (HeldBack) from which a GPU is warned of. A healthy, well-cooled card
// under load should show none: it runs into its power limit
// (sw_power_cap), which is not counted. A judgement, not a measured
// figure.
const throttledShare = 0.2

// Watch samples while Run runs; its methods may be called meanwhile.
type Watch struct {
	cfg Config

	mu      sync.Mutex
	latest  []Reading
	window  []sample    // this start's judged samples, oldest first
	upSince time.Time   // when the command was first seen running since it last was not
	total   map[int]sum // over the whole run, while the command ran
	warned  map[string]time.Time
	lost    map[int]bool // GPUs found lost, each said once
	failed  bool         // a read failed: said once
	busyAt  time.Time    // the last sample with a GPU at Min or above
}

// LastBusy is when a GPU was last seen at Config.Min or above (zero:
// never): gpurent run --idle-stop takes a machine whose GPUs work as busy.
func (w *Watch) LastBusy() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.busyAt
}

type sample struct {
	at                 time.Time
	rs                 map[int]Reading
	cpuTotal, cpuSteal uint64
	cpuOK              bool
}

type sum struct {
	busy float64
	n    int
	held int      // samples with a slowdown
	why  []string // the slowdowns seen
}

// New makes a watch; Run starts it.
func New(cfg Config) *Watch {
	if cfg.Every <= 0 {
		cfg.Every = 10 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Minute
	}
	if cfg.Warmup <= 0 {
		cfg.Warmup = 5 * time.Minute
	}
	if cfg.Repeat <= 0 {
		cfg.Repeat = time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	return &Watch{cfg: cfg, total: map[int]sum{}, warned: map[string]time.Time{}, lost: map[int]bool{}}
}

// Run samples every Every until ctx ends. While the command does not run
// it looks every second (no NVML call), so that the first sample of a
// start is not an interval late.
func (w *Watch) Run(ctx context.Context) {
	for {
		wait := w.cfg.Every
		if !w.Tick(ctx, time.Now()) {
			wait = min(wait, time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Tick takes one sample at now and judges the window; Run calls it, and
// tests with a clock of their own. It says whether the command runs.
func (w *Watch) Tick(ctx context.Context, now time.Time) bool {
	if w.cfg.Running != nil && !w.cfg.Running() {
		w.gap()
		return false
	}
	// Every GPU of the machine is watched, not only those the command was
	// given: an idle one is billed as much, and which GPU NVML's numbering
	// means by CUDA_VISIBLE_DEVICES=1 depends on CUDA_DEVICE_ORDER.
	rs, err := w.cfg.Meter.Read(ctx)
	if err != nil || len(rs) == 0 {
		w.mu.Lock()
		first := err != nil && !w.failed
		w.failed = w.failed || err != nil
		w.mu.Unlock()
		if first {
			w.cfg.Log("GPU utilization could not be read (%v): idle GPUs are not watched while it cannot", err)
		}
		w.gap() // judge nothing across it
		return true
	}
	for _, wn := range w.add(now, rs) {
		w.cfg.Log("warning: %s", wn.text)
		if w.cfg.Event != nil {
			w.cfg.Event(wn.kind, wn.text)
		}
	}
	return true
}

type warning struct {
	kind string
	text i18n.Text
}

// gap forgets the window: the command does not run, or its GPUs were not
// read.
func (w *Watch) gap() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.latest, w.upSince, w.window = nil, time.Time{}, nil
}

// add records rs, taken at now, and returns the warnings to give.
func (w *Watch) add(now time.Time, rs []Reading) []warning {
	var cpuTotal, cpuSteal uint64
	cpuOK := false
	if w.cfg.CPU != nil {
		cpuTotal, cpuSteal, cpuOK = w.cfg.CPU()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.latest = rs
	if w.upSince.IsZero() {
		w.upSince = now
	}
	// A lost GPU is said at once: the command cannot use it, and nothing
	// will until the machine is rebooted or replaced.
	var out []warning
	s := sample{at: now, rs: map[int]Reading{}, cpuTotal: cpuTotal, cpuSteal: cpuSteal, cpuOK: cpuOK}
	for _, r := range rs {
		if r.Lost {
			if !w.lost[r.Index] {
				w.lost[r.Index] = true
				out = append(out, warning{"gpu_lost", i18n.Textf("GPU %d has fallen off the bus (NVML: GPU_IS_LOST): a hardware or driver fault (Xid 79 in dmesg); no process can use it until the machine is rebooted, and often the provider must replace it: this machine is not worth paying for until it is fixed", r.Index)})
			}
			continue
		}
		s.rs[r.Index] = r
		w.total[r.Index] = w.total[r.Index].add(r)
		if r.Busy > 0 && r.Busy >= w.cfg.Min {
			w.busyAt = now
		}
	}
	if now.Sub(w.upSince) < w.cfg.Warmup {
		return out
	}
	w.window = append(w.window, s)
	for len(w.window) > 0 && now.Sub(w.window[0].at) > w.cfg.Window {
		w.window = w.window[1:]
	}
	// Judged once the samples span the whole window (one interval of
	// slack: the first sample stands for the interval before it), each
	// kind again only after Repeat.
	if now.Sub(w.upSince)-w.cfg.Warmup < w.cfg.Window-w.cfg.Every {
		return out
	}
	sums := map[int]sum{}
	for _, s := range w.window {
		for i, r := range s.rs {
			sums[i] = sums[i].add(r)
		}
	}
	for _, c := range []struct {
		kind  string
		judge func(map[int]sum) i18n.Text
	}{{"gpu_idle", w.idle}, {"gpu_throttled", w.throttled}} {
		if t, ok := w.warned[c.kind]; ok && now.Sub(t) < w.cfg.Repeat {
			continue
		}
		if text := c.judge(sums); !text.IsZero() {
			w.warned[c.kind] = now
			out = append(out, warning{c.kind, text})
		}
	}
	return out
}

func (t sum) add(r Reading) sum {
	t.busy += r.Busy
	t.n++
	if len(r.HeldBack) > 0 {
		t.held++
		for _, why := range r.HeldBack {
			if !slices.Contains(t.why, why) {
				t.why = append(t.why, why)
			}
		}
	}
	return t
}

func (t sum) mean() float64 { return t.busy / float64(t.n) }

// idle words a warning about the GPUs whose mean utilization over the
// window is below Min, or returns "".
func (w *Watch) idle(sums map[int]sum) i18n.Text {
	if w.cfg.Min <= 0 {
		return i18n.Text{}
	}
	var low []int
	none := true
	for _, i := range sortedKeys(sums) {
		if m := sums[i].mean(); m < w.cfg.Min {
			low = append(low, i)
			none = none && m < 1
		}
	}
	if len(low) == 0 {
		return i18n.Text{}
	}
	mins := strconv.FormatFloat(w.cfg.Window.Minutes(), 'f', -1, 64)
	if none {
		return i18n.Textf("%s ran no kernel in the last %s min while the command ran (NVML utilization 0%%): nothing on this machine uses %s. If the command should (a CPU-only PyTorch, device=\"cpu\", CUDA_VISIBLE_DEVICES), or it hangs, the hours are lost: they are billed all the same%s",
			gpus(low), mins, pronoun(len(low)), w.waste(sums))
	}
	parts := make([]string, len(low))
	for k, i := range low {
		parts[k] = fmt.Sprintf("GPU %d %.0f%%", i, sums[i].mean())
	}
	text := i18n.Textf("GPUs ran kernels only part of the last %s min (%s; NVML utilization, under --gpu-busy-min %g): the rest of the time they wait, on data loading (more DataLoader workers, pin_memory), the CPU or the disk, or on a hung command, and are billed all the same%s",
		mins, strings.Join(parts, ", "), w.cfg.Min, w.waste(sums))
	if steal, ok := w.steal(); ok && steal >= stealSaid {
		text = i18n.Textf("%s%s", text, i18n.Textf(". Meanwhile the hypervisor gave %.0f%% of this machine's CPU time to other guests (steal): the host's CPUs are oversold, and the data loading starves", steal*100))
	}
	return text
}

// waste puts a price on the window's waiting: the machine's cost over it,
// and the part of it the GPUs spent idle (each GPU's share of the
// machine, times the share of the time it ran nothing). "" without a
// price.
func (w *Watch) waste(sums map[int]sum) i18n.Text {
	if w.cfg.Price <= 0 || len(sums) == 0 {
		return i18n.Text{}
	}
	cost := w.cfg.Price * w.cfg.Window.Hours()
	idle := 0.0
	for _, t := range sums {
		idle += max(0, 1-t.mean()/100)
	}
	idle /= float64(len(sums))
	return i18n.Textf(": of the %.2f %s these minutes cost (--price), about %.2f %s went to GPUs waiting", cost, w.cfg.Currency, cost*idle, w.cfg.Currency)
}

// steal is the share of CPU time stolen over the window, from its first
// and last samples that read the CPU.
func (w *Watch) steal() (float64, bool) {
	var first, last *sample
	for i := range w.window {
		if s := &w.window[i]; s.cpuOK {
			if first == nil {
				first = s
			}
			last = s
		}
	}
	if first == nil || last.cpuTotal <= first.cpuTotal || last.cpuSteal < first.cpuSteal {
		return 0, false
	}
	return float64(last.cpuSteal-first.cpuSteal) / float64(last.cpuTotal-first.cpuTotal), true
}

// throttled words a warning about the GPUs slowed down (HeldBack) in at
// least throttledShare of the window's samples, or returns "".
func (w *Watch) throttled(sums map[int]sum) i18n.Text {
	var parts []i18n.Text
	for _, i := range sortedKeys(sums) {
		t := sums[i]
		if share := float64(t.held) / float64(t.n); share >= throttledShare {
			parts = append(parts, i18n.Textf("GPU %d in %.0f%% of the samples (%s)", i, share*100, strings.Join(t.why, ", ")))
		}
	}
	if len(parts) == 0 {
		return i18n.Text{}
	}
	return i18n.Textf("the hardware slowed GPUs down in the last %s min while the command ran: %s (NVML clock event reasons). They overheat or their power is braked, and run below the speed you pay for: keep this line and ask the provider for another machine or a refund",
		strconv.FormatFloat(w.cfg.Window.Minutes(), 'f', -1, 64), i18n.Join(parts, "; "))
}

// Lost says which GPUs fell off the bus, as a cause of the command's
// failure ("" when none did).
func (w *Watch) Lost() i18n.Text {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lost) == 0 {
		return i18n.Text{}
	}
	return i18n.Textf("%s fell off the bus (NVML: GPU_IS_LOST): a hardware or driver fault that restarts do not mend", gpus(sortedKeys(w.lost)))
}

// Latest is the newest reading of each watched GPU (none before the
// first, or while the command does not run).
func (w *Watch) Latest() []Reading {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.latest)
}

// Summary is one line on how busy the GPUs were while the command ran,
// how often the hardware slowed them and which fell off the bus, or ""
// when nothing was sampled.
func (w *Watch) Summary() i18n.Text {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out, held []i18n.Text
	var busy []string
	for _, i := range sortedKeys(w.total) {
		t := w.total[i]
		busy = append(busy, fmt.Sprintf("GPU %d %.0f%%", i, t.mean()))
		if t.held > 0 {
			held = append(held, i18n.Textf("GPU %d in %.0f%% of the samples (%s)", i, float64(t.held)/float64(t.n)*100, strings.Join(t.why, ", ")))
		}
	}
	if len(busy) > 0 {
		out = append(out, i18n.Textf("GPU utilization while the command ran (NVML, every %v): %s", w.cfg.Every, strings.Join(busy, ", ")))
	}
	if len(held) > 0 {
		out = append(out, i18n.Textf("slowed down by the hardware: %s", i18n.Join(held, "; ")))
	}
	if len(w.lost) > 0 {
		out = append(out, i18n.Textf("fallen off the bus: %s", gpus(sortedKeys(w.lost))))
	}
	return i18n.Join(out, "; ")
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func pronoun(n int) i18n.Text {
	if n == 1 {
		return i18n.Textf("it")
	}
	return i18n.Textf("them")
}

func gpus(idx []int) i18n.Text {
	s := make([]string, len(idx))
	for k, i := range idx {
		s[k] = strconv.Itoa(i)
	}
	if len(s) == 1 {
		return i18n.Textf("GPU %s", s[0])
	}
	return i18n.Textf("GPUs %s", strings.Join(s, ", "))
}
