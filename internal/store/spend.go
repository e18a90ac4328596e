package store

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// What a run has cost under gpurent run --price lives beside its
// checkpoints, so that a budget follows the run to a new machine and
// ckpt runs can say what each run cost:
//
//	runs/<run>/spend/<session>.json
//
// one object for each gpurent run session, rewritten as it spends. The
// records are plaintext, as a log's info.json and the manifests are:
// amounts are not secrets, and a machine that holds only the recipients'
// public keys must read them to count the budget. What they hold is the
// ledger package's business; the store only keeps them.

// maxSpend bounds a record read back: one session's amount and times.
const maxSpend = 64 << 10

func spendPrefix(run string) string { return runPrefix(run) + "spend/" }

// NewID is a new id of a checkpoint id's form: the time to the
// millisecond, so that ids sort by it, and 32 random bits. A gpurent run
// session's spend record is named by one.
func NewID(t time.Time) string { return newID(t) }

// PutSpend writes session's spend record of run, replacing the one
// written before.
func (s *Store) PutSpend(ctx context.Context, run, session string, record []byte) error {
	if err := ValidRun(run); err != nil {
		return err
	}
	if !idRe.MatchString(session) || len(record) > maxSpend {
		return i18n.Errorf("spend record of run %s: session %q of %d bytes", run, session, len(record))
	}
	if _, err := s.b.Put(ctx, spendPrefix(run)+session+".json", func(w io.Writer) error { _, err := w.Write(record); return err }); err != nil {
		return i18n.Errorf("spend record of run %s: %w", run, err)
	}
	return nil
}

// Spends reads run's spend records, by their keys (to name one that is
// damaged). None is an empty map.
func (s *Store) Spends(ctx context.Context, run string) (map[string][]byte, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	objs, err := s.b.List(ctx, spendPrefix(run))
	if err != nil {
		return nil, i18n.Errorf("spend records of run %s: %w", run, err)
	}
	var keys []string
	for _, o := range objs {
		if id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, spendPrefix(run)), ".json"); ok && idRe.MatchString(id) {
			keys = append(keys, o.Key)
		}
	}
	return s.readSpends(ctx, keys)
}

// RunSpends is Spends for a run Runs listed, from the keys that listing
// found: no second listing of the store.
func (s *Store) RunSpends(ctx context.Context, r RunInfo) (map[string][]byte, error) {
	return s.readSpends(ctx, r.spendKeys)
}

// readSpends reads the spend records at keys, by key.
func (s *Store) readSpends(ctx context.Context, keys []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(keys))
	var mu sync.Mutex
	err := s.parallel(ctx, len(keys), func(ctx context.Context, i int) error {
		r, err := s.b.Get(ctx, keys[i])
		if IsNotFound(err) {
			return nil // removed since the listing: counted from zero, as asked
		}
		if err != nil {
			return i18n.Errorf("spend record %s: %w", keys[i], err)
		}
		defer r.Close()
		b, err := io.ReadAll(io.LimitReader(r, maxSpend+1))
		if err != nil {
			return i18n.Errorf("spend record %s: %w", keys[i], err)
		}
		if len(b) > maxSpend {
			return i18n.Errorf("spend record %s: over %d bytes, not one gpurent wrote", keys[i], maxSpend)
		}
		mu.Lock()
		out[keys[i]] = b
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
