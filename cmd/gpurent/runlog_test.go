//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/logread"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/store/cloud"
)

// On a new machine, run prints how the run's last session, shipped by
// another machine, ended; after a session of this machine it does not.
func TestRunShowsThePreviousMachinesEnd(t *testing.T) {
	dir := t.TempDir()
	st := filepath.Join(dir, "store")
	runIt := func(ck string, argv ...string) (int, string) {
		t.Helper()
		stdout, _ := os.Create(filepath.Join(dir, "stdout"))
		stderr, _ := os.Create(filepath.Join(dir, "stderr"))
		args := []string{"run", "--ckpt-dir", filepath.Join(dir, ck), "--store", st, "--no-encrypt", "--allow-unauthenticated", "--run", "r",
			"--preemption", "none", "--no-status", "--max-restarts", "0", "--log", filepath.Join(dir, ck+".log"), "--"}
		code := run(context.Background(), append(args, argv...), stdout, stderr)
		stdout.Close()
		stderr.Close()
		b, _ := os.ReadFile(filepath.Join(dir, "stderr"))
		return code, string(b)
	}
	code, _ := runIt("ck1", "sh", "-c", `echo "epoch 7 loss 1.9"; echo "RuntimeError: NCCL watchdog timeout" >&2; exit 1`)
	if code != 1 {
		t.Fatalf("first run: exit %d", code)
	}
	if _, stderr := runIt("ck2", "true"); strings.Contains(stderr, "previous session") {
		t.Errorf("this machine's own session was shown:\n%s", stderr)
	}
	// The newest session now is ck2's; make it another machine's.
	infos, _ := filepath.Glob(filepath.Join(st, "runs", "r", "logs", "*", "info.json"))
	if len(infos) != 2 {
		t.Fatalf("sessions: %v", infos)
	}
	host, _ := os.Hostname()
	for _, p := range infos {
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.Replace(string(b), `"host": "`+host+`"`, `"host": "gpu-old"`, 1)), 0o600)
	}
	os.Remove(infos[1]) // the first machine's session is the newest
	_, stderr := runIt("ck3", "true")
	for _, want := range []string{"the previous session of run r, on gpu-old (started ", "  | epoch 7 loss 1.9",
		"  | RuntimeError: NCCL watchdog timeout", "  | [gpurent ", "the 0 restarts allowed are used up"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// A log with a segment missing (deleted by hand) reads up to the gap and
// says so, rather than joining the lines around it.
func TestCkptLogSaysWhenASegmentIsMissing(t *testing.T) {
	dir := t.TempDir()
	_, ws := shipLogs(t, dir, []string{"one\n", "two\n", "three\n"})
	segs, _ := filepath.Glob(filepath.Join(dir, "runs", "r", "logs", ws[0].Session(), "000002-*"))
	if len(segs) != 1 || os.Remove(segs[0]) != nil {
		t.Fatalf("segment 2: %v", segs)
	}
	for _, args := range [][]string{{}, {"--tail", "5"}} {
		code, stdout, stderr := gpurent(t, append([]string{"ckpt", "log", "--store", dir, "--run", "r"}, args...)...)
		if code != 0 || stdout != "one\n" || !strings.Contains(stderr, "segment 2 is missing from the store; its log stops before it") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

// --tail with --follow: after the tail, following prints only what is
// shipped later, not the older sessions the tail did not reach.
func TestCkptLogTailThenFollow(t *testing.T) {
	ctx := context.Background()
	st, _ := shipLogs(t, t.TempDir(), []string{"old session\n"}, []string{"new 1\nnew 2\nnew 3\n"})
	sessions, err := st.LogSessions(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var out, errw strings.Builder
	p := logread.NewPrinter(st, &out, &errw, nil, true)
	if err := p.Tail(ctx, sessions, 2); err != nil {
		t.Fatal(err)
	}
	if err := p.From(ctx, sessions); err != nil {
		t.Fatal(err)
	}
	if out.String() != "new 2\nnew 3\n" {
		t.Errorf("tail then follow printed %q", out.String())
	}
}

// shipLogs writes log sessions of run r into a file store at dir, one per
// list, each string a segment, as gpurent run --log ships them. Each
// session starts a second after the one before: ids begin with the start's
// millisecond, and two sessions made within one sorted by their random
// suffix (the tail-then-follow test failed 1 run in 11 that way).
func shipLogs(t *testing.T, dir string, sessions ...[]string) (*store.Store, []*store.LogWriter) {
	t.Helper()
	ctx := context.Background()
	b, _, err := cloud.Open(ctx, dir, cloud.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	st := store.New(b, store.Options{Host: "gpu-1"})
	var ws []*store.LogWriter
	started := time.Now().Add(-time.Duration(len(sessions)) * time.Second)
	for i, segs := range sessions {
		w, err := st.NewLog(ctx, "r", started.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, seg := range segs {
			if err := w.Append(ctx, []byte(seg)); err != nil {
				t.Fatal(err)
			}
		}
		ws = append(ws, w)
	}
	return st, ws
}

// A stop signal ships the log at once: a machine taken away (a RunPod spot
// pod: SIGTERM, then SIGKILL 5 s later) may not live to the end's
// shipment, and without it what was printed since the last --log-every
// would die with the machine.
func TestLogShippedOnStopSignal(t *testing.T) {
	dir := t.TempDir()
	st, logPath, pidfile := filepath.Join(dir, "store"), filepath.Join(dir, "train.log"), filepath.Join(dir, "cmd.pid")
	// The command ignores SIGTERM, so gpurent waits out --stop-grace.
	cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--store", st, "--no-encrypt", "--allow-unauthenticated", "--run", "r",
		"--preemption", "none", "--no-status", "--stop-grace", "60s", "--log", logPath, "--",
		"sh", "-c", `trap "" TERM; echo $$ > "$0"; echo "epoch 3 loss 2.1"; exec sleep 60`, pidfile)
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1")
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if b, err := os.ReadFile(pidfile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 15 s", what)
			}
		}
	}
	waitFor("output in the log file", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "epoch 3 loss 2.1")
	})
	if code, stdout, _ := gpurent(t, "ckpt", "log", "--store", st, "--run", "r", "--no-encrypt"); code == 0 || strings.Contains(stdout, "epoch 3") {
		t.Fatalf("shipped before the signal (exit %d): %q", code, stdout)
	}
	signalled := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	var last string
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("ckpt log: %s\nlog file: %s", last, b)
		}
	}()
	waitFor("shipment after SIGTERM", func() bool {
		_, stdout, stderr := gpurent(t, "ckpt", "log", "--store", st, "--run", "r", "--no-encrypt")
		last = stdout + stderr
		return strings.Contains(stdout, "epoch 3 loss 2.1") && strings.Contains(stdout, "received terminated: stopping the command")
	})
	// The session began with the output, not at its first shipment.
	ctx := context.Background()
	b, _, err := cloud.Open(ctx, st, cloud.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ls, err := store.New(b, store.Options{}).LogSessions(ctx, "r")
	if err != nil || len(ls) != 1 || ls[0].Started.Before(began) || !ls[0].Started.Before(signalled) {
		t.Errorf("sessions %+v (%v): want one, started after %v and before the signal at %v", ls, err, began, signalled)
	}
}
