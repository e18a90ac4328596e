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

// ownedHere: no owners to compare here; the file system's permissions
// decide.
func ownedHere(fs.FileInfo) bool { return true }

// noFollow and nonBlock: not here.
const (
	noFollow = 0
	nonBlock = 0
)

// private: a directory, not a link; Windows reports no Unix permission
// bits to judge (every directory reads as 0777), and its ACLs decide who
// may write there.
func private(info fs.FileInfo) bool { return info.IsDir() && info.Mode()&fs.ModeSymlink == 0 }
