//go:build unix

package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/gpurent/gpurent/internal/gpuwatch"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/money"
	"github.com/gpurent/gpurent/internal/probe"
)

// nvmlMeter is gpuwatch's Meter on NVML.
type nvmlMeter struct{ n *probe.NVML }

func (m nvmlMeter) Read(context.Context) ([]gpuwatch.Reading, error) {
	us, err := m.n.Utilizations()
	if err != nil {
		return nil, err
	}
	rs := make([]gpuwatch.Reading, len(us))
	for i, u := range us {
		rs[i] = gpuwatch.Reading{Index: u.Index, UUID: u.UUID, Busy: float64(u.GPU), Lost: u.Lost}
		if u.EventsRead {
			rs[i].HeldBack = probe.HeldBack(u.ClockEvents)
		}
	}
	return rs, nil
}

// gpuWatch is gpurent run's watch of the GPUs (gpuwatch), begun in the
// background: without persistence mode NVML's first initialisation loads
// the driver for every GPU, which can take seconds that the command's start
// should not wait for.
type gpuWatch struct {
	w      atomic.Pointer[gpuwatch.Watch]
	cancel func()
	done   chan struct{}
}

// watch is the watch once NVML answered, else nil.
func (g *gpuWatch) watch() *gpuwatch.Watch {
	if g == nil {
		return nil
	}
	return g.w.Load()
}

// stop ends the watch and lets go of NVML.
func (g *gpuWatch) stop() {
	g.cancel()
	<-g.done
}

// startGPUWatch watches how busy this machine's GPUs are, and whether the
// hardware slows them down, while the command runs, where NVML answers; on
// a machine without an NVIDIA GPU it says nothing.
func startGPUWatch(ctx context.Context, busyMin float64, price money.Hourly, running func() bool, logf func(string, ...any), event func(kind string, text i18n.Text)) *gpuWatch {
	ctx, cancel := context.WithCancel(ctx)
	g := &gpuWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		n, err := probe.OpenNVML("")
		if err != nil {
			// NVML found and failing (a driver and library of different
			// versions) is worth a line; no NVML, as on a CPU machine,
			// is not.
			if !probe.IsNoLibrary(err) {
				logf("GPU utilization is not watched: %v", err)
			}
			return
		}
		defer n.Close()
		cpu := func() (uint64, uint64, bool) {
			total, steal, err := probe.CPUTimes()
			return total, steal, err == nil
		}
		w := gpuwatch.New(gpuwatch.Config{Meter: nvmlMeter{n}, Min: busyMin, Running: running, Log: logf, Event: event, CPU: cpu,
			Price: price.Amount, Currency: price.Currency})
		g.w.Store(w)
		w.Run(ctx)
	}()
	return g
}

// busyText is the status line's word on the GPUs: "GPU 93%", or "GPUs 93%
// 12%" in NVML's order; "" with no watch or before its first reading.
func busyText(g *gpuWatch) string {
	w := g.watch()
	if w == nil {
		return ""
	}
	rs := w.Latest()
	if len(rs) == 0 {
		return ""
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.0f%%", r.Busy)
		if r.Lost {
			parts[i] = "LOST"
		}
	}
	if len(rs) == 1 {
		return "GPU " + parts[0]
	}
	return "GPUs " + strings.Join(parts, " ")
}

// writeBusy writes the GPUs' newest readings in the Prometheus text
// format, after the run's own metrics. A lost GPU has only
// gpurent_gpu_lost.
func writeBusy(w io.Writer, rs []gpuwatch.Reading) {
	if len(rs) == 0 {
		return
	}
	one := func(r gpuwatch.Reading) string { return fmt.Sprintf("{gpu=\"%d\",uuid=%q}", r.Index, r.UUID) }
	fmt.Fprintf(w, "# HELP gpurent_gpu_utilization_percent Share of NVML's last sample period in which a kernel ran on the GPU (newest reading, every 10 s while the command runs).\n# TYPE gpurent_gpu_utilization_percent gauge\n")
	for _, r := range rs {
		if !r.Lost {
			fmt.Fprintf(w, "gpurent_gpu_utilization_percent%s %.0f\n", one(r), r.Busy)
		}
	}
	fmt.Fprintf(w, "# HELP gpurent_gpu_slowed_down Whether the hardware or the driver slows the GPU for heat or a power brake (NVML clock event reasons; newest reading).\n# TYPE gpurent_gpu_slowed_down gauge\n")
	for _, r := range rs {
		if !r.Lost {
			fmt.Fprintf(w, "gpurent_gpu_slowed_down%s %d\n", one(r), min(len(r.HeldBack), 1))
		}
	}
	fmt.Fprintf(w, "# HELP gpurent_gpu_lost Whether the GPU has fallen off the bus (NVML GPU_IS_LOST).\n# TYPE gpurent_gpu_lost gauge\n")
	for _, r := range rs {
		lost := 0
		if r.Lost {
			lost = 1
		}
		fmt.Fprintf(w, "gpurent_gpu_lost{gpu=\"%d\"} %d\n", r.Index, lost)
	}
}

// metricsHandler serves the supervisor's metrics, once the GPU watch has
// begun the GPUs' newest readings, and the rest (what the kernel log
// reported, what the machine has cost).
func metricsHandler(m io.WriterTo, g *gpuWatch, rest ...io.WriterTo) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4")
		m.WriteTo(rw)
		if w := g.watch(); w != nil {
			writeBusy(rw, w.Latest())
		}
		for _, r := range rest {
			r.WriteTo(rw)
		}
	})
}
