package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// rewriting rewrites a file of the checkpoint being pushed once its upload
// has begun, as a trainer saving again in place (or by a rename over it)
// would: the first object's first write sets it off.
type rewriting struct {
	Backend
	once    sync.Once
	rewrite func()
}

func (r *rewriting) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if !strings.Contains(key, "/data/") {
		return r.Backend.Put(ctx, key, fill)
	}
	return r.Backend.Put(ctx, key, func(w io.Writer) error {
		return fill(writerFunc(func(p []byte) (int, error) {
			r.once.Do(r.rewrite)
			return w.Write(p)
		}))
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A file rewritten while it is uploaded fails the push with ErrChanged,
// naming the file, and nothing is committed: before, the push committed
// the torn copy (the old bytes then the new), hashed as it was read, so
// verify --deep found nothing wrong with it.
func TestPushRefusesAChangedFile(t *testing.T) {
	const size = 3 << 20 // read in three 1 MiB buffers: the first is written before the rewrite
	for _, tc := range []struct {
		name    string
		rewrite func(path string) error
		alone   bool // push the file, not its directory
	}{
		{"in place", func(path string) error { return os.WriteFile(path, bytes.Repeat([]byte("b"), size), 0o644) }, false},
		{"in place, pushed alone", func(path string) error { return os.WriteFile(path, bytes.Repeat([]byte("b"), size), 0o644) }, true},
		{"truncated", func(path string) error { return os.Truncate(path, 1<<20+5) }, false},
		{"renamed over", func(path string) error {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, bytes.Repeat([]byte("b"), size), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			src := t.TempDir()
			path := filepath.Join(src, "step-1.pt")
			if err := os.WriteFile(path, bytes.Repeat([]byte("a"), size), 0o644); err != nil {
				t.Fatal(err)
			}
			// An hour old, so that the rewrite's time differs however
			// coarse the file system's clock.
			old := time.Now().Add(-time.Hour)
			os.Chtimes(path, old, old)
			b := backends(t)["file"](t)
			rw := &rewriting{Backend: b, rewrite: func() {
				if err := tc.rewrite(path); err != nil {
					t.Error(err)
				}
			}}
			if tc.alone {
				src = path
			}
			_, err := New(rw, Options{Grace: -1}).Push(ctx, src, "r")
			if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "step-1.pt") {
				t.Errorf("push: %v", err)
			}
			if ms, err := New(b, Options{}).List(ctx, "r"); err != nil || len(ms) != 0 {
				_, probs, _ := New(b, Options{}).Verify(ctx, "r", "", true)
				t.Errorf("committed %d checkpoints (%v; verify --deep: %v)", len(ms), err, probs)
			}
		})
	}
}
