package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/cliflag"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/storeconf"
	"github.com/gpurent/gpurent/internal/usage"
)

// version is gpurent's version, recorded in manifests.
const version = "0.4.0-dev"

// storeFlags are the flags every ckpt command shares: storeconf's
// settings, which open the store.
type storeFlags struct{ storeconf.Config }

func (s *storeFlags) register(fs *pflag.FlagSet) {
	s.Version = version
	fs.StringVar(&s.URL, "store", os.Getenv("GPURENT_STORE"), "where checkpoints live: a path, file:///path, s3://bucket/prefix?endpoint=...&region=..., gs://, azblob:// (default $GPURENT_STORE)")
	fs.StringVar(&s.Run, "run", "default", "the run (training job) the checkpoints belong to")
	fs.StringArrayVar(&s.Recipients, "recipient", nil, "age public key to encrypt to (repeatable; default $GPURENT_RECIPIENT, else the identity's own)")
	fs.StringVar(&s.Identity, "identity", "", "age identity file to decrypt with (default $GPURENT_IDENTITY, else $XDG_CONFIG_HOME/gpurent/identity.txt or ~/.config/gpurent/identity.txt)")
	fs.BoolVar(&s.NoEncrypt, "no-encrypt", false, "store plaintext (no recipient needed)")
	fs.StringVar(&s.AuthKey, "auth-key", "", "auth key file that signs checkpoints as yours, for a machine without the identity (default $GPURENT_AUTH_KEY; made by gpurent keygen --auth-key)")
	fs.BoolVar(&s.AllowUnauthenticated, "allow-unauthenticated", false, "write checkpoints without proof of their writer, and read ones that have none (a store written before gpurent signed them); anyone with the store's write key can plant such a checkpoint")
	fs.BoolVar(&s.Takeover, "takeover", false, "take the run from another session that holds its lease (a gpurent run on a machine that is gone); that session commits nothing more")
	fs.BoolVar(&s.Insecure, "insecure", false, "allow plain http:// to an endpoint that is not this machine")
	cliflag.DurationVar(fs, &s.Grace, "grace", 10*time.Minute, "leave uncommitted uploads younger than this alone when cleaning up")
	fs.IntVar(&s.Workers, "workers", 4, "files moved in parallel")
	fs.StringVar(&s.PartSize, "part-size", "8MiB", "size of the parts of a multipart upload (S3, GCS, Azure): 5MiB to 5GiB; memory is part size x --part-concurrency x --workers")
	fs.IntVar(&s.PartConcurrency, "part-concurrency", 4, "parts of one object uploaded at once (1 to 64)")
	fs.StringVar(&s.BWLimit, "bwlimit", "", "cap uploads and downloads at this rate each, e.g. 50MB/s, 50MiB/s or 400Mbit/s (default: no cap)")
}

// checkID refuses an empty --id before the store is opened: bad input,
// not a store failure. Anything else may be a NAME (resolveID).
func checkID(id string) error {
	if id == "" {
		return usagef("--id: empty: want an id from gpurent ckpt ls, a NAME it shows, or latest")
	}
	return nil
}

// resolveID turns --id into a checkpoint id: an id as it is, latest into
// the newest (the newest signed one when owned: what pull restores), a
// NAME into the newest checkpoint pushed under it. A name the run does
// not have is bad input (exit 2), with the names it has and the store's
// runs.
func resolveID(ctx context.Context, g *globals, st *store.Store, run, id string, owned bool) (string, error) {
	if id == "latest" && owned {
		// The newest the owner wrote: newer ones without proof are named,
		// not taken. (verify takes the newest as it is, to judge it.)
		m, passed, err := st.Latest(ctx, run)
		if err != nil {
			passed = nil // the error says why
		}
		for _, p := range passed {
			g.tr.Fprintf(g.stderr, "gpurent: warning: passed over checkpoint %s (%q, from %s at %s): it is not authenticated (planted with the store's write key, or written by a gpurent before 2026-12)\n",
				p.ID, report.Safe(p.Name), report.Safe(p.Host), p.Created.UTC().Format(time.RFC3339))
		}
		if err != nil {
			if errors.Is(err, store.ErrNoCheckpoint) {
				return "", noCheckpoint(ctx, st, err, false)
			}
			return "", err
		}
		return m.ID, nil
	}
	v, err := st.Resolve(ctx, run, id)
	if err != nil {
		if errors.Is(err, store.ErrNoCheckpoint) {
			// The run itself may be the typo: name the store's runs too.
			return "", noCheckpoint(ctx, st, i18n.Errorf("--id: %w", err), true)
		}
		return "", usagef("--id: %v", err)
	}
	return v, nil
}

// unreadableNote names the manifests ls, verify and prune went on past.
func unreadableNote(g *globals, bad []store.Unreadable) {
	for _, u := range bad {
		g.tr.Fprintf(g.stderr, "gpurent: warning: %s is not a manifest this gpurent can read, left alone: %v\n", u.Key, u.Err)
	}
}

