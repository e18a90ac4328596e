package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"

	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
)

// fallbackTries is how many checkpoints older than a broken newest one a
// fresh machine tries before it gives up.
const fallbackTries = 3

// fallback pulls the newest trusted checkpoint older than broken that
// restores whole, trying fallbackTries at most, into the directory under
// its name: the one it pulled, or an error when none did.
func (s *Supervisor) fallback(ctx context.Context, broken *store.Manifest) (*store.Manifest, error) {
	all, _, err := s.cfg.Store.ListAll(ctx, s.cfg.Run)
	if err != nil {
		return nil, err
	}
	tried := 0
	for i := len(all) - 1; i >= 0 && tried < fallbackTries; i-- {
		m := all[i]
		if m.ID >= broken.ID || s.cfg.Store.Trusted(m) != nil {
			continue
		}
		tried++
		name := m.Name
		if name == "" {
			name = m.ID
		}
		dest := filepath.Join(s.cfg.CkptDir, name)
		if _, err := os.Lstat(dest); err == nil {
			continue // something of that name is here: not overwritten
		}
		if _, err := s.cfg.Store.Pull(ctx, s.cfg.Run, m.ID, dest); err != nil {
			var part *store.PartialPull
			if errors.As(err, &part) {
				store.DiscardPartial(dest)
			}
			s.cfg.Log("warning: %s (%s) could not be restored either: %v", m.ID, report.Safe(m.Name), err)
			continue
		}
		return m, nil
	}
	return nil, i18n.Errorf("no older checkpoint of run %s restores", s.cfg.Run)
}

