package gpuwatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// script is a meter whose readings are a function of the time since t0.
type script struct {
	t0   time.Time
	now  *time.Time
	busy func(at time.Duration) []float64 // per GPU index
	held func(at time.Duration, gpu int) []string
	lost func(at time.Duration, gpu int) bool
	err  func(at time.Duration) error
}

func (s script) Read(context.Context) ([]Reading, error) {
	at := s.now.Sub(s.t0)
	if s.err != nil {
		if err := s.err(at); err != nil {
			return nil, err
		}
	}
	var rs []Reading
	for i, b := range s.busy(at) {
		r := Reading{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Busy: b}
		if s.held != nil {
			r.HeldBack = s.held(at, i)
		}
		if s.lost != nil && s.lost(at, i) {
			r = Reading{Index: i, Lost: true}
		}
		rs = append(rs, r)
	}
	return rs, nil
}

type logged struct {
	at   time.Duration
	text string
}

// drive runs a watch for span on a synthetic clock, one Tick every 10 s,
// and returns the warnings it logged, the events it sent and its summary.
func drive(t *testing.T, span time.Duration, busy func(time.Duration) []float64, edit func(*Config, *script)) (warns []logged, events []string, summary string) {
	t.Helper()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	m := &script{t0: t0, now: &now, busy: busy}
	cfg := Config{Meter: m, Min: 50,
		Log: func(format string, args ...any) {
			if line := fmt.Sprintf(format, args...); strings.HasPrefix(line, "warning: ") {
				warns = append(warns, logged{now.Sub(t0), line})
			} else {
				t.Logf("log: %s", line)
			}
		},
		Event: func(kind string, text i18n.Text) { events = append(events, kind) },
	}
	if edit != nil {
		edit(&cfg, m)
	}
	w := New(cfg)
	for ; now.Sub(t0) <= span; now = now.Add(10 * time.Second) {
		w.Tick(context.Background(), now)
	}
	return warns, events, w.Summary().String()
}

func flat(v ...float64) func(time.Duration) []float64 {
	return func(time.Duration) []float64 { return v }
}

func TestBusyGPUsRaiseNothing(t *testing.T) {
	warns, _, sum := drive(t, 3*time.Hour, flat(96, 91), nil)
	if len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
	if sum != "GPU utilization while the command ran (NVML, every 10s): GPU 0 96%, GPU 1 91%" {
		t.Errorf("summary %q", sum)
	}
}

// A data-starved GPU is named once the window after the warm-up is full
// (15 min in), and again an hour later, not at every sample.
func TestStarvedGPUWarnedHourly(t *testing.T) {
	warns, events, _ := drive(t, 2*time.Hour, flat(93, 31), nil)
	if len(warns) != 2 || warns[0].at < 14*time.Minute+50*time.Second || warns[0].at > 15*time.Minute || warns[1].at != warns[0].at+time.Hour {
		t.Fatalf("warnings %v", warns)
	}
	if !strings.Contains(warns[0].text, "(GPU 1 31%; NVML utilization, under --gpu-busy-min 50)") || strings.Contains(warns[0].text, "GPU 0") ||
		!strings.Contains(warns[0].text, "data loading") {
		t.Errorf("warning %q", warns[0].text)
	}
	if len(events) != 2 || events[0] != "gpu_idle" {
		t.Errorf("events %v", events)
	}
}

// With the machine's price, the warning says what the window cost and
// what of it went to waiting GPUs: 10 min at 2.50 USD/h is 0.42 USD; the
// GPUs waited 7% and 69% of it, 38% of the machine.
func TestStarvedGPUPriced(t *testing.T) {
	warns, _, _ := drive(t, 20*time.Minute, flat(93, 31), func(c *Config, _ *script) { c.Price, c.Currency = 2.5, "USD" })
	if len(warns) != 1 || !strings.HasSuffix(warns[0].text, "billed all the same: of the 0.42 USD these minutes cost (--price), about 0.16 USD went to GPUs waiting") {
		t.Fatalf("warnings %v", warns)
	}
}

