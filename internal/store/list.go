package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// List returns the committed checkpoints of run, oldest first. A
// manifest that cannot be read as one (damaged, planted, of a newer
// gpurent) fails it: ListAll goes on past them.
func (s *Store) List(ctx context.Context, run string) ([]*Manifest, error) {
	ms, bad, err := s.ListAll(ctx, run)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, bad[0].Err
	}
	return ms, nil
}

// Unreadable is a manifest in the store that is not one gpurent can read.
type Unreadable struct {
	Key string `json:"key"`
	Err error  `json:"-"`
}

// ListAll is List that goes on past manifests it cannot read, and names
// them: one broken manifest must not hide the rest of a run from ls,
// verify and prune. A failure of the store itself is still an error.
func (s *Store) ListAll(ctx context.Context, run string) ([]*Manifest, []Unreadable, error) {
	if err := ValidRun(run); err != nil {
		return nil, nil, err
	}
	objs, err := s.b.List(ctx, runPrefix(run)+"manifests/")
	if err != nil {
		return nil, nil, err
	}
	var keys []string
	for _, o := range objs {
		if strings.HasSuffix(o.Key, ".json") {
			keys = append(keys, o.Key)
		}
	}
	all, errs := s.manifests(ctx, keys)
	var out []*Manifest
	var bad []Unreadable
	for i, err := range errs {
		var se *OpError
		switch {
		case err == nil:
			out = append(out, all[i])
		case IsNotFound(err):
			// pruned since the listing
		case errors.As(err, &se):
			return nil, nil, err
		default:
			bad = append(bad, Unreadable{Key: keys[i], Err: err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, bad, nil
}

// manifestReads is how many manifests are read at once. A store far away
// answers each read in tens to hundreds of milliseconds, so a run of a
// few hundred checkpoints read one by one takes most of a minute to list;
// eight at a time it takes seconds, and eight small reads in flight are
// few beside the parallel part uploads a push makes.
const manifestReads = 8

// manifests reads the manifests at keys, manifestReads at a time: each
// result, or its error, at its key's index.
func (s *Store) manifests(ctx context.Context, keys []string) ([]*Manifest, []error) {
	out := make([]*Manifest, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, manifestReads)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = s.manifest(ctx, k)
		}()
	}
	wg.Wait()
	return out, errs
}

// maxManifest is the most a manifest may hold: its file list takes some
// 300 bytes a file, so a checkpoint of some 200,000 files.
const maxManifest = 64 << 20

func (s *Store) manifest(ctx context.Context, key string) (*Manifest, error) {
	r, err := s.b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Sized before a byte is read where the store says: a huge object
	// planted as a manifest must not fill the memory, eight at a time.
	if sz, ok := r.(interface{ Size() int64 }); ok && sz.Size() > maxManifest {
		return nil, i18n.Errorf("%s holds %s, more than a manifest may (%s)", key, report.Bytes(sz.Size()), report.Bytes(maxManifest))
	}
	data, err := io.ReadAll(io.LimitReader(r, maxManifest+1))
	if err != nil {
		return nil, i18n.Errorf("read %s: %w", key, err)
	}
	if len(data) > maxManifest {
		return nil, i18n.Errorf("%s holds more than a manifest may (%s)", key, report.Bytes(maxManifest))
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, i18n.Errorf("%s: %w", key, err)
	}
	if key != manifestKey(m.Run, m.ID) {
		return nil, i18n.Errorf("%s holds checkpoint %s of run %s", key, m.ID, m.Run)
	}
	return m, nil
}

// committed lists the ids of run's committed checkpoints (those with a
// manifest), from the listing alone, in no particular order.
func (s *Store) committed(ctx context.Context, run string) ([]string, error) {
	prefix := runPrefix(run) + "manifests/"
	objs, err := s.b.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, o := range objs {
		if id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefix), ".json"); ok && ValidID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Find returns checkpoint id of run, or the newest for "" and "latest".
func (s *Store) Find(ctx context.Context, run, id string) (*Manifest, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	if id != "" && id != "latest" {
		if err := ValidID(id); err != nil {
			return nil, err
		}
		m, err := s.manifest(ctx, manifestKey(run, id))
		if IsNotFound(err) {
			return nil, i18n.Errorf("run %s has %w %s", run, ErrNoCheckpoint, id)
		}
		return m, err
	}
	// Ids begin with the time their push began, at a fixed width, so the
	// greatest key is the newest, as List orders them: one manifest read,
	// not one per checkpoint (gpurent run asks at every start, and a run
	// kept whole can hold thousands).
	latest, err := s.newestCommitted(ctx, run)
	if err != nil {
		return nil, err
	}
	if latest == "" {
		return nil, i18n.Errorf("run %s has %w yet", run, ErrNoCheckpoint)
	}
	return s.manifest(ctx, manifestKey(run, latest))
}

// Latest is the newest checkpoint of run that readers may use (with
// CheckAuth: the newest authenticated one), and the newer ones it passed
// over as unauthenticated, newest first, for the caller to name: a planted
// checkpoint is refused out loud, not resumed from and not hidden. A run
// whose checkpoints are all refused is an error saying why the newest is.
func (s *Store) Latest(ctx context.Context, run string) (*Manifest, []*Manifest, error) {
	if !s.opt.Crypto.CheckAuth {
		m, err := s.Find(ctx, run, "latest")
		return m, nil, err
	}
	if err := ValidRun(run); err != nil {
		return nil, nil, err
	}
	var found *Manifest
	var passed []*Manifest
	var first error
	listed := false
	err := s.newestFirst(ctx, run, func(m *Manifest, err error) (bool, error) {
		listed = true
		var se *OpError
		switch {
		case err == nil:
		case IsNotFound(err):
			return false, nil // pruned since the listing
		case errors.As(err, &se), errors.Is(err, ErrNewerManifest):
			return true, err
		default:
			// Not a manifest gpurent wrote (anyone with the write key
			// can put one there): it cannot be the owner's newest.
			if first == nil {
				first = err
			}
			return false, nil
		}
		err = s.opt.Crypto.Authentic(m)
		if err == nil {
			found = m
			return true, nil
		}
		if errors.Is(err, ErrNoAuthKey) {
			if _, ferr := s.Files(m); errors.Is(ferr, ErrNoIdentity) {
				return true, ferr // the error to fix first
			}
			return true, err
		}
		if first == nil {
			first = err
		}
		passed = append(passed, m)
		return false, nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case found != nil:
		return found, passed, nil
	case !listed:
		return nil, nil, i18n.Errorf("run %s has %w yet", run, ErrNoCheckpoint)
	}
	// A wrong or missing identity passes over every checkpoint: that
	// is the error to fix, not a store of planted ones.
	if len(passed) > 0 {
		if _, err := s.Files(passed[0]); errors.Is(err, ErrWrongIdentity) || errors.Is(err, ErrNoIdentity) {
			return nil, passed, err
		}
	}
	return nil, passed, i18n.Errorf("none of the %d checkpoints of run %s is authenticated; the newest: %w", len(passed), run, first)
}

// newestFirst reads run's committed manifests newest first,
// manifestReads at a time, handing each (or why it could not be read) to
// visit until visit says stop or fails: a run kept whole can hold
// thousands, and what is looked for is most often recent.
func (s *Store) newestFirst(ctx context.Context, run string, visit func(m *Manifest, err error) (stop bool, _ error)) error {
	ids, err := s.committed(ctx, run)
	if err != nil {
		return err
	}
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(b, a) })
	for len(ids) > 0 {
		batch := ids[:min(manifestReads, len(ids))]
		ids = ids[len(batch):]
		keys := make([]string, len(batch))
		for i, id := range batch {
			keys[i] = manifestKey(run, id)
		}
		ms, errs := s.manifests(ctx, keys)
		for i, m := range ms {
			if stop, err := visit(m, errs[i]); stop || err != nil {
				return err
			}
		}
	}
	return nil
}

// Resolve turns what a person typed for a checkpoint into its id: an id
// or "latest" as they are, else a NAME as ckpt ls shows it (checkpoint-5000,
// last.ckpt), which is the newest checkpoint pushed under that name. A
// person knows the step, not the id. A name no checkpoint has is an error
// wrapping ErrNoCheckpoint that lists the names there are, newest first.
func (s *Store) Resolve(ctx context.Context, run, ref string) (string, error) {
	if ref == "" || ref == "latest" || ValidID(ref) == nil {
		return ref, nil
	}
	if strings.ContainsAny(ref, `/\`) || ref == "." || ref == ".." {
		return "", i18n.Errorf("%q is neither a checkpoint id from gpurent ckpt ls, a NAME it shows, nor latest", ref)
	}
	if err := ValidRun(run); err != nil {
		return "", err
	}
	// Newest first (newestFirst): the step asked for is most often a
	// recent one.
	var names []string
	var refused error // why the newest of that name was passed over
	var found string
	seen := map[string]bool{}
	err := s.newestFirst(ctx, run, func(m *Manifest, err error) (bool, error) {
		if err != nil {
			return true, err
		}
		if m.Name == ref {
			err := s.opt.Crypto.trusted(m)
			if err == nil {
				found = m.ID // the newest of that name the owner wrote
				return true, nil
			}
			if refused == nil {
				refused = err
			}
		}
		if n := m.Name; n != "" && !seen[n] {
			seen[n] = true
			names = append(names, report.Safe(n))
		}
		return false, nil
	})
	if err != nil || found != "" {
		return found, err
	}
	if refused != nil {
		return "", refused
	}
	if len(names) == 0 {
		return "", i18n.Errorf("run %s has %w named %s", run, ErrNoCheckpoint, report.Safe(ref))
	}
	more := ""
	if len(names) > 10 {
		names, more = names[:10], fmt.Sprintf(" and %d more", len(names)-10)
	}
	return "", i18n.Errorf("run %s has %w named %s; its names, newest first: %s%s", run, ErrNoCheckpoint, report.Safe(ref), strings.Join(names, ", "), more)
}

// DescribeRuns names the store's runs and how many checkpoints each has,
// in one line, for a person who named a run with no checkpoint: most often
// a mistyped name, or one forgotten on a new machine.
func (s *Store) DescribeRuns(ctx context.Context) i18n.Text {
	rs, err := s.Runs(ctx)
	switch {
	case err != nil:
		return i18n.Textf("the store's runs could not be listed: %v", err)
	case len(rs) == 0:
		return i18n.Textf("this store has no checkpoints in any run yet")
	}
	names := make([]string, 0, min(len(rs), 10))
	for _, r := range rs[:min(len(rs), 10)] {
		names = append(names, fmt.Sprintf("%s (%d)", r.Run, r.Checkpoints))
	}
	more := i18n.Text{}
	if len(rs) > 10 {
		more = i18n.Textf(" and %d more", len(rs)-10)
	}
	return i18n.Textf("runs in this store (checkpoints): %s%s", strings.Join(names, ", "), more)
}

// ErrNoCheckpoint is wrapped by Find's error when the run has no committed
// checkpoint (or none with the id asked for).
var ErrNoCheckpoint = i18n.Errorf("no checkpoint")

// RunInfo is one run of a store: its committed checkpoints, the newest
// one's id and creation time, and its log sessions (gpurent run --log).
type RunInfo struct {
	Run           string    `json:"run"`
	Checkpoints   int       `json:"checkpoints"`
	Newest        string    `json:"newest"`
	NewestCreated time.Time `json:"newest_created"`
	// NewestName is what the newest checkpoint was pushed as
	// (checkpoint-6000): the step a resume starts from, which its id does
	// not say. Empty until NameNewest reads it, and for a checkpoint
	// pushed without a name.
	NewestName  string `json:"newest_name,omitempty"`
	LogSessions int    `json:"log_sessions"`
	// SpendSessions counts the gpurent run sessions that recorded what
	// the machine cost (with --price): their records are read with Spends.
	SpendSessions int      `json:"spend_sessions"`
	spendKeys     []string // their keys, for RunSpends
	// StoredBytes is what the listing says the run's objects hold:
	// checkpoints (encrypted), manifests, logs and leftovers of killed
	// pushes; the store bills it every month, long after the machine is
	// gone.
	StoredBytes int64 `json:"stored_bytes"`
}

// Runs lists the runs with a committed checkpoint, a log or a spend
// record, by name: what a person who mistyped a run name, or forgot it on
// a new machine, needs (a run that died before its first checkpoint has
// only its log, or what it cost). It
// reads only the listing (a checkpoint is committed when its manifest
// exists, and an id begins with its creation time), no manifest.
func (s *Store) Runs(ctx context.Context) ([]RunInfo, error) {
	objs, err := s.b.List(ctx, "runs/")
	if err != nil {
		return nil, err
	}
	byRun := map[string]*RunInfo{}
	stored := map[string]int64{}
	for _, o := range objs {
		run, rest, _ := strings.Cut(strings.TrimPrefix(o.Key, "runs/"), "/")
		if ValidRun(run) != nil {
			continue
		}
		stored[run] += o.Size
		info := func() *RunInfo {
			r := byRun[run]
			if r == nil {
				r = &RunInfo{Run: run}
				byRun[run] = r
			}
			return r
		}
		if name, ok := strings.CutPrefix(rest, "manifests/"); ok {
			if id, ok := strings.CutSuffix(name, ".json"); ok && idRe.MatchString(id) {
				r := info()
				r.Checkpoints++
				r.Newest = max(r.Newest, id)
			}
		} else if name, ok := strings.CutPrefix(rest, "logs/"); ok {
			if sess, ok := strings.CutSuffix(name, "/info.json"); ok && idRe.MatchString(sess) {
				info().LogSessions++
			}
		} else if name, ok := strings.CutPrefix(rest, "spend/"); ok {
			if sess, ok := strings.CutSuffix(name, ".json"); ok && idRe.MatchString(sess) {
				r := info()
				r.SpendSessions++
				r.spendKeys = append(r.spendKeys, o.Key)
			}
		}
	}
	out := make([]RunInfo, 0, len(byRun))
	for _, r := range byRun {
		if r.Newest != "" {
			r.NewestCreated, _ = idTime(r.Newest)
		}
		r.StoredBytes = stored[r.Run]
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run < out[j].Run })
	return out, nil
}

// NameNewest fills each run's NewestName from its newest manifest: one
// read per run, manifestReads at a time. Manifests are not encrypted, so
// no identity is needed. A manifest that cannot be read leaves its name
// empty, the others are still named, and the first such error is
// returned.
func (s *Store) NameNewest(ctx context.Context, rs []RunInfo) error {
	var keys []string
	var of []int // the run of each key
	for i, r := range rs {
		if r.Newest != "" {
			keys, of = append(keys, manifestKey(r.Run, r.Newest)), append(of, i)
		}
	}
	ms, errs := s.manifests(ctx, keys)
	var first error
	for j, m := range ms {
		switch {
		case errs[j] != nil && first == nil:
			first = i18n.Errorf("run %s: %w", rs[of[j]].Run, errs[j])
		case errs[j] == nil:
			rs[of[j]].NewestName = m.Name
		}
	}
	return first
}

// Files decrypts and checks the file list of m.
func (s *Store) Files(m *Manifest) ([]Entry, error) {
	plain, err := s.opt.Crypto.open(m)
	if err != nil {
		return nil, err
	}
	return ParseFileList(m, plain)
}
