//go:build unix

package probe

import "syscall"

// fsSpace is what an unprivileged user may still write on the file system
// of dir, and its size, in bytes.
func fsSpace(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}
