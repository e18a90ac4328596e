package i18n

import (
	"context"
	"io"
	"slices"
	"syscall"
	"testing"
)

// TestSystemErrorsKeyed: the system's messages the catalog holds are the
// ones Go writes here.
func TestSystemErrorsKeyed(t *testing.T) {
	for _, e := range []error{syscall.ENOENT, syscall.EACCES, syscall.EEXIST, syscall.ENOSPC, syscall.EROFS, syscall.ENOTDIR,
		syscall.EISDIR, syscall.ENOTEMPTY, syscall.EXDEV, syscall.EBUSY, syscall.EPERM, syscall.ELOOP, syscall.ECONNREFUSED,
		syscall.ETIMEDOUT, syscall.ENAMETOOLONG, syscall.EDQUOT, syscall.EIO, context.DeadlineExceeded, context.Canceled, io.ErrUnexpectedEOF} {
		if !slices.Contains(systemErrors, e.Error()) {
			t.Errorf("%q is not among systemErrors", e.Error())
		}
	}
}
