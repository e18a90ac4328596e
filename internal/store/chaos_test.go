package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/store/backend"
	"github.com/gpurent/gpurent/internal/store/cloud"
	"github.com/gpurent/gpurent/internal/userfile"
)

var chaosTrials = flag.Int("chaos-trials", 100, "trials of TestChaos (CHAOS_SEED=N -chaos-trials=1 repeats one)")

// slow delays each write of an upload: pushes that last longer than a
// clean-up's grace, and interleave with everything else.
// stall holds each push's second object back before its upload: a link
// that stops for a while, so that the push outlives a clean-up's grace.
type slow struct {
	Backend
	delay, stall time.Duration
	stalled      chan<- struct{} // told, without waiting, of each stall
}

func (s slow) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if s.stall > 0 && strings.Contains(key, "/data/") && strings.HasSuffix(key, "/000001") {
		select {
		case s.stalled <- struct{}{}:
		default:
		}
		select {
		case <-time.After(s.stall):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return s.Backend.Put(ctx, key, func(w io.Writer) error { return fill(slowWriter{w, s.delay}) })
}

// outage is a store that, while down is set, answers nothing: every call
// fails as unreachable (a network mount that drops, a 5xx storm).
type outage struct {
	Backend
	down *atomic.Bool
}

func (o outage) fail(op, key string) error {
	return &OpError{Op: op, Key: key, Store: "chaos", Code: backend.Internal, Err: ErrUnreachable}
}

func (o outage) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if o.down.Load() {
		return 0, o.fail("write", key)
	}
	return o.Backend.Put(ctx, key, fill)
}

func (o outage) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if o.down.Load() {
		return nil, o.fail("read", key)
	}
	return o.Backend.Get(ctx, key)
}

func (o outage) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if o.down.Load() {
		return nil, o.fail("read", key)
	}
	return o.Backend.GetRange(ctx, key, off, n)
}

func (o outage) Size(ctx context.Context, key string) (int64, error) {
	if o.down.Load() {
		return 0, o.fail("stat", key)
	}
	return o.Backend.Size(ctx, key)
}

func (o outage) List(ctx context.Context, prefix string) ([]Object, error) {
	if o.down.Load() {
		return nil, o.fail("list", prefix)
	}
	return o.Backend.List(ctx, prefix)
}

func (o outage) Delete(ctx context.Context, key string) error {
	if o.down.Load() {
		return o.fail("delete", key)
	}
	return o.Backend.Delete(ctx, key)
}

type slowWriter struct {
	w     io.Writer
	delay time.Duration
}

func (s slowWriter) Write(p []byte) (int, error) {
	time.Sleep(s.delay)
	return s.w.Write(p)
}

// A version of a chaos file: its name, lineage and version, and how many
// times the marker repeats, so that a copy holding two versions, or part
// of one, cannot pass for a whole one.
var markerRe = regexp.MustCompile(`^<([a-z0-9]+):([A-Z])(\d+):(\d+)>`)

func version(name string, lineage byte, v int, rng *rand.Rand) []byte {
	// Sizes differ from version to version, as file times may not: two
	// rewrites within one tick of the kernel's coarse clock keep the
	// mtime, and a same-size rewrite then looks unchanged (as it does to
	// rsync and restic).
	n := 50 + v*7 + rng.IntN(5)
	m := fmt.Sprintf("<%s:%c%06d:%d>", name, lineage, v, n)
	out := make([]byte, 0, len(m)*n)
	for range n {
		out = append(out, m...)
	}
	return out
}

// whole reports whether b is one version of a chaos file: all of it, or
// (a file caught while its writer was saving it, unchanged while it was
// read: empty after the truncation, or the first part of the new
// version) the start of one. Bytes of two versions in one file are a torn
// copy.
func whole(b []byte) error {
	if len(b) == 0 {
		return nil // truncated by the writer, not yet written: one state it had
	}
	m := markerRe.FindSubmatch(b)
	if m == nil {
		if markerRe.MatchString(string(b) + strings.Repeat("0", 40) + ">") {
			return nil // the start of a first marker
		}
		return fmt.Errorf("no marker at the start: %.40q", b)
	}
	n, _ := strconv.Atoi(string(m[4]))
	if len(b) > len(m[0])*n {
		return fmt.Errorf("%d bytes, version %s%s is %d", len(b), m[2], m[3], len(m[0])*n)
	}
	for i := 0; i < len(b); i += len(m[0]) {
		chunk := b[i:min(i+len(m[0]), len(b))]
		if string(chunk) != string(m[0][:len(chunk)]) {
			return fmt.Errorf("mixes versions at byte %d: %.40q", i, b[i:])
		}
	}
	return nil
}

