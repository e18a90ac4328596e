package store

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"gocloud.dev/gcerrors"
)

// Retrying decorates a Backend: transient failures (a dropped connection, a
// timeout, a throttled or failing server) are retried with exponential
// backoff and jitter; permanent ones (not found, access denied, a missing
// bucket, bad arguments) are returned at once. This is restic's pattern: the
// backend stays simple and the policy wraps it.
type Retrying struct {
	Backend
	Attempts int           // tries in all; 5 when zero
	Base     time.Duration // first backoff; 200 ms when zero
	// Retried, when set, hears of each failure that is tried again, how
	// long until then and how many tries are left: a command waiting on
	// a store that does not answer says so rather than seem to hang (a
	// refused port takes some 18 s of tries, the SDK's included).
	Retried func(err error, wait time.Duration, left int)
}

// Transient reports whether err is worth another try.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrChanged) {
		return false
	}
	if errors.Is(err, ErrUnreachable) {
		return true
	}
	var se *OpError
	if errors.As(err, &se) {
		switch se.Code {
		case gcerrors.NotFound, gcerrors.PermissionDenied, gcerrors.InvalidArgument, gcerrors.FailedPrecondition,
			gcerrors.AlreadyExists, gcerrors.Unimplemented:
			return false
		case gcerrors.Unknown, gcerrors.Internal:
			// fall through to the connection checks below: a refused
			// connection arrives as Unknown.
		default: // Unavailable, DeadlineExceeded, ResourceExhausted, Canceled by the server
			return true
		}
		err = se.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	s := err.Error()
	for _, t := range []string{"connection refused", "connection reset", "i/o timeout", "TLS handshake timeout", "EOF", "503", "500 Internal", "SlowDown", "RequestTimeout"} {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}

func (r *Retrying) do(ctx context.Context, op func() error) error {
	attempts, base := r.Attempts, r.Base
	if attempts <= 0 {
		attempts = 5
	}
	if base <= 0 {
		base = 200 * time.Millisecond
	}
	var err error
	for i := 0; i < attempts; i++ {
		if err = op(); err == nil || !Transient(err) {
			return err
		}
		if i == attempts-1 {
			break
		}
		d := base << i
		d += time.Duration(rand.Int64N(int64(d)/2 + 1))
		if r.Retried != nil {
			r.Retried(err, d, attempts-1-i)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
	}
	return err
}

// Put retries the whole object: fill starts again from the beginning.
func (r *Retrying) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	var n int64
	err := r.do(ctx, func() error {
		var err error
		n, err = r.Backend.Put(ctx, key, fill)
		return err
	})
	return n, err
}

// Get retries opening; a read that fails midway is the caller's to redo.
func (r *Retrying) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := r.do(ctx, func() error {
		var err error
		rc, err = r.Backend.Get(ctx, key)
		return err
	})
	return rc, err
}

// GetRange retries opening the range.
func (r *Retrying) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := r.do(ctx, func() error {
		var err error
		rc, err = r.Backend.GetRange(ctx, key, off, n)
		return err
	})
	return rc, err
}

// Size retries.
func (r *Retrying) Size(ctx context.Context, key string) (int64, error) {
	var n int64
	err := r.do(ctx, func() error {
		var err error
		n, err = r.Backend.Size(ctx, key)
		return err
	})
	return n, err
}

// List retries.
func (r *Retrying) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	err := r.do(ctx, func() error {
		var err error
		out, err = r.Backend.List(ctx, prefix)
		return err
	})
	return out, err
}

// Delete retries; deleting a missing object is not an error.
func (r *Retrying) Delete(ctx context.Context, key string) error {
	err := r.do(ctx, func() error { return r.Backend.Delete(ctx, key) })
	if IsNotFound(err) {
		return nil
	}
	return err
}

// Brief is err in a few words, for a line that may repeat: the operation
// and key, then what unreachable says or else the innermost cause (the
// SDK's chain of wrappers left out).
func Brief(err error) string {
	what := ""
	var se *OpError
	if errors.As(err, &se) {
		what = se.Op + " " + se.Key + ": "
	}
	if why := unreachable(err); why != "" {
		return what + why
	}
	if se != nil && errors.Is(err, ErrUnreachable) {
		return what + se.Err.Error() // the store's absence, in its words
	}
	for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(err) {
		err = u
	}
	return what + err.Error()
}

// StaleTemps asks the inner store, where it has temporary files.
func (r *Retrying) StaleTemps(ctx context.Context, prefix string, before time.Time) ([]string, error) {
	t, ok := r.Backend.(temps)
	if !ok {
		return nil, nil
	}
	var out []string
	err := r.do(ctx, func() error {
		var err error
		out, err = t.StaleTemps(ctx, prefix, before)
		return err
	})
	return out, err
}
