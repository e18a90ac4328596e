package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// A push announces itself while it uploads: runs/<run>/uploads/<id>.json,
// a small plaintext object (the id, the host, when it began; nothing
// secret), written before the first object and rewritten every beat until
// the push commits or fails, then deleted. The clean-up (every push's own
// and prune) judges an uncommitted id with such a heartbeat by the
// heartbeat's age, not by the time in the id: a push that runs longer than
// the grace period (a large checkpoint on a slow link) or was begun on a
// machine whose clock is ahead keeps its objects. The age is measured on
// the store's clock alone (the heartbeat's time as the store stamped it,
// against a probe object written for the purpose), so machines whose
// clocks disagree still agree on it. An id without a heartbeat (written
// by an older gpurent) is judged by its id's time, as before.

// defaultGrace is the grace period when Options.Grace is zero.
const defaultGrace = 10 * time.Minute

// beatInterval is how often a push rewrites its heartbeat: a quarter of
// the grace period (of the default one when there is none or it is
// longer, since a clean-up on another machine may use the default), and
// not more often than every 5 s.
func beatInterval(grace time.Duration) time.Duration {
	if grace <= 0 || grace > defaultGrace {
		grace = defaultGrace
	}
	return max(grace/4, 5*time.Second)
}

func uploadsPrefix(run string) string { return runPrefix(run) + "uploads/" }

func heartbeatKey(run, id string) string { return uploadsPrefix(run) + id + ".json" }

// probePrefix begins the names of the objects that measure the store's
// clock (uploads/probe-<hex>): never a checkpoint id.
const probePrefix = "probe-"

