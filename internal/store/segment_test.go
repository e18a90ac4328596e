package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Files larger than a segment are stored in parts, on every backend, and
// come back whole and sparse; a part swapped for another is named.
func TestFilesInParts(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			s := New(b, Options{Crypto: cr, Segment: 16 << 20})
			src := tree(t)
			m, err := s.Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if m.Version != 3 {
				t.Errorf("version %d, want 3 for a checkpoint with a file in parts", m.Version)
			}
			es, err := s.Files(m)
			if err != nil {
				t.Fatal(err)
			}
			var sparse Entry
			for _, e := range es {
				if e.Path == "sparse.bin" {
					sparse = e
				}
				if e.Path == "shards/a/model.pt" && len(e.Parts) != 0 {
					t.Errorf("a 3 MiB file is in %d parts with 16 MiB segments", len(e.Parts))
				}
			}
			if len(sparse.Parts) != 4 || sparse.Object != -1 {
				t.Fatalf("a 64 MiB file in 16 MiB segments: %d parts, object %d", len(sparse.Parts), sparse.Object)
			}
			dest := restoresAs(t, s, m.ID, src)
			if n, ok := allocated(filepath.Join(dest, "sparse.bin")); ok && n > 1<<20 {
				t.Errorf("the sparse file came back with %d bytes of disk", n)
			}
			if _, probs, err := s.Verify(ctx, "r", m.ID, true); err != nil || len(probs) != 0 {
				t.Fatalf("verify: %v %v", probs, err)
			}
			// The first and last parts swapped in the store: each is a
			// whole age file for the right recipient, of the same size,
			// so only the running hash tells them apart.
			k1, k4 := m.Objects[sparse.Parts[0].Object].Key, m.Objects[sparse.Parts[3].Object].Key
			p1, p4 := read(t, b, k1), read(t, b, k4)
			corrupt(t, b, k1, func([]byte) []byte { return p4 })
			corrupt(t, b, k4, func([]byte) []byte { return p1 })
			_, probs, err := s.Verify(ctx, "r", m.ID, true)
			if err != nil || len(probs) != 1 || !strings.Contains(probs[0].Msg.String(), "part 1 of 4") {
				t.Errorf("verify of swapped parts: %v %v", probs, err)
			}
			_, err = s.Pull(ctx, "r", m.ID, filepath.Join(t.TempDir(), "out"))
			var bad damaged
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), "part 1 of 4") {
				t.Errorf("pull of swapped parts: %v", err)
			}
		})
	}
}

