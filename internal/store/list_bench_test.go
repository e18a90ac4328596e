package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// farBackend answers every Get after a delay, as a store across the
// world does (a rented machine in Asia, its bucket in Virginia), so a
// benchmark shows what the number of round trips costs, not the disk.
type farBackend struct {
	Backend
	rtt time.Duration
}

func (f farBackend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	time.Sleep(f.rtt)
	return f.Backend.Get(ctx, key)
}

// BenchmarkListManifests lists a run of 64 checkpoints through a store
// that takes 5 ms a read: "sequential" reads the manifests one by one, as
// List did before, "list" is List (manifestReads at a time) and
// "resolve-newest" is Resolve of the newest checkpoint's name, which stops
// at the first batch.
func BenchmarkListManifests(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	be, _, err := Open(ctx, filepath.Join(dir, "store"), OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	s := New(be, Options{})
	const n = 64
	for i := range n {
		src := filepath.Join(dir, fmt.Sprintf("checkpoint-%d", 500*(i+1)))
		if err := os.WriteFile(src, []byte("weights"), 0o600); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Push(ctx, src, "run"); err != nil {
			b.Fatal(err)
		}
	}
	far := New(farBackend{be, 5 * time.Millisecond}, Options{})
	newest, err := far.Find(ctx, "run", "latest")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			objs, err := far.b.List(ctx, runPrefix("run")+"manifests/")
			if err != nil {
				b.Fatal(err)
			}
			for _, o := range objs {
				if _, err := far.manifest(ctx, o.Key); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			if ms, err := far.List(ctx, "run"); err != nil || len(ms) != n {
				b.Fatal(len(ms), err)
			}
		}
	})
	b.Run("resolve-newest", func(b *testing.B) {
		for b.Loop() {
			if id, err := far.Resolve(ctx, "run", newest.Name); err != nil || id != newest.ID {
				b.Fatal(id, err)
			}
		}
	})
}
