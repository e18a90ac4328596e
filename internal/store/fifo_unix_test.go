//go:build unix

package store

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFOsInStore: a FIFO planted anywhere in a directory store (as a
// lease, a manifest, a log's info or segment, a spend record, a
// heartbeat) makes no reader wait: every call answers within 10 s. On the
// commit before, the open of the FIFO blocked forever and no signal ended
// it (run, ckpt ls, runs, prune, log --list, run --budget all hung).
func TestFIFOsInStore(t *testing.T) {
	ctx := context.Background()
	const id = "20261207T120000.000Z-0123abcd"
	for _, key := range []string{
		"runs/r/lease/000000000009-" + id + ".json",
		"runs/r/manifests/" + id + ".json",
		"runs/r/logs/" + id + "/info.json",
		"runs/r/logs/" + id + "/000001.log.gz.age",
		"runs/r/spend/" + id + ".json",
		"runs/r/uploads/" + id + ".json",
	} {
		t.Run(filepath.Base(filepath.Dir(key)), func(t *testing.T) {
			dir := t.TempDir()
			b, _, err := Open(ctx, dir, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			s := New(b, Options{Grace: time.Minute, Leases: true})
			pushStep(t, s, "r", 1, 0)
			p := filepath.Join(dir, filepath.FromSlash(key))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			calls := map[string]func() error{
				"List":        func() error { _, _, err := s.ListAll(ctx, "r"); return err },
				"Latest":      func() error { _, _, err := s.Latest(ctx, "r"); return err },
				"Runs":        func() error { _, err := s.Runs(ctx); return err },
				"LogSessions": func() error { _, err := s.LogSessions(ctx, "r"); return err },
				"Spends":      func() error { _, err := s.Spends(ctx, "r"); return err },
				"PlanPrune":   func() error { _, err := s.PlanPrune(ctx, "r", 1); return err },
				"Verify":      func() error { _, _, err := s.Verify(ctx, "r", "", false); return err },
				"TakeLease": func() error {
					l, err := s.TakeLease(ctx, "r", "test", true)
					if err == nil {
						l.Release(ctx)
					}
					return err
				},
			}
			for name, call := range calls {
				done := make(chan error, 1)
				go func() { done <- call() }()
				select {
				case err := <-done:
					t.Logf("%s: %v", name, err)
				case <-time.After(10 * time.Second):
					t.Errorf("%s with a FIFO at %s: no answer in 10 s", name, key)
					return // the call is left blocked: this test has failed
				}
			}
		})
	}
}
