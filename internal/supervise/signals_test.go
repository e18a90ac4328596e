//go:build unix

package supervise

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/preempt"
)

// Of a process group, only the processes that installed a handler for
// the signal are named: here the shell that traps SIGUSR1, not the sleep
// it started.
func TestGroupCatching(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap 'echo caught' USR1; sleep 30 & wait; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("no sh: %v", err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	var pids []int
	var members int
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if pids, members, err = groupCatching("/proc", cmd.Process.Pid, syscall.SIGUSR1); err != nil || (members == 2 && len(pids) == 1) {
			break
		}
	}
	if err != nil || members != 2 || !slices.Equal(pids, []int{cmd.Process.Pid}) {
		t.Fatalf("catching %v of %d members (%v), want only the shell %d of 2", pids, members, err, cmd.Process.Pid)
	}
	if pids, _, _ := groupCatching("/proc", cmd.Process.Pid, syscall.SIGUSR2); len(pids) != 0 {
		t.Errorf("SIGUSR2 caught by %v", pids)
	}
	if _, _, err := groupCatching(filepath.Join(t.TempDir(), "none"), 1, syscall.SIGUSR1); err == nil {
		t.Error("no /proc, no error")
	}
}

// groupLive reads a process's group and state from /proc/PID/stat, whose
// command name may hold spaces and parentheses, and leaves zombies out.
func TestGroupLive(t *testing.T) {
	proc := t.TempDir()
	layout(t, proc, map[string]string{
		"10/stat": "10 (python3) S 1 10 10 0 -1 4194560 1 0",
		"11/stat": "11 (pt_data_worker) Z 10 10 10 0 -1 4194560 1 0",    // exited, not reaped
		"12/stat": "12 (a) b) (c) R 10 10 10 0 -1 4194560 1 0",          // a name with ") ("
		"13/stat": "13 (sleep) S 1 13 13 0 -1 4194560 1 0",              // another group
		"14/stat": "14 (torchrun worker 3) D 10 10 10 0 -1 4194560 1 0", // in the kernel: running
		"x/stat":  "not a pid",
	})
	pids, err := groupLive(proc, 10)
	slices.Sort(pids)
	if err != nil || !slices.Equal(pids, []int{10, 12, 14}) {
		t.Errorf("live %v %v, want 10, 12, 14", pids, err)
	}
	if _, err := groupLive(filepath.Join(proc, "none"), 10); err == nil {
		t.Error("no /proc, no error")
	}
}

// logTo collects cfg's log lines; logged returns them so far.
func logTo(cfg *Config) (logged func() string) {
	var mu sync.Mutex
	var b strings.Builder
	cfg.Log = func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&b, format+"\n", a...)
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return b.String()
	}
}

// noticeAfter sends one notice after a delay: a cloud without HTTP.
type noticeAfter struct {
	after time.Duration
	n     preempt.Notice
}

func (f noticeAfter) Watch(ctx context.Context) <-chan preempt.Notice {
	ch := make(chan preempt.Notice, 1)
	go func() {
		select {
		case <-time.After(f.after):
			ch <- f.n
		case <-ctx.Done():
		}
	}()
	return ch
}

// A command that does not handle SIGUSR1 (a Hugging Face Trainer, most
// scripts) is not sent it on a notice: it would die, here in the middle of
// the checkpoint it is writing. It runs on for half the notice, finishes
// that checkpoint, and the checkpoint is uploaded.
func TestPreemptionCommandWithoutHandler(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	cfg := h.config(dir, h.b)
	logged := logTo(&cfg)
	// The checkpoint takes 1.5 s to write and starts before the notice.
	cfg.Cmd = []string{"sh", "-c", `cd "$GPURENT_CKPT_DIR" && printf 1 > ckpt-1.bin.tmp && sleep 1.5 && mv ckpt-1.bin.tmp ckpt-1.bin && sleep 30`}
	cfg.Preemption = noticeAfter{after: 300 * time.Millisecond, n: preempt.Notice{Cloud: "test", Detail: i18n.Plain("a notice"), Left: 10 * time.Second}}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ex, err := sup.Run(context.Background(), nil)
	out := logged()
	if err != nil || ex.Code != ExitStopped || !strings.Contains(ex.Reason.String(), "preempted (test)") {
		t.Fatalf("%+v %v\n%s", ex, err, out)
	}
	if got := h.committedSteps(); !slices.Equal(got, []int{1}) {
		t.Errorf("committed %v, want the checkpoint the command was writing at the notice\n%s", got, out)
	}
	if !strings.Contains(out, "does not handle user defined signal 1") {
		t.Errorf("the log does not say why no checkpoint was asked for:\n%s", out)
	}
	if d := time.Since(start); d > 9500*time.Millisecond { // the whole notice is 10 s
		t.Errorf("took %v: it waited past half the notice", d)
	}
}

// A command that handles the signal by saving and exiting (the SLURM
// requeue pattern) ends the wait: gpurent uploads what it saved and
// returns.
func TestPreemptionCommandSavesAndExits(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(t.TempDir(), h.b)
	// The new file needs a second of quiet before it counts (gpurent
	// shortens --quiet to that on a notice); the command is gone long before.
	cfg.Quiet = 2 * time.Second
	cfg.Cmd = []string{"sh", "-c", `cd "$GPURENT_CKPT_DIR" && trap 'printf 2 > ckpt-2.bin; exit 0' USR1; while :; do sleep 0.02; done`}
	cfg.Preemption = noticeAfter{after: 300 * time.Millisecond, n: preempt.Notice{Cloud: "test", Detail: i18n.Plain("a notice"), Left: 10 * time.Second}}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var ex Exit
	go func() {
		defer close(done)
		ex, err = sup.Run(context.Background(), nil)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("gpurent did not return after the command saved and exited")
	}
	if err != nil || ex.Code != ExitStopped || !strings.Contains(ex.Reason.String(), "preempted (test)") {
		t.Fatalf("%+v %v", ex, err)
	}
	if got := h.committedSteps(); !slices.Equal(got, []int{2}) {
		t.Errorf("committed %v, want the checkpoint saved on the signal", got)
	}
}

// A preemption whose last upload fails ends with ExitNotStored: the
// checkpoint saved on the notice is only on a machine about to go.
func TestPreemptionNotStored(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(t.TempDir(), &failingBackend{Backend: h.b})
	cfg.Cmd = []string{"sh", "-c", `cd "$GPURENT_CKPT_DIR" && trap 'printf 2 > ckpt-2.bin; exit 0' USR1; while :; do sleep 0.02; done`}
	cfg.Preemption = noticeAfter{after: 300 * time.Millisecond, n: preempt.Notice{Cloud: "test", Detail: i18n.Plain("a notice"), Left: 10 * time.Second}}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != ExitNotStored || !strings.Contains(ex.Reason.String(), "preempted (test): the newest checkpoint is NOT in the store") {
		t.Fatalf("%+v %v", ex, err)
	}
}
