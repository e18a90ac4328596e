package store

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime is when the file's inode last changed (ctime): a write moves
// it, and unlike the modification time no call sets it back.
func changeTime(info fs.FileInfo) time.Time {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
	}
	return time.Time{}
}
