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

func (c *counting) Copies() bool { return c.Backend.(copier).Copies() }

func (c *counting) ETag(ctx context.Context, key string) (string, error) {
	return c.Backend.(copier).ETag(ctx, key)
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
			if name == "file" {
				// A directory's objects are copied by reading and writing
				// them, and it names no version: everything is uploaded.
				if m2.Reused != 0 {
					t.Fatalf("a directory store reused %d bytes", m2.Reused)
				}
				return
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
			if m3.Reused != 0 || c.uploaded.Load()-before < int64(len(base)) {
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
			if m, err := s.Push(ctx, src, "r"); err != nil || m.Reused != int64(len(changed)) {
				t.Fatalf("reused %d bytes from the newest signed checkpoint, want %d (%v)", m.Reused, len(changed), err)
			}
		})
	}
}

// TestReuseCopiesOnlyTheRecordedVersion: someone with the store's write
// key overwrites the object of the newest signed checkpoint (same size, any
// ciphertext to the public recipient); the next push must not carry it
// into a new signed checkpoint, but upload the file.
func TestReuseCopiesOnlyTheRecordedVersion(t *testing.T) {
	for name, open := range backends(t) {
		if name == "file" {
			continue // a directory store reuses nothing
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			own := owner(t)
			s := New(b, Options{Crypto: own})
			src := filepath.Join(t.TempDir(), "ck")
			base := bytes.Repeat([]byte("the owner's frozen base model "), 100_000)
			writeFile(t, filepath.Join(src, "base.pt"), string(base))
			first, err := s.Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if first.Objects[0].ETag == "" {
				t.Fatal("no ETag recorded")
			}
			evil := filepath.Join(t.TempDir(), "ck")
			writeFile(t, filepath.Join(evil, "base.pt"), strings.Repeat("X", len(base)))
			pl, err := New(b, Options{Crypto: attacker(own)}).Push(ctx, evil, "scratch")
			if err != nil {
				t.Fatal(err)
			}
			r, err := b.Get(ctx, pl.Objects[0].Key)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(r)
			r.Close()
			if _, err := b.Put(ctx, first.Objects[0].Key, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
				t.Fatal(err)
			}
			second, err := s.Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if second.Reused != 0 {
				t.Fatalf("copied %d bytes of an object overwritten since its checkpoint was signed", second.Reused)
			}
			dest := filepath.Join(t.TempDir(), "out")
			if _, err := s.Pull(ctx, "r", second.ID, dest); err != nil {
				t.Fatalf("the new signed checkpoint: %v", err)
			}
		})
	}
}
