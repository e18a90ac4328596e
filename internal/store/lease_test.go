package store

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOneWriterPerRun: a second session of a run is refused, naming the
// holder and --takeover; a takeover fences the first, whose next commit
// fails and writes nothing; an expired lease is taken without a word.
func TestOneWriterPerRun(t *testing.T) {
	for name, open := range fileAndS3(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			own := owner(t)
			first := New(b, Options{Crypto: own, Host: "box-a", Leases: true})
			l1, err := first.TakeLease(ctx, "r", "gpurent run", false)
			if err != nil {
				t.Fatal(err)
			}
			first.Hold(l1)
			second := New(b, Options{Crypto: own, Host: "box-b", Leases: true})
			_, err = second.TakeLease(ctx, "r", "gpurent run", false)
			var held *HeldError
			if !errors.As(err, &held) || held.Holder.Host != "box-a" || !strings.Contains(err.Error(), "--takeover") {
				t.Fatalf("second session: %v", err)
			}
			src := filepath.Join(t.TempDir(), "checkpoint-1")
			writeFile(t, filepath.Join(src, "w"), "step 1")
			if _, err := second.Push(ctx, src, "r"); !errors.As(err, &held) {
				t.Fatalf("a push of another session while the run is held: %v", err)
			}
			if _, err := first.Push(ctx, src, "r"); err != nil {
				t.Fatalf("the holder's push: %v", err)
			}
			l2, err := second.TakeLease(ctx, "r", "gpurent run", true)
			if err != nil {
				t.Fatal(err)
			}
			second.Hold(l2)
			if err := l1.Renew(ctx); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "box-b") {
				t.Fatalf("renewal after a takeover: %v", err)
			}
			before, _ := first.List(ctx, "r")
			if _, err := first.Push(ctx, src, "r"); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("a commit after the lease was lost: %v", err)
			}
			if after, _ := first.List(ctx, "r"); len(after) != len(before) {
				t.Fatalf("the fenced session committed: %d checkpoints, had %d", len(after), len(before))
			}
			if _, err := second.Push(ctx, src, "r"); err != nil {
				t.Fatalf("the new holder's push: %v", err)
			}
			// Released, the run is free at once; a lease past its TTL too.
			l2.Release(ctx)
			l3, err := first.TakeLease(ctx, "r", "gpurent run", false)
			if err != nil {
				t.Fatalf("after a release: %v", err)
			}
			if _, err := second.TakeLease(ctx, "r", "gpurent run", false); err == nil {
				t.Fatal("a live lease was taken")
			}
			// The fenced session stays fenced once the run is free again.
			l3.Release(ctx)
			if err := l2.Check(ctx); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("a lease taken over and released came back: %v", err)
			}
		})
	}
}

// TestExpiredLeaseIsFree: a holder that stopped renewing (its machine
// gone) holds the run only until its TTL passes on the store's clock.
func TestExpiredLeaseIsFree(t *testing.T) {
	ctx := context.Background()
	b, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := New(b, Options{Host: "gone", LeaseTTL: 1500 * time.Millisecond})
	if _, err := s.TakeLease(ctx, "r", "gpurent run", false); err != nil {
		t.Fatal(err)
	}
	n := New(b, Options{Host: "new", LeaseTTL: 1500 * time.Millisecond})
	if _, err := n.TakeLease(ctx, "r", "gpurent run", false); err == nil {
		t.Fatal("a live lease was taken")
	}
	time.Sleep(2 * time.Second)
	l, err := n.TakeLease(ctx, "r", "gpurent run", false)
	if err != nil {
		t.Fatalf("an expired lease: %v", err)
	}
	if l.Info().Generation != 2 {
		t.Fatalf("generation %d, want 2", l.Info().Generation)
	}
}

// TestConcurrentTakesAgreeOnOne: sessions taking one run at the same
// moment end with exactly one holder, on every try.
func TestConcurrentTakesAgreeOnOne(t *testing.T) {
	for name, open := range fileAndS3(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			for try := range 10 {
				run := "r" + string(rune('a'+try))
				var wg sync.WaitGroup
				got := make([]*Lease, 4)
				for i := range got {
					wg.Add(1)
					go func() {
						defer wg.Done()
						l, err := New(b, Options{Host: "h"}).TakeLease(ctx, run, "gpurent run", false)
						var held *HeldError
						if err != nil && !errors.As(err, &held) {
							t.Error(err)
						}
						got[i] = l
					}()
				}
				wg.Wait()
				holders := 0
				for _, l := range got {
					if l != nil && l.Check(ctx) == nil {
						holders++
					}
				}
				if holders != 1 {
					t.Fatalf("try %d: %d sessions hold run %s", try, holders, run)
				}
			}
		})
	}
}

// TestLeaseOfADeadProcessHere: a lease left by a gpurent killed on this
// machine (its pid gone) does not hold the run: restarting here must not
// wait for it to expire.
func TestLeaseOfADeadProcessHere(t *testing.T) {
	if bootID() == "" {
		t.Skip("no /proc/sys/kernel/random/boot_id on this system")
	}
	ctx := context.Background()
	b, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := New(b, Options{Host: "here"})
	l, err := s.TakeLease(ctx, "r", "gpurent run", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeLease(ctx, "r", "gpurent run", false); err == nil {
		t.Fatal("a live holder's lease was taken")
	}
	// The same lease as a process that has exited would have left it.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1) to make a dead pid with")
	}
	l.info.PID = cmd.Process.Pid
	if err := l.write(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeLease(ctx, "r", "gpurent run", false); err != nil {
		t.Fatalf("a dead process's lease: %v", err)
	}
	other := New(b, Options{Host: "elsewhere"})
	l2, _ := other.TakeLease(ctx, "r2", "gpurent run", false)
	l2.info.PID = cmd.Process.Pid
	l2.write(ctx)
	if _, err := New(b, Options{Host: "here"}).TakeLease(ctx, "r2", "gpurent run", false); err == nil {
		t.Fatal("a lease of another host's dead-looking pid was taken")
	}
}
