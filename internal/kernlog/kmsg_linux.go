package kernlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is the kernel log device.
const DefaultPath = "/dev/kmsg"

// Reader reads the kernel log without waiting: each Read returns what was
// logged since the last. It needs what dmesg needs: root, or
// kernel.dmesg_restrict=0; a container sees /dev/kmsg only when privileged.
type Reader struct {
	fd  int
	s   scanner
	buf []byte
}

// Open opens the kernel log at path (DefaultPath in use; a file of records
// in tests), at its oldest record.
func Open(path string) (*Reader, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError(path, err)
	}
	boot, err := bootTime(time.Now())
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	// A record is at most 8 KiB with its dictionary; a read into less
	// fails with EINVAL.
	return &Reader{fd: fd, s: scanner{boot: boot}, buf: make([]byte, 16<<10)}, nil
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return unavailable("the kernel log cannot be read: no " + path + " (a container without it)")
	case errors.Is(err, fs.ErrPermission):
		return unavailable("the kernel log cannot be read: " + path + ": permission denied (it needs root, or sysctl kernel.dmesg_restrict=0)")
	}
	return fmt.Errorf("the kernel log cannot be read: %s: %w", path, err)
}

// SeekEnd skips what the log holds now: Read then returns only what is
// logged after.
func (r *Reader) SeekEnd() error {
	if _, err := syscall.Seek(r.fd, 0, io.SeekEnd); err != nil {
		return fmt.Errorf("kernel log: seek to its end: %w", err)
	}
	r.s.first = true
	return nil
}

// Read returns the Xid reports and faults logged since the last Read
// (since Open or SeekEnd, the first time); Since, Boot and Lost are unset.
func (r *Reader) Read() (Log, error) {
	for {
		n, err := syscall.Read(r.fd, r.buf)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EPIPE):
			// Records were overwritten before they were read: the
			// next read goes on from the oldest left.
			r.s.log.Lost = true
			continue
		case errors.Is(err, syscall.EAGAIN):
			return r.took(), nil
		case err != nil:
			return r.took(), fmt.Errorf("kernel log: %w", err)
		case n == 0: // the end of a file of records
			return r.took(), nil
		}
		r.s.feed(r.buf[:n])
	}
}

func (r *Reader) took() Log {
	out := Log{Xids: r.s.log.Xids, Faults: r.s.log.Faults}
	r.s.log.Xids, r.s.log.Faults = nil, nil
	return out
}

// Close lets go of the log.
func (r *Reader) Close() error { return syscall.Close(r.fd) }

// ReadAll reads every Xid report and fault the kernel log at path still
// holds.
func ReadAll(path string) (Log, error) {
	r, err := Open(path)
	if err != nil {
		return Log{}, err
	}
	defer r.Close()
	got, err := r.Read()
	if err == nil && r.s.records == 0 {
		// A kernel log always holds the boot's messages: an empty one
		// is a container's stand-in (LXC maps /dev/kmsg to /dev/null).
		return Log{}, unavailable("the kernel log cannot be read: " + path + " holds no record (a container's stand-in for it)")
	}
	l := r.s.log
	l.Xids, l.Faults, l.Boot = got.Xids, got.Faults, r.s.boot
	if !r.s.first {
		l.Since = r.s.boot
	}
	return l, err
}

// bootTime is when the kernel started on the clock the log stamps its
// records with: the monotonic clock, which stops while the machine is
// suspended (/proc/uptime's does not: a cloud VM suspended and resumed
// would have its records dated early by the pause).
func bootTime(now time.Time) (time.Time, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Time{}, fmt.Errorf("kernel log: the boot time: %w", err)
	}
	return now.Add(-time.Duration(ts.Nano())), nil
}
