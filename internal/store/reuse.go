package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Files that did not change since the run's previous checkpoint (a frozen
// base model beside a LoRA adapter, the tokenizer, the config) are not
// uploaded again: their stored object is copied inside the store, which
// moves no bytes over the machine's link. Each checkpoint keeps objects of
// its own, so prune, verify and the clean-up of leftovers stay as they are.

// copier is a backend that copies an object inside the store, and names
// each version of an object with an ETag the store sets, never the writer:
// an object overwritten (by anyone with the store's write key) has
// another, so a copy can be made only of the bytes a signed manifest
// recorded.
type copier interface {
	// Copies reports whether the store copies and names versions at all
	// (a directory does neither), before any request is made.
	Copies() bool
	Copy(ctx context.Context, dst, src string) error
	ETag(ctx context.Context, key string) (string, error)
}

// reuseMin: smaller files are uploaded again. Copying one costs a request
// and a check, as uploading it does.
const reuseMin = 1 << 20

// etagOf is the ETag to record for an object just stored, where the store
// gives one and the object is large enough to be worth copying later.
func (s *Store) etagOf(ctx context.Context, key string, plain int64) string {
	c, ok := s.b.(copier)
	if !ok || !c.Copies() || plain < reuseMin {
		return ""
	}
	tag, err := c.ETag(ctx, key)
	if err != nil {
		return ""
	}
	return tag
}

// reusable is what a push may copy instead of upload: the previous
// checkpoint's files by path, with their objects.
type reusable struct {
	id      string
	files   map[string]Entry
	objects []ObjRef
}

// reuseSource reads the file list of the newest checkpoint of run whose
// objects a push may copy: signed by a key here (an unsigned one could
// launder a planted object into a signed checkpoint), encrypted to the
// same recipients (a copy is the same ciphertext), and readable here (its
// file list is encrypted: a machine with only an auth key has none). nil
// when there is none: the push uploads everything.
func (s *Store) reuseSource(ctx context.Context, run string) *reusable {
	if c, ok := s.b.(copier); !ok || !c.Copies() || len(s.opt.Crypto.Auth) == 0 {
		return nil // no reading of the previous checkpoint for nothing
	}
	c := *s.opt.Crypto
	c.CheckAuth = true // whether or not this store's readers check
	signed := &Store{b: s.b, opt: s.opt}
	signed.opt.Crypto = &c
	m, _, err := signed.Latest(ctx, run)
	if err != nil || m.Encrypted != s.opt.Crypto.Encrypting() || !sameKeys(m.Recipients, s.opt.Crypto.Keys) {
		return nil
	}
	es, err := s.Files(m)
	if err != nil {
		return nil
	}
	r := &reusable{id: m.ID, files: map[string]Entry{}, objects: m.Objects}
	for _, e := range es {
		if e.Type == "file" {
			r.files[e.Path] = e
		}
	}
	return r
}

func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// candidate is the previous checkpoint's entry for the file at rel, with
// its objects, when the file still has its size and modification time:
// only then is it hashed to confirm (a file saved anew each time has a
// new mtime and is uploaded without being read twice).
func (r *reusable) candidate(rel string, info fs.FileInfo) (Entry, []ObjRef, bool) {
	if r == nil {
		return Entry{}, nil, false
	}
	e, ok := r.files[rel]
	if !ok || e.Size != info.Size() || e.Size < reuseMin || !e.MTime.Equal(info.ModTime()) {
		return Entry{}, nil, false
	}
	var objs []ObjRef
	for _, o := range e.objects() {
		if o < 0 || o >= len(r.objects) || r.objects[o].ETag == "" {
			return Entry{}, nil, false
		}
		objs = append(objs, r.objects[o])
	}
	return e, objs, true
}

// reuse copies prev's objects (to key(j) for part j, key(-1) for a
// whole object) when the file at path, unchanged while it is read, has
// prev's SHA-256. done false: upload it.
func (s *Store) reuse(ctx context.Context, path string, info fs.FileInfo, prev Entry, objs []ObjRef, key func(j int) string) (pushed, bool, error) {
	if err := unchanged(path, info, nil); err != nil {
		return pushed{}, false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return pushed{}, false, i18n.Errorf("push: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 1<<20)); err != nil {
		return pushed{}, false, i18n.Errorf("push %s: %w", path, err)
	}
	if err := unchanged(path, info, f); err != nil {
		return pushed{}, false, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if sum != prev.SHA256 {
		return pushed{}, false, nil
	}
	out := pushed{size: prev.Size, sum: sum, reused: prev.Size}
	for j, obj := range objs {
		k := -1
		if len(prev.Parts) > 0 {
			k = j
		}
		ref, ok := s.copyObject(ctx, obj, key(k))
		if !ok {
			return pushed{}, false, ctx.Err()
		}
		out.objs = append(out.objs, ref)
	}
	for j, p := range prev.Parts {
		out.parts = append(out.parts, Part{Object: j, Size: p.Size, Prefix: p.Prefix})
	}
	s.progress(prev.Size)
	return out, true, nil
}

// copyObject copies obj to key while obj is the version the signed
// manifest recorded, before and after the copy: one overwritten since
// (by anyone with the store's write key) is not carried into a new
// checkpoint. ok false: upload instead.
func (s *Store) copyObject(ctx context.Context, obj ObjRef, key string) (ObjRef, bool) {
	c := s.b.(copier)
	same := func() bool { tag, err := c.ETag(ctx, obj.Key); return err == nil && tag == obj.ETag }
	if !same() {
		return ObjRef{}, false
	}
	if err := c.Copy(ctx, key, obj.Key); err != nil {
		return ObjRef{}, false // too large to copy (S3: 5 GiB), or not allowed: uploaded instead
	}
	tag, err := c.ETag(ctx, key)
	if err != nil || !same() {
		s.b.Delete(ctx, key) // uploaded instead, under the same key
		return ObjRef{}, false
	}
	return ObjRef{Key: key, Size: obj.Size, ETag: tag}, true
}
