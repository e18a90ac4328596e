//go:build !linux

package kernlog

// DefaultPath is the kernel log device on Linux.
const DefaultPath = "/dev/kmsg"

// Reader reads the kernel log; only on Linux.
type Reader struct{}

// Open fails: the NVIDIA driver's Xid reports are read from Linux's log.
func Open(path string) (*Reader, error) {
	return nil, unavailable("the kernel log is read on Linux only")
}

// SeekEnd is never reached (Open fails).
func (r *Reader) SeekEnd() error { return nil }

// Read is never reached (Open fails).
func (r *Reader) Read() (Log, error) { return Log{}, nil }

// Close is never reached (Open fails).
func (r *Reader) Close() error { return nil }

// ReadAll fails off Linux.
func ReadAll(path string) (Log, error) {
	_, err := Open(path)
	return Log{}, err
}
