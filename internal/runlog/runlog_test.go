package runlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// collect is an Appender that keeps what it was given and fails while
// told to.
type collect struct {
	mu    sync.Mutex
	got   bytes.Buffer
	calls int
	fail  bool
}

func (c *collect) Append(_ context.Context, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.fail {
		return errors.New("store down")
	}
	c.got.Write(data)
	return nil
}

func (c *collect) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got.String()
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// What the file held before shipping began is not sent; what is added is
// sent once, in order, through a store that fails for a while, in
// segments no larger than asked.
func TestShipperSendsEachByteOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.log")
	appendFile(t, path, "old run\n")
	app := &collect{}
	var logged []string
	var mu sync.Mutex
	logf := func(f string, a ...any) { mu.Lock(); logged = append(logged, f); mu.Unlock() }
	sh := Ship(context.Background(), path, int64(len("old run\n")), app, time.Hour, 7, logf)
	appendFile(t, path, "epoch 1 loss 2.0\n")
	if err := sh.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	app.fail = true
	appendFile(t, path, "epoch 2 loss 1.5\n")
	if err := sh.flush(context.Background()); err == nil {
		t.Fatal("flush through a failing store reported no error")
	}
	appendFile(t, path, "Traceback: CUDA error\n")
	if err := sh.flush(context.Background()); err == nil {
		t.Fatal("second flush through a failing store reported no error")
	}
	app.fail = false
	appendFile(t, path, "last line")
	if err := sh.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "epoch 1 loss 2.0\nepoch 2 loss 1.5\nTraceback: CUDA error\nlast line"
	if got := app.text(); got != want {
		t.Fatalf("shipped %q, want %q", got, want)
	}
	if sh.Shipped() != int64(len("old run\n")+len(want)) {
		t.Errorf("shipped up to %d", sh.Shipped())
	}
	// The failure is told once, and the recovery once.
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 2 || !strings.Contains(logged[0], "kept in") || !strings.Contains(logged[1], "shipping again") {
		t.Errorf("told %q", logged)
	}
}

// A log cut short (logrotate's copytruncate) is shipped from its start.
func TestShipperAfterTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.log")
	app := &collect{}
	sh := Ship(context.Background(), path, 0, app, time.Hour, 1<<20, func(string, ...any) {})
	appendFile(t, path, "a long first part\n")
	if err := sh.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "new\n")
	if err := sh.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := app.text(); got != "a long first part\nnew\n" {
		t.Fatalf("shipped %q", got)
	}
}

