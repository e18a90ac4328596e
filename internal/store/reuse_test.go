package store

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// counting counts the bytes uploaded to data objects, and copies as its
// store does.
type counting struct {
	Backend
	uploaded atomic.Int64
}

func (c *counting) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	n, err := c.Backend.Put(ctx, key, fill)
	if err == nil && strings.Contains(key, "/data/") {
		c.uploaded.Add(n)
	}
	return n, err
}

func (c *counting) Copy(ctx context.Context, dst, src string) error {
	return c.Backend.(copier).Copy(ctx, dst, src)
}

// TestUnchangedFilesNotUploaded: a file that kept its size, time and
// content since the run's previous checkpoint (a frozen base model beside
// the adapter) is copied in the store, not uploaded; each checkpoint still
// restores byte for byte after the other is pruned. A file with its old
// time but new content, a previous checkpoint encrypted to other keys, or
// a newer unsigned one, are never copied from.
func TestUnchangedFilesNotUploaded(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := &counting{Backend: open(t)}
			own := owner(t)
			s := New(c, Options{Crypto: own})
			src := filepath.Join(t.TempDir(), "checkpoint-1")
			base := bytes.Repeat([]byte("frozen base weights "), 200_000) // 4 MB
			writeFile(t, filepath.Join(src, "base", "model.bin"), string(base))
			writeFile(t, filepath.Join(src, "adapter.bin"), "adapter v1")
			if _, err := s.Push(ctx, src, "r"); err != nil {
				t.Fatal(err)
			}
			first := c.uploaded.Load()
			writeFile(t, filepath.Join(src, "adapter.bin"), "adapter v2")
			m2, err := s.Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if up := c.uploaded.Load() - first; m2.Reused != int64(len(base)) || up > 1024 {
				t.Fatalf("second push: reused %d bytes, uploaded %d; want the base's %d reused and only the adapter uploaded", m2.Reused, up, len(base))
			}
			// Same size and time, new content: hashed, found changed, uploaded.
			st, _ := os.Stat(filepath.Join(src, "base", "model.bin"))
			changed := bytes.ToUpper(base)
			writeFile(t, filepath.Join(src, "base", "model.bin"), string(changed))
			os.Chtimes(filepath.Join(src, "base", "model.bin"), st.ModTime(), st.ModTime())
			before := c.uploaded.Load()
			m3, err := s.Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if m3.Reused != int64(len("adapter v2")) || c.uploaded.Load()-before < int64(len(base)) {
				t.Fatalf("a file with its old time and new content was copied: reused %d", m3.Reused)
			}
			// Each restores whole, the copies standing alone.
			if _, err := s.Prune(ctx, "r", 2); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				id   string
				base []byte
			}{{m2.ID, base}, {m3.ID, changed}} {
				dest := filepath.Join(t.TempDir(), "out")
				if _, err := s.Pull(ctx, "r", c.id, dest); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(filepath.Join(dest, "base", "model.bin")); !bytes.Equal(got, c.base) {
					t.Fatalf("%s restored the base wrong", c.id)
				}
			}
			// Another recipient: the ciphertext cannot be shared.
			other := owner(t)
			other.Auth = own.Auth
			if m, err := New(c, Options{Crypto: other}).Push(ctx, src, "r"); err != nil || m.Reused != 0 {
				t.Fatalf("push to other recipients reused %d bytes (%v)", m.Reused, err)
			}
			// A newer unsigned checkpoint is never the source.
			time.Sleep(5 * time.Millisecond)
			if _, err := New(c, Options{Crypto: attacker(own)}).Push(ctx, src, "r"); err != nil {
				t.Fatal(err)
			}
			if m, err := s.Push(ctx, src, "r"); err != nil || m.Reused != 0 {
				// The newest signed one is other's, to other recipients.
				t.Fatalf("reused %d bytes past a planted checkpoint (%v)", m.Reused, err)
			}
			if m, err := s.Push(ctx, src, "r"); err != nil || m.Reused != int64(len(changed)+len("adapter v2")) {
				t.Fatalf("reused %d bytes from the newest signed checkpoint, want %d (%v)", m.Reused, len(changed)+len("adapter v2"), err)
			}
		})
	}
}
