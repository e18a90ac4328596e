// Package userfile reads the files a user names (a catalog, a profile, a
// facts file to replay) and the files other users can replace (a history,
// an authorized_keys), so that none of them can stop gpurent or fill its
// memory: a FIFO would block a plain open or read forever, and /dev/zero
// or a growing file would never end. A file is opened without blocking,
// identified by fstat on the open descriptor (not by a name someone may
// swap in between), read only when it is a regular file, and never past a
// cap the caller chooses.
package userfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/gpurent/gpurent/internal/i18n"
)

// ErrNotRegular is wrapped by the error for anything but a regular file:
// a FIFO, a device, a directory, a socket, or a symlink where links are
// not followed.
var ErrNotRegular = i18n.Errorf("not a regular file")

// ErrTooLarge is wrapped by the error for a file over the caller's cap.
var ErrTooLarge = i18n.Errorf("larger than allowed")

// Read returns the contents of the regular file at path, following
// symlinks, when it holds at most max bytes. A file that grows past max
// while it is read is refused as well: at most max+1 bytes are read.
func Read(path string, max int64) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, max)
}

// Open opens the regular file at path for reading, following symlinks,
// and returns it with its fstat. The open never blocks, and anything but
// a regular file is refused (ErrNotRegular) before a byte is read.
func Open(path string) (*os.File, fs.FileInfo, error) { return open(path, true) }

// OpenNoFollow is Open for a path whose last element must not be a
// symlink: a link there is refused (ErrNotRegular), never followed.
func OpenNoFollow(path string) (*os.File, fs.FileInfo, error) { return open(path, false) }

func open(path string, follow bool) (*os.File, fs.FileInfo, error) {
	f, err := openFile(path, follow)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, st.Mode())
	}
	return f, st, nil
}

func notRegular(path string, m fs.FileMode) error {
	return i18n.Errorf("%s is %s, %w", path, Kind(m), ErrNotRegular)
}

// readAll reads f to its end, refusing more than max bytes.
func readAll(f *os.File, path string, max int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, i18n.Errorf("%s holds %s, over the %s such a file may hold: %w", path, Size(st.Size()), Size(max), ErrTooLarge)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, i18n.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, i18n.Errorf("%s grew past %s while it was read: %w", path, Size(max), ErrTooLarge)
	}
	return b, nil
}

// Kind names what a file is, with its article, for a sentence: "a FIFO".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "of type " + m.Type().String()
}

// Size writes a byte count for people: "64 MiB", "1.5 GiB", "300 bytes".
func Size(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return trim(float64(n)/(k*k*k)) + " GiB"
	case n >= k*k:
		return trim(float64(n)/(k*k)) + " MiB"
	case n >= k:
		return trim(float64(n)/k) + " KiB"
	}
	return fmt.Sprintf("%d bytes", n)
}

func trim(v float64) string { return fmt.Sprintf("%.3g", v) }