// Kick flushes without waiting for the interval.
func TestShipperKick(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train.log")
	app := &collect{}
	sh := Ship(context.Background(), path, 0, app, time.Hour, 1<<20, func(string, ...any) {})
	defer sh.Close(context.Background())
	appendFile(t, path, "crash\n")
	sh.Kick()
	deadline := time.Now().Add(10 * time.Second)
	for app.text() != "crash\n" {
		if time.Now().After(deadline) {
			t.Fatalf("not shipped after a kick: %q", app.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Without a terminal the command writes to pipes: its stdout and stderr
// reach gpurent's own and the log, and a line the log had stays.
func TestOutputPipes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "train.log")
	appendFile(t, path, "before\n")
	stdout, _ := os.Create(filepath.Join(dir, "stdout"))
	stderr, _ := os.Create(filepath.Join(dir, "stderr"))
	o, err := Open(Options{Path: path, Stdout: stdout, Stderr: stderr})
	if err != nil {
		t.Fatal(err)
	}
	if o.PTY || o.Start != int64(len("before\n")) {
		t.Fatalf("PTY %v, start %d", o.PTY, o.Start)
	}
	o.Note("gpurent's own line is not the command's output")
	if !o.LastOutput().IsZero() {
		t.Errorf("nothing printed yet, last output %v", o.LastOutput())
	}
	before := time.Now()
	cmd := exec.Command("sh", "-c", `echo out; echo err >&2; [ -t 1 ] && echo tty || echo notty`)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	o.Note("the command finished")
	if err := o.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	if last := o.LastOutput(); last.Before(before) || last.After(time.Now()) {
		t.Errorf("last output %v, want between %v and now", last, before)
	}
	o.Note("after close: not written")
	out, _ := os.ReadFile(filepath.Join(dir, "stdout"))
	errs, _ := os.ReadFile(filepath.Join(dir, "stderr"))
	log, _ := os.ReadFile(path)
	if string(out) != "out\nnotty\n" || string(errs) != "err\n" {
		t.Errorf("stdout %q, stderr %q", out, errs)
	}
	for _, want := range []string{"before\n", "out\n", "err\n", "notty\n", "] the command finished\n"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log %q lacks %q", log, want)
		}
	}
	if strings.Contains(string(log), "after close") {
		t.Errorf("a note after Close reached the log: %q", log)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v", st.Mode().Perm())
	}
}

// On a terminal the command gets a pseudo-terminal of the terminal's size:
// it sees a TTY (so Python keeps line buffering), and its lines reach the
// real terminal and the log unchanged ("\n", not "\r\n").
func TestOutputPseudoTerminal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pseudo-terminals are made on Linux only")
	}
	// The user's terminal, played by a pseudo-terminal of our own.
	master, tty, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer master.Close()
	defer tty.Close()
	setSize(master, 40, 120)
	path := filepath.Join(t.TempDir(), "train.log")
	o, err := Open(Options{Path: path, Stdout: tty, Stderr: tty})
	if err != nil {
		t.Fatal(err)
	}
	if !o.PTY || o.Stdout != o.Stderr {
		t.Fatalf("PTY %v", o.PTY)
	}
	seen := make(chan string, 1)
	go func() {
		var b strings.Builder
		r := bufio.NewReader(master)
		for !strings.Contains(b.String(), "end") {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				break
			}
		}
		seen <- b.String()
	}()
	cmd := exec.Command("sh", "-c", `[ -t 1 ] && echo stdout-tty; [ -t 2 ] && echo stderr-tty >&2; stty size <&1; echo end`)
	cmd.Stdout, cmd.Stderr = o.Stdout, o.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(path)
	if want := "stdout-tty\nstderr-tty\n40 120\nend\n"; string(log) != want {
		t.Errorf("log %q, want %q", log, want)
	}
	select {
	case s := <-seen:
		if !strings.Contains(s, "stdout-tty") || !strings.Contains(s, "40 120") {
			t.Errorf("terminal showed %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Error("nothing reached the terminal")
	}
}

// A directory, or a file that cannot be created, is an error naming it;
// a missing directory is made.
func TestOpenBadPath(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(Options{Path: dir, Stdout: os.Stdout, Stderr: os.Stderr}); err == nil {
		t.Error("a directory was taken as the log file")
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
	if _, err := Open(Options{Path: filepath.Join(dir, "file", "log"), Stdout: os.Stdout, Stderr: os.Stderr}); err == nil || !strings.Contains(err.Error(), "log file") {
		t.Errorf("under a file: %v", err)
	}
	// A directory not made yet (the command's output directory) is made.
	o, err := Open(Options{Path: filepath.Join(dir, "out", "run1", "train.log"), Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	o.Close(time.Second)
}

// Tail is what a terminal would show of the last lines: colours and
// cursor moves out, a redrawn progress bar's last state, no blank lines,
// and no line cut in two by the start of what is kept.
func TestTail(t *testing.T) {
	o := &Output{}
	o.keep([]byte("\x1b[1;31mERROR\x1b[0m first\n\n  \n"))
	o.keep([]byte(" 10%|█         | 1/10\r 50%|█████     | 5/10\r100%|██████████| 10/10\r\n"))
	o.keep([]byte("\x1b]0;title\x07Traceback (most recent call last):\n"))
	o.keep([]byte("RuntimeError: CUDA out of memory\n"))
	want := "ERROR first\n100%|██████████| 10/10\nTraceback (most recent call last):\nRuntimeError: CUDA out of memory"
	if got := o.Tail(12); got != want {
		t.Errorf("Tail(12) = %q, want %q", got, want)
	}
	if got := o.Tail(1); got != "RuntimeError: CUDA out of memory" {
		t.Errorf("Tail(1) = %q", got)
	}
	// More than is kept: the oldest line, cut by the ring, is dropped.
	o.keep([]byte(strings.Repeat("x", tailKeep-10) + "\nlast line\n"))
	if len(o.last) != tailKeep {
		t.Fatalf("kept %d bytes", len(o.last))
	}
	if got := o.Tail(5); got != "last line" {
		t.Errorf("after the ring turned: %q", got)
	}
	o.keep(bytes.Repeat([]byte("y"), 3*tailKeep))
	if len(o.last) != tailKeep || o.Tail(3) != "" {
		t.Errorf("one huge chunk: kept %d, tail %q", len(o.last), o.Tail(3))
	}
}

// Explain finds the errors whose meaning for a restart gpurent can say,
// in the lines as commands print them, and nothing in others.
func TestExplain(t *testing.T) {
	for _, c := range []struct{ out, cause string }{
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB", "the GPU's memory ran out"},
		{"RuntimeError: CUDA error: uncorrectable ECC error encountered\nCUDA kernel errors might be asynchronously reported", "the GPU reported an uncorrectable ECC error"},
		{"RuntimeError: CUDA error: an illegal memory access was encountered", "CUDA illegal memory access"},
		{"../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\nRuntimeError: CUDA error: device-side assert triggered", "a device-side assert"},
		{"[rank1]:[E1201 06:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.", "an NCCL collective timed out"},
		{"OSError: [Errno 28] No space left on device: 'out/checkpoint-500/model.safetensors'", "a disk filled up"},
		{"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\nRuntimeError: DataLoader worker (pid 2841) is killed by signal: Bus error.", "a DataLoader worker ran out of shared memory"},
		{"gpu-7:168:168 [0] misc/shmutils.cc:113 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-UbzKZ9 (size 9637888), error: No space left on device (28)", "NCCL could not create its segment in /dev/shm"},
		{"torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use\nOSError: [Errno 98] Address already in use", "a port was taken"},
	} {
		got := Explain(c.out)
		if len(got) != 1 || !strings.HasPrefix(got[0].String(), c.cause) {
			t.Errorf("Explain(%.50q) = %q, want one cause starting %q", c.out, got, c.cause)
		}
	}
	if got := Explain("Traceback (most recent call last):\nValueError: too many values to unpack\n"); len(got) != 0 {
		t.Errorf("a plain error explained as %q", got)
	}
}

// --log never follows a symlink put at its path: the command's output
// (tokens printed by accident included) would go wherever it points.
func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("someone else's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "train.log")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("this file system makes no symlinks: %v", err)
	}
	o, err := Open(Options{Path: link, Stdout: os.Stdout, Stderr: os.Stderr})
	if err == nil {
		o.Close(0)
		t.Fatal("a symlinked --log was opened")
	}
	if !strings.Contains(err.Error(), "is a symlink: not followed") {
		t.Errorf("error: %v", err)
	}
}
