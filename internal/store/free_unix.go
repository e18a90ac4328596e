//go:build unix

package store

import "syscall"

// freeSpace is the space an unprivileged user may still write on the file
// system of dir (statfs's f_bavail: the blocks kept for root do not
// count), or false when statfs fails.
func freeSpace(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil || st.Blocks == 0 {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
