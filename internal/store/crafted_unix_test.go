//go:build unix

package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The crafted-store suite: manifests and objects written by the test, not
// by gpurent, as someone with the store's write key could write them (the
// store here reads without --auth-key checks, as a store written before
// signatures is read). Whatever they say, a pull writes only inside its
// destination, takes nothing another user left, and tells a store that
// broke off from a damaged checkpoint.

// crafted is a plaintext store the test writes by hand.
type crafted struct {
	t   *testing.T
	b   Backend
	run string
}

func newCrafted(t *testing.T) *crafted {
	return &crafted{t: t, b: mustOpen(t, t.TempDir()), run: "r"}
}

// object stores body as object n of checkpoint id and returns its ref.
func (c *crafted) object(id string, n int, body []byte) ObjRef {
	key := objectKey(c.run, id, n)
	if _, err := c.b.Put(context.Background(), key, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		c.t.Fatal(err)
	}
	return ObjRef{Key: key, Size: int64(len(body))}
}

// commit writes a version 2 (3 with parts) manifest of entries under id.
func (c *crafted) commit(id string, objs []ObjRef, entries []Entry) {
	c.t.Helper()
	var total int64
	version := 2
	for _, e := range entries {
		total += e.Size
		if len(e.Parts) > 0 {
			version = 3
		}
	}
	list, _ := json.Marshal(entries)
	m := Manifest{Version: version, ID: id, Run: c.run, Created: time.Now().UTC(), Host: "attacker", Files: len(entries), Bytes: total, Objects: objs, FileList: list}
	body, _ := json.Marshal(&m)
	if _, err := c.b.Put(context.Background(), manifestKey(c.run, id), func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		c.t.Fatal(err)
	}
}

func sha(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func fileEntry(p string, obj int, body []byte) Entry {
	return Entry{Path: p, Type: "file", Mode: 0o644, Size: int64(len(body)), SHA256: sha(body), Object: obj}
}

func dirEntry(p string) Entry { return Entry{Path: p, Type: "dir", Mode: 0o755, Object: -1} }

// breaking fails the reads of the keys in broken partway, after a few
// bytes, as a connection reset would; tries counts them.
type breaking struct {
	Backend
	mu     sync.Mutex
	broken map[string]int // key: reads left to fail (-1: all)
	tries  map[string]int
}

func (b *breaking) fails(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tries == nil {
		b.tries = map[string]int{}
	}
	b.tries[key]++
	left, ok := b.broken[key]
	if !ok || left == 0 {
		return false
	}
	if left > 0 {
		b.broken[key] = left - 1
	}
	return true
}

type cutReader struct {
	r    io.ReadCloser
	left int
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("read tcp 127.0.0.1:9000: connection reset by peer")
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= n
	return n, err
}

func (c *cutReader) Close() error { return c.r.Close() }

func (b *breaking) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := b.Backend.Get(ctx, key)
	if err == nil && b.fails(key) {
		return &cutReader{r: r, left: 2}, nil
	}
	return r, err
}

func (b *breaking) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	r, err := b.Backend.GetRange(ctx, key, off, n)
	if err == nil && b.fails(key) {
		return &cutReader{r: r, left: 2}, nil
	}
	return r, err
}

func quick(s *Store) *Store { s.opt.PullWait = time.Millisecond; return s }

