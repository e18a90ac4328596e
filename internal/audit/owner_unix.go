//go:build unix

package audit

import (
	"io/fs"
	"syscall"
)

// ownerUID is the uid owning the file info describes, false where the
// system does not say.
func ownerUID(info fs.FileInfo) (int, bool) {
	sys, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(sys.Uid), true
}
