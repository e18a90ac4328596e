package store

import (
	"errors"
	"os"
	"syscall"
)

// serverAttr starts a test server in a process group of its own.
func serverAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// killGroup kills a test server; Windows has no signal for its group.
func killGroup(p *os.Process) { p.Kill() }

// allocated: what a file takes on disk is not asked on Windows.
func allocated(path string) (int64, bool) { return 0, false }

func mkfifo(path string) error { return errors.New("no FIFOs on Windows") }
