// Package storeconf is how a command reaches the checkpoint store: the
// settings every store command shares (its URL, run, keys and limits), the
// keys they resolve to (identity, recipients, auth key, each from its flag,
// its environment variable or the default file), and the store they open,
// with retries. cmd/gpurent maps its flags onto Config.
package storeconf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/statedir"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/store/cloud"
	"github.com/gpurent/gpurent/internal/units"
	"github.com/gpurent/gpurent/internal/usage"
	"golang.org/x/time/rate"
)

// Config is a command's store settings, as its flags give them.
type Config struct {
	URL        string
	Run        string
	Recipients []string
	Identity   string
	NoEncrypt  bool
	AuthKey    string
	// AllowUnauthenticated writes checkpoints without proof of their
	// writer and reads ones that have none (a store from before proofs).
	AllowUnauthenticated bool
	Takeover             bool
	Insecure             bool
	// Grace leaves uncommitted uploads younger than this alone when
	// cleaning up (0: none).
	Grace time.Duration
	// RetryFor, when above zero, tries a store that answered and then
	// stopped again until it has passed (an outage of minutes); 0: five
	// tries (store.Retrying.For).
	RetryFor time.Duration
	Workers  int
	BWLimit  string
	// PartSize and PartConcurrency size multipart uploads (the flags
	// give 8MiB and 4).
	PartSize        string
	PartConcurrency int
	// Say, when set, is where a store's retries are told (a line each).
	Say func(format string, a ...any)
	// Version is gpurent's, recorded in manifests.
	Version string
}

// IdentityPath is the identity every command uses unless --identity names
// one: $GPURENT_IDENTITY (set: true, the user chose it), else the default.
// keygen writes there too, so that what it creates is what push and pull
// read.
func IdentityPath() (path string, set bool) {
	if v := os.Getenv("GPURENT_IDENTITY"); v != "" {
		return v, true
	}
	return DefaultIdentity(), false
}

// DefaultIdentity is $XDG_CONFIG_HOME/gpurent/identity.txt, else
// ~/.config/gpurent/identity.txt.
func DefaultIdentity() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "gpurent", "identity.txt")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "gpurent", "identity.txt")
}

// Crypto assembles recipients, identities and auth keys; forPush says the
// command writes checkpoints, so it needs a recipient and a key to sign.
func (s *Config) Crypto(forPush bool) (*store.Crypto, error) {
	c := &store.Crypto{}
	idPath, explicit := s.Identity, s.Identity != ""
	if !explicit {
		idPath, explicit = IdentityPath()
	}
	if idPath != "" {
		if _, err := os.Stat(idPath); err == nil || explicit {
			ids, err := store.LoadIdentities(idPath)
			if err != nil {
				return nil, usage.Wrap(err)
			}
			c.Identities = ids
		}
	}
	c.Auth = store.AuthKeysOf(c.Identities)
	akPath := s.AuthKey
	if akPath == "" {
		akPath = os.Getenv("GPURENT_AUTH_KEY")
	}
	if akPath != "" {
		k, err := store.LoadAuthKey(akPath)
		if err != nil {
			return nil, usage.Wrap(err)
		}
		c.Auth = append(c.Auth, k)
	}
	c.CheckAuth = !s.AllowUnauthenticated
	if !forPush {
		return c, nil
	}
	if s.NoEncrypt {
		return c, s.canSign(c)
	}
	keys := s.Recipients
	if len(keys) == 0 {
		if v := os.Getenv("GPURENT_RECIPIENT"); v != "" {
			keys = strings.Split(v, ",")
		} else {
			keys = store.RecipientsOf(c.Identities)
		}
	}
	if len(keys) == 0 {
		return nil, usage.Errorf("no recipient to encrypt to: run gpurent keygen, or pass --recipient age1..., or --no-encrypt to store plaintext")
	}
	rs, err := store.ParseRecipients(keys)
	if err != nil {
		return nil, usage.Wrap(err)
	}
	c.Recipients = rs
	for _, k := range keys {
		c.Keys = append(c.Keys, strings.TrimSpace(k))
	}
	return c, s.canSign(c)
}

