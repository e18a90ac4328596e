package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/gpurent/gpurent/internal/gpuwatch"
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
		rs[i] = gpuwatch.Reading{Index: u.Index, UUID: u.UUID, Busy: float64(u.GPU)}
		if u.EventsRead {
			rs[i].HeldBack = probe.HeldBack(u.ClockEvents)
		}
	}
	return rs, nil
}

// startGPUWatch watches how busy this machine's GPUs are, and whether the
// hardware slows them down, while the command runs (gpuwatch), where NVML
// answers; on a machine without an NVIDIA GPU
// it returns nil and says nothing. stop ends the watch and lets go of NVML.
func startGPUWatch(ctx context.Context, min float64, running func() bool, logf func(string, ...any), event func(kind, text string)) (w *gpuwatch.Watch, stop func()) {
	n, err := probe.OpenNVML("")
	if err != nil {
		// A GPU machine whose NVML fails (a driver and library of
		// different versions) is worth a line; a CPU machine is not.
		if _, dev := os.Stat("/dev/nvidiactl"); dev == nil || !probe.IsNoGPU(err) {
			logf("GPU utilization is not watched: %v", err)
		}
		return nil, func() {}
	}
	w = gpuwatch.New(gpuwatch.Config{Meter: nvmlMeter{n}, Min: min, Running: running, Log: logf, Event: event})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	return w, func() { cancel(); <-done; n.Close() }
}

// busyText is the status line's word on the GPUs: "GPU 93%", or "GPUs 93%
// 12%" in NVML's order; "" with no watch or before its first reading.
func busyText(w *gpuwatch.Watch) string {
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
	}
	if len(rs) == 1 {
		return "GPU " + parts[0]
	}
	return "GPUs " + strings.Join(parts, " ")
}

// writeBusy writes the GPUs' newest utilization in the Prometheus text
// format, after the run's own metrics.
func writeBusy(w io.Writer, rs []gpuwatch.Reading) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "# HELP gpurent_gpu_utilization_percent Share of NVML's last sample period in which a kernel ran on the GPU (newest reading, every 10 s while the command runs).\n# TYPE gpurent_gpu_utilization_percent gauge\n")
	for _, r := range rs {
		fmt.Fprintf(w, "gpurent_gpu_utilization_percent{gpu=\"%d\",uuid=%q} %.0f\n", r.Index, r.UUID, r.Busy)
	}
	fmt.Fprintf(w, "# HELP gpurent_gpu_slowed_down Whether the hardware or the driver slows the GPU for heat or a power brake (NVML clock event reasons; newest reading).\n# TYPE gpurent_gpu_slowed_down gauge\n")
	for _, r := range rs {
		slowed := 0
		if len(r.HeldBack) > 0 {
			slowed = 1
		}
		fmt.Fprintf(w, "gpurent_gpu_slowed_down{gpu=\"%d\",uuid=%q} %d\n", r.Index, r.UUID, slowed)
	}
}

// metricsHandler serves the supervisor's metrics and, when w is not nil,
// the GPUs' utilization.
func metricsHandler(m io.WriterTo, w *gpuwatch.Watch) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4")
		m.WriteTo(rw)
		if w != nil {
			writeBusy(rw, w.Latest())
		}
	})
}