// TestChaos runs sessions of one run against each other and the store:
// two sessions (the second taking over the first's lease), uploads slower
// than a clean-up's grace, pushes killed at random moments, prunes,
// checkpoint files rewritten in place while they are uploaded, and a
// planted checkpoint; each session's clock off by up to a day either way,
// the store down for moments in a third of the trials, and on a file store
// a FIFO planted among a quarter's objects. After each trial: every authenticated checkpoint
// deep-verifies and restores whole, with no file mixing versions; the
// newest is never a planted one nor older than what a session committed;
// a session that lost its lease commits nothing it began after the loss;
// a checkpoint committed before a push began sorts before the one that
// push commits, whatever the two machines' clocks say.
func TestChaos(t *testing.T) {
	var b Backend
	where := "the file store"
	if s3 := weedURL(t); s3 != "" {
		var err error
		if b, _, err = Open(context.Background(), "s3://"+newBucket(t)+"/chaos?"+s3, OpenOptions{PartSize: 5 << 20, Concurrency: 4}); err != nil {
			t.Fatal(err)
		}
		where = "SeaweedFS"
	} else {
		var err error
		if b, err = newLocal(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	defer b.Close()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("%d trials against %s, seeds %d to %d (CHAOS_SEED=N -chaos-trials=1 repeats trial N)", *chaosTrials, where, seed, seed+uint64(*chaosTrials)-1)
	own := owner(t)
	var resumed, shared atomic.Int64
	// Each trial has its own run: four share the store side by side, as
	// runs of several machines do (a trial mostly waits on its pushes).
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for i := range *chaosTrials {
		s := seed + uint64(i)
		sem <- struct{}{}
		if failed.Load() {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := chaosTrial(t, b, own, s, &resumed, &shared); err != nil {
				failed.Store(true)
				t.Errorf("trial %d: %v (CHAOS_SEED=%d -chaos-trials=1 repeats it)", i, err, s)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d commits resumed a push killed before, %d referred to objects an earlier checkpoint stored", resumed.Load(), shared.Load())
}

// resumed counts the commits that resumed a killed push, shared those
// that referred to objects an earlier checkpoint stored.
func chaosTrial(t *testing.T, b Backend, own *Crypto, seed uint64, resumed, shared *atomic.Int64) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 36))
	var mu sync.Mutex // guards rng across goroutines
	rnd := func(n int) int {
		mu.Lock()
		defer mu.Unlock()
		return rng.IntN(n)
	}
	run := fmt.Sprintf("chaos-%d", seed)
	base := t.TempDir()
	files := []string{"model", "optim", "rng"}
	lineage := func(l byte) string {
		dir := filepath.Join(base, string(l))
		for _, f := range files {
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, f), version(f, l, 0, rng), 0o644)
		}
		return dir
	}
	srcA, srcB, srcEvil := lineage('A'), lineage('B'), lineage('E')
	// A checkpoint no trainer rewrites: a push of it killed is resumed.
	srcStill := lineage('S')
	var pushKilled func(s *Store, src string, odds int) (*Manifest, error)
	// A third of the trials stall their uploads past the short graces;
	// their files stay still, or every stalled push would fail as changed.
	stalls := rnd(3) == 0
	done := make(chan struct{})
	var trainers, actors sync.WaitGroup
	// The trainers: each rewrites its files in place, one every few ms.
	for _, tr := range []struct {
		dir string
		l   byte
		r   *rand.Rand
	}{{srcA, 'A', rand.New(rand.NewPCG(seed, 1))}, {srcB, 'B', rand.New(rand.NewPCG(seed, 2))}} {
		if stalls {
			break
		}
		trainers.Add(1)
		go func() {
			defer trainers.Done()
			v := 0
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Duration(5+tr.r.IntN(15)) * time.Millisecond):
				}
				v++
				f := files[tr.r.IntN(len(files))]
				os.WriteFile(filepath.Join(tr.dir, f), version(f, tr.l, v, tr.r), 0o644)
			}
		}()
	}
	stalled := make(chan struct{}, 1)
	var down atomic.Bool // the store answers nothing while set
	storeFor := func(host string, takeover bool, grace time.Duration) *Store {
		// Some sessions upload slower than the shortest grace below.
		delay := []time.Duration{0, 2 * time.Millisecond, 20 * time.Millisecond}[rnd(3)]
		var stall time.Duration
		if stalls {
			stall = 1300 * time.Millisecond
		}
		// Some store files in parts (of 400 bytes: a file's first
		// version has two or three), resuming what a push killed left.
		segment := []int64{0, 400}[rnd(2)]
		// Each machine's clock is its own: right, an hour either way,
		// or a day behind.
		off := []time.Duration{0, time.Hour, -time.Hour, -24 * time.Hour}[rnd(4)]
		now := func() time.Time { return time.Now().Add(off) }
		return New(slow{outage{b, &down}, delay, stall, stalled}, Options{Crypto: own, Host: host, Leases: true, Takeover: takeover, Grace: grace, Workers: 2,
			Segment: segment, Journal: filepath.Join(base, "journal-"+host), Where: "chaos", Now: now})
	}
	graces := []time.Duration{50 * time.Millisecond, time.Second, 10 * time.Minute}
	push := func(s *Store, src string) (*Manifest, error) { return pushKilled(s, src, 4) }
	pushKilled = func(s *Store, src string, odds int) (*Manifest, error) {
		pctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if rnd(odds) == 0 { // killed at a random moment
			go func() {
				time.Sleep(time.Duration(rnd(60)) * time.Millisecond)
				cancel()
			}()
		}
		return s.Push(pctx, src, run)
	}
	var (
		resMu     sync.Mutex
		committed []*Manifest
		doneAt    []time.Time // when each of committed returned, by the true clock
		began     []time.Time // when the push that committed it began
		fails     []error
	)
	fail := func(err error) {
		resMu.Lock()
		defer resMu.Unlock()
		fails = append(fails, err)
	}
	record := func(m *Manifest, err error, wantLost bool, start time.Time) {
		resMu.Lock()
		defer resMu.Unlock()
		switch {
		case err == nil && wantLost:
			fails = append(fails, fmt.Errorf("session A committed %s after B had taken the run over before its push began", m.ID))
		case err == nil:
			committed = append(committed, m)
			doneAt, began = append(doneAt, time.Now()), append(began, start)
			if m.Resumed > 0 {
				resumed.Add(1)
			}
			if m.Reused > 0 {
				shared.Add(1)
			}
		case errors.Is(err, ErrChanged), errors.Is(err, context.Canceled), errors.Is(err, ErrLeaseLost), IsUnreachable(err),
			// A push taken up again from its journal whose objects a
			// clean-up that listed them before deleted: refused, the
			// safe outcome (nothing torn is committed).
			errors.Is(err, ErrObjectsDeleted):
		default:
			var held *HeldError
			if !errors.As(err, &held) {
				fails = append(fails, fmt.Errorf("push: %w", err))
			}
		}
	}
	var takenAt time.Time // when B held the run; zero until then
	var takenMu sync.Mutex
	taken := func() time.Time { takenMu.Lock(); defer takenMu.Unlock(); return takenAt }

	a := storeFor("box-a", false, graces[rnd(len(graces))])
	la, err := a.TakeLease(ctx, run, "session A", false)
	if err != nil {
		return fmt.Errorf("session A's lease: %w", err)
	}
	a.Hold(la)
	actors.Add(4)
	go func() { // session A: pushes until it has lost the run
		defer actors.Done()
		n := 2 + rnd(3)
		if stalls {
			n = 2
		}
		for range n {
			before := taken()
			start := time.Now()
			src := srcA
			if rnd(3) == 0 { // what B pushes too: shared by content
				src = srcStill
			}
			m, err := push(a, src)
			record(m, err, !before.IsZero(), start)
			time.Sleep(time.Duration(rnd(30)) * time.Millisecond)
		}
	}()
	go func() { // session B: a second machine that takes the run over
		defer actors.Done()
		time.Sleep(time.Duration(rnd(700)) * time.Millisecond)
		bs := storeFor("box-b", false, graces[rnd(len(graces))])
		if _, err := bs.TakeLease(ctx, run, "session B", false); err == nil {
			fail(errors.New("session B took a lease session A holds, without --takeover"))
		}
		bs = storeFor("box-b", true, graces[rnd(len(graces))])
		var lb *Lease
		var err error
		for range 50 { // through any outage
			if lb, err = bs.TakeLease(ctx, run, "session B", true); err == nil || !IsUnreachable(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			fail(fmt.Errorf("takeover: %w", err))
			return
		}
		takenMu.Lock()
		takenAt = time.Now()
		takenMu.Unlock()
		bs.Hold(lb)
		defer lb.Release(ctx)
		for range 2 {
			start := time.Now()
			m, err := pushKilled(bs, srcStill, 2)
			record(m, err, false, start)
		}
		for range 1 + rnd(3) {
			start := time.Now()
			m, err := push(bs, srcB)
			record(m, err, false, start)
		}
	}()
	go func() { // prunes, with graces short and long
		defer actors.Done()
		for i := range 1 + rnd(4) {
			if i == 0 && stalls {
				// One clean-up in the middle of a stalled upload, once
				// its heartbeat is older than the short graces by any
				// store's clock (S3 stamps whole seconds).
				select {
				case <-stalled:
					time.Sleep(1100 * time.Millisecond)
				case <-time.After(5 * time.Second):
				}
			} else {
				time.Sleep(time.Duration(rnd(300)) * time.Millisecond)
			}
			p := New(outage{b, &down}, Options{Crypto: own, Grace: graces[rnd(len(graces))]})
			if _, err := p.Prune(ctx, run, 2); err != nil && !IsNotFound(err) && !IsUnreachable(err) {
				fail(fmt.Errorf("prune: %w", err))
			}
		}
	}()
	if rnd(3) == 0 {
		actors.Add(1)
		go func() { // the store goes down for moments, twice
			defer actors.Done()
			for range 2 {
				time.Sleep(time.Duration(rnd(400)) * time.Millisecond)
				down.Store(true)
				time.Sleep(time.Duration(50+rnd(300)) * time.Millisecond)
				down.Store(false)
			}
		}()
	}
	if dir := localDir(b); dir != "" && canFIFO && rnd(4) == 0 {
		actors.Add(1)
		go func() { // a FIFO planted where a reader opens objects
			defer actors.Done()
			time.Sleep(time.Duration(rnd(500)) * time.Millisecond)
			id := newID(time.Now())
			key := []string{"lease/000000000077-" + id + ".json", "manifests/" + id + ".json", "uploads/" + id + ".json", "spend/" + id + ".json"}[rnd(4)]
			p := filepath.Join(dir, "runs", run, filepath.FromSlash(key))
			os.MkdirAll(filepath.Dir(p), 0o700)
			if err := mkfifo(p); err != nil {
				fail(fmt.Errorf("plant a FIFO: %w", err))
			}
		}()
	}
	go func() { // the attacker: the store's write key and the recipient
		defer actors.Done()
		time.Sleep(time.Duration(rnd(200)) * time.Millisecond)
		New(b, Options{Crypto: attacker(own), Host: "attacker"}).Push(ctx, srcEvil, run)
	}()
	actors.Wait()
	close(done)
	trainers.Wait()
	la.Release(ctx)
	if len(fails) > 0 {
		return fails[0]
	}

	check := New(b, Options{Crypto: own})
	all, bad, err := check.ListAll(ctx, run)
	if err != nil {
		return err
	}
	for _, u := range bad {
		if !errors.Is(u.Err, userfile.ErrNotRegular) {
			return fmt.Errorf("unreadable manifest %s: %w", u.Key, u.Err)
		}
	}
	// Order that no clock breaks: a checkpoint committed before a push
	// began sorts before what that push committed.
	for i := range committed {
		for j := range committed {
			if doneAt[i].Before(began[j]) && committed[i].ID >= committed[j].ID {
				return fmt.Errorf("checkpoint %s (from %s) was committed before the push of %s (from %s) began, yet sorts after it", committed[i].ID, committed[i].Host, committed[j].ID, committed[j].Host)
			}
		}
	}
	var newestOwn *Manifest
	for _, m := range all {
		if own.Authentic(m) != nil {
			continue
		}
		newestOwn = m
		dest := filepath.Join(base, "pulled-"+m.ID)
		if _, err := check.Pull(ctx, run, m.ID, dest); err != nil {
			return fmt.Errorf("committed checkpoint %s does not restore: %w", m.ID, err)
		}
		for _, f := range files {
			body, err := os.ReadFile(filepath.Join(dest, f))
			if err != nil {
				return err
			}
			if err := whole(body); err != nil {
				return fmt.Errorf("committed checkpoint %s, file %s: %w", m.ID, f, err)
			}
		}
		if _, probs, err := check.Verify(ctx, run, m.ID, true); err != nil || len(probs) > 0 {
			return fmt.Errorf("committed checkpoint %s: verify --deep: %v %v", m.ID, err, probs)
		}
	}
	latest, _, err := check.Latest(ctx, run)
	if len(committed) > 0 {
		if err != nil {
			return fmt.Errorf("latest: %w", err)
		}
		if own.Authentic(latest) != nil {
			return fmt.Errorf("the newest checkpoint %s is a planted one", latest.ID)
		}
		for _, m := range committed {
			if m.ID > latest.ID {
				return fmt.Errorf("the newest checkpoint %s is older than %s, which a session committed", latest.ID, m.ID)
			}
		}
		if newestOwn == nil || newestOwn.ID != latest.ID {
			return fmt.Errorf("latest %s is not the newest authenticated checkpoint", latest.ID)
		}
	}
	return nil
}

// localDir is a directory store's directory, or "".
func localDir(b Backend) string { return cloud.Dir(b) }
