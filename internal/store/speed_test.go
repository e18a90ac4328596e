package store

import (
	"context"
	"errors"
	"github.com/gpurent/gpurent/internal/store/cloud"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The speed test's round trip goes through each backend and leaves
// nothing behind: not in the store, not on disk; also when it is
// cancelled midway, and when the disk is too small to start.
func TestSpeedTest(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cr, _ := newCrypto(t)
			b := &Retrying{Backend: open(t)}
			dir := t.TempDir()
			s := New(b, Options{Crypto: cr, Host: "test", Version: "test"})
			sp, err := s.SpeedTest(ctx, dir, 12<<20+5, 3)
			if err != nil {
				t.Fatal(err)
			}
			if sp.Bytes != 12<<20+5 || sp.Files != 3 || !sp.Encrypted || sp.Upload <= 0 || sp.Download <= 0 || !strings.HasPrefix(sp.Run, "speed-test-") {
				t.Errorf("%+v", sp)
			}
			nothingLeft(t, b, dir)

			// Cancelled as the upload begins.
			ctx, cancel := context.WithCancel(ctx)
			var once sync.Once
			s = New(b, Options{Crypto: cr, Progress: func(int64) { once.Do(cancel) }})
			if _, err := s.SpeedTest(ctx, dir, 12<<20, 3); !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled: %v", err)
			}
			nothingLeft(t, b, dir)
		})
	}
	// Credentials that may write but not delete: measured, and told where
	// the test's run stays.
	b := refusing{Backend: backends(t)["file"](t), del: true}
	sp, err := New(b, Options{}).SpeedTest(context.Background(), t.TempDir(), 2<<20, 1)
	if err != nil || sp.Left == nil || !strings.Contains(sp.Left.Error(), "the test's run "+sp.Run+" could not be deleted from the store") ||
		!strings.Contains(sp.Left.Error(), "AccessDenied") || sp.Upload <= 0 {
		t.Errorf("undeletable: %+v, %v", sp, err)
	}
	// Cancelled as the pull begins, and the delete refused: both said.
	ctx, cancel := context.WithCancel(context.Background())
	var moved atomic.Int64
	_, err = New(b, Options{Progress: func(n int64) {
		if moved.Add(n) > 8<<20 {
			cancel()
		}
	}}).SpeedTest(ctx, t.TempDir(), 8<<20, 2)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "could not be deleted from the store") {
		t.Errorf("cancelled and undeletable: %v", err)
	}
	s := New(nil, Options{Free: func(string) (uint64, bool) { return 100 << 20, true }})
	dir := t.TempDir()
	if _, err := s.SpeedTest(context.Background(), dir, 64<<20, 1); err == nil || !strings.Contains(err.Error(), "has 100.0 MiB free; the test writes its 64.0 MiB twice there") {
		t.Errorf("small disk: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("small disk: %d entries written", len(es))
	}
}

func nothingLeft(t *testing.T, b Backend, dir string) {
	t.Helper()
	if objs, err := b.List(context.Background(), ""); err != nil || len(objs) != 0 {
		t.Errorf("the store holds %d objects (%v): %+v", len(objs), err, objs)
	}
	if r, ok := b.(*Retrying); ok {
		b = r.Backend
	}
	if d := cloud.Dir(b); d != "" {
		// A file store keeps no empty directory of the test's run.
		if es, _ := os.ReadDir(filepath.Join(d, "runs")); len(es) != 0 {
			t.Errorf("the file store keeps %d directories under runs/", len(es))
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("%s holds %d entries", dir, len(es))
	}
}