func read(t *testing.T, b Backend, key string) []byte {
	t.Helper()
	r, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A checkpoint with no file in parts stays version 2, which a gpurent
// that knows no parts reads.
func TestNoPartsStaysVersion2(t *testing.T) {
	s := New(mustOpen(t, t.TempDir()), Options{})
	m, err := s.Push(context.Background(), tree(t), "r")
	if err != nil || m.Version != 2 {
		t.Fatalf("version %v, %v", m, err)
	}
}

func mustOpen(t *testing.T, url string) Backend {
	t.Helper()
	b, _, err := Open(context.Background(), url, OpenOptions{PartSize: 5 << 20, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// puts records the data objects a push uploads, and names versions as
// its store does.
type puts struct {
	Backend
	mu   sync.Mutex
	keys []string
}

func (p *puts) Copies() bool { return p.Backend.(copier).Copies() }

func (p *puts) ETag(ctx context.Context, key string) (string, error) {
	return p.Backend.(copier).ETag(ctx, key)
}

func (p *puts) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if strings.Contains(key, "/data/") {
		p.mu.Lock()
		p.keys = append(p.keys, key)
		p.mu.Unlock()
	}
	return p.Backend.Put(ctx, key, fill)
}

// resumable is a model directory: a small config and a 3.5 MiB model,
// in 1 MiB segments four parts.
func resumable(t *testing.T) (src string, model []byte) {
	t.Helper()
	src = filepath.Join(t.TempDir(), "ckpt")
	os.MkdirAll(src, 0o755)
	model = make([]byte, 7<<19)
	rand.Read(model)
	if err := os.WriteFile(filepath.Join(src, "config.json"), []byte(`{"layers": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "model.bin"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	return src, model
}

// A file list's parts are checked as strictly as its objects: a crafted
// manifest cannot make pull read one object twice, past a file's size, or
// trust a hash that is not the file's.
func TestFileListRejectsBadParts(t *testing.T) {
	sum := strings.Repeat("a", 64)
	good := func() Entry {
		return Entry{Path: "m", Type: "file", Size: 10, SHA256: sum, Object: -1,
			Parts: []Part{{Object: 0, Size: 6, Prefix: strings.Repeat("b", 64)}, {Object: 1, Size: 4, Prefix: sum}}}
	}
	for _, c := range []struct {
		name    string
		version int
		edit    func(e *Entry)
	}{
		{"fine", 3, func(e *Entry) {}},
		{"in a version 2 manifest", 2, func(e *Entry) {}},
		{"one object twice", 3, func(e *Entry) { e.Parts[1].Object = 0 }},
		{"an object outside", 3, func(e *Entry) { e.Parts[1].Object = 2 }},
		{"an object and parts", 3, func(e *Entry) { e.Object = 0 }},
		{"one part", 3, func(e *Entry) { e.Parts = e.Parts[:1]; e.Parts[0].Size = 10; e.Parts[0].Prefix = sum }},
		{"short of the file", 3, func(e *Entry) { e.Parts[1].Size = 3 }},
		{"past the file", 3, func(e *Entry) { e.Parts[1].Size = 5 }},
		{"an empty part", 3, func(e *Entry) { e.Parts[0].Size = 0; e.Parts[1].Size = 10 }},
		{"a negative part", 3, func(e *Entry) { e.Parts[0].Size = -6; e.Parts[1].Size = 16 }},
		{"the last hash not the file's", 3, func(e *Entry) { e.Parts[1].Prefix = strings.Repeat("c", 64) }},
		{"no hash", 3, func(e *Entry) { e.Parts[0].Prefix = "" }},
	} {
		e := good()
		c.edit(&e)
		m := &Manifest{Version: c.version, ID: "20261205T000000.000Z-00000000", Run: "r", Files: 1, Bytes: 10,
			Objects: []ObjRef{{Key: "k0", Size: 1}, {Key: "k1", Size: 1}}}
		list, _ := json.Marshal([]Entry{e})
		_, err := ParseFileList(m, list)
		if (err == nil) != (c.name == "fine") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// A directory may not name parts either.
	m := &Manifest{Version: 3, ID: "20261205T000000.000Z-00000000", Run: "r", Files: 1, Objects: []ObjRef{{Key: "k0"}, {Key: "k1"}}}
	list, _ := json.Marshal([]Entry{{Path: ".", Type: "dir", Object: -1, Parts: good().Parts}})
	if _, err := ParseFileList(m, list); err == nil {
		t.Error("a directory with parts was accepted")
	}
	if _, err := ParseManifest([]byte(`{"version": 6, "id": "20261205T000000.000Z-00000000", "run": "r"}`)); err == nil || !strings.Contains(err.Error(), "newer gpurent") {
		t.Errorf("version 6: %v", err)
	}
}

// A file in parts that did not change since the previous checkpoint is
// referred to part by part, on every store; nothing is uploaded.
func TestUnchangedFileInPartsReferredTo(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			opt := Options{Crypto: owner(t), Segment: 1 << 20, Journal: t.TempDir(), Where: name}
			src, model := resumable(t)
			first, err := New(b, opt).Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			p := &puts{Backend: b}
			m, err := New(p, opt).Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if m.Reused != int64(len(model))+13 || len(p.keys) != 0 || len(m.Objects) != len(first.Objects) {
				t.Errorf("referred to %d bytes, uploaded %v: want every part of the model and the config referred to", m.Reused, p.keys)
			}
			restoresAs(t, New(b, opt), m.ID, src)
		})
	}
}

// A manifest of a version newer than this gpurent reads stops the search
// for the newest checkpoint, instead of being passed over for an older
// one without a word.
func TestNewerManifestStopsLatest(t *testing.T) {
	ctx := context.Background()
	b := mustOpen(t, t.TempDir())
	own := owner(t)
	s := New(b, Options{Crypto: own})
	src, _ := resumable(t)
	if _, err := s.Push(ctx, src, "r"); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"version": 6, "id": "29990101T000000.000Z-00000000", "run": "r"}`)
	b.Put(ctx, manifestKey("r", "29990101T000000.000Z-00000000"), func(w io.Writer) error { _, err := w.Write(body); return err })
	if _, _, err := s.Latest(ctx, "r"); !errors.Is(err, ErrNewerManifest) || !strings.Contains(err.Error(), "upgrade gpurent") {
		t.Errorf("latest past a newer manifest: %v", err)
	}
}

// No file, up to S3's 5 TiB and beyond, needs an object of more than
// 10,000 parts at any part size S3 allows: before parts, 8 MiB parts
// stopped a file at 78 GiB.
func TestUploadArithmeticTo5TiB(t *testing.T) {
	for _, size := range []int64{0, 1, 1 << 30, 1<<30 + 1, 78 << 30, 83_900_000_000, 1 << 40, 5 << 40, 5<<40 + 1, 50 << 40} {
		for _, part := range []int64{MinPartSize, 8 << 20, 64 << 20, MaxPartSize} {
			objects, parts := uploadPlan(size, defaultSegment, part)
			if parts > maxParts || parts < 1 {
				t.Errorf("a file of %d bytes at %d-byte parts: an object of %d parts", size, part, parts)
			}
			if objects*defaultSegment < size || (objects-1)*defaultSegment >= max(size, 1) {
				t.Errorf("a file of %d bytes: %d objects of %d", size, objects, defaultSegment)
			}
		}
	}
	if _, parts := uploadPlan(5<<40, defaultSegment, 8<<20); parts != 129 {
		t.Errorf("a 1 GiB part at 8 MiB parts: %d parts, want 129", parts)
	}
	for _, bad := range []int64{0, MinPartSize - 1, MaxPartSize + 1} {
		if CheckPartSize(bad) == nil {
			t.Errorf("part size %d accepted", bad)
		}
	}
}

// restoresAs pulls checkpoint id of run r from st, compares it with src,
// and returns where it put it.
func restoresAs(t *testing.T, st *Store, id, src string) string {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "out")
	if _, err := st.Pull(context.Background(), "r", id, dest); err != nil {
		t.Fatal(err)
	}
	same(t, src, dest)
	return dest
}
