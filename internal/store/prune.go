package store

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// PrunePlan is what Prune(ctx, run, keep) would delete, deleting nothing:
// the checkpoints beyond the newest keep, oldest first, and the data keys
// of pushes that never committed and are older than the grace period. It is
// how `ckpt prune --dry-run` shows a deletion before it is made.
type PrunePlan struct {
	Checkpoints []*Manifest
	// Unreadable are manifests left alone, uncounted: not ones this
	// gpurent can read.
	Unreadable []Unreadable
	// Unauthenticated are checkpoints left alone because no key here
	// signed them (with CheckAuth): not counted, not deleted.
	Unauthenticated []*Manifest
	Leftovers       []string
	// Uploads are multipart uploads a killed push began and never ended:
	// S3 bills their parts, and only aborting them deletes the parts.
	Uploads []Upload
	// UploadsErr says why they could not be listed (credentials without
	// s3:ListBucketMultipartUploads, a service without the call); the rest
	// of the prune does not depend on it.
	UploadsErr error
	// clean is the clean-up that found Leftovers.
	clean *cleanup
}

// PlanPrune lists what a prune of run keeping the newest keep checkpoints
// deletes.
func (s *Store) PlanPrune(ctx context.Context, run string, keep int) (*PrunePlan, error) {
	if keep < 0 {
		return nil, i18n.Errorf("prune: --keep must be 0 or more, got %d", keep)
	}
	all, bad, err := s.ListAll(ctx, run)
	if err != nil {
		return nil, err
	}
	// Manifests that cannot be read are left alone, named: what they hold
	// cannot be told, so neither kept nor deleted on their word.
	p := &PrunePlan{Unreadable: bad}
	if s.opt.Crypto.CheckAuth {
		// Only the owner's checkpoints count toward keep: planted ones
		// must not push real ones out of it. Those without proof stay
		// (a store written before proofs holds only such), named.
		if len(s.opt.Crypto.Auth) == 0 && len(all) > 0 {
			return nil, i18n.Errorf("prune: this machine holds no identity or auth key to tell the run's own checkpoints from planted ones (%w): pass --identity FILE, or --allow-unauthenticated to count every checkpoint", ErrNoAuthKey)
		}
		var own []*Manifest
		for _, m := range all {
			if s.opt.Crypto.Authentic(m) == nil {
				own = append(own, m)
			} else {
				p.Unauthenticated = append(p.Unauthenticated, m)
			}
		}
		all = own
	}
	if len(all) > keep {
		p.Checkpoints = all[:len(all)-keep]
	}
	// The newest keep checkpoints this Store committed stay, whatever
	// the order of ids says: a session never prunes its own work as the
	// oldest.
	s.idMu.Lock()
	own := slices.Clone(s.mine[max(0, len(s.mine)-keep):])
	s.idMu.Unlock()
	p.Checkpoints = slices.DeleteFunc(p.Checkpoints, func(m *Manifest) bool { return slices.Contains(own, m.ID) })
	c, err := s.judge(ctx, run)
	if err != nil {
		return nil, err
	}
	// What a committed checkpoint or a live push refers to is no
	// leftover, whatever checkpoint first stored it (shared.go).
	if p.Leftovers, err = s.unused(ctx, run, c.leftovers); err != nil {
		return nil, err
	}
	p.clean = c
	p.Uploads, p.UploadsErr = s.incompleteUploads(ctx, run, c)
	return p, nil
}

// incompleteUploads lists the run's multipart uploads older than the grace
// period (a younger one may belong to a push still running), by the
// store's clock where c read it, but for those of pushes c found alive.
func (s *Store) incompleteUploads(ctx context.Context, run string, c *cleanup) ([]Upload, error) {
	u, ok := s.b.(uploads)
	if !ok {
		return nil, nil
	}
	var before time.Time
	if s.opt.Grace > 0 {
		now := c.now
		if now.IsZero() {
			now = s.opt.Now()
		}
		before = now.Add(-s.opt.Grace)
	}
	ups, err := u.IncompleteUploads(ctx, runPrefix(run)+"data/", before)
	if err != nil {
		return nil, err
	}
	out := ups[:0]
	for _, up := range ups {
		id, _, _ := strings.Cut(strings.TrimPrefix(up.Key, runPrefix(run)+"data/"), "/")
		if !c.alive[id] {
			out = append(out, up)
		}
	}
	return out, nil
}

