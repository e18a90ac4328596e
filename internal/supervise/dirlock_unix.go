//go:build unix

package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// LockFile is the lock two gpurent runs on one --ckpt-dir meet at: each
// would upload the other's checkpoints and overwrite the other's state.
const LockFile = ".gpurent-run.lock"

// LockDir takes dir's lock (flock, released by the kernel when gpurent
// dies, so a crash leaves no stale lock) and writes who holds it.
func LockDir(dir, run string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, i18n.Errorf("run: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, i18n.Errorf("run: lock %s: %w", path, err)
	}
	// A FIFO or device planted in its place is no lock file: writing
	// who holds it would block, or go somewhere else.
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, i18n.Errorf("run: lock %s: %w", path, userfile.ErrNotRegular)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		who, _ := io.ReadAll(io.LimitReader(f, 512))
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := strings.TrimSpace(string(who))
			if holder == "" {
				holder = "another gpurent run"
			}
			return nil, i18n.Errorf("run: --ckpt-dir %s is in use by %s: two runs on one directory would upload each other's checkpoints and overwrite each other's state; give each run its own --ckpt-dir", dir, holder)
		}
		if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOLCK) {
			// A file system without locks (Lustre mounted noflock, some
			// FUSE mounts): the run goes on unguarded, as before locks.
			return func() {}, nil
		}
		return nil, i18n.Errorf("run: lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	f.Truncate(0)
	fmt.Fprintf(f, "gpurent run of run %s (pid %d on %s, since %s)\n", run, os.Getpid(), host, wallNow().UTC().Format("2006-01-02 15:04:05 MST"))
	return func() {
		f.Truncate(0)
		// Unlocked before the close: a child forked meanwhile (and not
		// yet exec'd, which closes it) shares the open file, and would
		// hold the lock past the close.
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
