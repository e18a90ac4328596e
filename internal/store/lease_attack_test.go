package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hookBackend runs hook once, just before (before=true) or just after the
// first Put of a key for which arm returns true.
type hookBackend struct {
	Backend
	mu     sync.Mutex
	arm    func(key string) bool
	before bool
	hook   func()
}

func (h *hookBackend) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	h.mu.Lock()
	var f func()
	if h.arm != nil && h.arm(key) {
		f, h.arm = h.hook, nil
	}
	h.mu.Unlock()
	if f != nil && h.before {
		f()
	}
	n, err := h.Backend.Put(ctx, key, fill)
	if f != nil && !h.before {
		f()
	}
	return n, err
}

// A takeover that deletes the holder's lease between Renew's Check and its
// write, and then releases (ckpt push --takeover does so within a second),
// lets the fenced session's write bring its lease back: it holds the run
// again and commits.
func TestFencedSessionStaysFenced(t *testing.T) {
	ctx := context.Background()
	raw, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	own := owner(t)
	hb := &hookBackend{Backend: raw, before: true}
	a := New(hb, Options{Crypto: own, Host: "a", Leases: true})
	la, err := a.TakeLease(ctx, "r", "gpurent run", false)
	if err != nil {
		t.Fatal(err)
	}
	a.Hold(la)
	b := New(raw, Options{Crypto: own, Host: "b", Leases: true})
	hb.arm = func(k string) bool { return k == la.key() }
	hb.hook = func() {
		lb, err := b.TakeLease(ctx, "r", "gpurent ckpt push", true)
		if err != nil {
			t.Error(err)
			return
		}
		lb.Release(ctx)
	}
	if err := la.Renew(ctx); err != nil {
		t.Fatalf("renew: %v", err)
	}
	src := filepath.Join(t.TempDir(), "ck")
	writeFile(t, filepath.Join(src, "w"), "after the takeover")
	if err := la.Check(ctx); err == nil {
		t.Errorf("the session taken over holds the run again (Check = nil)")
	}
	if m, err := a.Push(ctx, src, "r"); err == nil {
		t.Errorf("the session taken over committed %s", m.ID)
	}
}

// A takeover and release between TakeLease's write and its second listing
// leaves an empty listing: TakeLease indexes ls[0] of an empty slice.
func TestTakeLeaseRacingARelease(t *testing.T) {
	ctx := context.Background()
	raw, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hb := &hookBackend{Backend: raw}
	hb.arm = func(k string) bool { return strings.Contains(k, "/lease/") }
	hb.hook = func() {
		lb, err := New(raw, Options{Host: "b"}).TakeLease(ctx, "r", "gpurent ckpt push", true)
		if err == nil {
			lb.Release(ctx)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("TakeLease panicked: %v", r)
		}
	}()
	_, err = New(hb, Options{Host: "a"}).TakeLease(ctx, "r", "gpurent run", false)
	t.Logf("TakeLease: %v", err)
}

// With Put alone (a write key without delete), a lease at the largest
// generation locks the run for good, --takeover included: gen+1 overflows
// and the negative key is not even listed.
func TestLeaseAtTheLastGeneration(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	raw, err := newLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := leaseKey("r", math.MaxInt64, "29991231T000000.000Z-00000000")
	if _, err := raw.Put(ctx, key, func(w io.Writer) error { _, err := io.WriteString(w, "{}"); return err }); err != nil {
		t.Fatal(err)
	}
	_, err = New(raw, Options{Host: "owner"}).TakeLease(ctx, "r", "gpurent run", true)
	if err != nil {
		t.Errorf("--takeover cannot take the run: %v", err)
	}
}

// With Put alone, one unparseable manifest with a newer id makes Latest
// fail although an authentic checkpoint is there: gpurent run then starts
// from its older local checkpoint (or refuses), instead of passing over it
// as it passes over a planted, parseable one.
func TestGarbageManifestPassedOver(t *testing.T) {
	ctx := context.Background()
	raw, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	own := owner(t)
	src := filepath.Join(t.TempDir(), "ck")
	writeFile(t, filepath.Join(src, "w"), "owner")
	mine, err := New(raw, Options{Crypto: own}).Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{"{}", fmt.Sprintf(`{"version":2,"id":%q,"run":"other","created":"2999-01-01T00:00:00Z","host":"x","gpurent":"x","encrypted":false,"files":0,"bytes":0,"objects":[],"file_list":null}`, "29991231T000000.000Z-00000000")} {
		key := manifestKey("r", fmt.Sprintf("2999123%dT000000.000Z-00000000", i+1))
		raw.Put(ctx, key, func(w io.Writer) error { _, err := io.WriteString(w, body); return err })
	}
	m, _, err := New(raw, Options{Crypto: own}).Latest(ctx, "r")
	if err != nil || m.ID != mine.ID {
		t.Errorf("Latest = %v, %v; want the owner's %s passing over the planted ones", m, err, mine.ID)
	}
	var _ = errors.Is
}

