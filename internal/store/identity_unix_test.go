//go:build unix

package store

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/userfile"
)

// An identity the user names (--identity) is read as a regular file: a
// FIFO is refused at once, not waited on, and so is /dev/zero.
func TestLoadIdentitiesNotRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "id.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("this file system makes no FIFOs (mkfifo: %v)", err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := LoadIdentities(p); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, userfile.ErrNotRegular) {
				t.Errorf("%s: %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: LoadIdentities still blocked after 5 s", p)
		}
	}
}
