//go:build !unix

package store

import (
	"io/fs"
	"os"
)

// inode: no inode numbers at hand here, so no push resumes.
func inode(fs.FileInfo) (dev, ino uint64, ok bool) { return 0, 0, false }

// lockFile: not here.
func lockFile(string) (*os.File, bool) { return nil, false }
