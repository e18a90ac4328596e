package ctime

import (
	"io/fs"
	"syscall"
	"time"
)

// Of is info's change time, and whether the system gave one.
func Of(info fs.FileInfo) (time.Time, bool) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), true
	}
	return time.Time{}, false
}
