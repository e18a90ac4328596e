package initproc

import (
	"syscall"
	"testing"
)

// TestExitCode: the container reports what a shell would for the run.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		ws   syscall.WaitStatus // Linux's encoding: code<<8, or the signal
		want int
	}{
		{0, 0},
		{3 << 8, 3},
		{143 << 8, 143},
		{syscall.WaitStatus(syscall.SIGKILL), 137},
		{syscall.WaitStatus(syscall.SIGSEGV), 139},
	} {
		if got := exitCode(c.ws); got != c.want {
			t.Errorf("exitCode(%#x) = %d, want %d", uint32(c.ws), got, c.want)
		}
	}
}