// An earlier pull of a manifest that left a symlink in the kept partial,
// then another manifest under the same id that puts a file beneath that
// name: the file is written inside the destination, nothing outside is
// touched, and the pull checks every file.
func TestPullNeverWritesThroughAKeptSymlink(t *testing.T) {
	ctx := context.Background()
	c := newCrafted(t)
	id := "20261205T000000.000Z-0000abcd"
	outside := t.TempDir()
	os.Chmod(outside, 0o700)
	before, _ := os.Stat(outside)
	body := []byte("checkpoint bytes")
	o0 := c.object(id, 0, body)
	c.commit(id, []ObjRef{o0, c.object(id, 1, []byte("later"))}, []Entry{
		dirEntry("."),
		{Path: "d", Type: "symlink", Link: outside, Object: -1},
		fileEntry("a", 0, body),
		fileEntry("z", 1, []byte("later")),
	})
	dest := filepath.Join(t.TempDir(), "out")
	cut := &breaking{Backend: c.b, broken: map[string]int{objectKey(c.run, id, 1): -1}}
	_, err := quick(New(cut, Options{Workers: 1})).Pull(ctx, c.run, id, dest)
	var part *PartialPull
	if !errors.As(err, &part) {
		t.Fatalf("first pull: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(part.Dir, "d")); err != nil || l != outside {
		t.Fatalf("the kept partial has no symlink d: %v", err)
	}
	// The same id, now a directory d with a file in it.
	evil := []byte("written through the link")
	c.commit(id, []ObjRef{o0, c.object(id, 1, evil)}, []Entry{dirEntry("."), dirEntry("d"), fileEntry("d/evil", 1, evil), fileEntry("a", 0, body)})
	if _, err := quick(New(c.b, Options{})).Pull(ctx, c.run, id, dest); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dest, "d", "evil")); err != nil || string(got) != string(evil) {
		t.Errorf("d/evil in the destination: %q %v", got, err)
	}
	if st, err := os.Lstat(filepath.Join(dest, "d")); err != nil || !st.IsDir() {
		t.Errorf("d is not a directory: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "evil")); err == nil {
		t.Error("the pull wrote outside its destination")
	}
	after, _ := os.Stat(outside)
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the outside directory changed: %v %v, was %v %v", after.Mode(), after.ModTime(), before.Mode(), before.ModTime())
	}
}

// A manifest whose root is a symlink would make the destination lead
// anywhere: refused, nothing written.
func TestPullRefusesASymlinkRoot(t *testing.T) {
	c := newCrafted(t)
	id := "20261205T000000.000Z-0000abce"
	c.commit(id, nil, []Entry{{Path: ".", Type: "symlink", Link: "/etc", Object: -1}})
	parent := t.TempDir()
	dest := filepath.Join(parent, "out")
	_, err := New(c.b, Options{}).Pull(context.Background(), c.run, id, dest)
	if err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Fatalf("pull of a symlink root: %v", err)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("written: %v", left)
	}
}

// A partial another could write to, or a kept file that does not hash as
// the manifest says (planted at the right size), is not taken: the pull
// fetches the file and the destination holds the checkpoint's bytes,
// owned by this user.
func TestPlantedPartialIsNotTaken(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, tmp string)
	}{
		{"a directory anyone can write to", func(t *testing.T, tmp string) {
			os.Mkdir(tmp, 0o777)
			os.Chmod(tmp, 0o777)
			os.WriteFile(filepath.Join(tmp, "model.bin"), []byte("PLANTED PLANTED!"), 0o666)
		}},
		{"a file of the right size, the wrong bytes", func(t *testing.T, tmp string) {
			os.Mkdir(tmp, 0o700)
			os.WriteFile(filepath.Join(tmp, "model.bin"), []byte("PLANTED PLANTED!"), 0o600)
		}},
		{"a symlink for the partial", func(t *testing.T, tmp string) {
			os.Symlink(t.TempDir(), tmp)
		}},
		{"a file for the partial", func(t *testing.T, tmp string) {
			os.WriteFile(tmp, []byte("x"), 0o600)
		}},
		{"another user's file", func(t *testing.T, tmp string) {
			if os.Getuid() != 0 {
				t.Skip("not root: cannot give a file to another user")
			}
			os.Mkdir(tmp, 0o700)
			p := filepath.Join(tmp, "model.bin")
			os.WriteFile(p, []byte("checkpoint bytes"), 0o600)
			os.Chown(p, 65534, 65534)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr := newCrafted(t)
			id := "20261205T000000.000Z-0000abcf"
			body := []byte("checkpoint bytes") // as long as the planted one
			cr.commit(id, []ObjRef{cr.object(id, 0, body)}, []Entry{dirEntry("."), fileEntry("model.bin", 0, body)})
			dest := filepath.Join(t.TempDir(), "out")
			tmp := filepath.Join(filepath.Dir(dest), partialBase(dest)+id)
			c.plant(t, tmp)
			// The journal pulls before this change kept beside the
			// partial, naming the planted file as finished.
			os.WriteFile(tmp+".journal", []byte("model.bin\n"), 0o666)
			if _, err := New(cr.b, Options{}).Pull(ctx, cr.run, id, dest); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dest, "model.bin")
			got, _ := os.ReadFile(p)
			st, _ := os.Stat(p)
			if string(got) != string(body) || !ownedHere(st) {
				t.Errorf("pulled %q, owned by this user: %v", got, ownedHere(st))
			}
			if st, _ := os.Stat(dest); st.Mode().Perm() != 0o755 {
				t.Errorf("destination mode %v", st.Mode())
			}
		})
	}
}

