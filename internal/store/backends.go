package store

import (
	"context"
	"time"

	"github.com/gpurent/gpurent/internal/store/backend"
)

// The store is the repository: it reads and writes through a
// backend.Backend that internal/store/cloud opens (or a test makes). These
// names are backend's, under the store's name for the callers that
// already use them.
type (
	Backend  = backend.Backend
	Object   = backend.Object
	OpError  = backend.OpError
	Retrying = backend.Retrying
	Upload   = backend.Upload
)

// Errors a backend reports.
var (
	ErrUnreachable = backend.ErrUnreachable
	ErrChanged     = backend.ErrChanged
)

// IsNotFound reports whether err means a missing object.
func IsNotFound(err error) bool { return backend.IsNotFound(err) }

// IsUnreachable reports whether err is the store not answering.
func IsUnreachable(err error) bool { return backend.IsUnreachable(err) }

// IsPermissionDenied reports whether err is the store refusing the request.
func IsPermissionDenied(err error) bool { return backend.IsPermissionDenied(err) }

// Transient reports whether err is worth another try.
func Transient(err error) bool { return backend.Transient(err) }

// Brief is err in a few words, for a line that may repeat.
func Brief(err error) string { return backend.Brief(err) }

// LocalDir is the directory of a store on this machine, or "".
func LocalDir(raw string) string { return backend.LocalDir(raw) }

// Within reports whether the local store dir lies in the tree at path.
func Within(dir, path string) bool { return backend.Within(dir, path) }

// temps is a backend that leaves temporary files behind (a directory).
type temps interface {
	StaleTemps(ctx context.Context, prefix string, before time.Time) ([]string, error)
}

// uploads is a backend whose multipart uploads can be listed and aborted.
type uploads interface {
	IncompleteUploads(ctx context.Context, prefix string, before time.Time) ([]Upload, error)
	AbortUpload(ctx context.Context, u Upload) error
}
