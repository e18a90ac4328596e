package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/gpurent/gpurent/internal/i18n"
)

// unchanged checks that the file at path is still the one walked (was):
// same file, size, modification and change time, by its path and, when f
// is the open file, by f too. It is called before the file is opened and
// again once it was read.
func unchanged(path string, was fs.FileInfo, f *os.File) error {
	changed := func(why string) error {
		return i18n.Errorf("push: %s %w (%s): not committed", path, ErrChanged, why)
	}
	if f != nil {
		now, err := f.Stat()
		if err != nil {
			return i18n.Errorf("push: %w", err)
		}
		if why := differs(was, now); why != "" {
			return changed(why)
		}
	}
	now, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return changed("removed")
	}
	if err != nil {
		return i18n.Errorf("push: %w", err)
	}
	if why := differs(was, now); why != "" {
		return changed(why)
	}
	return nil
}

// differs says how now differs from was, "" when it does not.
func differs(was, now fs.FileInfo) string {
	switch {
	case !now.Mode().IsRegular():
		return "no longer a regular file"
	case !os.SameFile(was, now):
		return "replaced by another file"
	case now.Size() != was.Size():
		return fmt.Sprintf("%d bytes, then %d", was.Size(), now.Size())
	case !now.ModTime().Equal(was.ModTime()):
		return "modified"
	case !changeTime(now).Equal(changeTime(was)):
		return "its inode changed"
	}
	return ""
}
