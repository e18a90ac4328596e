//go:build unix

package userfile

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO with no writer would block a plain open forever: Read returns at
// once, naming it.
func TestReadFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "facts.json")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("this file system makes no FIFOs (mkfifo: %v)", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Read(p, 1<<20)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || err.Error() != p+" is a FIFO, not a regular file" {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read of a FIFO still blocked after 5 s")
	}
}