// abortUploads aborts ups, counting those aborted.
func (s *Store) abortUploads(ctx context.Context, ups []Upload) (int, error) {
	u, ok := s.b.(uploads)
	if !ok {
		return 0, nil
	}
	n := 0
	for _, up := range ups {
		if err := u.AbortUpload(ctx, up); err != nil && !IsNotFound(err) {
			return n, err
		}
		n++
	}
	return n, nil
}

// Pruned is what a prune deleted.
type Pruned struct {
	Checkpoints []string // ids, oldest first
	// Unauthenticated are ids left alone, uncounted (PrunePlan's).
	Unauthenticated []string
	// Unreadable are manifests left alone (PrunePlan's).
	Unreadable []Unreadable
	Leftovers  int   // data objects of pushes that never committed
	Uploads    int   // incomplete multipart uploads aborted
	UploadsErr error // why they could not be listed or aborted
}

// Prune keeps the newest keep checkpoints of run and deletes the rest:
// manifest first (the checkpoint disappears whole), then its objects. It
// also removes what killed pushes left: data objects that never committed
// and, on S3, multipart uploads never completed.
func (s *Store) Prune(ctx context.Context, run string, keep int) (*Pruned, error) {
	p, err := s.PlanPrune(ctx, run, keep)
	if err != nil {
		return nil, err
	}
	r := &Pruned{Checkpoints: []string{}, Unreadable: p.Unreadable}
	for _, m := range p.Unauthenticated {
		r.Unauthenticated = append(r.Unauthenticated, m.ID)
	}
	// The manifests first: each checkpoint disappears whole. Then their
	// objects that no other checkpoint shares; one killed before is a
	// leftover for the next clean-up.
	var objs []string
	for _, m := range p.Checkpoints {
		if err := s.b.Delete(ctx, manifestKey(run, m.ID)); err != nil && !IsNotFound(err) {
			return r, err
		}
		objs = append(objs, s.deletable(m)...)
		r.Checkpoints = append(r.Checkpoints, m.ID)
	}
	if _, err := s.deleteUnused(ctx, run, objs, nil); err != nil {
		return r, err
	}
	if r.Leftovers, err = s.deleteLeftovers(ctx, run, p.clean, p.Leftovers); err != nil {
		return r, err
	}
	r.UploadsErr = p.UploadsErr
	if r.UploadsErr == nil {
		r.Uploads, r.UploadsErr = s.abortUploads(ctx, p.Uploads)
	}
	return r, nil
}

// cleanLeftovers deletes data of checkpoints of run that never committed
// and are older than the grace period, and aborts the run's incomplete
// multipart uploads as old.
func (s *Store) cleanLeftovers(ctx context.Context, run string) (int, error) {
	c, err := s.judge(ctx, run)
	if err != nil {
		return 0, err
	}
	n, err := s.deleteLeftovers(ctx, run, c, c.leftovers)
	if err != nil {
		return n, err
	}
	// Best effort: credentials that may push need not be allowed to list
	// multipart uploads, and a push must not fail for it (prune says so).
	if ups, err := s.incompleteUploads(ctx, run, c); err == nil {
		a, _ := s.abortUploads(ctx, ups)
		n += a
	}
	return n, nil
}

// leftoverBatch is how many leftovers are deleted between two listings
// of the heartbeats.
const leftoverBatch = 100

