// Package store keeps checkpoints off the rented machine: encrypted with
// age, verified against SHA-256 hashes, on any blob store that
// internal/store/cloud opens (a local or NFS directory, S3 and every
// S3-compatible service, GCS, Azure). A checkpoint is visible only once all
// its objects are stored and its manifest is written last, so a push killed
// at any moment leaves nothing half-written behind that ls, latest or pull
// could see. This package is the repository (restic's word): it reads and
// writes through internal/store/backend's interface and links no cloud SDK.
package store

import (
	"context"
	"io"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Options configure a Store.
type Options struct {
	Crypto  *Crypto
	Host    string // recorded in manifests
	Version string // gpurent's version, recorded in manifests
	// Workers is how many files move in parallel (4 when zero).
	Workers int
	// Grace: uncommitted data younger than this is left alone by the
	// clean-up, in case its push is still running (10 minutes when zero;
	// negative means no grace). The age is the push's heartbeat's, by the
	// store's clock, where it has one (heartbeat.go).
	Grace time.Duration
	// Progress, when set, is told of every chunk of plaintext moved.
	Progress func(n int64)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Upload caps the bytes read for uploads, across all workers (nil: no
	// cap), so a push never takes the link the training job needs.
	Upload *rate.Limiter
	// Download caps the bytes read from the store for pulls and deep
	// verifies likewise (nil: no cap).
	Download *rate.Limiter
	// Free is the space free to this user on the file system of dir
	// (freeSpace when nil; ok false when it cannot tell).
	Free func(dir string) (free uint64, ok bool)
	// Leases makes a Push outside a held lease (Hold) take the run's
	// lease for its commit, refusing when another session holds it
	// unless Takeover (lease.go). LeaseTTL is LeaseTTL when zero.
	Leases   bool
	Takeover bool
	LeaseTTL time.Duration
	// PullWait is the first wait before an object whose reading broke off
	// is read again; it doubles each time (1 s when zero).
	PullWait time.Duration
	// Segment is the size of the parts a larger file is stored in
	// (segment.go; 1 GiB when zero).
	Segment int64
	// Journal is the directory where pushes of files in parts keep what
	// they stored, so that one cut short resumes ("": none resumes).
	// Where names the store in it.
	Journal string
	Where   string
	// Say, when set, is told what a person should know and no error
	// says: a clock more than a minute off the store's, once.
	Say func(format string, a ...any)
}

// limited reads no faster than its limiter allows.
type limited struct {
	ctx context.Context
	r   io.Reader
	lim *rate.Limiter
}

func (l *limited) Read(p []byte) (int, error) {
	if b := l.lim.Burst(); len(p) > b {
		p = p[:b]
	}
	n, err := l.r.Read(p)
	if n > 0 {
		if werr := l.lim.WaitN(l.ctx, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// NewUploadLimit is a limiter for Options.Upload at bytesPerSecond, with
// bursts of a tenth of a second (at least 64 KiB).
func NewUploadLimit(bytesPerSecond float64) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(bytesPerSecond), max(64<<10, int(bytesPerSecond/10)))
}

// Store is a checkpoint store on a Backend.
type Store struct {
	b   Backend
	opt Options
	// logInfos caches log sessions' info.json by key: written once and
	// never changed, read again at every poll of `ckpt log --follow`.
	logInfos sync.Map
	// beat is how often a push rewrites its heartbeat (heartbeat.go).
	beat time.Duration
	// lease, when set (Hold), is checked before every commit.
	lease *Lease
	// idMu guards idAt, the time of the last checkpoint id made here:
	// the next is a millisecond later at least, so that two pushes of
	// one process in the same millisecond sort in the order made, and
	// latest is the last one pushed.
	idMu sync.Mutex
	idAt time.Time
	// mine are the ids this Store committed, in the order committed: a
	// prune here never deletes the newest keep of them, whatever another
	// writer's ids say (PlanPrune).
	mine []string
	// skewTold is set once the clock's distance from the store's was
	// measured (and, if over a minute, said).
	skewTold sync.Once
}

// New wraps a backend. The crypto may be nil for plaintext.
func New(b Backend, opt Options) *Store {
	if opt.Crypto == nil {
		opt.Crypto = &Crypto{}
	}
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	if opt.Grace == 0 {
		opt.Grace = defaultGrace
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.PullWait <= 0 {
		opt.PullWait = time.Second
	}
	return &Store{b: b, opt: opt, beat: beatInterval(opt.Grace)}
}

func (s *Store) progress(n int64) {
	if s.opt.Progress != nil && n > 0 {
		s.opt.Progress(n)
	}
}
