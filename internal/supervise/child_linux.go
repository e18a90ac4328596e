package supervise

import "syscall"

// childAttr puts the command in its own process group, so signals reach
// torchrun's workers too, and has the kernel send it SIGTERM if gpurent
// itself dies (even by SIGKILL), so no orphaned trainer goes on writing
// checkpoints nobody uploads, or beside the next gpurent's trainer.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
