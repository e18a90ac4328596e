//go:build unix

package supervise

import "syscall"

// defaultCheckpointSignal asks the command for a checkpoint (docs/run.md).
const defaultCheckpointSignal = syscall.SIGUSR1

// kill sends sig to pid, or to the process group -pid.
func kill(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// reapGroup collects the exit status of the group's members that are this
// process's children, so that none stays a zombie.
func reapGroup(pgid int) {
	for {
		pid, err := syscall.Wait4(-pgid, nil, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
