//go:build unix && !linux

package supervise

import "syscall"

// childAttr puts the command in its own process group, so signals reach
// torchrun's workers too. Only Linux can have the kernel stop the command
// when gpurent dies (Pdeathsig); elsewhere (macOS, where gpurent mostly
// serves keygen and pull) an orphaned command runs on.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
