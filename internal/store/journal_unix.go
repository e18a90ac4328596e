//go:build unix

package store

import (
	"io/fs"
	"os"
	"syscall"
)

// inode is the file's device and inode numbers.
func inode(info fs.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}

// lockFile opens and locks path (flock, released by the kernel when the
// process dies), or says it cannot: held by another process, or a file
// system without locks. The lock is on the file path names when it is
// taken: one removed by its holder in between is not.
func lockFile(path string) (*os.File, bool) {
	for range 3 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, false
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return nil, false
		}
		held, err1 := f.Stat()
		named, err2 := os.Lstat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return f, true
		}
		f.Close()
	}
	return nil, false
}

// ownedHere says whether this user owns the file.
func ownedHere(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// noFollow and nonBlock open a file without following a final symlink,
// and without waiting on a FIFO.
const (
	noFollow = syscall.O_NOFOLLOW
	nonBlock = syscall.O_NONBLOCK
)

// private says whether info is a directory this user owns that no one
// else can write to or enter.
func private(info fs.FileInfo) bool {
	return info.IsDir() && info.Mode()&fs.ModeSymlink == 0 && info.Mode().Perm()&0o077 == 0 && ownedHere(info)
}
