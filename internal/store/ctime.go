package store

import (
	"io/fs"
	"time"

	"github.com/gpurent/gpurent/internal/ctime"
)

// changeTime is when the file's inode last changed (ctime): a write moves
// it, and unlike the modification time no call sets it back. Zero where
// the system gives none: size and modification time are compared alone.
func changeTime(info fs.FileInfo) time.Time {
	t, _ := ctime.Of(info)
	return t
}
