//go:build unix

package fsspace

import "syscall"

// Of is the space an unprivileged user may still write on the file system
// of dir (statfs's f_bavail: the blocks kept for root do not count) and the
// file system's size, in bytes.
func Of(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
