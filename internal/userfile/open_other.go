//go:build !unix

package userfile

import "os"

// openFile opens path for reading. Windows has no FIFOs in its file
// system (its named pipes live under \\.\pipe\, which Stat does not call
// regular files), so a plain open does not block. Without O_NOFOLLOW a
// symlink is refused by Lstat before the open; a link swapped in between
// is still refused by the caller's fstat when it leads to no regular file.
func openFile(path string, follow bool) (*os.File, error) {
	if !follow {
		if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return nil, notRegular(path, st.Mode())
		}
	}
	return os.Open(path)
}
