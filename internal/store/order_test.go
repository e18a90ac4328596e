package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// skewedClock is a writer's clock: off from the true time by a fixed
// amount, advancing a second at each reading.
func skewedClock(start time.Time, off time.Duration) func() time.Time {
	t := start.Add(off)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

// pushStep pushes a directory holding step's number as checkpoint of run,
// then prunes run to keep, as gpurent run does after each commit.
func pushStep(t *testing.T, s *Store, run string, step, keep int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "step-"+strconv.Itoa(step))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "step"), []byte(strconv.Itoa(step)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Push(ctx, dir, run); err != nil {
		t.Fatalf("push step %d: %v", step, err)
	}
	if keep > 0 {
		if _, err := s.Prune(ctx, run, keep); err != nil {
			t.Fatalf("prune after step %d: %v", step, err)
		}
	}
}

// TestOrderSurvivesClockSkew: machine 1 pushes steps 1-3, machine 2 with
// its clock an hour off resumes and pushes 4-6, each keeping 3; a third
// machine must find step 6 the newest and steps 4-6 kept. On the commit
// before ids followed the run's newest, a machine an hour behind pruned its
// own 4-6 as the oldest and the third machine resumed from step 3.
func TestOrderSurvivesClockSkew(t *testing.T) {
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name       string
		first, two time.Duration
	}{
		{"second an hour behind", 0, -time.Hour},
		{"first an hour ahead", time.Hour, 0},
		{"second a day behind, then the first again", 0, -24 * time.Hour},
	} {
		for name, open := range fileAndS3(t) {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				b := open(t)
				run := "skew"
				m1 := New(b, Options{Grace: -1, Host: "m1", Now: skewedClock(start, c.first)})
				for step := 1; step <= 3; step++ {
					pushStep(t, m1, run, step, 3)
				}
				var said []string
				say := func(format string, a ...any) { said = append(said, fmt.Sprintf(format, a...)) }
				m2 := New(b, Options{Grace: -1, Host: "m2", Now: skewedClock(start.Add(time.Minute), c.two), Say: say})
				for step := 4; step <= 6; step++ {
					pushStep(t, m2, run, step, 3)
				}
				// The store's clock is the true one: m2's is far off it
				// (the test's start is not today), said once.
				if len(said) != 1 || !strings.Contains(said[0], "clock is") {
					t.Errorf("the clock's distance from the store's was said %d times: %q", len(said), said)
				}
				last := 6
				if c.two == -24*time.Hour {
					// The first machine again, its clock as it was: its
					// step 7 follows m2's, not the clock.
					m1b := New(b, Options{Grace: -1, Host: "m1", Now: skewedClock(start.Add(2*time.Minute), c.first)})
					pushStep(t, m1b, run, 7, 3)
					last = 7
				}
				m3 := New(b, Options{Grace: -1, Host: "m3"})
				ctx := context.Background()
				latest, _, err := m3.Latest(ctx, run)
				if err != nil {
					t.Fatal(err)
				}
				if latest.Name != "step-"+strconv.Itoa(last) {
					t.Errorf("latest is %s, want step-%d", latest.Name, last)
				}
				ms, err := m3.List(ctx, run)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, m := range ms {
					names = append(names, m.Name)
				}
				want := []string{"step-" + strconv.Itoa(last-2), "step-" + strconv.Itoa(last-1), "step-" + strconv.Itoa(last)}
				if len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
					t.Errorf("kept %q, want %q", names, want)
				}
			})
		}
	}
}

// TestSessionNeverPrunesItsOwnNewest: even when another writer's ids sort
// after this session's (a checkpoint committed without reading the run,
// by an older gpurent), a prune here keeps the newest keep it committed.
func TestSessionNeverPrunesItsOwnNewest(t *testing.T) {
	b, _, err := Open(context.Background(), t.TempDir(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	start := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	// An older writer far in the future: its ids sort after anything
	// this clock makes unless ids follow the run's newest.
	old := New(b, Options{Grace: -1, Now: skewedClock(start, 48*time.Hour)})
	for step := 1; step <= 3; step++ {
		pushStep(t, old, "r", step, 0)
	}
	me := New(b, Options{Grace: -1, Now: skewedClock(start, 0)})
	me.idAt = time.Time{}
	pushStep(t, me, "r", 4, 0)
	// Plant the situation of an older gpurent: a checkpoint of another
	// writer committed after mine with a greater id.
	pushStep(t, old, "r", 5, 0)
	p, err := me.PlanPrune(context.Background(), "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Checkpoints {
		if m.Name == "step-4" {
			t.Errorf("a prune keeping 1 deletes this session's own newest checkpoint")
		}
	}
	if len(p.Checkpoints) != 3 {
		t.Errorf("prune plans %d deletions, want 3 (steps 1-3)", len(p.Checkpoints))
	}
}
