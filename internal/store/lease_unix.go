//go:build unix

package store

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// bootID names this boot of this machine (Linux), so that a lease left by
// a gpurent killed here can be told from one held elsewhere.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidAlive reports whether pid names a process (of anyone's).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pidNS names this process's pid namespace (Linux): containers on one
// host share its boot id, not their pid numbers.
func pidNS() string {
	v, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return v
}
