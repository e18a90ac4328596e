// Package backend is what gpurent's checkpoint store needs of a blob
// store, apart from any cloud: the Backend interface, the errors a
// backend reports and how they are told apart (transient or not, missing
// or refused), and the retry decorator. The clouds' implementations live
// in internal/store/cloud, so that what only reads a store's records
// (wipe, a test against an in-memory backend) links no cloud SDK: restic's
// split of backend and repository.
package backend

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Code is the kind of a failed operation, as the blob layer classifies
// it (gocloud's gcerrors codes, which internal/store/cloud maps): what
// tells a transient failure from a permanent one.
type Code int

// The codes a backend reports; Unknown where the blob layer did not say.
const (
	Unknown Code = iota
	NotFound
	PermissionDenied
	InvalidArgument
	FailedPrecondition
	AlreadyExists
	Unimplemented
	Internal
	DeadlineExceeded
	ResourceExhausted
	Canceled
)

// ErrChanged is wrapped by a push's error when a file of the checkpoint
// changed while it was uploaded (rewritten in place, truncated, replaced
// by a rename, removed): its copy may mix two versions, so nothing was
// committed, and no retry mends it. Pushing again once the file is still
// uploads the new version. It lives here because the retry decorator
// must not retry it.
var ErrChanged = i18n.Errorf("changed during its upload")

// ErrNoCopy: the backend, or the one behind a wrapper, cannot copy.
var ErrNoCopy = i18n.Errorf("the store cannot copy objects")

// Object is one stored object.
type Object struct {
	Key  string
	Size int64
	// ModTime is when the store says the object was written, by the
	// store's clock, not this machine's; zero where the backend does not
	// say.
	ModTime time.Time
}

