package audit

import (
	"io/fs"
	"syscall"
	"time"
)

// ChangeTime is when the file's inode last changed (ctime): unlike the
// modification time, which tar, cp -p and rsync -t set back to the
// archive's, no call sets it, so a tree unpacked today reads as today's.
func ChangeTime(info fs.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return info.ModTime()
}
