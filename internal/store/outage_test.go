package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestDirectoryStoreGoneIsAnOutage: a directory store moved away, replaced
// by an empty directory (a dropped mount's mount point) or by a file is
// unreachable: the lease is not taken for lost, nothing is written into
// what stands in its place, and all is well once it is back. On the
// commit before the marker, a listing of the stand-in was empty, the
// lease "gone", and run stopped its command as taken over.
func TestDirectoryStoreGoneIsAnOutage(t *testing.T) {
	ctx := context.Background()
	for _, standIn := range []string{"nothing", "empty directory", "file"} {
		t.Run(standIn, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "store")
			b, _, err := Open(ctx, dir, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			s := New(b, Options{Grace: -1, Leases: true})
			l, err := s.TakeLease(ctx, "r", "test", false)
			if err != nil {
				t.Fatal(err)
			}
			s.Hold(l)
			pushStep(t, s, "r", 1, 0)

			away := filepath.Join(parent, "away")
			if err := os.Rename(dir, away); err != nil {
				t.Fatal(err)
			}
			switch standIn {
			case "empty directory":
				os.Mkdir(dir, 0o700)
			case "file":
				os.WriteFile(dir, nil, 0o600)
			}
			if err := l.Renew(ctx); err == nil || errors.Is(err, ErrLeaseLost) || !IsUnreachable(err) {
				t.Errorf("renewing the lease of a store gone: %v; want unreachable, not lost", err)
			}
			src := filepath.Join(t.TempDir(), "step-2")
			os.MkdirAll(src, 0o755)
			os.WriteFile(filepath.Join(src, "step"), []byte("2"), 0o644)
			if _, err := s.Push(ctx, src, "r"); err == nil || !IsUnreachable(err) || errors.Is(err, ErrLeaseLost) {
				t.Errorf("push to a store gone: %v; want unreachable", err)
			}
			if _, err := s.List(ctx, "r"); !IsUnreachable(err) {
				t.Errorf("list of a store gone: %v; want unreachable", err)
			}
			if standIn == "empty directory" {
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("written into the stand-in: %v", ents)
				}
			}
			os.RemoveAll(dir)
			if err := os.Rename(away, dir); err != nil {
				t.Fatal(err)
			}
			if err := l.Renew(ctx); err != nil {
				t.Errorf("renew once the store is back: %v", err)
			}
			if _, err := s.Push(ctx, src, "r"); err != nil {
				t.Errorf("push once the store is back: %v", err)
			}
			ms, err := s.List(ctx, "r")
			if err != nil || len(ms) != 2 {
				t.Errorf("after the outage: %d checkpoints (%v), want 2", len(ms), err)
			}
		})
	}
}