// A GPU that runs nothing at all: the command may not use it.
func TestIdleGPUNamed(t *testing.T) {
	warns, _, sum := drive(t, 20*time.Minute, flat(0), nil)
	if len(warns) != 1 || !strings.Contains(warns[0].text, "GPU 0 ran no kernel in the last 10 min") || !strings.Contains(warns[0].text, "CPU-only PyTorch") {
		t.Fatalf("warnings %v", warns)
	}
	if sum != "GPU utilization while the command ran (NVML, every 10s): GPU 0 0%" {
		t.Errorf("summary %q", sum)
	}
}

// Loading the data and the model keeps the GPU idle for minutes after
// each start: not warned of.
func TestWarmupNotJudged(t *testing.T) {
	busy := func(at time.Duration) []float64 {
		if at < 5*time.Minute {
			return []float64{0}
		}
		return []float64{88}
	}
	if warns, _, _ := drive(t, time.Hour, busy, nil); len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
}

// Between a failure and the restart the GPU is idle by design; the window
// begins again with the restart, and its warm-up.
func TestRestartStartsAnewWindow(t *testing.T) {
	busy := func(at time.Duration) []float64 {
		if at < 13*time.Minute {
			return []float64{20} // low, but never for a whole window before the crash
		}
		return []float64{90}
	}
	edit := func(c *Config, s *script) {
		c.Running = func() bool {
			at := s.now.Sub(s.t0)
			return at < 13*time.Minute || at >= 14*time.Minute
		}
	}
	if warns, _, _ := drive(t, time.Hour, busy, edit); len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
	// The same low GPU without the restart is warned of.
	if warns, _, _ := drive(t, time.Hour, flat(20), nil); len(warns) != 1 {
		t.Errorf("without the restart: warnings %v", warns)
	}
}

// NVML that stops answering is said once and judged across no gap.
func TestReadErrorsSaidOnce(t *testing.T) {
	var logs []string
	edit := func(c *Config, s *script) {
		s.err = func(at time.Duration) error {
			if at > 8*time.Minute && at < 12*time.Minute {
				return errors.New("GPU is lost")
			}
			return nil
		}
		log := c.Log
		c.Log = func(format string, args ...any) {
			logs = append(logs, fmt.Sprintf(format, args...))
			log(format, args...)
		}
	}
	warns, _, _ := drive(t, 20*time.Minute, flat(10), edit)
	if len(warns) != 0 {
		t.Errorf("warnings across the gap: %v", warns)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], "GPU is lost") {
		t.Errorf("logs %q", logs)
	}
}

// --gpu-busy-min 0 judges nothing.
func TestOff(t *testing.T) {
	if warns, _, _ := drive(t, time.Hour, flat(0), func(c *Config, _ *script) { c.Min = 0 }); len(warns) != 0 {
		t.Errorf("--gpu-busy-min 0: warnings %v", warns)
	}
}

// A GPU the hardware slows down (here GPU 1 overheats half of the
// time) is named with the reasons, once an hour; one that does so rarely
// (GPU 0, a tenth of the time) is not, and the summary counts both.
func TestThrottledGPUWarned(t *testing.T) {
	held := func(at time.Duration, gpu int) []string {
		sec := int(at / time.Second)
		switch {
		case gpu == 1 && sec%40 == 0:
			return []string{"hw_thermal_slowdown"}
		case gpu == 1 && sec%40 == 10:
			return []string{"sw_thermal_slowdown", "hw_thermal_slowdown"}
		case gpu == 0 && sec%100 == 0:
			return []string{"hw_power_brake_slowdown"}
		}
		return nil
	}
	warns, events, sum := drive(t, 90*time.Minute, flat(97, 98), func(c *Config, s *script) { s.held = held })
	if len(warns) != 2 || warns[1].at != warns[0].at+time.Hour {
		t.Fatalf("warnings %v", warns)
	}
	if w := warns[0].text; !strings.Contains(w, "GPU 1 in 50% of the samples (hw_thermal_slowdown, sw_thermal_slowdown)") || strings.Contains(w, "GPU 0") ||
		!strings.Contains(w, "ask the provider for another machine") {
		t.Errorf("warning %q", w)
	}
	if len(events) != 2 || events[0] != "gpu_throttled" {
		t.Errorf("events %v", events)
	}
	if !strings.HasSuffix(sum, "GPU 0 97%, GPU 1 98%; slowed down by the hardware: GPU 0 in 10% of the samples (hw_power_brake_slowdown); GPU 1 in 50% of the samples (hw_thermal_slowdown, sw_thermal_slowdown)") {
		t.Errorf("summary %q", sum)
	}
	// The idle and the throttle warnings are separate kinds.
	warns, events, _ = drive(t, 20*time.Minute, flat(10, 98), func(c *Config, s *script) { s.held = held })
	if len(warns) != 2 || len(events) != 2 || events[0] != "gpu_idle" || events[1] != "gpu_throttled" {
		t.Errorf("idle and throttled: warnings %v, events %v", warns, events)
	}
}

