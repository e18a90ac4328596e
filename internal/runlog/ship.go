package runlog

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// Appender takes the log's next bytes; *store.LogWriter is one. A failed
// Append is tried again, with the same bytes and what followed them.
type Appender interface {
	Append(ctx context.Context, data []byte) error
}

// Shipper sends what is added to a log file to an Appender: every
// interval, and at once when asked (a restart, a notice), reading the
// file from where it last stopped. The file, not memory, holds what is
// not shipped yet, so a store that fails for hours costs no memory and
// loses nothing that reached the disk.
type Shipper struct {
	path  string
	app   Appender
	max   int
	logf  func(string, ...any)
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex // one flush at a time
	off   int64
	fails int
}

// Ship starts shipping path from offset from, every interval, in
// segments of at most segment bytes.
func Ship(ctx context.Context, path string, from int64, app Appender, every time.Duration, segment int, logf func(string, ...any)) *Shipper {
	s := &Shipper{path: path, app: app, max: segment, logf: logf, off: from,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			case <-s.kick:
			}
			s.flush(ctx)
		}
	}()
	return s
}

// Kick asks for a flush now, without waiting for it.
func (s *Shipper) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Flush sends what the file holds now and waits for it, within ctx:
// gpurent run ships its last words before it releases the machine.
func (s *Shipper) Flush(ctx context.Context) error { return s.flush(ctx) }

// Shipped is the offset in the file up to which the log is shipped.
func (s *Shipper) Shipped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.off
}

// Close stops the shipper and sends what remains, within ctx; the error
// says what could not be sent.
func (s *Shipper) Close(ctx context.Context) error {
	close(s.stop)
	<-s.done
	return s.flush(ctx)
}

// flush sends the file from the offset to its end, in segments of at most
// max bytes. The first failure is reported, and the recovery; the ones
// between are not, since the store retries each call already and a
// failing store is told of once by run.
func (s *Shipper) flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.send(ctx)
	switch {
	case err != nil && s.fails == 0:
		s.logf("log: %v; kept in %s and sent when the store answers", err, s.path)
	case err == nil && s.fails > 0:
		s.logf("log: shipping again (%d tries failed)", s.fails)
	}
	if err != nil {
		s.fails++
	} else {
		s.fails = 0
	}
	return err
}

func (s *Shipper) send(ctx context.Context) error {
	f, _, err := userfile.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < s.off {
		// Cut short or replaced (by logrotate's copytruncate, or by
		// hand): what is there now is new.
		s.logf("log: %s shrank from %d to %d bytes; shipping it from its start", s.path, s.off, st.Size())
		s.off = 0
	}
	buf := make([]byte, min(int64(s.max), max(st.Size()-s.off, 0)))
	for s.off < st.Size() {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), st.Size()-s.off)], s.off)
		if n == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return nil // shrank since the Stat: the next flush sees it
			}
			return err
		}
		if err := s.app.Append(ctx, buf[:n]); err != nil {
			return i18n.Errorf("%d bytes not shipped: %w", st.Size()-s.off, err)
		}
		s.off += int64(n)
	}
	return nil
}
