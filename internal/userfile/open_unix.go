//go:build unix

package userfile

import (
	"os"
	"syscall"
)

// openFile opens path with O_NONBLOCK, so that a FIFO without a writer
// opens at once instead of waiting for one (for a regular file the flag
// changes nothing), and with O_NOFOLLOW unless follow: then a symlink as
// the last element fails the open (ELOOP) instead of being followed.
func openFile(path string, follow bool) (*os.File, error) {
	flag := os.O_RDONLY | syscall.O_NONBLOCK
	if !follow {
		flag |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil && !follow {
		// ELOOP says the last element is a symlink: say so in words.
		if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&os.ModeSymlink != 0 {
			return nil, notRegular(path, st.Mode())
		}
	}
	return f, err
}
