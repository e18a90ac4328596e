package audit

import (
	"io/fs"
	"syscall"
	"time"
)

// ChangeTime is when the file's inode last changed (ctime), which no call
// sets back, unlike the modification time.
func ChangeTime(info fs.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctimespec.Sec, st.Ctimespec.Nsec)
	}
	return info.ModTime()
}