// A store whose answers break off is not a damaged checkpoint: the object
// is read again, and the pull succeeds; one that keeps breaking off keeps
// what was pulled and says so, never "corrupt". Ctrl-C likewise.
func TestInterruptionIsNotCorruption(t *testing.T) {
	ctx := context.Background()
	c := newCrafted(t)
	id := "20261205T000000.000Z-0000abd0"
	body := make([]byte, 40<<20) // read in ranges, as large objects are
	for i := range body {
		body[i] = byte(i * 7)
	}
	small := []byte("config")
	c.commit(id, []ObjRef{c.object(id, 0, small), c.object(id, 1, body)}, []Entry{dirEntry("."), fileEntry("config", 0, small), fileEntry("model.pt", 1, body)})
	key := objectKey(c.run, id, 1)

	// Two reads break off, the third gets through.
	flaky := &breaking{Backend: c.b, broken: map[string]int{key: 2}}
	dest := filepath.Join(t.TempDir(), "out")
	if _, err := quick(New(flaky, Options{Workers: 1})).Pull(ctx, c.run, id, dest); err != nil {
		t.Fatalf("pull through reads that broke off twice: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "model.pt")); len(got) != len(body) || sha(got) != sha(body) {
		t.Error("model.pt restored wrong")
	}

	// Every read breaks off: kept, not discarded, not "corrupt".
	gone := &breaking{Backend: c.b, broken: map[string]int{key: -1}}
	dest = filepath.Join(t.TempDir(), "out")
	_, err := quick(New(gone, Options{Workers: 1})).Pull(ctx, c.run, id, dest)
	var part *PartialPull
	if !errors.As(err, &part) || strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("pull from a store that keeps breaking off: %v", err)
	}
	if _, err := os.Stat(part.Dir); err != nil {
		t.Errorf("the partial was not kept: %v", err)
	}

	// Ctrl-C in the middle of the large file.
	slow := &breaking{Backend: c.b}
	cctx, cancel := context.WithCancel(ctx)
	dest = filepath.Join(t.TempDir(), "out")
	st := New(slow, Options{Workers: 1, Progress: func(n int64) {
		if n > 0 {
			cancel()
		}
	}})
	_, err = st.Pull(cctx, c.run, id, dest)
	if err == nil || !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("pull cut by Ctrl-C: %v", err)
	}
	// Shallow verify of a checkpoint whose reads break off: "not
	// checked", never "corrupt".
	_, probs, err := quick(New(gone, Options{})).Verify(ctx, c.run, id, true)
	if err != nil || len(probs) != 1 || !strings.Contains(probs[0].Msg.String(), "not checked") {
		t.Errorf("verify through a store that breaks off: %v %v", probs, err)
	}
}

// A large file in parts pulled again after the store broke off goes on
// from its last part that hashes right, reading none before it.
func TestPullResumesAFileFromItsLastPart(t *testing.T) {
	ctx := context.Background()
	b := mustOpen(t, t.TempDir())
	src := filepath.Join(t.TempDir(), "ckpt")
	os.MkdirAll(src, 0o755)
	model := make([]byte, 7<<19) // 3.5 MiB: four parts of 1 MiB
	for i := range model {
		model[i] = byte(i * 13)
	}
	os.WriteFile(filepath.Join(src, "model.bin"), model, 0o644)
	m, err := New(b, Options{Segment: 1 << 20}).Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	es, _ := New(b, Options{}).Files(m)
	var parts []Part
	for _, e := range es {
		if e.Path == "model.bin" {
			parts = e.Parts
		}
	}
	if len(parts) != 4 {
		t.Fatalf("%d parts", len(parts))
	}
	third := m.Objects[parts[2].Object].Key
	dest := filepath.Join(t.TempDir(), "out")
	cut := &breaking{Backend: b, broken: map[string]int{third: -1}}
	if _, err := quick(New(cut, Options{Workers: 1})).Pull(ctx, "r", m.ID, dest); !errors.As(err, new(*PartialPull)) {
		t.Fatalf("pull: %v", err)
	}
	again := &breaking{Backend: b}
	if _, err := New(again, Options{Workers: 1}).Pull(ctx, "r", m.ID, dest); err != nil {
		t.Fatal(err)
	}
	for k, p := range parts {
		if n := again.tries[m.Objects[p.Object].Key]; (k < 2) != (n == 0) {
			t.Errorf("part %d read %d times by the second pull", k+1, n)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "model.bin")); sha(got) != sha(model) {
		t.Error("model.bin restored wrong")
	}
}

