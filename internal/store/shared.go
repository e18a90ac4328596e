package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// Objects are shared by content between the checkpoints of a run: a file
// whose bytes a checkpoint already stored (a frozen base model beside a
// LoRA adapter, the tokenizer, an unchanged shard) is not stored again;
// the new manifest refers to the object the earlier one committed. Each
// object carries a content address (ObjRef.Addr): an HMAC of the file's
// SHA-256 (of the running hashes around a part, for a file in parts) and of
// the recipients it is encrypted to, keyed with a secret derived from the
// auth key, so that someone who can list the store but holds no key cannot
// tell whether it holds a file they know. Only checkpoints signed by the
// auth key here are looked up: a planted manifest cannot have a push
// commit an object of its choosing.
//
// A push knows a file is unchanged without reading it when the hash cache
// (segment.go) recorded it with the same identity, size and times; then it
// writes the keys it will refer to into its heartbeat (Refs), looks for a
// clean-up under way (a sweep's mark), and checks that the objects are
// there at their size and version. An object uploaded anyway whose address
// a committed checkpoint holds is dropped for that one (the store keeps
// one copy, whatever the transfer).
//
// Deleting is mark and sweep: a clean-up (prune, ckpt rm, the leftovers of
// a killed push) deletes a data object only when no manifest of the run
// and no heartbeat's Refs name it, and it writes its mark
// (uploads/sweep-*.json) before it reads them, rewriting it while it
// deletes. A push that wrote its Refs before the mark was written is seen
// by the sweep; one that wrote them after sees the mark, and uploads
// instead of referring.

// sharedFrom is how many of the run's newest signed checkpoints a push
// looks up by content: each refers to every unchanged object still in use,
// so older ones add nothing but reads.
const sharedFrom = 3

// sweepPrefix begins the names of the marks of clean-ups under way
// (uploads/sweep-<hex>.json): never a checkpoint id.
const sweepPrefix = "sweep-"

// sweepTTL: a sweep's mark older than this, by the store's clock, is of a
// clean-up that died. A sweep rewrites its mark at least every quarter of
// it, and stops deleting when it cannot.
const sweepTTL = 2 * time.Minute

// addrKey keys the content addresses: derived from the signing auth key;
// nil (nothing is shared) without one.
func (c *Crypto) addrKey() []byte {
	if len(c.Auth) == 0 {
		return nil
	}
	h := hmac.New(sha256.New, c.Auth[0].key)
	h.Write([]byte("gpurent content address v1"))
	return h.Sum(nil)
}

// addrScope is what the ciphertext depends on besides the bytes: stored
// in plaintext, or encrypted to this set of recipients.
func (c *Crypto) addrScope() string {
	if !c.Encrypting() {
		return "plain"
	}
	return "age\x00" + strings.Join(slices.Sorted(slices.Values(c.Keys)), "\x00")
}

