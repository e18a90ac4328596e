//go:build !linux && !darwin

package audit

import (
	"io/fs"
	"time"
)

// ChangeTime falls back to the modification time where the change time
// is not at hand.
func ChangeTime(info fs.FileInfo) time.Time { return info.ModTime() }
