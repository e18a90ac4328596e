//go:build unix

package store

import (
	"os"
	"syscall"
)

// killGroup kills a test server's process group: the server and what it
// started.
func killGroup(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGKILL) }

// allocated is how many bytes of disk path takes; ok false where that is
// unknown.
func allocated(path string) (n int64, ok bool) {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0, false
	}
	return st.Blocks * 512, true
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