// resume pulls the newest remote checkpoint when the directory holds no
// complete one (a new machine), or only older ones by their step (a
// machine made from a snapshot or image of the first, a data disk copied
// while the first trained on): resuming from those would redo the work
// the store's newer checkpoint holds.
func (s *Supervisor) resume(ctx context.Context) error {
	local, ok, err := s.det.Newest()
	if err != nil || s.cfg.Store == nil {
		return err
	}
	m, passed, err := s.cfg.Store.Latest(ctx, s.cfg.Run)
	for _, p := range passed {
		// Newer than what is resumed from, and no proof it is the
		// owner's: perhaps planted with a leaked write key. Never handed
		// to the command; said, so someone looks.
		s.cfg.Log("warning: the store's checkpoint %s (%s, from %s at %s) is not authenticated and is not resumed from: if you did not write it, someone with the store's write key may have; see gpurent ckpt verify",
			p.ID, report.Safe(p.Name), report.Safe(p.Host), p.Created.UTC().Format(time.RFC3339))
	}
	if ok {
		switch {
		case err != nil && !errors.Is(err, store.ErrNoCheckpoint):
			s.cfg.Log("could not ask the store for a newer checkpoint (%v): resuming from %s", err, local.Name)
			return nil
		case err != nil || !s.storeNewer(m, local):
			return nil
		}
		if ns, nl := lastNumber(m.Name), lastNumber(local.Name); ns >= 0 && nl >= 0 && stepShape(m.Name) == stepShape(local.Name) {
			s.cfg.Log("the store's newest checkpoint %s (step %d, from %s at %s) is newer than %s here (step %d)",
				m.Name, ns, m.Host, m.Created.UTC().Format(time.RFC3339), local.Name, nl)
		} else {
			s.cfg.Log("the store's newest checkpoint %s (%s, from %s at %s) is newer than %s here, which is the store's older %s",
				m.Name, m.ID, m.Host, m.Created.UTC().Format(time.RFC3339), local.Name, s.st.idOf(local))
		}
	}
	if err != nil {
		if errors.Is(err, store.ErrNoCheckpoint) {
			// Said out loud: a mistyped --run on a new machine would
			// otherwise train from the beginning without a word.
			s.cfg.Log("no checkpoint of run %s in the store: the command starts from the beginning (%s)", s.cfg.Run, s.cfg.Store.DescribeRuns(ctx))
			return nil
		}
		return i18n.Errorf("run: looking for a checkpoint to resume from: %w", err)
	}
	name := m.Name
	if name == "" {
		name = m.ID
	}
	dest := filepath.Join(s.cfg.CkptDir, name)
	older, olderID := "", "" // an older checkpoint here, moved aside for one of its name
	if _, err := os.Lstat(dest); err == nil && ok {
		if c, whole := s.completeAt(dest); whole {
			// A complete, older checkpoint has the newer one's name (one
			// name saved over and over): it moves aside for the pull, back
			// if the pull fails, and is removed after only when the store
			// holds it too.
			older, olderID = filepath.Join(s.cfg.CkptDir, fmt.Sprintf(".gpurent-older-%s-%s", name, s.now().UTC().Format("20060102T150405Z"))), s.st.idOf(c)
			if err := os.Rename(dest, older); err != nil {
				s.cfg.Log("warning: could not move %s aside for the newer %s (%v): resuming from %s here", dest, m.ID, err, local.Name)
				return nil
			}
		}
	}
	if _, err := os.Lstat(dest); err == nil {
		// A checkpoint of that name is here but not complete (a save cut
		// short, a copy taken mid-write). Frameworks find their
		// checkpoint by name (the Trainer's checkpoint-<N>, Megatron's
		// tracker, Lightning's last.ckpt), so a pulled copy under any
		// other name would be passed over for the broken one: the broken
		// one is moved aside, kept, under a name no framework and no
		// scan of gpurent's reads.
		aside := filepath.Join(s.cfg.CkptDir, fmt.Sprintf(".gpurent-incomplete-%s-%s", name, s.now().UTC().Format("20060102T150405Z")))
		if err := os.Rename(dest, aside); err != nil {
			return i18n.Errorf("run: %s is not a complete checkpoint and the store's %s has its name, so it must move aside for the pulled one: %w", dest, m.ID, err)
		}
		s.cfg.Log("%s is not a complete checkpoint: moved it to %s (delete it when you no longer need it), so that the pulled one takes its name", dest, aside)
	}
	if ok {
		s.cfg.Log("pulling %s from the store", m.ID)
	} else {
		s.cfg.Log("no complete checkpoint in %s: pulling %s from the store", s.cfg.CkptDir, m.ID)
	}
	if _, err := s.cfg.Store.Pull(ctx, s.cfg.Run, m.ID, dest); err != nil {
		if errors.Is(err, store.ErrNoIdentity) {
			// Pushing needs only the public key, so a new machine set up
			// like the first may lack the secret one: nothing was started.
			return i18n.Errorf("run: resuming run %s needs the age identity (secret key) its checkpoint %s is encrypted to (%s), and %w: copy it here (~/.config/gpurent/identity.txt where gpurent keygen ran; keep it mode 0600) and pass --identity FILE or set GPURENT_IDENTITY, or give another --run to start afresh",
				s.cfg.Run, m.ID, strings.Join(m.Recipients, ", "), store.ErrNoIdentity)
		}
		if ok {
			// Going on from the older one here, this run will not want
			// the part it pulled: its disk space is given back.
			var part *store.PartialPull
			if errors.As(err, &part) {
				store.DiscardPartial(dest)
				err = part.Err
			}
			if older != "" {
				os.RemoveAll(dest)
				if rerr := os.Rename(older, dest); rerr != nil {
					return i18n.Errorf("run: could not pull %s (%v), nor move the older %s back from %s: %w", m.ID, err, name, older, rerr)
				}
			}
			s.cfg.Log("warning: could not pull %s (%v): resuming from the older %s here", m.ID, err, local.Name)
			return nil
		}
		// A fresh machine: the newest checkpoint that does restore, named
		// with the one passed over, rather than no resume at all.
		var part *store.PartialPull
		if errors.As(err, &part) {
			store.DiscardPartial(dest)
		}
		fb, ferr := s.fallback(ctx, m)
		if ferr != nil {
			return i18n.Errorf("run: pull %s: %w", m.ID, err)
		}
		s.cfg.Log("warning: the newest checkpoint %s (%s) could not be restored (%v): resumed from %s (%s), the newest that restores and verifies; remove the broken one with gpurent ckpt rm --run %s %s",
			m.ID, report.Safe(m.Name), err, fb.ID, report.Safe(fb.Name), s.cfg.Run, m.ID)
		m, name = fb, fb.Name
		if name == "" {
			name = m.ID
		}
		dest = filepath.Join(s.cfg.CkptDir, name)
	}
	switch {
	case older != "" && olderID == "":
		s.cfg.Log("kept the older %s at %s: the store does not hold it (delete it when you no longer need it)", name, older)
	case older != "":
		if err := os.RemoveAll(older); err != nil {
			s.cfg.Log("warning: could not remove the older %s at %s (%v); the store keeps it as %s", name, older, err, olderID)
		} else {
			s.cfg.Log("removed the older %s here; the store keeps it as %s", name, olderID)
		}
	}
	// DeepSpeed and Megatron find their checkpoint through a tracker file
	// beside it, which the store does not hold.
	if wrote, err := RestoreTracker(dest); err != nil {
		s.cfg.Log("%v: the command may not find %s by itself", err, name)
	} else if wrote != "" {
		s.cfg.Log("wrote %s, which the framework reads to find the checkpoint it resumes from", wrote)
	}
	// Pull restored the files' own modification times; the checkpoint was
	// verified whole, so it needs no quiet period (Run uses it at once).
	c := Candidate{}
	cs, _ := s.det.Scan()
	for _, x := range cs {
		if x.Path == dest {
			c = x
		}
	}
	if c.Path != "" {
		s.commitLocal(c, m.ID)
	}
	s.pulled = dest
	return nil
}