// addresses are the content addresses of the objects of a file of size
// bytes with SHA-256 sum: one when it is stored whole, one per part (each
// named by the running hashes at its two ends, which fix its bytes).
func addresses(key []byte, scope, sum string, size int64, parts []Part) []string {
	mac := func(fields ...string) string {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(scope))
		for _, f := range fields {
			h.Write([]byte{0})
			h.Write([]byte(f))
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	if len(parts) == 0 {
		return []string{mac("whole", sum, strconv.FormatInt(size, 10))}
	}
	out := make([]string, len(parts))
	prev := ""
	for j, p := range parts {
		out[j] = mac("part", prev, p.Prefix, strconv.FormatInt(p.Size, 10))
		prev = p.Prefix
	}
	return out
}

// sharing is what a push shares by: the key, the scope, the objects of
// the run's newest signed checkpoints by address, and the hash cache.
type sharing struct {
	key   []byte
	scope string
	index map[string]ObjRef
	cache *hashCache
}

// sharingFor is nil where nothing can be shared: no auth key.
func (s *Store) sharingFor(ctx context.Context, run string, jr *journal) *sharing {
	key := s.opt.Crypto.addrKey()
	if key == nil {
		return nil
	}
	sh := &sharing{key: key, scope: s.opt.Crypto.addrScope(), index: map[string]ObjRef{}, cache: jr.hashes(s.segment())}
	signer := s.opt.Crypto.Auth[0].ID()
	seen, read := 0, 0
	s.newestFirst(ctx, run, func(m *Manifest, err error) (bool, error) {
		read++
		if err == nil && m.Version >= versionShared && m.Auth != nil && m.Auth.Key == signer && s.opt.Crypto.Authentic(m) == nil {
			seen++
			for _, o := range m.Objects {
				if o.Addr != "" {
					sh.index[o.Addr] = o
				}
			}
		}
		return seen >= sharedFrom || read >= 4*sharedFrom, nil
	})
	return sh
}

// addrs are the content addresses of what a push stored of one file.
func (sh *sharing) addrs(p pushed) []string {
	return addresses(sh.key, sh.scope, p.sum, p.size, p.parts)
}

// known are the files of a push the hash cache knows unchanged and whose
// objects a committed checkpoint holds, claimed (claim): their results,
// by file number. The rest are uploaded.
func (sh *sharing) known(ctx context.Context, s *Store, run string, hb *beat, rel, paths []string, infos []fs.FileInfo) map[int]pushed {
	if sh == nil || len(sh.index) == 0 || sh.cache == nil {
		return nil
	}
	same := make([]bool, len(infos))
	s.parallel(ctx, len(infos), func(ctx context.Context, i int) error {
		cf := sh.cache.Files[rel[i]]
		same[i] = cf != nil && cf.same(infos[i]) && (infos[i].Size() > s.segment()) == (len(cf.Parts) > 0) &&
			(!cf.Racy || hashesAs(ctx, paths[i], infos[i], cf))
		return nil
	})
	found := map[int]pushed{}
	var refs []ObjRef
	for i := range infos {
		if !same[i] {
			continue
		}
		cf := sh.cache.Files[rel[i]]
		p := pushed{size: cf.Size, sum: cf.Sum, reused: cf.Size}
		for j, part := range cf.Parts {
			p.parts = append(p.parts, Part{Object: j, Size: part.Size, Prefix: part.Prefix})
		}
		for _, a := range sh.addrs(p) {
			o, ok := sh.index[a]
			if !ok {
				p.objs = nil
				break
			}
			p.objs = append(p.objs, o)
		}
		if len(p.objs) > 0 {
			found[i] = p
			refs = append(refs, p.objs...)
		}
	}
	ok := s.claim(ctx, run, hb, refs)
	for i, p := range found {
		for _, o := range p.objs {
			if !ok[o.Key] {
				delete(found, i)
				break
			}
		}
	}
	return found
}

// hashesAs says whether the file at path, as it was walked, still hashes
// as cf recorded, part by part: a racy entry's check. It reads the file as
// adoptWhole does: no link followed, no FIFO waited on, no more than its
// size, cancelled with the push.
func hashesAs(ctx context.Context, path string, info fs.FileInfo, cf *cachedFile) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|nonBlock, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || differs(info, now) != "" {
		return false
	}
	h := sha256.New()
	src := &ctxReader{ctx: ctx, r: io.LimitReader(f, info.Size()+1)}
	buf := make([]byte, 1<<20)
	for _, p := range cf.Parts {
		if n, err := io.CopyBuffer(h, io.LimitReader(src, p.Size), buf); err != nil || n != p.Size || hex.EncodeToString(h.Sum(nil)) != p.Prefix {
			return false
		}
	}
	if _, err := io.CopyBuffer(h, src, buf); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == cf.Sum && unchanged(path, info, f) == nil
}

