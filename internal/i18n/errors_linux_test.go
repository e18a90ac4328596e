package i18n

import (
	"context"
	"io"
	"os/exec"
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

// TestExitStatusTranslated: a command's exit status, as exec says it, is a
// message; its English is exec's own.
func TestExitStatusTranslated(t *testing.T) {
	err := exec.Command("sh", "-c", "exit 3").Run()
	if err == nil || err.Error() != "exit status 3" {
		t.Fatalf("exec says %v", err)
	}
	zh, _ := New(Chinese)
	if got, want := zh.Error(err), zh.Tf("exit status %d", 3); got != want || got == err.Error() {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (*Printer)(nil).Error(err); got != "exit status 3" {
		t.Errorf("English: %q", got)
	}
}