// TestForgedLeaseFencesNothing: with the store's write key alone, a lease
// of a higher generation, unsigned or signed by another key, neither
// fences the live session nor holds the run against its owner.
func TestForgedLeaseFencesNothing(t *testing.T) {
	ctx := context.Background()
	raw, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	own := owner(t)
	a := New(raw, Options{Crypto: own, Host: "a", Leases: true})
	l, err := a.TakeLease(ctx, "r", "gpurent run", false)
	if err != nil {
		t.Fatal(err)
	}
	other := owner(t)
	forger := New(raw, Options{Crypto: other, Host: "attacker"})
	forged := &Lease{s: forger, ttl: LeaseTTL, info: LeaseInfo{Version: 1, Run: "r", Session: "29991231T000000.000Z-00000000", Generation: 5, Host: "attacker", What: "gpurent run"}}
	if err := forged.write(ctx); err != nil {
		t.Fatal(err)
	}
	unsigned := &Lease{s: New(raw, Options{Host: "attacker"}), ttl: LeaseTTL, info: LeaseInfo{Version: 1, Run: "r", Session: "29991231T000000.000Z-00000001", Generation: 6, Host: "attacker", What: "gpurent run"}}
	if err := unsigned.write(ctx); err != nil {
		t.Fatal(err)
	}
	last := &Lease{s: New(raw, Options{Host: "attacker"}), ttl: LeaseTTL, info: LeaseInfo{Version: 1, Run: "r", Session: "29991231T000000.000Z-00000002", Generation: maxGeneration - 1, Host: "attacker", What: "gpurent run"}}
	if err := last.write(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ctx); err != nil {
		t.Fatalf("a forged lease fenced the live session: %v", err)
	}
	_, err = New(raw, Options{Crypto: own, Host: "b"}).TakeLease(ctx, "r", "gpurent run", false)
	var held *HeldError
	if !errors.As(err, &held) || held.Holder.Host != "a" {
		t.Fatalf("a second session of the owner: %v; want held by a", err)
	}
	// The forged last generation uses none up: the owner takes over.
	if _, err := New(raw, Options{Crypto: own, Host: "b"}).TakeLease(ctx, "r", "gpurent run", true); err != nil {
		t.Fatalf("takeover past a forged last generation: %v", err)
	}
}

// A copy of a session's old lease, planted again by someone with the
// store's write key (no auth key needed: it is the owner's own signed
// object), looked fresh by the store's time of the copy and blocked
// every new session for a TTL per re-plant. The signed beat says how old
// it is.
func TestReplayedLeaseIsOld(t *testing.T) {
	ctx := context.Background()
	raw, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	own := owner(t)
	clock := time.Now()
	now := func() time.Time { return clock }
	a := New(raw, Options{Crypto: own, Host: "a", Leases: true, Now: now})
	la, err := a.TakeLease(ctx, "r", "gpurent run", false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := raw.Get(ctx, la.key())
	if err != nil {
		t.Fatal(err)
	}
	old, _ := io.ReadAll(r)
	r.Close()
	// The session ends without releasing (the machine is gone); its
	// lease is written again with its old content, a TTL and more later
	// by the holder's signed time. The store stamps the copy now.
	var li LeaseInfo
	if err := json.Unmarshal(old, &li); err != nil {
		t.Fatal(err)
	}
	li.Beat = li.Beat.Add(-LeaseTTL - time.Minute)
	li.MAC = leaseMAC(own.Auth[0], li) // as it was signed a TTL ago
	stale, _ := json.Marshal(li)
	if _, err := raw.Put(ctx, la.key(), func(w io.Writer) error { _, err := w.Write(stale); return err }); err != nil {
		t.Fatal(err)
	}
	b := New(raw, Options{Crypto: own, Host: "b", Leases: true, Now: now})
	if _, err := b.TakeLease(ctx, "r", "gpurent run", false); err != nil {
		t.Errorf("a lease whose signed beat is a TTL old, planted again, still blocks a new session: %v", err)
	}
	// A live one still does.
	c := New(raw, Options{Crypto: own, Host: "c", Leases: true, Now: now})
	var held *HeldError
	if _, err := c.TakeLease(ctx, "r", "gpurent run", false); !errors.As(err, &held) {
		t.Errorf("a live lease did not block: %v", err)
	}
}