// heartbeat is the content of runs/<run>/uploads/<id>.json, for a person
// who looks; the clean-up reads the store's time of the object, and the
// objects of other checkpoints the push refers to (Refs).
type heartbeat struct {
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Run     string    `json:"run"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	// Updated is this machine's clock at the write.
	Updated time.Time `json:"updated"`
	// Every is how often, in seconds, the push rewrites it: it follows
	// the pushing machine's --grace, which a clean-up elsewhere need not
	// share, so a clean-up waits for three missed rewrites before it
	// takes the push for dead, however short its own grace.
	Every int `json:"every_s,omitempty"`
	// Refs are the keys of stored objects the push will commit as its
	// own (shared.go), written before it looks whether they are there: a
	// clean-up spares them while the heartbeat exists.
	Refs []string `json:"refs,omitempty"`
}

// beat is a push's heartbeat while it runs.
type beat struct {
	// mu is held across a write, from the body to the store's answer:
	// a rewrite by the ticker that began before refer must not land after
	// it with fewer Refs.
	mu   sync.Mutex
	refs []string
	key  string
	// write rewrites the heartbeat; stop ends the rewrites and deletes it.
	write func(ctx context.Context) error
	stop  func()
}

// rewrite writes the heartbeat as it is.
func (b *beat) rewrite(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.write(ctx)
}

// refer adds keys to the heartbeat's Refs and writes it at once.
func (b *beat) refer(ctx context.Context, keys []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refs = append(b.refs, keys...)
	return b.write(ctx)
}

// announce writes the heartbeat of push id of run now and then rewrites it
// every s.beat until stop is called; stop returns once no write is in
// flight and deletes the heartbeat. The first write's failure is the
// push's (a store that takes no writes); a later one is let be: if the
// clean-up elsewhere then deletes the push's objects, the push finds out
// before it commits.
func (s *Store) announce(ctx context.Context, run, id string, started time.Time) (*beat, error) {
	key := heartbeatKey(run, id)
	hb := &beat{key: key}
	// write is called with hb.mu held.
	hb.write = func(ctx context.Context) error {
		body, err := json.Marshal(heartbeat{Version: 1, ID: id, Run: run, Host: s.opt.Host, Started: started.UTC(), Updated: s.opt.Now().UTC(),
			Every: int((s.beat + time.Second - 1) / time.Second), Refs: hb.refs})
		if err != nil {
			return err
		}
		_, err = s.b.Put(ctx, key, func(w io.Writer) error { _, err := w.Write(body); return err })
		return err
	}
	if err := hb.rewrite(ctx); err != nil {
		return nil, i18n.Errorf("push: announce the upload: %w", err)
	}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.beat)
		defer t.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-t.C:
				hb.rewrite(bctx)
			}
		}
	}()
	hb.stop = func() {
		cancel()
		<-done
		// Best effort, also after a failure or Ctrl-C: a heartbeat left
		// behind ages out and goes with the next clean-up.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		s.b.Delete(dctx, key)
	}
	return hb, nil
}

// storeNow is the store's clock now: the time the store stamps on a probe
// object written for the purpose (and deleted). ok is false where the
// store does not say, or the probe could not be written (read-only
// credentials planning a prune).
func (s *Store) storeNow(ctx context.Context, run string) (now time.Time, ok bool) {
	var b [8]byte
	rand.Read(b[:])
	key := uploadsPrefix(run) + probePrefix + hex.EncodeToString(b[:])
	body := []byte("gpurent reads the store's clock from this object; it can be deleted\n")
	if _, err := s.b.Put(ctx, key, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return time.Time{}, false
	}
	defer s.b.Delete(context.WithoutCancel(ctx), key)
	objs, err := s.b.List(ctx, key)
	if err != nil {
		return time.Time{}, false
	}
	for _, o := range objs {
		if o.Key == key && !o.ModTime.IsZero() {
			return o.ModTime, true
		}
	}
	return time.Time{}, false
}

// cleanup is what a clean-up of a run found.
type cleanup struct {
	// leftovers are the keys to delete: data of pushes that never
	// committed and are no longer alive, their heartbeats, stale probes.
	leftovers []string
	// alive are the uncommitted ids whose push may still be running.
	alive map[string]bool
	// now is the store's clock, zero when it was not read.
	now time.Time
	// beats are the heartbeats judged, by id: their times as listed.
	beats map[string]time.Time
}

// judge sorts the uncommitted uploads of run into those that may still be
// running and the leftovers of pushes that died. Heartbeats are listed
// first, then data, then manifests: a push deletes its heartbeat only
// after its manifest is written, so an id seen without a heartbeat is
// either committed in the manifests listed after, or was never announced.
func (s *Store) judge(ctx context.Context, run string) (*cleanup, error) {
	c := &cleanup{alive: map[string]bool{}}
	up := uploadsPrefix(run)
	beats, err := s.b.List(ctx, up)
	if err != nil && !IsNotFound(err) {
		return nil, err
	}
	objs, err := s.b.List(ctx, runPrefix(run)+"data/")
	if err != nil && !IsNotFound(err) {
		return nil, err
	}
	if len(objs) == 0 && len(beats) == 0 {
		return c, nil
	}
	mans, err := s.b.List(ctx, runPrefix(run)+"manifests/")
	if err != nil && !IsNotFound(err) {
		return nil, err
	}
	// Heartbeats once more: a push that announced itself since the first
	// listing (one that adopted an unfinished checkpoint dated by its
	// first push, segment.go) is alive, whatever the time in its id.
	late := map[string]bool{}
	if again, err := s.b.List(ctx, up); err == nil {
		for _, o := range again {
			if id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, up), ".json"); ok && ValidID(id) == nil {
				late[id] = true
			}
		}
	}
	committed := map[string]bool{}
	for _, o := range mans {
		committed[strings.TrimSuffix(strings.TrimPrefix(o.Key, runPrefix(run)+"manifests/"), ".json")] = true
	}
	// The store's clock is read once, and only when a heartbeat or probe
	// is there to judge. Without it (the store stamps no times, or takes
	// no writes) the newest time in the listing stands in: no later than
	// the store's now, so an age measured from it is never too great.
	var now time.Time
	measured := false
	storeNow := func() (time.Time, bool) {
		if !measured {
			measured = true
			var ok bool
			if now, ok = s.storeNow(ctx, run); ok {
				c.now = now
			} else {
				for _, o := range append(beats[:len(beats):len(beats)], objs...) {
					if o.ModTime.After(now) {
						now = o.ModTime
					}
				}
			}
		}
		return now, !now.IsZero()
	}
	// young: an object the store stamped less than the grace period ago.
	// Where the store stamps no time, ok is false.
	young := func(o Object) (young, ok bool) {
		if o.ModTime.IsZero() {
			return false, false
		}
		now, ok := storeNow()
		if !ok {
			return false, false
		}
		return now.Sub(o.ModTime) < s.opt.Grace, true
	}
	beating := map[string]Object{}
	c.beats = map[string]time.Time{}
	for _, o := range beats {
		name := strings.TrimPrefix(o.Key, up)
		if id, ok := strings.CutSuffix(name, ".json"); ok && ValidID(id) == nil {
			beating[id], c.beats[id] = o, o.ModTime
			continue
		}
		if strings.HasPrefix(name, probePrefix) && !strings.Contains(name, "/") {
			// A probe whose clean-up was killed.
			if y, ok := young(o); s.opt.Grace <= 0 || ok && !y {
				c.leftovers = append(c.leftovers, o.Key)
			}
		}
		if strings.HasPrefix(name, sweepPrefix) && !strings.Contains(name, "/") && !o.ModTime.IsZero() {
			// A sweep's mark whose clean-up was killed: by its own life,
			// whatever the grace (one deleted while its sweep runs would
			// let a push refer to what the sweep deletes).
			if now, ok := storeNow(); ok && now.Sub(o.ModTime) >= sweepTTL {
				c.leftovers = append(c.leftovers, o.Key)
			}
		}
	}
	// alive says whether the push of an uncommitted id may still run.
	alive := func(id string) bool {
		if s.opt.Grace <= 0 {
			return false // no grace: every leftover, even of a push still running
		}
		if hb, ok := beating[id]; ok {
			if y, ok := young(hb); ok {
				if y {
					return true
				}
				// Quiet for longer than this grace: dead only if it
				// also missed three of its own rewrites.
				now, _ := storeNow()
				return now.Sub(hb.ModTime) < 3*s.beatOf(ctx, hb.Key)
			}
		}
		// No heartbeat (an older gpurent), or a store that stamps no
		// time: the id's own time, by this machine's clock.
		t, ok := idTime(id)
		return ok && s.opt.Now().Sub(t) < s.opt.Grace
	}
	for id, hb := range beating {
		switch {
		case committed[id]:
			// Its push committed and was killed before it deleted the
			// heartbeat: a heartbeat gone quiet is of no more use.
			if y, ok := young(hb); s.opt.Grace <= 0 || ok && !y {
				c.leftovers = append(c.leftovers, hb.Key)
			}
		case alive(id):
			c.alive[id] = true
		default:
			c.leftovers = append(c.leftovers, hb.Key)
		}
	}
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, runPrefix(run)+"data/")
		id, _, _ := strings.Cut(rest, "/")
		if committed[id] || c.alive[id] {
			continue
		}
		if _, judged := beating[id]; !judged && late[id] {
			c.alive[id] = true
			continue
		}
		if _, judged := beating[id]; !judged && alive(id) {
			c.alive[id] = true
			continue
		}
		c.leftovers = append(c.leftovers, o.Key)
	}
	// A directory store's temporary files of writes that were killed
	// (objects, manifests, heartbeats: the store renames each into place
	// once written), by the store's clock, older than the grace, of no
	// push that may still run: a write still running keeps its file's
	// time fresh.
	if t, ok := s.b.(temps); ok {
		now, ok := storeNow()
		if !ok {
			now = s.opt.Now()
		}
		before := now.Add(-s.opt.Grace)
		if s.opt.Grace <= 0 {
			before = now.Add(time.Hour)
		}
		if stale, err := t.StaleTemps(ctx, runPrefix(run), before); err == nil {
			for _, k := range stale {
				if !c.alive[tempID(strings.TrimPrefix(k, runPrefix(run)))] {
					c.leftovers = append(c.leftovers, k)
				}
			}
		}
	}
	return c, nil
}

// tempID is the checkpoint id a temporary file under a run is of
// (data/<id>/..., manifests/<id>.json..., uploads/<id>.json...), "" when
// none.
func tempID(rest string) string {
	dir, name, _ := strings.Cut(rest, "/")
	switch dir {
	case "data":
		id, _, _ := strings.Cut(name, "/")
		return id
	case "manifests", "uploads":
		id, _, _ := strings.Cut(name, ".json")
		return id
	}
	return ""
}

// heartbeatMax is the most of a heartbeat read: its Refs may name every
// object of a large checkpoint.
const heartbeatMax = 64 << 20

// beatOf is how often the push behind the heartbeat at key rewrites it:
// as it says, else the longest any gpurent uses (a grace of 10 minutes
// or more), so that a heartbeat that cannot be read is not taken for dead
// too soon.
func (s *Store) beatOf(ctx context.Context, key string) time.Duration {
	longest := beatInterval(defaultGrace)
	r, err := s.b.Get(ctx, key)
	if err != nil {
		return longest
	}
	defer r.Close()
	var hb heartbeat
	if err := json.NewDecoder(io.LimitReader(r, heartbeatMax)).Decode(&hb); err != nil || hb.Every <= 0 {
		return longest
	}
	return min(time.Duration(hb.Every)*time.Second, longest)
}

// stillStored checks, before a push commits, that every object it stored
// is still in the store at the size it was stored: a clean-up that took
// the push for a dead one (on a machine with no heartbeats, or with its
// grace set to 0) may have deleted some under it.
// ErrObjectsDeleted is a push that found objects it stored gone before
// its commit: a clean-up elsewhere judged them a dead push's (one taken up
// again from its journal races a clean-up that listed it before). Nothing
// is committed; the next push stores the checkpoint anew.
var ErrObjectsDeleted = i18n.Errorf("objects of this checkpoint were deleted during its upload")

func (s *Store) stillStored(ctx context.Context, objects []ObjRef) error {
	if len(objects) == 0 {
		return nil
	}
	size, err := s.storedSizes(ctx, objects)
	if err != nil {
		return i18n.Errorf("push: check the stored objects: %w", err)
	}
	var lost []string
	for _, o := range objects {
		if n, ok := size[o.Key]; !ok || n != o.Size {
			lost = append(lost, o.Key)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	more := ""
	if len(lost) > 3 {
		lost, more = lost[:3], fmt.Sprintf(" and %d more", len(lost)-3)
	}
	return i18n.Errorf("push: %w (a clean-up on another machine?): not committed (%s%s missing or of another size)",
		ErrObjectsDeleted, strings.Join(lost, ", "), more)
}

// storedSizes are the stored sizes of the objects of the checkpoints
// objects are of (its own, and those it shares): one listing for each.
func (s *Store) storedSizes(ctx context.Context, objects []ObjRef) (map[string]int64, error) {
	size := map[string]int64{}
	listed := map[string]bool{}
	for _, o := range objects {
		dir := o.Key[:strings.LastIndexByte(o.Key, '/')+1]
		if listed[dir] {
			continue
		}
		listed[dir] = true
		objs, err := s.b.List(ctx, dir)
		if err != nil && !IsNotFound(err) {
			return nil, err
		}
		for _, o := range objs {
			size[o.Key] = o.Size
		}
	}
	return size, nil
}
