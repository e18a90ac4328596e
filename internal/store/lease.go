package store

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
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
	Boot       string    `json:"boot,omitempty"`  // the holder's boot id (Linux)
	PIDNS      string    `json:"pidns,omitempty"` // and pid namespace: containers share a boot
	What       string    `json:"what"`            // "gpurent run", "gpurent ckpt push"
	Started    time.Time `json:"started"`
	Beat       time.Time `json:"beat"` // by the holder's clock
	// StoreOffsetMS is the store's clock less the holder's, measured by
	// the holder (storeNow): Beat plus it is the beat by the store's
	// clock, signed. A copy of an old lease planted again is fresh by
	// the store's time of the object, not by this; nil where the store
	// stamps no time.
	StoreOffsetMS *int64 `json:"store_offset_ms,omitempty"`
	TTLSeconds    int    `json:"ttl_s"`
	// Released marks a lease given up: a tombstone at its generation, so
	// that generations never go back down (a session that lost the run
	// must not find itself the highest again once the winner is done).
	Released bool `json:"released,omitempty"`
	// MAC signs the rest with the run's auth key (as manifests are): a
	// lease anyone with the store's write key wrote is not counted.
	MAC string `json:"mac,omitempty"`
}

// errBadLease: a lease object that is not JSON, passed over.
var errBadLease = i18n.Errorf("not a lease")

// ErrLeaseLost means another session took the run: this one must commit
// nothing more.
var ErrLeaseLost = i18n.Errorf("lost the run's lease")

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
	// writes counts the lease's writes: the store's clock is measured at
	// every offsetEvery-th.
	writes int
}

// offsetEvery is how many writes of a lease share one measure of the
// store's clock (a lease is written every TTL/4: 8 is every 6 minutes).
const offsetEvery = 8

func leasePrefix(run string) string { return runPrefix(run) + "lease/" }

func leaseKey(run string, gen int64, session string) string {
	return fmt.Sprintf("%s%012d-%s.json", leasePrefix(run), gen, session)
}

// maxGeneration bounds generations to their 12 digits: a lease planted
// at the largest integer would leave no next one to take.
const maxGeneration = 1_000_000_000_000

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
		if !ok || !ok2 || err != nil || n < 0 || n >= maxGeneration || len(g) != 12 || ValidID(sess) != nil {
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
	if errors.Is(err, userfile.ErrNotRegular) {
		return li, i18n.Errorf("lease %s: %w: %w", key, errBadLease, err) // planted: passed over
	}
	if err != nil {
		return li, err
	}
	defer r.Close()
	body, err := io.ReadAll(io.LimitReader(r, 64<<10))
	if err != nil {
		return li, err
	}
	if err := json.Unmarshal(body, &li); err != nil {
		return li, i18n.Errorf("lease %s: %w: %v", key, errBadLease, err)
	}
	return li, nil
}

