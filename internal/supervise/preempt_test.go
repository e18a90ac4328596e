//go:build unix

package supervise

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/preempt"
)

// fedNotices passes on the notices a test sends: a cloud played by hand.
type fedNotices chan preempt.Notice

func (f fedNotices) Watch(ctx context.Context) <-chan preempt.Notice { return f }

// AWS's rebalance recommendation asks the command for a checkpoint and
// lets it train on; the interruption notice that may follow stops it.
func TestAWSRebalance(t *testing.T) {
	var stage atomic.Int32 // 0 nothing, 1 rebalance, 2 rebalance and notice
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tok") })
	mux.HandleFunc("GET /latest/meta-data/spot/instance-action", func(w http.ResponseWriter, r *http.Request) {
		if stage.Load() < 2 {
			w.WriteHeader(404)
			return
		}
		fmt.Fprintf(w, `{"action": "terminate", "time": %q}`, time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339))
	})
	mux.HandleFunc("GET /latest/meta-data/events/recommendations/rebalance", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-aws-ec2-metadata-token") != "tok" {
			w.WriteHeader(401)
			return
		}
		if stage.Load() < 1 {
			w.WriteHeader(404)
			return
		}
		io.WriteString(w, `{"noticeTime": "2026-11-30T08:22:00Z"}`)
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()

	h := newHarness(t)
	setTrainerEnv(t, 7, "0", 1000000)
	t.Setenv("FAKE_EVERY", "1000000") // no periodic checkpoints: only those asked for
	t.Setenv("FAKE_LOG", h.log)
	cfg := h.config(t.TempDir(), h.b)
	cfg.Preemption = preempt.AWS(srv.URL, 20*time.Millisecond)
	logged := logTo(&cfg)
	sup, _ := New(cfg)
	go func() {
		wait := func(what string, ok func() bool) {
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !ok(); time.Sleep(20 * time.Millisecond) {
			}
			if !ok() {
				t.Errorf("never saw %s", what)
			}
		}
		wait("the trainer start", func() bool { return strings.Contains(strings.Join(h.resumes(), " "), "resume") })
		stage.Store(1)
		wait("the checkpoint asked for on the recommendation", func() bool { return len(h.committedSteps()) == 1 })
		time.Sleep(200 * time.Millisecond) // the recommendation stays; it is passed on once
		stage.Store(2)
	}()
	ex, err := sup.Run(context.Background(), nil)
	out := logged()
	if err != nil || ex.Code != ExitStopped || !strings.Contains(ex.Reason.String(), "preempted (aws)") {
		t.Fatalf("%+v %v\n%s", ex, err, out)
	}
	if n := strings.Count(out, "rebalance recommendation at 2026-11-30T08:22:00Z from aws: asking the command for a checkpoint; it trains on"); n != 1 {
		t.Errorf("recommendation passed on %d times, want once:\n%s", n, out)
	}
	// One checkpoint on the recommendation, one more on the notice, by a
	// trainer that was not restarted in between.
	if got := strings.Count(strings.Join(h.resumes(), " "), "checkpoint-now"); got != 2 || len(h.committedSteps()) != 2 || len(h.resumeSteps()) != 1 {
		t.Errorf("checkpoints asked %d, committed %v, starts %v", got, h.committedSteps(), h.resumeSteps())
	}
}

// Host maintenance (GCP's, read an hour ahead): the advice asks the command
// for a checkpoint and it trains on; the notice two minutes before the
// hour stops it as a preemption would, and the reason names the event.
// When each notice comes is preempt's TestGCPHostMaintenance.
func TestHostMaintenanceStops(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 8, "0", 1000000)
	t.Setenv("FAKE_EVERY", "1000000")
	t.Setenv("FAKE_LOG", h.log)
	cfg := h.config(t.TempDir(), h.b)
	feed := make(fedNotices, 1)
	cfg.Preemption = feed
	logged := logTo(&cfg)
	sup, _ := New(cfg)
	go func() {
		wait := func(what string, ok func() bool) {
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !ok(); time.Sleep(20 * time.Millisecond) {
			}
			if !ok() {
				t.Errorf("never saw %s", what)
			}
		}
		wait("the trainer start", func() bool { return strings.Contains(strings.Join(h.resumes(), " "), "resume") })
		feed <- preempt.Notice{Cloud: "gcp", Advisory: true,
			Detail: i18n.Plain("host maintenance will stop this VM in about 2m3s (instance/maintenance-event is TERMINATE_ON_HOST_MAINTENANCE)")}
		wait("the checkpoint asked for on the advice", func() bool { return len(h.committedSteps()) == 1 })
		feed <- preempt.Notice{Cloud: "gcp", Event: "Host maintenance", Left: 2 * time.Minute,
			Detail: i18n.Plain("host maintenance (TERMINATE_ON_HOST_MAINTENANCE since 2026-12-05T10:00:00Z)")}
	}()
	ex, err := sup.Run(context.Background(), nil)
	out := logged()
	if err != nil || ex.Code != ExitStopped || !strings.HasPrefix(ex.Reason.String(), "Host maintenance scheduled (gcp)") {
		t.Fatalf("%+v %v\n%s", ex, err, out)
	}
	if !strings.Contains(out, "host maintenance will stop this VM in about 2m3s") {
		t.Errorf("no advice logged:\n%s", out)
	}
	if got := strings.Count(strings.Join(h.resumes(), " "), "checkpoint-now"); got != 2 || len(h.committedSteps()) != 2 || len(h.resumeSteps()) != 1 {
		t.Errorf("checkpoints asked %d, committed %v, starts %v", got, h.committedSteps(), h.resumeSteps())
	}
}
