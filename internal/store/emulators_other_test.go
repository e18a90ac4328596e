//go:build unix && !linux

package store

import "syscall"

// serverAttr starts a test server in a process group of its own.
func serverAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