// leaseMAC is the MAC of a lease under k, over its JSON without MAC.
func leaseMAC(k AuthKey, li LeaseInfo) string {
	li.MAC = ""
	body, _ := json.Marshal(li)
	h := hmac.New(sha256.New, k.key)
	h.Write([]byte("gpurent lease\x00"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// genuine reports whether li, read from key, was written by a session
// holding an auth key here: signed, and naming what its key names. With
// no key here (a store used with --allow-unauthenticated) every lease
// counts.
func (s *Store) genuine(li LeaseInfo, o leaseObj) bool {
	if li.Generation != o.gen || li.Session != o.session {
		return false
	}
	if len(s.opt.Crypto.Auth) == 0 {
		return true
	}
	for _, k := range s.opt.Crypto.Auth {
		if hmac.Equal([]byte(leaseMAC(k, li)), []byte(li.MAC)) {
			return true
		}
	}
	return false
}

// top is the highest genuine lease of run and what it says (ok false:
// none), reading from the highest down; forged ones are passed over.
func (s *Store) top(ctx context.Context, ls []leaseObj) (leaseObj, LeaseInfo, bool, error) {
	for _, o := range ls {
		li, err := s.readLease(ctx, o.key)
		if IsNotFound(err) {
			continue // released between the list and the read
		}
		if err != nil && !errors.Is(err, errBadLease) {
			return leaseObj{}, LeaseInfo{}, false, err
		}
		if err == nil && s.genuine(li, o) {
			return o, li, true, nil
		}
	}
	return leaseObj{}, LeaseInfo{}, false, nil
}

func (l *Lease) key() string { return leaseKey(l.info.Run, l.info.Generation, l.info.Session) }

func (l *Lease) write(ctx context.Context) error {
	// The offset is measured again now and then: a clock stepped by NTP
	// mid-run must not make a live lease look old.
	if l.writes%offsetEvery == 0 {
		before := l.s.opt.Now()
		if st, ok := l.s.storeNow(ctx, l.info.Run); ok {
			local := before.Add(l.s.opt.Now().Sub(before) / 2)
			off := st.Sub(local).Milliseconds()
			l.info.StoreOffsetMS = &off
		}
	}
	l.writes++
	l.info.Beat = l.s.opt.Now().UTC()
	l.info.MAC = ""
	if len(l.s.opt.Crypto.Auth) > 0 {
		l.info.MAC = leaseMAC(l.s.opt.Crypto.Auth[0], l.info)
	}
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
		return nil, i18n.Errorf("lease of run %s: %w", run, err)
	}
	// Above the highest genuine lease: a forged one, however high, must
	// not use the generations up.
	top, _, ok, err := s.top(ctx, ls)
	if err != nil {
		return nil, i18n.Errorf("lease of run %s: %w", run, err)
	}
	var gen int64
	if ok {
		gen = top.gen
	}
	if gen+1 >= maxGeneration {
		return nil, i18n.Errorf("lease of run %s: generation %d is the last; delete %s to start again", run, gen, leasePrefix(run))
	}
	if !takeover {
		if held, err := s.held(ctx, run, ls, ttl); err != nil {
			return nil, i18n.Errorf("lease of run %s: %w", run, err)
		} else if held != nil {
			return nil, held
		}
	}
	now := s.opt.Now().UTC()
	l := &Lease{s: s, ttl: ttl, info: LeaseInfo{Version: 1, Run: run, Session: newID(now), Generation: gen + 1,
		Host: s.opt.Host, PID: os.Getpid(), Boot: bootID(), PIDNS: pidNS(), What: what, Started: now, TTLSeconds: int(ttl / time.Second)}}
	if err := l.write(ctx); err != nil {
		return nil, i18n.Errorf("lease of run %s: %w", run, err)
	}
	// Another session may have taken it at the same moment: the higher
	// wins, the same answer on both.
	ls, err = s.leases(ctx, run)
	if err != nil {
		l.Release(ctx)
		return nil, i18n.Errorf("lease of run %s: %w", run, err)
	}
	if err := l.highest(ctx, ls); err != nil {
		l.Release(ctx)
		var lost *lostError
		if errors.As(err, &lost) {
			return nil, &HeldError{Holder: lost.holder, Expires: ttl}
		}
		return nil, err
	}
	// Earlier generations are over: their holders see this one.
	for _, o := range ls {
		if o.gen < l.info.Generation {
			s.b.Delete(ctx, o.key)
		}
	}
	return l, nil
}

// held is a *HeldError when the highest genuine lease in ls is live, by
// the store's clock (by this machine's when the store does not say).
func (s *Store) held(ctx context.Context, run string, ls []leaseObj, ttl time.Duration) (*HeldError, error) {
	o, li, ok, err := s.top(ctx, ls)
	if err != nil || !ok || li.Released {
		return nil, err
	}
	if li.Boot != "" && li.Boot == bootID() && li.PIDNS == pidNS() && li.Host == s.opt.Host && !pidAlive(li.PID) {
		// Left by a gpurent that died on this machine (killed, OOM):
		// nobody holds the run, and restarting it here must not wait.
		return nil, nil
	}
	if li.TTLSeconds > 0 {
		ttl = time.Duration(li.TTLSeconds) * time.Second
	}
	now, ok := s.storeNow(ctx, run)
	last := o.mod
	if !ok || last.IsZero() {
		now, last = s.opt.Now(), li.Beat
	} else if li.StoreOffsetMS != nil {
		// The signed beat, by the store's clock: an old lease planted
		// again is as old as what it says, not as its copy.
		signed := li.Beat.Add(time.Duration(*li.StoreOffsetMS) * time.Millisecond)
		if signed.Before(last) {
			last = signed
		}
	}
	age := max(now.Sub(last), 0)
	if age >= ttl {
		return nil, nil
	}
	return &HeldError{Holder: li, Age: age, Expires: ttl - age}, nil
}

// Info is what the lease says of its session.
func (l *Lease) Info() LeaseInfo { return l.info }

// Every is how often Renew should be called: a quarter of the TTL, so
// that three renewals may fail (a store down for a minute) before it
// lapses.
func (l *Lease) Every() time.Duration { return l.ttl / 4 }

// Renew checks the lease is still held and rewrites its heartbeat: an
// error wrapping ErrLeaseLost when another session took the run.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.Check(ctx); err != nil {
		return err
	}
	return l.write(ctx)
}

