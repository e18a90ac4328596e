package supervise

import (
	"context"
	"errors"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"

	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
)

// uploadDue says whether a scan at now may try an upload: always, but
// while uploads fail, only once the backoff has passed.
func (s *Supervisor) uploadDue(now time.Time) bool {
	s.uploading.Lock()
	defer s.uploading.Unlock()
	return s.failingSince.IsZero() || !now.Before(s.nextTry)
}

// uploadNewest pushes the newest complete checkpoint unless it is already
// committed; returns whether the newest complete one is now committed.
func (s *Supervisor) uploadNewest(ctx context.Context) bool {
	s.uploading.Lock()
	defer s.uploading.Unlock()
	cs, err := s.det.Scan()
	i := slices.IndexFunc(cs, func(c Candidate) bool { return c.Complete })
	if err != nil || i < 0 {
		return true // nothing complete to upload (as Newest says it)
	}
	c := cs[i]
	now := s.now()
	s.mu.Lock()
	progressed := s.progress.saw(c, now)
	s.mu.Unlock()
	if progressed {
		s.Metrics.lastCheckpoint.Store(wallNow().Unix()) // metrics are read in real time
	}
	if s.st.isCommitted(c) {
		s.trimLocal(c)
		return true
	}
	if s.cfg.Store == nil {
		s.commitLocal(c, "")
		return true
	}
	if !s.heldChecked {
		// The first upload of a session: the store may hold it already,
		// pushed by gpurent ckpt push before the run started.
		s.heldChecked = true
		if m, ok := s.cfg.Store.Holds(ctx, s.cfg.Run, c.Path); ok {
			s.cfg.Log("%s is in the store already, as %s (the same files, pushed before): not uploaded again", c.Name, m.ID)
			s.commitLocal(c, m.ID)
			s.trimLocal(c)
			return true
		}
	}
	start := s.now()
	m, err := s.cfg.Store.Push(ctx, c.Path, s.cfg.Run)
	if err != nil {
		if _, gone := os.Lstat(c.Path); errors.Is(gone, fs.ErrNotExist) && ctx.Err() == nil {
			// Trainers delete older checkpoints as they save new ones
			// (the Trainer's save_total_limit, Lightning's save_top_k):
			// no fault of the store's, and nothing to retry.
			s.cfg.Log("%s was deleted while it was uploaded (by the command, as trainers rotate checkpoints); the newest one is uploaded next", c.Name)
			if s.rotated++; s.rotated == 2 {
				// Every upload overtaken: with a limit of one or two
				// checkpoints kept and uploads slower than saves,
				// none would ever reach the store.
				s.cfg.Log("warning: %d checkpoints in a row were deleted before their upload finished, so the store may never get one: keep more of them locally (save_total_limit, save_top_k: 2 or more), save less often, or raise --bwlimit", s.rotated)
			}
			return false
		}
		if errors.Is(err, store.ErrLeaseLost) {
			s.leaseLost(err)
			return false
		}
		if errors.Is(err, store.ErrChanged) && ctx.Err() == nil {
			// The command saved again in place while the file was read:
			// the copy may mix two versions, so the push committed
			// nothing. No fault of the store's: the next scan takes the
			// new version once it is whole.
			s.cfg.Log("%s changed during its upload; not committed, uploaded again at the next scan (%v)", c.Name, err)
			return false
		}
		s.rotated = 0
		s.Metrics.uploadErrors.Add(1)
		now := s.now()
		if s.failingSince.IsZero() {
			// One line when it starts, one when it ends (below):
			// an hour's outage is not thousands of lines.
			s.failingSince, s.tries, s.wait = start, 0, 0
			if store.IsUnreachable(err) {
				s.cfg.Log("the store does not answer (training goes on; uploads are tried again less and less often, at least every %v): %s", maxBackoff, store.Brief(err))
			} else {
				s.cfg.Log("upload of %s failed (training goes on; tried again less and less often, at least every %v): %v", c.Name, maxBackoff, err)
			}
		}
		s.tries++
		s.wait = backoff(s.wait, s.cfg.Poll)
		s.nextTry = now.Add(min(s.wait+mrand.N(s.wait/2+1), maxBackoff))
		if !s.alarmed && now.Sub(s.failingSince) >= s.cfg.StoreAlarm {
			s.alarmed = true
			s.cfg.Event("store_failing", i18n.Textf("no checkpoint has reached the store for %v (training goes on; retried): %v",
				now.Sub(s.failingSince).Round(time.Second), err))
		}
		return false
	}
	// The checkpoint may have changed while it was read: only a signature
	// that still holds is recorded as committed.
	if again, ok, _ := s.det.Newest(); ok && again.Path == c.Path && again.Signature() != c.Signature() {
		s.cfg.Log("%s changed during its upload; it will be uploaded again", c.Name)
		return false
	}
	s.rotated = 0
	s.behind(c, cs, s.since(start))
	if s.alarmed {
		s.cfg.Event("store_ok", i18n.Textf("uploads work again after %v: committed %s", s.since(s.failingSince).Round(time.Second), c.Name))
	} else if !s.failingSince.IsZero() {
		s.cfg.Log("the store is back after %v (%s): committing %s", s.since(s.failingSince).Round(time.Second), report.Count(s.tries+1, "try"), c.Name)
	}
	s.failingSince, s.alarmed, s.tries, s.wait, s.nextTry = time.Time{}, false, 0, 0, time.Time{}
	s.commitLocal(c, m.ID)
	s.Metrics.bytes.Add(m.Bytes)
	took := s.since(start)
	s.Metrics.lastUploadSeconds.Store(int64(took.Milliseconds()))
	var reused, resumed i18n.Text
	if m.Reused > 0 {
		reused = i18n.Textf("; %s unchanged, stored by an earlier checkpoint: referred to", report.Bytes(m.Reused))
	}
	if m.Resumed > 0 {
		resumed = i18n.Textf("; %s stored by the upload cut short before", report.Bytes(m.Resumed))
	}
	s.cfg.Log("committed %s as %s (%s in %.1f s%s%s)", c.Name, m.ID, report.Bytes(m.Bytes), took.Seconds(), reused, resumed)
	if s.cfg.Notice > 0 && took > s.cfg.Notice && !s.noticeSaid {
		// Said once, at the first upload that shows it: the checkpoint
		// asked for on a notice will not reach the store in time.
		s.noticeSaid = true
		s.cfg.Log("note: this upload took %.0f s, longer than the %v notice a %s preemption can give: a checkpoint saved on the notice will not reach the store in time, so a preemption loses the work since the last one uploaded before it; save checkpoints often enough that this is acceptable", took.Seconds(), s.cfg.Notice, s.cfg.Cloud)
	}
	if s.cfg.Keep > 0 {
		if _, err := s.cfg.Store.Prune(ctx, s.cfg.Run, s.cfg.Keep); err != nil {
			s.cfg.Log("prune: %v", err)
		}
	}
	s.trimLocal(c)
	return true
}