// A GPU that falls off the bus is said at once (the warm-up
// notwithstanding), once, and named in the summary; the others are
// judged as before.
func TestLostGPUSaidAtOnce(t *testing.T) {
	lost := func(at time.Duration, gpu int) bool { return gpu == 1 && at >= 2*time.Minute }
	warns, events, sum := drive(t, 30*time.Minute, flat(95, 95), func(c *Config, s *script) { s.lost = lost })
	if len(warns) != 1 || warns[0].at != 2*time.Minute || !strings.Contains(warns[0].text, "GPU 1 has fallen off the bus (NVML: GPU_IS_LOST)") {
		t.Fatalf("warnings %v", warns)
	}
	if len(events) != 1 || events[0] != "gpu_lost" {
		t.Errorf("events %v", events)
	}
	if !strings.HasSuffix(sum, "GPU 0 95%, GPU 1 95%; fallen off the bus: GPU 1") {
		t.Errorf("summary %q", sum)
	}
	w := New(Config{Meter: &script{now: new(time.Time), busy: flat(90, 90), lost: lost}})
	if !w.Lost().IsZero() {
		t.Errorf("Lost before any loss: %q", w.Lost())
	}
	*w.cfg.Meter.(*script).now = time.Now().Add(time.Hour) // long after t0 (zero): GPU 1 is lost
	w.Tick(context.Background(), time.Now())
	if got := w.Lost().String(); got != "GPU 1 fell off the bus (NVML: GPU_IS_LOST): a hardware or driver fault that restarts do not mend" {
		t.Errorf("Lost = %q", got)
	}
	// Lost from the first sample: the summary has nothing else to say.
	_, _, sum = drive(t, time.Minute, flat(0), func(c *Config, s *script) { s.lost = func(time.Duration, int) bool { return true } })
	if sum != "fallen off the bus: GPU 0" {
		t.Errorf("summary %q", sum)
	}
}

// A GPU that waits on an oversold host: the idle warning says how much CPU
// time the hypervisor stole over the window; under 5% it says nothing of it.
func TestStarvedGPUOnAnOversoldHost(t *testing.T) {
	for _, c := range []struct {
		stealPerTick uint64 // of 100 ticks per 10 s sample
		want         string
	}{
		{30, "Meanwhile the hypervisor gave 30% of this machine's CPU time to other guests (steal)"},
		{4, ""},
	} {
		edit := func(cfg *Config, s *script) {
			cfg.CPU = func() (uint64, uint64, bool) {
				n := uint64(s.now.Sub(s.t0) / (10 * time.Second))
				return 1000 + 100*n, 7 + c.stealPerTick*n, true
			}
		}
		warns, _, _ := drive(t, 20*time.Minute, flat(30), edit)
		if len(warns) != 1 {
			t.Fatalf("steal %d%%: warnings %v", c.stealPerTick, warns)
		}
		if has := strings.Contains(warns[0].text, "hypervisor"); has != (c.want != "") || !strings.Contains(warns[0].text, c.want) {
			t.Errorf("steal %d%%: %q", c.stealPerTick, warns[0].text)
		}
	}
}