// deleteLeftovers deletes the leftovers clean-up c found that nothing
// refers to (shared.go), listing the run's heartbeats again before each
// batch: a push that takes up an unfinished checkpoint (segment.go)
// announces it again, and a clean-up that judged it dead just before must
// not go on deleting its objects after the push's last check (minutes of
// deletes, for 100,000 small files). The keys of an id whose heartbeat
// appeared or was rewritten since c judged are left alone. With no grace
// nothing is spared: the user asked for every leftover, even of a push
// still running.
func (s *Store) deleteLeftovers(ctx context.Context, run string, c *cleanup, keys []string) (int, error) {
	if c == nil || s.opt.Grace <= 0 {
		return s.deleteUnused(ctx, run, keys, nil)
	}
	up := uploadsPrefix(run)
	return s.deleteUnused(ctx, run, keys, func(ctx context.Context, batch []string) ([]string, error) {
		beats, err := s.b.List(ctx, up)
		if err != nil && !IsNotFound(err) {
			return nil, err
		}
		back := map[string]bool{}
		for _, o := range beats {
			if id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, up), ".json"); ok && ValidID(id) == nil {
				if was, seen := c.beats[id]; !seen || !o.ModTime.Equal(was) {
					back[id] = true
				}
			}
		}
		return slices.DeleteFunc(slices.Clone(batch), func(k string) bool { return back[tempID(strings.TrimPrefix(k, runPrefix(run)))] }), nil
	})
}

// CheckWrite writes a small object under run and deletes it: a store that
// lists but refuses writes (a read-only key, a bucket policy without
// PutObject) would otherwise be found out at the first checkpoint, hours
// of paid training later. The object, runs/<run>/write-check, holds
// nothing secret. A store that takes the write but refuses the delete (a
// write-only key, kept so the machine cannot erase backups) is fine for
// pushing; deleted says whether the object went, and pruning will fail
// there the same way.
func (s *Store) CheckWrite(ctx context.Context, run string) (deleted bool, err error) {
	key := runPrefix(run) + "write-check"
	body := []byte("gpurent checks that it can write here before a run starts; this object can be deleted\n")
	if _, err := s.b.Put(ctx, key, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return false, i18n.Errorf("the store does not take writes: %w", err)
	}
	return s.b.Delete(ctx, key) == nil, nil
}

// Remove deletes checkpoint id of run: its manifest first, so it
// disappears whole, then its objects and anything else stored under its
// id (what a resumed push left, a killed write's temporary file older
// than the grace). It returns the manifest it deleted. A manifest that
// cannot be read is deleted with whatever is stored under its id. A
// checkpoint a push may still be writing (its heartbeat is fresh) is
// refused.
func (s *Store) Remove(ctx context.Context, run, id string) (*Manifest, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	if err := ValidID(id); err != nil {
		return nil, err
	}
	m, err := s.manifest(ctx, manifestKey(run, id))
	var se *OpError
	switch {
	case IsNotFound(err):
		return nil, i18n.Errorf("run %s has %w %s", run, ErrNoCheckpoint, id)
	case errors.As(err, &se):
		return nil, err
	}
	c, err := s.judge(ctx, run)
	if err != nil {
		return nil, err
	}
	if c.alive[id] {
		return nil, i18n.Errorf("checkpoint %s is being written by a push that announced itself less than the grace ago (a resumed push?): not deleted", id)
	}
	if err := s.b.Delete(ctx, manifestKey(run, id)); err != nil && !IsNotFound(err) {
		return nil, err
	}
	keys := []string{}
	if m != nil {
		keys = s.deletable(m)
	}
	objs, lerr := s.b.List(ctx, dataPrefix(run, id))
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	for _, k := range c.leftovers {
		if tempID(strings.TrimPrefix(k, runPrefix(run))) == id {
			keys = append(keys, k)
		}
	}
	if _, err := s.deleteUnused(ctx, run, keys, nil); err != nil || lerr != nil {
		return m, i18n.Errorf("checkpoint %s is gone, but perhaps not all of its objects: %w (the next prune removes them)", id, errors.Join(err, lerr))
	}
	if e, ok := s.b.(emptyDirs); ok {
		e.RemoveEmpty(dataPrefix(run, id))
	}
	if m == nil {
		m = &Manifest{ID: id, Run: run}
	}
	return m, nil
}
