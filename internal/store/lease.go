package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// One writer per run. Two sessions of one run (a spot machine that came
// back while its replacement started; a restart on a second box) would
// each commit their own lineage, and the newest in the store could be the
// one that got less far. A session holds the run's lease while it commits.
//
// Stores give no compare-and-swap that every backend shares, so the lease
// is a set of objects no two sessions ever write to the same key:
// runs/<run>/lease/<generation>-<session>.json. The holder is the highest
// (generation, session). Taking writes generation max+1 and lists again:
// a higher one written meanwhile wins and the lower backs off, so two
// sessions taking at once agree on one. A holder's renewals rewrite its
// own key only, so a session that lost cannot overwrite the winner; before
// each commit it lists again (Check) and stops if it is no longer highest.
// The window left is between that check and the manifest's write.

// LeaseTTL is how long a lease lasts without a renewal (by the store's
// clock) before another session may take it without --takeover.
const LeaseTTL = 3 * time.Minute

// LeaseInfo is a lease object's content: who holds the run, plaintext.
type LeaseInfo struct {
	Version    int       `json:"version"`
	Run        string    `json:"run"`
	Session    string    `json:"session"`
	Generation int64     `json:"generation"`
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	Boot       string    `json:"boot,omitempty"` // the holder's boot id (Linux)
	What       string    `json:"what"`           // "gpurent run", "gpurent ckpt push"
	Started    time.Time `json:"started"`
	Beat       time.Time `json:"beat"` // by the holder's clock
	TTLSeconds int       `json:"ttl_s"`
}

// ErrLeaseLost means another session took the run: this one must commit
// nothing more.
var ErrLeaseLost = errors.New("lost the run's lease")

// HeldError is a refusal to take a lease someone else holds.
type HeldError struct {
	Holder  LeaseInfo
	Age     time.Duration // since its last renewal, by the store's clock
	Expires time.Duration // until another may take it without --takeover
}

func (e *HeldError) Error() string {
	h := e.Holder
	return fmt.Sprintf("run %s is held by another session: %s on %s (pid %d, session %s, since %s, renewed %v ago): two sessions of one run would commit two lineages. If that session is gone (its machine preempted or released), its lease expires in %v and this can start then; pass --takeover to take the run now, and that session stops committing",
		h.Run, h.What, h.Host, h.PID, h.Session, h.Started.UTC().Format("2006-01-02 15:04:05 MST"), e.Age.Round(time.Second), e.Expires.Round(time.Second))
}

// Lease is a session's hold on a run (TakeLease).
type Lease struct {
	s    *Store
	info LeaseInfo
	ttl  time.Duration
}

func leasePrefix(run string) string { return runPrefix(run) + "lease/" }

func leaseKey(run string, gen int64, session string) string {
	return fmt.Sprintf("%s%012d-%s.json", leasePrefix(run), gen, session)
}

type leaseObj struct {
	key     string
	gen     int64
	session string
	mod     time.Time
}

// leases lists the run's lease objects, highest first.
func (s *Store) leases(ctx context.Context, run string) ([]leaseObj, error) {
	objs, err := s.b.List(ctx, leasePrefix(run))
	if err != nil {
		return nil, err
	}
	var out []leaseObj
	for _, o := range objs {
		name, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, leasePrefix(run)), ".json")
		g, sess, ok2 := strings.Cut(name, "-")
		n, err := strconv.ParseInt(g, 10, 64)
		if !ok || !ok2 || err != nil || n < 0 || ValidID(sess) != nil {
			continue
		}
		out = append(out, leaseObj{key: o.Key, gen: n, session: sess, mod: o.ModTime})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].gen != out[j].gen {
			return out[i].gen > out[j].gen
		}
		return out[i].session > out[j].session
	})
	return out, nil
}

func (s *Store) readLease(ctx context.Context, key string) (LeaseInfo, error) {
	var li LeaseInfo
	r, err := s.b.Get(ctx, key)
	if err != nil {
		return li, err
	}
	defer r.Close()
	body, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return li, err
	}
	if err := json.Unmarshal(body, &li); err != nil {
		return li, fmt.Errorf("lease %s: %w", key, err)
	}
	return li, nil
}

func (l *Lease) key() string { return leaseKey(l.info.Run, l.info.Generation, l.info.Session) }

func (l *Lease) write(ctx context.Context) error {
	l.info.Beat = l.s.opt.Now().UTC()
	body, err := json.MarshalIndent(l.info, "", "  ")
	if err != nil {
		return err
	}
	_, err = l.s.b.Put(ctx, l.key(), func(w io.Writer) error { _, err := w.Write(body); return err })
	return err
}

