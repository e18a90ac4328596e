package store

import "syscall"

// serverAttr starts a test server in a process group of its own (stop
// kills the group) that the kernel kills when this test binary dies: a
// test that panics never reaches TestMain's stop, and its servers would
// stay up, each holding ports and a few hundred MiB.
func serverAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