// A flipped byte in an object's age header, encrypted to this identity,
// is damage in the store, not a wrong identity.
func TestDamagedHeaderIsNotAWrongIdentity(t *testing.T) {
	ctx := context.Background()
	b := mustOpen(t, t.TempDir())
	cr, _ := newCrypto(t)
	src := filepath.Join(t.TempDir(), "ckpt")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "model.bin"), []byte("weights"), 0o644)
	s := New(b, Options{Crypto: cr})
	m, err := s.Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	corrupt(t, b, m.Objects[0].Key, func(d []byte) []byte { d[60] ^= 1; return d })
	_, err = s.Pull(ctx, "r", m.ID, filepath.Join(t.TempDir(), "out"))
	if err == nil || errors.Is(err, ErrWrongIdentity) || !strings.Contains(err.Error(), "corrupt in the store") {
		t.Errorf("pull of an object with a damaged header: %v", err)
	}
}

// A missing large object is damage, said as such: not a header parse
// error, not advice to pull again.
func TestMissingLargeObjectIsSaidMissing(t *testing.T) {
	ctx := context.Background()
	c := newCrafted(t)
	id := "20261205T000000.000Z-0000abd1"
	body := make([]byte, 40<<20)
	o := c.object(id, 0, body)
	c.commit(id, []ObjRef{o}, []Entry{dirEntry("."), fileEntry("model.pt", 0, body)})
	c.b.Delete(ctx, o.Key)
	_, err := New(c.b, Options{}).Pull(ctx, c.run, id, filepath.Join(t.TempDir(), "out"))
	var part *PartialPull
	if err == nil || errors.As(err, &part) || !strings.Contains(err.Error(), "missing from the store") {
		t.Errorf("pull with a missing large object: %v", err)
	}
}