// TakeLease takes run for a session: what names what holds it ("gpurent
// run"). A live lease of another session is a *HeldError unless takeover.
func (s *Store) TakeLease(ctx context.Context, run, what string, takeover bool) (*Lease, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	ttl := s.leaseTTL()
	ls, err := s.leases(ctx, run)
	if err != nil {
		return nil, fmt.Errorf("lease of run %s: %w", run, err)
	}
	var gen int64
	if len(ls) > 0 {
		gen = ls[0].gen
		if !takeover {
			if held := s.held(ctx, run, ls[0], ttl); held != nil {
				return nil, held
			}
		}
	}
	now := s.opt.Now().UTC()
	l := &Lease{s: s, ttl: ttl, info: LeaseInfo{Version: 1, Run: run, Session: newID(now), Generation: gen + 1,
		Host: s.opt.Host, PID: os.Getpid(), Boot: bootID(), What: what, Started: now, TTLSeconds: int(ttl / time.Second)}}
	if err := l.write(ctx); err != nil {
		return nil, fmt.Errorf("lease of run %s: %w", run, err)
	}
	// Another session may have taken it at the same moment: the higher
	// wins, the same answer on both.
	ls, err = s.leases(ctx, run)
	if err != nil {
		l.Release(ctx)
		return nil, fmt.Errorf("lease of run %s: %w", run, err)
	}
	if len(ls) == 0 || ls[0].key != l.key() {
		l.Release(ctx)
		top := ls[0]
		li, _ := s.readLease(ctx, top.key)
		return nil, &HeldError{Holder: li, Expires: ttl}
	}
	// Earlier generations are over: their holders see this one.
	for _, o := range ls[1:] {
		s.b.Delete(ctx, o.key)
	}
	return l, nil
}

// held is a *HeldError when o is a live lease, by the store's clock (by
// this machine's when the store does not say).
func (s *Store) held(ctx context.Context, run string, o leaseObj, ttl time.Duration) *HeldError {
	li, err := s.readLease(ctx, o.key)
	if err != nil {
		if IsNotFound(err) {
			return nil // released between the list and the read
		}
		li = LeaseInfo{Run: run, Session: o.session, Generation: o.gen, Host: "?", What: "?"}
	}
	if li.Boot != "" && li.Boot == bootID() && li.Host == s.opt.Host && !pidAlive(li.PID) {
		// Left by a gpurent that died on this machine (killed, OOM):
		// nobody holds the run, and restarting it here must not wait.
		return nil
	}
	if li.TTLSeconds > 0 {
		ttl = time.Duration(li.TTLSeconds) * time.Second
	}
	now, ok := s.storeNow(ctx, run)
	last := o.mod
	if !ok || last.IsZero() {
		now, last = s.opt.Now(), li.Beat
	}
	age := max(now.Sub(last), 0)
	if age >= ttl {
		return nil
	}
	return &HeldError{Holder: li, Age: age, Expires: ttl - age}
}

// Info is what the lease says of its session.
func (l *Lease) Info() LeaseInfo { return l.info }

// Every is how often Renew should be called: a quarter of the TTL, so
// that three renewals may fail (a store down for a minute) before it
// lapses.
func (l *Lease) Every() time.Duration { return l.ttl / 4 }

// Renew rewrites the lease's heartbeat and checks it is still held: an
// error wrapping ErrLeaseLost when another session took the run.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.Check(ctx); err != nil {
		return err
	}
	return l.write(ctx)
}

// Check lists the run's leases: nil while this one is the highest. It
// comes before every commit.
func (l *Lease) Check(ctx context.Context) error {
	ls, err := l.s.leases(ctx, l.info.Run)
	if err != nil {
		return fmt.Errorf("lease of run %s: %w", l.info.Run, err)
	}
	for _, o := range ls {
		if o.key == l.key() {
			return nil
		}
		if o.gen > l.info.Generation || o.gen == l.info.Generation && o.session > l.info.Session {
			li, _ := l.s.readLease(ctx, o.key)
			return fmt.Errorf("run %s: %w to %s on %s (pid %d, session %s, taken %s): this session commits nothing more",
				l.info.Run, ErrLeaseLost, li.What, li.Host, li.PID, o.session, li.Started.UTC().Format("2006-01-02 15:04:05 MST"))
		}
	}
	// Ours is gone: a session that took over deletes the generations
	// below its own, and may have released its own since. Never taken
	// back: that would let a fenced session commit again.
	return fmt.Errorf("run %s: %w: its lease object %s is gone (another session took the run over, and perhaps has finished): this session commits nothing more",
		l.info.Run, ErrLeaseLost, l.key())
}

// Release gives the run up: the next session need not wait for it.
func (l *Lease) Release(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	l.s.b.Delete(dctx, l.key())
}

func (s *Store) leaseTTL() time.Duration {
	if s.opt.LeaseTTL > 0 {
		return s.opt.LeaseTTL
	}
	return LeaseTTL
}

// Hold makes every Push of l's run check l before it commits.
func (s *Store) Hold(l *Lease) { s.lease = l }