// canSign refuses a push that could not sign its checkpoints: found now,
// not when a new machine tries to resume, since the owner's pull refuses
// a checkpoint without proof.
func (s *Config) canSign(c *store.Crypto) error {
	if len(c.Auth) > 0 || s.AllowUnauthenticated {
		return nil
	}
	return usage.Errorf("no key to sign checkpoints as yours: this machine holds no age identity (--identity, GPURENT_IDENTITY, %s) and no auth key (--auth-key, GPURENT_AUTH_KEY). Copy the identity here, or, to keep it off this machine, run gpurent keygen --auth-key FILE where it is and copy FILE here (it signs but cannot decrypt); --allow-unauthenticated pushes without proof, which pull then refuses unless given the same flag", DefaultIdentity())
}

// Open opens the store with retries around it, for a command that writes
// to it: a local store directory is made when missing.
func (s *Config) Open(ctx context.Context, c *store.Crypto, progress func(int64)) (*store.Store, string, func(), error) {
	return s.open(ctx, c, progress, false)
}

// OpenExisting opens the store for a command that reads it: a local store
// directory that is not there is an error naming it.
func (s *Config) OpenExisting(ctx context.Context, c *store.Crypto, progress func(int64)) (*store.Store, string, func(), error) {
	return s.open(ctx, c, progress, true)
}

func (s *Config) open(ctx context.Context, c *store.Crypto, progress func(int64), mustExist bool) (*store.Store, string, func(), error) {
	if err := store.ValidRun(s.Run); err != nil {
		return nil, "", nil, usage.Wrap(err)
	}
	if s.Workers < 1 {
		return nil, "", nil, usage.Errorf("--workers: want at least 1, got %d", s.Workers)
	}
	if s.Grace < 0 {
		return nil, "", nil, usage.Errorf("--grace: want 0 (every leftover, even one of a push still running) or more, got %v", s.Grace)
	}
	var upload, download *rate.Limiter
	if s.BWLimit != "" {
		bps, err := units.ParseRate(s.BWLimit)
		if err != nil {
			return nil, "", nil, usage.Errorf("--bwlimit: %v", err)
		}
		upload, download = store.NewUploadLimit(bps), store.NewUploadLimit(bps)
	}
	part, err := units.ParseSize(s.PartSize, 1<<20)
	if err != nil || store.CheckPartSize(int64(part)) != nil {
		why := "want a size such as 8MiB or 64MiB"
		if err == nil {
			why = store.CheckPartSize(int64(part)).Error()
		}
		return nil, "", nil, usage.Errorf("--part-size %q: %s", s.PartSize, why)
	}
	if s.PartConcurrency < 1 || s.PartConcurrency > 64 {
		return nil, "", nil, usage.Errorf("--part-concurrency: want 1 to 64, got %d", s.PartConcurrency)
	}
	b, name, err := cloud.Open(ctx, s.URL, cloud.OpenOptions{Insecure: s.Insecure, PartSize: int(part), Concurrency: s.PartConcurrency, MustExist: mustExist})
	if err != nil {
		if strings.HasPrefix(err.Error(), "store") || strings.HasPrefix(err.Error(), "no store") {
			return nil, "", nil, usage.Wrap(err)
		}
		return nil, "", nil, err
	}
	host, _ := os.Hostname()
	grace := s.Grace
	if grace == 0 {
		grace = -1
	}
	r := &store.Retrying{Backend: b, For: s.RetryFor}
	if say := s.Say; say != nil {
		r.Retried = func(err error, wait time.Duration, left int) {
			if left < 0 {
				say("the store: %s; trying again in %.1f s (for up to %v, --retry-for)", store.Brief(err), wait.Seconds(), s.RetryFor)
				return
			}
			say("the store: %s; trying again in %.1f s (%s left)", store.Brief(err), wait.Seconds(), report.Count(left, "try"))
		}
	}
	// Pushes of large files keep what they stored in the state
	// directory, so that one cut short resumes; without one they do not.
	var journal string
	if d, err := statedir.Dir(); err == nil {
		journal = filepath.Join(d, "pushes")
	}
	st := store.New(r, store.Options{Crypto: c, Host: host, Version: s.Version, Workers: s.Workers, Grace: grace, Progress: progress, Upload: upload, Download: download,
		Leases: true, Takeover: s.Takeover, Journal: journal, Where: name, Say: s.Say})
	return st, name, func() { b.Close() }, nil
}