// dedup points the objects just uploaded whose address a committed
// checkpoint holds at that checkpoint's object, and returns the keys of
// the copies uploaded, to delete once the push has committed.
func (sh *sharing) dedup(ctx context.Context, s *Store, run string, hb *beat, results []pushed) []string {
	if sh == nil || len(sh.index) == 0 {
		return nil
	}
	var refs []ObjRef
	for _, r := range results {
		for _, o := range r.objs {
			if had, ok := sh.index[o.Addr]; ok && had.Key != o.Key {
				refs = append(refs, had)
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	ok := s.claim(ctx, run, hb, refs)
	var drop []string
	for i := range results {
		for k, o := range results[i].objs {
			if had, found := sh.index[o.Addr]; found && had.Key != o.Key && ok[had.Key] {
				drop = append(drop, o.Key)
				results[i].objs[k] = had
			}
		}
	}
	return drop
}

// address sets the content address of every object of results.
func (sh *sharing) address(results []pushed) {
	if sh == nil {
		return
	}
	for i := range results {
		r := &results[i]
		if len(r.objs) == 0 {
			continue
		}
		as := sh.addrs(*r)
		if len(as) != len(r.objs) {
			continue // never: one object per part, or one whole
		}
		for k := range r.objs {
			r.objs[k].Addr = as[k]
		}
	}
}

// claim makes refs, objects committed checkpoints stored, safe for this
// push to commit as its own: it names them in its heartbeat first, then
// makes sure no clean-up is under way (one that began before sees the
// heartbeat), then that each is still stored at its size, and at its
// version where the store names versions (someone with the write key may
// have replaced it). The keys it may refer to; none when any step fails.
func (s *Store) claim(ctx context.Context, run string, hb *beat, refs []ObjRef) map[string]bool {
	ok := map[string]bool{}
	if len(refs) == 0 {
		return ok
	}
	keys := make([]string, len(refs))
	for i, o := range refs {
		keys[i] = o.Key
	}
	if hb.refer(ctx, keys) != nil || s.sweeping(ctx, run, hb.key) {
		return ok
	}
	size, err := s.storedSizes(ctx, refs)
	if err != nil {
		return ok
	}
	v, versions := s.b.(copier)
	versions = versions && v.Copies()
	var mu sync.Mutex
	s.parallel(ctx, len(refs), func(ctx context.Context, i int) error {
		o := refs[i]
		if n, stored := size[o.Key]; !stored || n != o.Size {
			return nil
		}
		if o.ETag != "" {
			if !versions {
				return nil
			}
			if tag, err := v.ETag(ctx, o.Key); err != nil || tag != o.ETag {
				return nil
			}
		}
		mu.Lock()
		ok[o.Key] = true
		mu.Unlock()
		return nil
	})
	return ok
}

// sweeping says whether a clean-up of run may be deleting now: a sweep's
// mark younger than sweepTTL by the store's clock, for which the time of
// this push's heartbeat (at own, just written) stands. Anything else says
// yes: a listing that fails, a store that stamps no times, no heartbeat.
// (Not the newest time listed: anyone who can write there could plant a
// file dated next year, and every live mark would look dead.)
func (s *Store) sweeping(ctx context.Context, run, own string) bool {
	up := uploadsPrefix(run)
	objs, err := s.b.List(ctx, up)
	if err != nil {
		return true
	}
	var now time.Time
	for _, o := range objs {
		if o.Key == own {
			now = o.ModTime
		}
	}
	if now.IsZero() {
		return true
	}
	for _, o := range objs {
		name := strings.TrimPrefix(o.Key, up)
		if strings.HasPrefix(name, sweepPrefix) && (o.ModTime.IsZero() || now.Sub(o.ModTime) < sweepTTL) {
			return true
		}
	}
	return false
}

// marks are the data objects of run that a manifest or a heartbeat's
// Refs name. complete is false when one could not be read (a manifest of
// a newer gpurent is read for its objects alone): then no object may be
// judged unused.
func (s *Store) marks(ctx context.Context, run string) (marked map[string]bool, complete bool, err error) {
	marked = map[string]bool{}
	complete = true
	up := uploadsPrefix(run)
	beats, err := s.b.List(ctx, up)
	if err != nil && !IsNotFound(err) {
		return nil, false, err
	}
	for _, o := range beats {
		id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, up), ".json")
		if !ok || ValidID(id) != nil {
			continue
		}
		var hb heartbeat
		if !s.readMarks(ctx, o.Key, heartbeatMax, &hb) {
			complete = false
		}
		for _, k := range hb.Refs {
			marked[k] = true
		}
	}
	mans, err := s.b.List(ctx, runPrefix(run)+"manifests/")
	if err != nil && !IsNotFound(err) {
		return nil, false, err
	}
	mans = slices.DeleteFunc(mans, func(o Object) bool { return !strings.HasSuffix(o.Key, ".json") }) // a directory store's temporary files
	var mu sync.Mutex
	s.parallel(ctx, len(mans), func(ctx context.Context, i int) error {
		var m struct {
			Objects []struct {
				Key string `json:"key"`
			} `json:"objects"`
		}
		ok := s.readMarks(ctx, mans[i].Key, maxManifest, &m)
		mu.Lock()
		defer mu.Unlock()
		complete = complete && ok
		for _, r := range m.Objects {
			marked[r.Key] = true
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	return marked, complete, nil
}

// readMarks decodes the object at key, of at most max bytes, into v. ok
// is false when what it names cannot be told: it could not be read, or is
// larger. One gone (its push committed or ended), one that is not JSON or
// not a regular file (no gpurent wrote it: planted, it names nothing) is
// left as it is: v names nothing.
func (s *Store) readMarks(ctx context.Context, key string, max int64, v any) (ok bool) {
	r, err := s.b.Get(ctx, key)
	if err != nil {
		return IsNotFound(err) || errors.Is(err, userfile.ErrNotRegular)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return errors.Is(err, userfile.ErrNotRegular)
	}
	if int64(len(b)) > max {
		return false
	}
	json.Unmarshal(b, v)
	return true
}

// sweepMark is a clean-up's mark while it deletes.
type sweepMark struct {
	s     *Store
	key   string
	wrote time.Time
}

// beginSweep writes the mark of a clean-up of run.
func (s *Store) beginSweep(ctx context.Context, run string) (*sweepMark, error) {
	var b [8]byte
	rand.Read(b[:])
	w := &sweepMark{s: s, key: uploadsPrefix(run) + sweepPrefix + hex.EncodeToString(b[:]) + ".json"}
	return w, w.renew(ctx)
}

func (w *sweepMark) renew(ctx context.Context) error {
	body := []byte(`{"what":"a gpurent clean-up deleting unused objects of this run"}` + "\n")
	start := w.s.opt.Now()
	if _, err := w.s.b.Put(ctx, w.key, func(wr io.Writer) error { _, err := wr.Write(body); return err }); err != nil {
		return err
	}
	w.wrote = start
	return nil
}

// age is how long ago the mark was last written, by the Store's clock.
func (w *sweepMark) age() time.Duration { return w.s.opt.Now().Sub(w.wrote) }

func (w *sweepMark) end(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	w.s.b.Delete(dctx, w.key)
}

// unused drops from keys the data objects that a manifest or a live
// push's Refs name, all of them when that cannot be told; other keys
// (heartbeats, temporary files) stay. It reads nothing when keys holds no
// data object.
func (s *Store) unused(ctx context.Context, run string, keys []string) ([]string, error) {
	if !slices.ContainsFunc(keys, func(k string) bool { _, ok := objectOf(run, k); return ok }) {
		return keys, nil
	}
	marked, complete, err := s.marks(ctx, run)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		_, data := objectOf(run, k)
		return data && (marked[k] || !complete)
	}), nil
}

// deletable are the keys of m's objects that deleting m may delete, if
// nothing else refers to them: its own, and other checkpoints' of the run
// only where a key here signed m. A planted manifest may name any object
// of the run, a push's still running among them (which no manifest names
// yet); a signed one names only objects a committed checkpoint stored.
func (s *Store) deletable(m *Manifest) []string {
	signed := s.opt.Crypto.Authentic(m) == nil
	var keys []string
	for _, o := range m.Objects {
		if id, _ := objectOf(m.Run, o.Key); id == m.ID || signed {
			keys = append(keys, o.Key)
		}
	}
	return keys
}

// deleteUnused deletes the keys unused leaves, under a sweep's mark when
// data objects are among them; filter, when set, is asked before each
// batch of deletes which of the batch to delete. It counts those deleted.
func (s *Store) deleteUnused(ctx context.Context, run string, keys []string, filter func(context.Context, []string) ([]string, error)) (int, error) {
	keys, err := s.unused(ctx, run, keys)
	if err != nil {
		return 0, err
	}
	if !slices.ContainsFunc(keys, func(k string) bool { _, ok := objectOf(run, k); return ok }) {
		n, _, err := s.deleteBatches(ctx, keys, nil, filter)
		return n, err
	}
	// Marked, then judged again: a push that named an object in its
	// heartbeat before the mark was written is in this reading. The mark
	// must not have aged past half its life by the end of the reading,
	// nor during the deletes: a push that looked for it once it was dead
	// may have claimed what is judged unused. Then it is renewed and the
	// rest judged again.
	w, err := s.beginSweep(ctx, run)
	if err != nil {
		return 0, err
	}
	defer w.end(ctx)
	n := 0
	for try := 0; len(keys) > 0; try++ {
		if try == 3 {
			return n, i18n.Errorf("clean-up: its mark in the store could not be kept fresh: stopped deleting")
		}
		if keys, err = s.unused(ctx, run, keys); err != nil {
			return n, err
		}
		if w.age() < sweepTTL/2 {
			var d int
			d, keys, err = s.deleteBatches(ctx, keys, w, filter)
			n += d
			if err != nil {
				return n, err
			}
		}
		if len(keys) > 0 {
			if err := w.renew(ctx); err != nil {
				return n, i18n.Errorf("clean-up: its mark in the store could not be renewed: stopped deleting")
			}
		}
	}
	return n, nil
}

// deleteBatches deletes keys in batches of leftoverBatch, asking filter
// before each; a key already gone counts as deleted (a concurrent
// clean-up got there first). Under a sweep's mark w, each delete is given
// at most an eighth of the mark's life, the mark is renewed when a quarter
// of it is gone, and the deletes stop, returning the keys left, when half
// of it is: the caller judges those again.
func (s *Store) deleteBatches(ctx context.Context, keys []string, w *sweepMark, filter func(context.Context, []string) ([]string, error)) (int, []string, error) {
	n := 0
	for start := 0; start < len(keys); start += leftoverBatch {
		batch := keys[start:min(len(keys), start+leftoverBatch)]
		rest := keys[start+len(batch):]
		todo := batch
		if filter != nil {
			var err error
			if todo, err = filter(ctx, batch); err != nil {
				return n, keys[start:], err
			}
		}
		for j, k := range todo {
			if w != nil {
				if w.age() >= sweepTTL/2 {
					return n, append(slices.Clone(todo[j:]), rest...), nil
				}
				if w.age() >= sweepTTL/4 && w.renew(ctx) != nil {
					return n, nil, i18n.Errorf("clean-up: its mark in the store could not be renewed: stopped deleting")
				}
			}
			if err := s.deleteOne(ctx, k, w != nil); err != nil && !IsNotFound(err) {
				return n, nil, err
			}
			n++
		}
	}
	return n, nil, nil
}

// deleteOne deletes key; under a sweep's mark, within sweepTTL/8.
func (s *Store) deleteOne(ctx context.Context, key string, swept bool) error {
	if swept {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, sweepTTL/8)
		defer cancel()
	}
	return s.b.Delete(ctx, key)
}

// copier is a backend that names each version of an object with an ETag
// the store sets, never the writer: an object overwritten (by anyone with
// the store's write key) has another, so a push refers only to the bytes a
// signed manifest recorded.
type copier interface {
	// Copies reports whether the store names versions at all (a
	// directory does not), before any request is made.
	Copies() bool
	ETag(ctx context.Context, key string) (string, error)
}

// etagMin: smaller objects are checked by size alone when referred to.
// Asking for a version costs a request, as storing them again does.
const etagMin = 1 << 20

// etagOf is the ETag to record for an object just stored, where the store
// gives one and the object is large enough to be worth checking later.
func (s *Store) etagOf(ctx context.Context, key string, plain int64) string {
	c, ok := s.b.(copier)
	if !ok || !c.Copies() || plain < etagMin {
		return ""
	}
	tag, err := c.ETag(ctx, key)
	if err != nil {
		return ""
	}
	return tag
}