// unreadableKeys are bad's keys, for JSON (never null).
func unreadableKeys(bad []store.Unreadable) []string {
	keys := []string{}
	for _, u := range bad {
		keys = append(keys, u.Key)
	}
	return keys
}

// unauthNote says which checkpoints prune left alone and did not count:
// without proof of their writer they are old (written before proofs) or
// planted, and only their owner can tell which.
func unauthNote(g *globals, ids []string) {
	if len(ids) == 0 {
		return
	}
	g.tr.Fprintf(g.stderr, "gpurent: left %s alone, not counted toward --keep: no key here signed them (written by a gpurent before 2026-12, or planted by someone with the store's write key; gpurent ckpt verify names them): %s\n",
		i18n.Plural(len(ids), "%d unauthenticated checkpoint", "%d unauthenticated checkpoints"), strings.Join(ids, ", "))
}

func newCkpt(g *globals) *cobra.Command {
	var s storeFlags
	cmd := &cobra.Command{
		Use:   "ckpt",
		Short: "Checkpoints off the box: encrypted, verified, on external storage",
		Long: `ckpt keeps checkpoints (or any file or directory) on storage that outlives the
instance and the provider: a mounted disk, S3 or any S3-compatible service, GCS, Azure.
Everything is encrypted with age before it leaves the machine, hashed with SHA-256,
and committed by writing its manifest last: a push killed at any moment leaves no
visible checkpoint, and a pull never leaves half a checkpoint at its destination.`,
	}
	s.register(cmd.PersistentFlags())
	// Not run's: its uploader retries a failing store itself, while the command trains.
	cliflag.DurationVar(cmd.PersistentFlags(), &s.RetryFor, "retry-for", 10*time.Minute, "once the store has answered, try it again for this long when it stops (an outage), waits doubling up to 30s; 0, or a store that never answered: five tries")
	cmd.PersistentPreRun = func(c *cobra.Command, _ []string) {
		debug.SetMemoryLimit(store.MemoryLimit)
		s.Say = func(format string, a ...any) {
			fmt.Fprintf(c.ErrOrStderr(), "gpurent: %s\n", report.Safe(g.tr.Tf(format, a...)))
		}
	}

	cmd.AddCommand(newCkptPush(g, &s), newCkptPull(g, &s), newCkptLs(g, &s), newCkptVerify(g, &s), newCkptPrune(g, &s), newCkptRm(g, &s), newCkptRuns(g, &s), newCkptLog(g, &s), newCkptSpeed(g, &s))
	group(cmd)
	return cmd
}

type summary struct {
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"` // the base name pushed
	Created   time.Time `json:"created"`
	Host      string    `json:"host"`
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	Encrypted bool      `json:"encrypted"`
	Objects   int       `json:"objects"`
}

// runsHint names the store's runs where a run has no checkpoint.
func runsHint(ctx context.Context, st *store.Store) i18n.Text {
	return i18n.Textf("%s; see gpurent ckpt runs", st.DescribeRuns(ctx))
}

func summaries(ms []*store.Manifest) []summary {
	out := make([]summary, len(ms))
	for i, m := range ms {
		out[i] = summary{m.ID, m.Name, m.Created, m.Host, m.Files, m.Bytes, m.Encrypted, len(m.Objects)}
	}
	return out
}

func writeManifest(g *globals, m *store.Manifest, line i18n.Text) error {
	if g.output == report.JSON {
		return report.WriteJSON(g.stdout, summaries([]*store.Manifest{m})[0])
	}
	fmt.Fprintf(g.stdout, "%s\n%s\n", m.ID, report.Safe(g.tr.Text(line))) // a pushed name may hold terminal controls
	return nil
}

// resolvedNew is the absolute path a file not yet made at p will have,
// its parent resolved through symlinks as far as it exists.
func resolvedNew(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if parent, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(parent, filepath.Base(abs))
	}
	return abs
}

// noCheckpoint adds the store's runs to a "no checkpoint" error. An --id
// the run does not hold is bad input (exit 2); a run with nothing in it yet
// is a failure (exit 1), as a verify that found nothing to check is.
func noCheckpoint(ctx context.Context, st *store.Store, err error, byID bool) error {
	err = i18n.Errorf("%w; %s", err, runsHint(ctx, st))
	if byID {
		return usage.Wrap(err)
	}
	return err
}

// uploadsNote warns, on stderr, that incomplete uploads could not be
// checked: the prune itself went ahead.
func uploadsNote(g *globals, err error) {
	if err != nil {
		g.tr.Fprintf(g.stderr, "gpurent: warning: incomplete multipart uploads were not checked (%v); a bucket lifecycle rule with AbortIncompleteMultipartUpload cleans them instead\n", err)
	}
}
