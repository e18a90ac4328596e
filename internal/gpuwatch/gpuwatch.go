// Package gpuwatch keeps an eye on how busy the GPUs of a training command
// are. A rented GPU is billed by the hour whether its kernels run or it
// waits: on a DataLoader with too few workers, on one CPU core decoding
// images, on a slow disk, on a collective that will never finish, or on
// nothing because the command runs on the CPU (a CPU-only PyTorch wheel,
// device="cpu"). NVML's utilization, the share of a sample period in which
// a kernel ran, shows each of these, and nothing else gpurent watches does:
// the command still prints and saves checkpoints.
package gpuwatch

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Reading is one GPU's utilization at one moment.
type Reading struct {
	Index int    // NVML's index
	UUID  string // "GPU-5b8c9a3e-..."
	Busy  float64
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
	// Window is warned of; zero never warns.
	Min float64
	// Repeat is how often the warning may come again while the GPUs stay
	// below Min (1 h if zero).
	Repeat time.Duration
	// Running says whether the command runs now: between a failure and
	// the restart the GPU is idle by design.
	Running func() bool
	Log     func(format string, args ...any)
	// Event hears the warning as kind "gpu_idle"; nil hears nothing.
	Event func(kind, text string)
}

// Watch samples while Run runs; its methods may be called meanwhile.
type Watch struct {
	cfg Config

	mu      sync.Mutex
	latest  []Reading
	window  []sample    // this start's judged samples, oldest first
	upSince time.Time   // when the command was first seen running since it last was not
	total   map[int]sum // over the whole run, while the command ran
	warned  time.Time
	failed  bool // a read failed: said once
}

type sample struct {
	at   time.Time
	busy map[int]float64
}

type sum struct {
	busy float64
	n    int
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
	return &Watch{cfg: cfg, total: map[int]sum{}}
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
	text := w.add(now, rs)
	if text != "" {
		w.cfg.Log("warning: %s", text)
		if w.cfg.Event != nil {
			w.cfg.Event("gpu_idle", text)
		}
	}
	return true
}

// gap forgets the window: the command does not run, or its GPUs were not
// read.
func (w *Watch) gap() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.latest, w.upSince, w.window = nil, time.Time{}, nil
}

// add records rs, taken at now, and returns the warning to give, if any.
func (w *Watch) add(now time.Time, rs []Reading) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.latest = rs
	if w.upSince.IsZero() {
		w.upSince = now
	}
	s := sample{at: now, busy: map[int]float64{}}
	for _, r := range rs {
		s.busy[r.Index] = r.Busy
		t := w.total[r.Index]
		w.total[r.Index] = sum{t.busy + r.Busy, t.n + 1}
	}
	if now.Sub(w.upSince) < w.cfg.Warmup {
		return ""
	}
	w.window = append(w.window, s)
	for len(w.window) > 0 && now.Sub(w.window[0].at) > w.cfg.Window {
		w.window = w.window[1:]
	}
	// Judged once the samples span the whole window (one interval of
	// slack: the first sample stands for the interval before it), and
	// again only after Repeat.
	if now.Sub(w.upSince)-w.cfg.Warmup < w.cfg.Window-w.cfg.Every || w.cfg.Min <= 0 ||
		(!w.warned.IsZero() && now.Sub(w.warned) < w.cfg.Repeat) {
		return ""
	}
	text := w.judge()
	if text != "" {
		w.warned = now
	}
	return text
}

// judge words a warning about the GPUs whose mean over the window is
// below Min, or returns "".
func (w *Watch) judge() string {
	means := meanBusy(w.window)
	var low []int
	idle := true
	for _, i := range sortedKeys(means) {
		if means[i] < w.cfg.Min {
			low = append(low, i)
			idle = idle && means[i] < 1
		}
	}
	if len(low) == 0 {
		return ""
	}
	mins := strconv.FormatFloat(w.cfg.Window.Minutes(), 'f', -1, 64)
	if idle {
		return fmt.Sprintf("%s ran no kernel in the last %s min while the command ran (NVML utilization 0%%): nothing on this machine uses %s. If the command should (a CPU-only PyTorch, device=\"cpu\", CUDA_VISIBLE_DEVICES), or it hangs, the hours are lost: they are billed all the same",
			gpus(low), mins, pronoun(len(low)))
	}
	parts := make([]string, len(low))
	for k, i := range low {
		parts[k] = fmt.Sprintf("GPU %d %.0f%%", i, means[i])
	}
	return fmt.Sprintf("GPUs ran kernels only part of the last %s min (%s; NVML utilization, under --gpu-busy-min %g): the rest of the time they wait, on data loading (more DataLoader workers, pin_memory), the CPU or the disk, or on a hung command, and are billed all the same",
		mins, strings.Join(parts, ", "), w.cfg.Min)
}

// Latest is the newest reading of each watched GPU (none before the
// first, or while the command does not run).
func (w *Watch) Latest() []Reading {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.latest)
}

// Summary is one line on how busy the GPUs were while the command ran,
// or "" when nothing was sampled.
func (w *Watch) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.total) == 0 {
		return ""
	}
	var parts []string
	for _, i := range sortedKeys(w.total) {
		t := w.total[i]
		parts = append(parts, fmt.Sprintf("GPU %d %.0f%%", i, t.busy/float64(t.n)))
	}
	return fmt.Sprintf("GPU utilization while the command ran (NVML, every %v): %s", w.cfg.Every, strings.Join(parts, ", "))
}

func meanBusy(ss []sample) map[int]float64 {
	sums := map[int]sum{}
	for _, s := range ss {
		for i, b := range s.busy {
			t := sums[i]
			sums[i] = sum{t.busy + b, t.n + 1}
		}
	}
	out := map[int]float64{}
	for i, t := range sums {
		out[i] = t.busy / float64(t.n)
	}
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

func gpus(idx []int) string {
	s := make([]string, len(idx))
	for k, i := range idx {
		s[k] = strconv.Itoa(i)
	}
	if len(s) == 1 {
		return "GPU " + s[0]
	}
	return "GPUs " + strings.Join(s, ", ")
}
