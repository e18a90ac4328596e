//go:build unix

package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/clock"
	"github.com/gpurent/gpurent/internal/supervise"
)

// lockedBuffer is a bytes.Buffer written from the session's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A week's budget, judged on a fake clock: at 10 USD/h, 1680 USD lasts
// 168 h. The 80% notice comes when the clock reaches 134.4 h, and not
// before; at 5 minutes (the checkpoint's window) before the end the
// command is asked for a checkpoint and stopped, and the run exits 75.
// The real time it takes is the command's start and stop.
func TestBudgetOnAFakeClock(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	start := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	var log lockedBuffer
	o := Options{
		Command: []string{"sh", "-c", `trap 'exit 0' USR1; touch "$0"; while :; do sleep 0.05; done`, ready},
		CkptDir: t.TempDir(), Run: "trial", Preemption: "none", Price: "10", Budget: "1680", NoStatus: true,
		Quiet: time.Second, Grace: 5 * time.Second, Poll: 50 * time.Millisecond, LogEvery: time.Minute,
		Stdout: io.Discard, Stderr: &log, Clock: fake,
	}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := Run(context.Background(), o)
		done <- result{code, err}
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never saw %s:\n%s", what, log.String())
			}
		}
	}
	// The warning's timer, the stop's and the command with its trap.
	waitFor("the command start", func() bool { _, err := os.Stat(ready); return err == nil && fake.Pending() >= 2 })
	if want := "gpurent: budget 1680.00 USD: at 10 USD/h it is spent in 168h00m (2026-12-12 08:00 UTC); the command is asked for a checkpoint 5m00s before, then stopped (exit 75)\n"; !strings.Contains(log.String(), want) {
		t.Errorf("no budget line %q:\n%s", want, log.String())
	}
	warning := "gpurent: the machine has cost 1344.00 USD of the 1680.00 USD budget: the command is stopped with a checkpoint in 33h31m\n"
	fake.Advance(134*time.Hour + 23*time.Minute)
	time.Sleep(100 * time.Millisecond) // what would fire early has its chance
	if strings.Contains(log.String(), warning) {
		t.Fatalf("warned a minute early:\n%s", log.String())
	}
	fake.Advance(time.Minute)
	waitFor("the 80% warning", func() bool { return strings.Contains(log.String(), warning) })
	select {
	case r := <-done:
		t.Fatalf("ended at the warning: %+v\n%s", r, log.String())
	default:
	}
	fake.Advance(168*time.Hour - 5*time.Minute - (134*time.Hour + 24*time.Minute))
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("no stop at the budget:\n%s", log.String())
	}
	if r.err != nil || r.code != supervise.ExitStopped {
		t.Errorf("exit %d, %v; want %d\n%s", r.code, r.err, supervise.ExitStopped, log.String())
	}
	for _, want := range []string{
		"gpurent: --budget 1680.00 USD: the machine has cost 1679.17 USD of it: asking the command for a checkpoint, then stopping it\n",
		"gpurent: the machine cost about 1679.17 USD while gpurent ran (167h55m at 10 USD/h;",
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("lacks %q:\n%s", want, log.String())
		}
	}
}

// --notify-every on a fake clock: a heartbeat every 6 h, each with what
// the run has cost by then, two of them in 13 h and none before the first
// 6 h are out.
func TestHeartbeatsOnAFakeClock(t *testing.T) {
	var mu sync.Mutex
	var progress []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // 127.0.0.1
		var e struct{ Event, Text string }
		json.NewDecoder(r.Body).Decode(&e)
		if e.Event == "progress" {
			mu.Lock()
			progress = append(progress, e.Text)
			mu.Unlock()
		}
	}))
	defer srv.Close()
	hook := filepath.Join(t.TempDir(), "hook")
	os.WriteFile(hook, []byte(srv.URL+"\n"), 0o600)
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), progress...)
	}
	tmp := t.TempDir()
	ready, finish := filepath.Join(tmp, "ready"), filepath.Join(tmp, "finish")
	fake := clock.NewFake(time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC))
	var log lockedBuffer
	o := Options{
		Command: []string{"sh", "-c", `touch "$0"; until [ -e "$1" ]; do sleep 0.05; done`, ready, finish},
		CkptDir: t.TempDir(), Run: "trial", Preemption: "none", Price: "2", NoStatus: true, Notify: hook, NotifyEvery: 6 * time.Hour,
		Quiet: time.Second, Grace: 5 * time.Second, Poll: 50 * time.Millisecond, LogEvery: time.Minute,
		Stdout: io.Discard, Stderr: &log, Clock: fake,
	}
	done := make(chan struct{})
	go func() { Run(context.Background(), o); close(done) }()
	defer func() { os.WriteFile(finish, nil, 0o600); <-done }()
	for deadline := time.Now().Add(20 * time.Second); fake.Pending() < 1 || !exists(ready); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command never started:\n%s", log.String())
		}
	}
	fake.Advance(6*time.Hour - time.Minute)
	time.Sleep(200 * time.Millisecond)
	if got := seen(); len(got) != 0 {
		t.Fatalf("a heartbeat before 6 h: %q", got)
	}
	fake.Advance(7*time.Hour + time.Minute)
	for deadline := time.Now().Add(10 * time.Second); len(seen()) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	got := seen()
	if len(got) != 2 || !strings.Contains(got[0], "12.00 USD") || !strings.Contains(got[1], "24.00 USD") {
		t.Errorf("heartbeats %q, want two, at 12.00 and 24.00 USD\n%s", got, log.String())
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