// Backend is what the store needs of a blob store. Implementations report
// a missing key with an error for which IsNotFound is true. Put calls fill
// to produce the object's content and may call it again on a retry, so fill
// must start from the beginning each time; an object is visible only once
// Put returns without error.
type Backend interface {
	Put(ctx context.Context, key string, fill func(w io.Writer) error) (int64, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// GetRange reads n bytes from offset off.
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	Size(ctx context.Context, key string) (int64, error)
	List(ctx context.Context, prefix string) ([]Object, error)
	Delete(ctx context.Context, key string) error
	Close() error
}

// ErrUnreachable is a store that does not answer, or a directory store
// that is not there: an outage, never an empty store or a takeover.
var ErrUnreachable = i18n.Errorf("the store cannot be reached")

// IsUnreachable reports whether err is the store not answering (or not
// there) rather than answering no: worth trying again later.
func IsUnreachable(err error) bool {
	return errors.Is(err, ErrUnreachable) || Transient(err)
}

// temps is a store that can leave temporary files of killed writes
// behind (a directory), and lists those older than before.
type temps interface {
	StaleTemps(ctx context.Context, prefix string, before time.Time) ([]string, error)
}

// OpError is a failed store operation with its kind, so callers and the
// retry decorator can tell transient failures from permanent ones.
type OpError struct {
	Op, Key, Store string
	Code           Code
	Err            error
}

func (e *OpError) Error() string {
	switch e.Code {
	case NotFound:
		return fmt.Sprintf("%s %s in %s: not found (%v)", e.Op, e.Key, e.Store, e.Err)
	case PermissionDenied:
		return fmt.Sprintf("%s %s in %s: access denied: check the credentials in the environment (AWS_ACCESS_KEY_ID, GOOGLE_APPLICATION_CREDENTIALS, AZURE_STORAGE_ACCOUNT ...) (%v)", e.Op, e.Key, e.Store, e.Err)
	}
	if why := unreachable(e.Err); why != "" {
		return fmt.Sprintf("%s %s in %s: %s (%v)", e.Op, e.Key, e.Store, why, e.Err)
	}
	return fmt.Sprintf("%s %s in %s: %v", e.Op, e.Key, e.Store, e.Err)
}

// unreachable says in words why the store's server was not reached at
// all, or "": the cloud SDKs put that cause at the end of a long chain
// ("operation error S3: ListObjectsV2, exceeded maximum number of
// attempts, ... dial tcp ...: connect: connection refused"), where a
// typo in endpoint= hides from the person who made it.
func unreachable(err error) string {
	var dns *net.DNSError
	var op *net.OpError
	var authority x509.UnknownAuthorityError
	var host x509.HostnameError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return fmt.Sprintf("the host %s does not resolve: check the endpoint's name (endpoint= in the store URL)", dns.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		at := ""
		if errors.As(err, &op) && op.Addr != nil {
			at = " at " + op.Addr.String()
		}
		return "nothing answers" + at + " (connection refused): check the endpoint's host and port, and that its server runs"
	case errors.As(err, &authority):
		return "the server's TLS certificate is signed by an authority this machine does not trust (a private CA: name its bundle in SSL_CERT_FILE)"
	case errors.As(err, &host):
		return fmt.Sprintf("the server's TLS certificate is not for %s: check the endpoint's host", host.Host)
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the endpoint speaks plain HTTP: write it as http://"
	}
	return ""
}

func (e *OpError) Unwrap() error { return e.Err }

// IsNotFound reports whether err means a missing object.
func IsNotFound(err error) bool {
	var se *OpError
	return errors.As(err, &se) && se.Code == NotFound && !noBucket(se.Err)
}

// IsPermissionDenied reports whether err is the store refusing the
// credentials' request, which no retry mends.
func IsPermissionDenied(err error) bool {
	var se *OpError
	return errors.As(err, &se) && se.Code == PermissionDenied
}

// noBucket spots a missing bucket, which S3 also reports as NotFound.
func noBucket(err error) bool {
	s := err.Error()
	return strings.Contains(s, "NoSuchBucket") || strings.Contains(s, "bucket does not exist")
}

// LocalDir is the directory of a store on this machine's file system (a
// path or file:// URL), or "" for a remote store. The directory is
// resolved through symlinks where it exists.
func LocalDir(raw string) string {
	u, err := ParseURL(raw)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	dir := filepath.Clean(u.Path)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// Within reports whether the local store dir lies in the tree at path
// (resolved through symlinks): pushing that tree, or watching it for
// checkpoints, would take the store's own objects in, again and again.
func Within(dir, path string) bool {
	if dir == "" {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return dir == abs || strings.HasPrefix(dir, abs+string(filepath.Separator)) || abs == string(filepath.Separator)
}

// ParseURL accepts a plain path as file://.
func ParseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, i18n.Errorf("no store: give --store URL (or set GPURENT_STORE)")
	}
	if !strings.Contains(raw, "://") {
		// "s3:/bucket" or "gs:bucket" is a URL typed wrong, not a
		// directory named "s3:": taken as a path, the checkpoints would
		// stay on this machine, the one that can vanish.
		if scheme, rest, ok := strings.Cut(raw, ":"); ok {
			want := strings.ToLower(scheme) + "://" + strings.TrimLeft(rest, "/")
			switch strings.ToLower(scheme) {
			case "file":
				want = "file:///" + strings.TrimLeft(rest, "/")
				fallthrough
			case "s3", "gs", "azblob":
				return nil, i18n.Errorf("store %q: a URL needs \"://\" (%s); for a local directory whose name begins %q, write ./%s", raw, want, scheme+":", raw)
			}
		}
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, i18n.Errorf("store path %q: %w", raw, err)
		}
		return &url.URL{Scheme: "file", Path: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, i18n.Errorf("store URL %q: %w", raw, err)
	}
	if u.Scheme == "file" && u.Host != "" && u.Host != "localhost" {
		return nil, i18n.Errorf("store URL %q: file:// takes an absolute path (file:///path)", raw)
	}
	return u, nil
}

// Upload is a multipart upload that was begun and neither completed nor
// aborted: a push killed mid-file (preemption, SIGKILL) leaves one. S3
// bills its parts as storage, and no object listing shows them.
type Upload struct {
	Key       string // as the store names keys (below the URL's prefix)
	ID        string
	Initiated time.Time
}

// uploads is a backend that can find and abort such uploads. Only S3 has
// them in a form that lingers and is billed; other backends lack the
// methods and report none.
type uploads interface {
	IncompleteUploads(ctx context.Context, prefix string, before time.Time) ([]Upload, error)
	AbortUpload(ctx context.Context, u Upload) error
}

// copier is a backend that copies an object inside the store, and names
// each version of an object with an ETag the store sets, never the writer:
// an object overwritten (by anyone with the store's write key) has
// another, so a copy can be made only of the bytes a signed manifest
// recorded.
type copier interface {
	// Copies reports whether the store copies and names versions at all
	// (a directory does neither), before any request is made.
	Copies() bool
	Copy(ctx context.Context, dst, src string) error
	ETag(ctx context.Context, key string) (string, error)
}

// emptyDirs is a store whose deleted objects leave their directories:
// the file store.
type emptyDirs interface{ RemoveEmpty(prefix string) }

// Retrying decorates a Backend: transient failures (a dropped connection, a
// timeout, a throttled or failing server) are retried with exponential
// backoff and jitter; permanent ones (not found, access denied, a missing
// bucket, bad arguments) are returned at once. This is restic's pattern: the
// backend stays simple and the policy wraps it.
type Retrying struct {
	Backend
	Attempts int           // tries in all; 5 when zero
	Base     time.Duration // first backoff; 200 ms when zero
	// For, when above zero, tries a transient failure again until For has
	// passed since the first (an outage of minutes), however many tries
	// that takes, the waits doubling up to MaxWait; Attempts is then
	// not used. Only once the store has answered: one that never did is
	// more likely a wrong address than an outage, and gets Attempts.
	For      time.Duration
	answered atomic.Bool
	// Retried, when set, hears of each failure that is tried again, how
	// long until then and how many tries are left (-1 with For): a command waiting on
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
		case NotFound, PermissionDenied, InvalidArgument, FailedPrecondition,
			AlreadyExists, Unimplemented:
			return false
		case Unknown, Internal:
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
	return transientText.MatchString(err.Error())
}

// transientText is what a transient failure's message says, as whole
// words: a path or key that holds "503" among other digits (a temporary
// directory's random name) is no HTTP status.
var transientText = regexp.MustCompile(`\b(connection refused|connection reset|i/o timeout|TLS handshake timeout|EOF|503|500 Internal|SlowDown|RequestTimeout)\b`)

// MaxWait is the longest wait between two tries of Retrying.For.
const MaxWait = 30 * time.Second

func (r *Retrying) Do(ctx context.Context, op func() error) error {
	attempts, base := r.Attempts, r.Base
	if attempts <= 0 {
		attempts = 5
	}
	if base <= 0 {
		base = 200 * time.Millisecond
	}
	var err error
	var first time.Time
	for i := 0; ; i++ {
		if err = op(); err == nil || !Transient(err) {
			r.answered.Store(true)
			return err
		}
		left, rest := attempts-1-i, time.Duration(0)
		long := r.For > 0 && r.answered.Load()
		if long {
			if first.IsZero() {
				first = time.Now()
			}
			left, rest = -1, r.For-time.Since(first)
		}
		if long && rest <= 0 || !long && left <= 0 {
			break
		}
		d := min(base<<min(i, 30), MaxWait)
		d += time.Duration(rand.Int64N(int64(d)/2 + 1))
		if long {
			d = min(d, rest) // the last try at the end of For, not past it
		}
		if r.Retried != nil {
			r.Retried(err, d, left)
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
	err := r.Do(ctx, func() error {
		var err error
		n, err = r.Backend.Put(ctx, key, fill)
		return err
	})
	return n, err
}

// Get retries opening; a read that fails midway is the caller's to redo.
func (r *Retrying) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := r.Do(ctx, func() error {
		var err error
		rc, err = r.Backend.Get(ctx, key)
		return err
	})
	return rc, err
}

// GetRange retries opening the range.
func (r *Retrying) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := r.Do(ctx, func() error {
		var err error
		rc, err = r.Backend.GetRange(ctx, key, off, n)
		return err
	})
	return rc, err
}

// Size retries.
func (r *Retrying) Size(ctx context.Context, key string) (int64, error) {
	var n int64
	err := r.Do(ctx, func() error {
		var err error
		n, err = r.Backend.Size(ctx, key)
		return err
	})
	return n, err
}

// List retries.
func (r *Retrying) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	err := r.Do(ctx, func() error {
		var err error
		out, err = r.Backend.List(ctx, prefix)
		return err
	})
	return out, err
}