// behind says, once, when uploads fall behind the saves: two or more
// checkpoints completed while c (of the scan before, before) was uploaded,
// so the next upload takes the newest and those between never reach the
// store. Under uploading.
func (s *Supervisor) behind(c Candidate, before []Candidate, took time.Duration) {
	if s.behindSaid {
		return
	}
	after, err := s.det.Scan()
	if err != nil {
		return
	}
	had := map[string]bool{}
	for _, b := range before {
		if b.Complete {
			had[b.Signature()] = true
		}
	}
	var newer []string // newest first, as Scan lists them
	for _, a := range after {
		if a.Complete && !had[a.Signature()] {
			newer = append(newer, a.Name)
		}
	}
	if len(newer) < 2 {
		return
	}
	s.behindSaid = true
	slices.Reverse(newer)
	s.cfg.Log("warning: uploads fall behind the checkpoints: %s were saved while %s was uploaded (%.0f s), so the newest goes next and %s never reaches the store; a machine lost loses the work since the last checkpoint uploaded. Save less often, or make uploads faster (gpurent ckpt speed measures the store)",
		strings.Join(newer, ", "), c.Name, took.Seconds(), strings.Join(newer[:len(newer)-1], ", "))
}

func (s *Supervisor) commitLocal(c Candidate, id string) {
	now := s.now()
	if err := s.st.commit(c, id, now.Unix()); err != nil {
		s.cfg.Log("%v", err)
	}
	s.mu.Lock()
	s.commits++
	s.lastCommit = now
	s.mu.Unlock()
	s.Metrics.lastCommit.Store(wallNow().Unix())
}

