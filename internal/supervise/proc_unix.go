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

// diskSpace is what an unprivileged user may still write on the file
// system of dir, and its size, in bytes; false when statfs fails.
func diskSpace(dir string) (free, total uint64, ok bool) {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil || st.Blocks == 0 {
		return 0, 0, false
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), true
}