// Delete retries; deleting a missing object is not an error.
func (r *Retrying) Delete(ctx context.Context, key string) error {
	err := r.Do(ctx, func() error { return r.Backend.Delete(ctx, key) })
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
	err := r.Do(ctx, func() error {
		var err error
		out, err = t.StaleTemps(ctx, prefix, before)
		return err
	})
	return out, err
}

// IncompleteUploads and AbortUpload pass through the retry decorator,
// retried as any store operation.
func (r *Retrying) IncompleteUploads(ctx context.Context, prefix string, before time.Time) ([]Upload, error) {
	u, ok := r.Backend.(uploads)
	if !ok {
		return nil, nil
	}
	var out []Upload
	err := r.Do(ctx, func() error {
		var err error
		out, err = u.IncompleteUploads(ctx, prefix, before)
		return err
	})
	return out, err
}

func (r *Retrying) AbortUpload(ctx context.Context, up Upload) error {
	u, ok := r.Backend.(uploads)
	if !ok {
		return nil
	}
	return r.Do(ctx, func() error { return u.AbortUpload(ctx, up) })
}

// Copies asks the inner store.
func (r *Retrying) Copies() bool {
	c, ok := r.Backend.(copier)
	return ok && c.Copies()
}

// Copy retries a copy the inner store makes.
func (r *Retrying) Copy(ctx context.Context, dst, src string) error {
	c, ok := r.Backend.(copier)
	if !ok {
		return ErrNoCopy
	}
	return r.Do(ctx, func() error { return c.Copy(ctx, dst, src) })
}

// ETag retries asking the inner store.
func (r *Retrying) ETag(ctx context.Context, key string) (string, error) {
	c, ok := r.Backend.(copier)
	if !ok {
		return "", ErrNoCopy
	}
	var tag string
	err := r.Do(ctx, func() error {
		var err error
		tag, err = c.ETag(ctx, key)
		if errors.Is(err, ErrNoCopy) {
			return nil // not a failure to retry
		}
		return err
	})
	if err == nil && tag == "" {
		err = ErrNoCopy
	}
	return tag, err
}

// RemoveEmpty passes through the retry decorator.
func (r *Retrying) RemoveEmpty(prefix string) {
	if e, ok := r.Backend.(emptyDirs); ok {
		e.RemoveEmpty(prefix)
	}
}