// lostError is ErrLeaseLost with the lease that won.
type lostError struct {
	msg    string
	holder LeaseInfo
}

func (e *lostError) Error() string { return e.msg }
func (e *lostError) Unwrap() error { return ErrLeaseLost }

// Check lists the run's leases: nil while this one is the highest genuine
// one. It comes before every commit.
func (l *Lease) Check(ctx context.Context) error {
	ls, err := l.s.leases(ctx, l.info.Run)
	if err != nil {
		return i18n.Errorf("lease of run %s: %w", l.info.Run, err)
	}
	return l.highest(ctx, ls)
}

// highest is nil when l is the highest genuine lease in ls. A lease once
// passed, or whose object is gone (the taker deletes the generations below
// its own), is lost for good: a released winner leaves a tombstone, so the
// generations never go back down to l's.
func (l *Lease) highest(ctx context.Context, ls []leaseObj) error {
	for _, o := range ls {
		if o.key == l.key() {
			return nil
		}
		if o.gen < l.info.Generation || o.gen == l.info.Generation && o.session < l.info.Session {
			break
		}
		li, err := l.s.readLease(ctx, o.key)
		if IsNotFound(err) || err != nil && errors.Is(err, errBadLease) || err == nil && !l.s.genuine(li, o) {
			continue // released and gone, or forged
		}
		if err != nil {
			return i18n.Errorf("lease of run %s: %w", l.info.Run, err)
		}
		return &lostError{holder: li, msg: fmt.Sprintf("run %s: %v to %s on %s (pid %d, session %s, taken %s): this session commits nothing more",
			l.info.Run, ErrLeaseLost, li.What, li.Host, li.PID, o.session, li.Started.UTC().Format("2006-01-02 15:04:05 MST"))}
	}
	return &lostError{msg: fmt.Sprintf("run %s: %v: its lease object %s is gone (another session took the run over, and perhaps has finished): this session commits nothing more",
		l.info.Run, ErrLeaseLost, l.key())}
}

// Release gives the run up, leaving a tombstone at its generation: the
// next session need not wait, and none below it can come back.
func (l *Lease) Release(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if l.Check(dctx) != nil {
		return // not ours to mark
	}
	l.info.Released = true
	l.write(dctx)
}

func (s *Store) leaseTTL() time.Duration {
	if s.opt.LeaseTTL > 0 {
		return s.opt.LeaseTTL
	}
	return LeaseTTL
}

// Hold makes every Push of l's run check l before it commits.
func (s *Store) Hold(l *Lease) { s.lease = l }
