package audit

import (
	"io/fs"
	"time"

	"github.com/gpurent/gpurent/internal/ctime"
)

// ChangeTime is when the file's inode last changed (ctime): unlike the
// modification time, which tar, cp -p and rsync -t set back to the
// archive's, no call sets it, so a tree unpacked today reads as today's.
// Where the system gives none, the modification time stands in.
func ChangeTime(info fs.FileInfo) time.Time {
	if t, ok := ctime.Of(info); ok {
		return t
	}
	return info.ModTime()
}
