//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/exitcode"
)

// gpurentProc runs this test binary as gpurent in a child process and
// kills it after 5 s: a command that blocks on a FIFO or reads /dev/zero
// without end must fail the test, not hang it or fill the memory.
func gpurentProc(t *testing.T, args ...string) (code int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "XDG_STATE_HOME="+t.TempDir(), "GPURENT_NOTIFY=")
	cmd.Dir = t.TempDir()
	var e strings.Builder
	cmd.Stderr = &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gpurent %s: still running after 5 s (killed); stderr %q", strings.Join(args, " "), e.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), e.String()
}

// namedFileCases are the commands that read a file the user names, with
// the file at FILE.
func namedFileCases() []struct {
	name, flag string
	args       []string
} {
	return []struct {
		name, flag string
		args       []string
	}{
		{"bench --replay", "--replay: ", []string{"bench", "--no-history", "--replay", "FILE"}},
		{"quote --catalog", "--catalog: ", []string{"quote", "--hours", "1", "--catalog", "FILE"}},
		{"quote --profile", "--profile: ", []string{"quote", "--profile", "FILE"}},
		{"catalog check", "", []string{"catalog", "check", "FILE"}},
		{"run --config", "--config: ", []string{"run", "--config", "FILE"}},
		{"run --notify", "--notify: ", []string{"run", "--notify", "FILE", "--preemption", "none", "--", "true"}},
	}
}

func withFile(args []string, path string) []string {
	out := append([]string(nil), args...)
	for i := range out {
		if out[i] == "FILE" {
			out[i] = path
		}
	}
	return out
}

// /dev/zero never ends: each command refuses it at once with exit 2,
// naming the flag and the file (issue #35, item 8: bench --replay
// /dev/zero grew to 12 GB in 12 s).
func TestNamedFileDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero on this system")
	}
	for _, tc := range namedFileCases() {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := gpurentProc(t, withFile(tc.args, "/dev/zero")...)
			want := tc.flag + "/dev/zero is a character device, not a regular file"
			if code != exitcode.Usage || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, want)
			}
		})
	}
}

// A FIFO with no writer blocks a plain open forever: each command
// refuses it at once with exit 2 (issue #35, item 8).
func TestNamedFileFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "facts.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("this file system makes no FIFOs (mkfifo: %v)", err)
	}
	for _, tc := range namedFileCases() {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := gpurentProc(t, withFile(tc.args, fifo)...)
			want := tc.flag + fifo + " is a FIFO, not a regular file"
			if code != exitcode.Usage || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, want)
			}
		})
	}
}

// A file over its cap is refused with its size and the cap, before it is
// read: a sparse 65 MiB facts file (no disk used) for a cap of 64 MiB,
// and a 2 MiB profile for a cap of 1 MiB.
func TestNamedFileOverCap(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name string, size int64) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	facts, profile := sparse("facts.json", 65<<20), sparse("profile.yaml", 2<<20)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--no-history", "--replay", facts}, "--replay: " + facts + " holds 65 MiB, over the 64 MiB such a file may hold"},
		{[]string{"quote", "--profile", profile}, "--profile: " + profile + " holds 2 MiB, over the 1 MiB such a file may hold"},
	} {
		code, stderr := gpurentProc(t, tc.args...)
		if code != exitcode.Usage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
