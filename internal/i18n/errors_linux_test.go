package i18n

import (
	"context"
	"io"
	"syscall"
	"testing"
)

// TestSystemErrorsKeyed: the catalog has the system's messages as Go
// writes them here.
func TestSystemErrorsKeyed(t *testing.T) {
	zh, err := Catalog(Chinese)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []error{syscall.ENOENT, syscall.EACCES, syscall.EEXIST, syscall.ENOSPC, syscall.EROFS, syscall.ENOTDIR,
		syscall.EISDIR, syscall.ENOTEMPTY, syscall.EXDEV, syscall.EBUSY, syscall.EPERM, syscall.ELOOP, syscall.ECONNREFUSED,
		syscall.ETIMEDOUT, syscall.ENAMETOOLONG, syscall.EDQUOT, syscall.EIO, context.DeadlineExceeded, context.Canceled, io.ErrUnexpectedEOF} {
		if _, ok := zh[e.Error()]; !ok {
			t.Errorf("%q has no Chinese form", e.Error())
		}
	}
}