// storeNewer: the store's newest checkpoint m is a later step of the same
// naming as local, the newest complete one here ("checkpoint-5000" over
// "checkpoint-2000", "global_step20" over "global_step10"). Names without
// a step, or of another shape, are never judged newer: file times from two
// machines' clocks are no ground to pull many GB over what is here.
func (s *Supervisor) storeNewer(m *store.Manifest, local Candidate) bool {
	if s.st.committedAs(m.ID) {
		return false // made here, or pulled here already
	}
	ns, nl := lastNumber(m.Name), lastNumber(local.Name)
	if ns >= 0 && nl >= 0 && stepShape(m.Name) == stepShape(local.Name) {
		return ns > nl
	}
	// Names without steps to compare (Lightning's last.ckpt, a script's
	// ckpt_latest.pt saved over and over): the one here is older when it
	// is a commit of this run that the store's newest came after. Ids
	// begin with the time their push began, so they sort in that order.
	// One never committed (saved after the last upload) stays the newer.
	id := s.st.idOf(local)
	return id != "" && m.ID > id
}

// stepShape is a name with each run of digits replaced by '#':
// "epoch=3-step=1500.ckpt" is "epoch=#-step=#.ckpt".
func stepShape(name string) string {
	var b strings.Builder
	digits := false
	for _, r := range name {
		if r >= '0' && r <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return b.String()
}

// final is what the last upload found and achieved.
type final struct {
	found     bool   // a complete checkpoint exists
	committed bool   // the newest complete one is in the store
	name, id  string // the newest's name here and, committed, its id in the store
}

// finalUpload makes sure the newest complete checkpoint is committed,
// retrying for a while if the store fails, and reports whether it is. The
// command has stopped, so a file it no longer holds open needs no quiet
// period.
func (s *Supervisor) finalUpload(ctx context.Context) final {
	s.uploading.Lock()
	quiet := s.det.Quiet
	s.det.Quiet = 0
	newest, found, _ := s.det.Newest()
	s.uploading.Unlock()
	if !found {
		s.lookDeeper(true)
	} else if s.cfg.Store != nil {
		// Said only when there is one: "uploading the newest checkpoint"
		// followed by "no complete checkpoint was written" contradicted.
		s.cfg.Log("making sure the newest checkpoint, %s, is in the store before gpurent exits", newest.Name)
	}
	defer func() {
		s.uploading.Lock()
		s.det.Quiet = quiet
		s.uploading.Unlock()
	}()
	for i := 0; i < 5 && ctx.Err() == nil; i++ {
		if s.uploadNewest(ctx) {
			f := final{found: found, committed: true}
			if c, ok, _ := s.det.Newest(); ok {
				f.name, f.id = c.Name, s.st.idOf(c)
			} else if found {
				f.name, f.id = newest.Name, s.st.idOf(newest)
			}
			return f
		}
		wallSleep(time.Duration(i+1) * 200 * time.Millisecond) // for the store to answer again
	}
	return final{found: found}
}

// renew keeps the lease alive until ctx ends; a store that fails to
// answer is retried at the next turn (the lease lasts four), a lost lease
// ends the run.
func (s *Supervisor) renew(ctx context.Context) {
	t := s.cfg.Clock.NewTicker(s.cfg.Lease.Every())
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		err := s.cfg.Lease.Renew(ctx)
		switch {
		case err == nil:
			failing = false
		case errors.Is(err, store.ErrLeaseLost):
			s.leaseLost(err)
			return
		case ctx.Err() == nil && !failing:
			failing = true
			s.cfg.Log("warning: the run's lease could not be renewed (retried): %v", err)
		}
	}
}

// leaseLost tells Run, once, that the run was taken over.
func (s *Supervisor) leaseLost(err error) {
	select {
	case s.lost <- err:
	default:
	}
}