// One manifest that is not one (garbage under a checkpoint's name) does
// not hide the rest of the run: ls lists the others and names it, verify
// reports it, prune counts and deletes around it.
func TestBrokenManifestDoesNotHideTheRun(t *testing.T) {
	ctx := context.Background()
	b := mustOpen(t, t.TempDir())
	s := New(b, Options{})
	src, _ := resumable(t)
	for range 2 {
		if _, err := s.Push(ctx, src, "r"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	key := manifestKey("r", "20261205T000000.000Z-0000abd2")
	b.Put(ctx, key, func(w io.Writer) error { _, err := w.Write([]byte("{not json")); return err })
	ms, bad, err := s.ListAll(ctx, "r")
	if err != nil || len(ms) != 2 || len(bad) != 1 || bad[0].Key != key {
		t.Fatalf("list: %d, %v, %v", len(ms), bad, err)
	}
	_, probs, err := s.Verify(ctx, "r", "", false)
	if err != nil || len(probs) != 1 || probs[0].Path != key {
		t.Errorf("verify: %v %v", probs, err)
	}
	r, err := s.Prune(ctx, "r", 1)
	if err != nil || len(r.Checkpoints) != 1 || len(r.Unreadable) != 1 {
		t.Errorf("prune: %+v %v", r, err)
	}
}

// A shallow verify of a checkpoint whose file list does not decrypt
// reports it: nothing of it could be restored.
func TestShallowVerifyReadsTheFileList(t *testing.T) {
	ctx := context.Background()
	b := mustOpen(t, t.TempDir())
	cr, _ := newCrypto(t)
	s := New(b, Options{Crypto: cr})
	src, _ := resumable(t)
	m, err := s.Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	m.FileList[len(m.FileList)-1] ^= 1
	body, _ := json.Marshal(m)
	b.Put(ctx, manifestKey("r", m.ID), func(w io.Writer) error { _, err := w.Write(body); return err })
	_, probs, err := s.Verify(ctx, "r", "", false)
	if err != nil || len(probs) != 1 || !strings.Contains(probs[0].Msg.String(), "file list") {
		t.Errorf("shallow verify of an undecryptable file list: %v %v", probs, err)
	}
}

// A large object stored short (read in ranges, each reply whole) is
// damage, not a store that broke off: the partial goes, no retry loop.
func TestShortLargeObjectIsDamage(t *testing.T) {
	ctx := context.Background()
	c := newCrafted(t)
	id := "20261205T000000.000Z-0000abd3"
	body := make([]byte, 40<<20)
	small := []byte("config")
	o := c.object(id, 1, body)
	c.commit(id, []ObjRef{c.object(id, 0, small), o}, []Entry{dirEntry("."), fileEntry("a", 0, small), fileEntry("model.pt", 1, body)})
	corrupt(t, c.b, o.Key, func(d []byte) []byte { return d[:20<<20] })
	dest := filepath.Join(t.TempDir(), "out")
	_, err := quick(New(c.b, Options{Workers: 1})).Pull(ctx, c.run, id, dest)
	if !errors.As(err, new(damaged)) || !strings.Contains(err.Error(), "truncated or replaced") {
		t.Fatalf("pull of a short large object: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".out.gpurent-pull-*")); len(left) != 0 {
		t.Errorf("kept: %v", left)
	}
}

// Leftovers of pulls are matched by name, never as a glob: a parent
// named like a pattern reaches no other directory, and another
// destination whose name begins like this one's keeps its partial.
func TestDiscardPartialMatchesNamesOnly(t *testing.T) {
	base := t.TempDir()
	id := "20261205T000000.000Z-0000abd4"
	for _, d := range []string{"a", "b", "[ab]"} {
		os.MkdirAll(filepath.Join(base, d, ".out.gpurent-pull-"+id, "precious"), 0o700)
	}
	other := filepath.Join(base, "[ab]", ".out.gpurent-pull-x.gpurent-pull-"+id)
	os.MkdirAll(other, 0o700)
	DiscardPartial(filepath.Join(base, "[ab]", "out"))
	for _, d := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(base, d, ".out.gpurent-pull-"+id, "precious")); err != nil {
			t.Errorf("%s's partial went: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(base, "[ab]", ".out.gpurent-pull-"+id)); err == nil {
		t.Error("the destination's own partial stayed")
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("the partial of destination out.gpurent-pull-x went: %v", err)
	}
}

// Sizes that would overflow the total are refused, not wrapped to agree
// with the manifest.
func TestFileListSizesDoNotWrap(t *testing.T) {
	var es []Entry
	var objs []ObjRef
	for i := range 4 {
		es = append(es, Entry{Path: fmt.Sprintf("f%d", i), Type: "file", Size: 1 << 62, SHA256: strings.Repeat("a", 64), Object: i})
		objs = append(objs, ObjRef{Key: fmt.Sprintf("k%d", i)})
	}
	m := &Manifest{Version: 2, ID: "20261205T000000.000Z-00000000", Run: "r", Files: 4, Bytes: 0, Objects: objs}
	list, _ := json.Marshal(es)
	if _, err := ParseFileList(m, list); err == nil {
		t.Error("sizes adding up past 2^63 were accepted")
	}
}

// rm deletes one checkpoint whole, and nothing of another's.
func TestRemoveOne(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := mustOpen(t, dir)
	s := New(b, Options{})
	src, _ := resumable(t)
	m1, err := s.Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	m2, err := s.Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove(ctx, "r", m1.ID); err != nil {
		t.Fatal(err)
	}
	if ms, err := s.List(ctx, "r"); err != nil || len(ms) != 1 || ms[0].ID != m2.ID {
		t.Fatalf("after rm: %v", err)
	}
	if objs, _ := b.List(ctx, dataPrefix("r", m1.ID)); len(objs) != 0 {
		t.Errorf("left: %v", objs)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "r", "data", m1.ID)); err == nil {
		t.Error("its directory stayed")
	}
	if _, probs, err := s.Verify(ctx, "r", m2.ID, true); err != nil || len(probs) != 0 {
		t.Errorf("the other checkpoint: %v %v", probs, err)
	}
	if _, err := s.Remove(ctx, "r", m1.ID); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("rm of a checkpoint gone: %v", err)
	}
}

// Object names are the store's own: "." or ".." under a checkpoint's
// data could name its parent on a directory store.
func TestManifestObjectNames(t *testing.T) {
	id := "20261205T000000.000Z-00000000"
	for name, ok := range map[string]bool{"000001": true, "000001.3": true, "000001.3-0a1b2c3d": true, "000001-0a1b2c3d": true,
		"..": false, ".": false, "x": false, "000001/": false, "000001.3-XYZ": false} {
		body := fmt.Sprintf(`{"version": 2, "id": %q, "run": "r", "objects": [{"key": "runs/r/data/%s/%s", "size": 1}]}`, id, id, name)
		if _, err := ParseManifest([]byte(body)); (err == nil) != ok {
			t.Errorf("object %q: %v", name, err)
		}
	}
}
