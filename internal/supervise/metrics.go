package supervise

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Metrics are the run's counters, served in the Prometheus text format.
type Metrics struct {
	childUp           atomic.Int64
	restarts          atomic.Int64
	lastCommit        atomic.Int64 // unix seconds
	bytes             atomic.Int64
	uploadErrors      atomic.Int64
	notices           atomic.Int64
	lastUploadSeconds atomic.Int64 // milliseconds, despite the name
	lastCheckpoint    atomic.Int64 // unix seconds a new complete checkpoint last appeared
	stalls            atomic.Int64
	lastOutput        atomic.Int64 // unix seconds the command last printed (0: unknown)
	// started is when Run began (unix nanoseconds; 0: not yet), read by
	// the metrics server and the status line while Run sets it.
	started atomic.Int64
}

// since is the time since Run began, and false before.
func (m *Metrics) since(now time.Time) (time.Duration, bool) {
	t := m.started.Load()
	if t == 0 {
		return 0, false
	}
	return now.Sub(time.Unix(0, t)), true
}

// WriteTo writes the metrics in the Prometheus text exposition format.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	now := wallNow()
	age := -1.0
	if t := m.lastCommit.Load(); t > 0 {
		age = now.Sub(time.Unix(t, 0)).Seconds()
	}
	atRisk := age
	if d, ok := m.since(now); age < 0 && ok {
		atRisk = d.Seconds()
	}
	ckptAge := -1.0
	if t := m.lastCheckpoint.Load(); t > 0 {
		ckptAge = now.Sub(time.Unix(t, 0)).Seconds()
	}
	outAge := -1.0
	if t := m.lastOutput.Load(); t > 0 {
		outAge = now.Sub(time.Unix(t, 0)).Seconds()
	}
	n, err := fmt.Fprintf(w, `# HELP gpurent_child_up Whether the training command is running.
# TYPE gpurent_child_up gauge
gpurent_child_up %d
# HELP gpurent_restarts_total Restarts of the training command after a failure.
# TYPE gpurent_restarts_total counter
gpurent_restarts_total %d
# HELP gpurent_last_commit_age_seconds Seconds since the newest checkpoint was committed (-1: none yet).
# TYPE gpurent_last_commit_age_seconds gauge
gpurent_last_commit_age_seconds %.0f
# HELP gpurent_work_at_risk_seconds Seconds of training that a failure now would lose.
# TYPE gpurent_work_at_risk_seconds gauge
gpurent_work_at_risk_seconds %.0f
# HELP gpurent_uploaded_bytes_total Plaintext bytes of committed checkpoints.
# TYPE gpurent_uploaded_bytes_total counter
gpurent_uploaded_bytes_total %d
# HELP gpurent_last_upload_seconds Duration of the last checkpoint upload.
# TYPE gpurent_last_upload_seconds gauge
gpurent_last_upload_seconds %.3f
# HELP gpurent_upload_errors_total Uploads that failed and will be retried.
# TYPE gpurent_upload_errors_total counter
gpurent_upload_errors_total %d
# HELP gpurent_preemption_notices_total Preemption notices received.
# TYPE gpurent_preemption_notices_total counter
gpurent_preemption_notices_total %d
# HELP gpurent_last_checkpoint_age_seconds Seconds since a new complete checkpoint last appeared in --ckpt-dir, uploaded or not (-1: none yet).
# TYPE gpurent_last_checkpoint_age_seconds gauge
gpurent_last_checkpoint_age_seconds %.0f
# HELP gpurent_stalls_total Times the command was taken to hang: no new checkpoint for longer than --stall or three times its usual interval, or no output for longer than --silence or three times its longest silence.
# TYPE gpurent_stalls_total counter
gpurent_stalls_total %d
# HELP gpurent_last_output_age_seconds Seconds since the command last printed, as gpurent run --log sees it (-1: unknown).
# TYPE gpurent_last_output_age_seconds gauge
gpurent_last_output_age_seconds %.0f
`, m.childUp.Load(), m.restarts.Load(), age, atRisk, m.bytes.Load(), float64(m.lastUploadSeconds.Load())/1000, m.uploadErrors.Load(), m.notices.Load(),
		ckptAge, m.stalls.Load(), outAge)
	return int64(n), err
}

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		m.WriteTo(w)
	})
}

// Snapshot is the metrics at one moment, for a status line.
type Snapshot struct {
	ChildUp      bool
	Restarts     int64
	LastCommit   time.Time // zero: none yet
	AtRisk       time.Duration
	Bytes        int64
	UploadErrors int64
	Notices      int64
	// Silent is how long the command has printed nothing (with --log;
	// zero when unknown).
	Silent time.Duration
}

// Snapshot reads the counters.
func (m *Metrics) Snapshot(now time.Time) Snapshot {
	s := Snapshot{ChildUp: m.childUp.Load() == 1, Restarts: m.restarts.Load(), Bytes: m.bytes.Load(),
		UploadErrors: m.uploadErrors.Load(), Notices: m.notices.Load()}
	if t := m.lastCommit.Load(); t > 0 {
		s.LastCommit = time.Unix(t, 0)
		s.AtRisk = now.Sub(s.LastCommit)
	} else if d, ok := m.since(now); ok {
		s.AtRisk = d
	}
	if t := m.lastOutput.Load(); t > 0 {
		s.Silent = now.Sub(time.Unix(t, 0))
	}
	return s
}
