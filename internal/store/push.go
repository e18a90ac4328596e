package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// checkpointID is newID at t, or a millisecond past the later of the last
// id this Store made and floor (the run's newest committed id) where t is
// not later than it. Ids order checkpoints in ls, latest, resume and
// prune, so an id must follow what the run committed before it whatever
// this machine's clock says: a writer an hour behind the one before it
// would otherwise commit checkpoints that sort as the oldest and are
// pruned first.
func (s *Store) checkpointID(t time.Time, floor string) string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	t = t.Truncate(time.Millisecond)
	last := s.idAt
	if ft, ok := idTime(floor); ok && ft.After(last) {
		last = ft
	}
	if !t.After(last) {
		t = last.Add(time.Millisecond)
	}
	s.idAt = t
	return newID(t)
}

// newestCommitted is the greatest id among run's committed checkpoints
// ("" for none): the floor of the next id (checkpointID).
func (s *Store) newestCommitted(ctx context.Context, run string) (string, error) {
	ids, err := s.committed(ctx, run)
	if err != nil {
		return "", err
	}
	newest := ""
	for _, id := range ids {
		newest = max(newest, id)
	}
	return newest, nil
}

// tellSkew says, once per Store, that this machine's clock is more than a
// minute off the store's: ids no longer follow it (checkpointID), but the
// times a person reads in ls and the run's log still do.
func (s *Store) tellSkew(ctx context.Context, run string) {
	if s.opt.Say == nil {
		return
	}
	s.skewTold.Do(func() {
		before := s.opt.Now()
		st, ok := s.storeNow(ctx, run)
		if !ok {
			return
		}
		local := before.Add(s.opt.Now().Sub(before) / 2)
		off := local.Sub(st)
		if off.Abs() <= time.Minute {
			return
		}
		if off > 0 {
			s.opt.Say("this machine's clock is %s ahead of the store's: checkpoints are still ordered as committed, but the times shown are this clock's", off.Round(time.Second))
		} else {
			s.opt.Say("this machine's clock is %s behind the store's: checkpoints are still ordered as committed, but the times shown are this clock's", (-off).Round(time.Second))
		}
	})
}

// newID is a sortable, unique checkpoint id: UTC time to the millisecond
// and 32 random bits.
func newID(t time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return t.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

func idTime(id string) (time.Time, bool) {
	if len(id) < 20 {
		return time.Time{}, false
	}
	t, err := time.Parse("20060102T150405.000Z", id[:20])
	return t, err == nil
}

// recordedMode is the permission a push records for info. Windows has no
// Unix permissions: Go shows its files as 0666 (0444 read-only) and its
// directories as 0777, which a pull on a shared Linux machine would turn
// into files and directories every account may write (and swap a model's
// weights in). From Windows a push records what a umask of 022 gives.
func recordedMode(info fs.FileInfo, goos string) fs.FileMode {
	m := info.Mode().Perm()
	if goos != "windows" {
		return m
	}
	switch {
	case info.IsDir():
		return 0o755
	case m&0o200 == 0:
		return 0o444
	}
	return 0o644
}

// special names a file type push does not copy, for its error.
func special(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}

// Scan walks src into entries without following symlinks; files are
// numbered in walk order. It is exported for callers that want to know
// what a push will send.
func Scan(src string) ([]Entry, []string, error) {
	es, paths, _, err := scan(src)
	return es, paths, err
}

// scan is Scan, with what lstat said of each file when it was walked.
func scan(src string) ([]Entry, []string, []fs.FileInfo, error) {
	st, err := os.Lstat(src)
	if err != nil {
		return nil, nil, nil, i18n.Errorf("push: %w", err)
	}
	var es []Entry
	var paths []string
	var infos []fs.FileInfo
	add := func(rel, full string, info fs.FileInfo) error {
		e := Entry{Path: rel, Mode: recordedMode(info, runtime.GOOS), MTime: info.ModTime().UTC(), Object: -1}
		switch {
		case info.Mode().IsRegular():
			e.Type, e.Size, e.Object = "file", info.Size(), len(paths)
			paths = append(paths, full)
			infos = append(infos, info)
		case info.IsDir():
			e.Type = "dir"
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return i18n.Errorf("push: %w", err)
			}
			e.Type, e.Link = "symlink", target
		default:
			return i18n.Errorf("push: %s is %s, not a file, directory or symlink: move it out of the checkpoint", full, special(info.Mode()))
		}
		es = append(es, e)
		return nil
	}
	if !st.IsDir() {
		err := add(".", src, st)
		return es, paths, infos, err
	}
	err = filepath.WalkDir(src, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return i18n.Errorf("push: %w", err)
		}
		info, err := d.Info()
		if err != nil {
			return i18n.Errorf("push: %w", err)
		}
		rel, _ := filepath.Rel(src, full)
		return add(filepath.ToSlash(rel), full, info)
	})
	return es, paths, infos, err
}

// Push stores src (a file or a directory) as one checkpoint of run and
// returns its manifest. Objects go first, in parallel; the manifest last.
// Leftovers of earlier pushes that never committed are removed first.
// While it uploads, the push keeps a heartbeat in the store (heartbeat.go)
// so that a clean-up elsewhere leaves its objects alone, and before it
// commits it checks that they are all still there. A file that changes
// while it is read (rewritten in place, replaced) fails the push with an
// error wrapping ErrChanged: nothing is committed.
func (s *Store) Push(ctx context.Context, src, run string) (_ *Manifest, err error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	own, err := s.mayPush(ctx, run)
	if err != nil {
		return nil, err
	}
	walked := time.Now() // before the walk: a change after it is racy (hashCache)
	entries, paths, infos, err := scan(src)
	if err != nil {
		return nil, err
	}
	rel := make([]string, len(paths)) // each object's path in the checkpoint
	byPath := map[string]fs.FileInfo{}
	for _, e := range entries {
		if e.Object >= 0 {
			rel[e.Object] = e.Path
			byPath[e.Path] = infos[e.Object]
		}
	}
	jr := s.openJournal(run, src)
	committed := false
	defer func() {
		if err != nil {
			err = jr.kept(err)
		}
		jr.close(committed)
	}()
	started := s.opt.Now()
	floor, err := s.newestCommitted(ctx, run)
	if err != nil {
		return nil, err
	}
	s.tellSkew(ctx, run)
	id, tag := s.checkpointID(started, floor), ""
	// An unfinished checkpoint is taken up again only while nothing was
	// committed after it began: it must still sort as the newest.
	if was, at, ok := jr.adopt(ctx, s, byPath); ok && was > floor {
		id, started, tag = was, at, resumeTag()
	} else {
		jr.begin(id, started)
	}
	// Announced before the clean-up, which then leaves an adopted
	// checkpoint's parts alone.
	hb, err := s.announce(ctx, run, id, started)
	if err != nil {
		return nil, err
	}
	defer hb.stop()
	if _, err := s.cleanLeftovers(ctx, run); err != nil {
		return nil, err
	}
	// Files stored already by a checkpoint of the run are referred to,
	// not uploaded (shared.go).
	sh := s.sharingFor(ctx, run, jr)
	known := sh.known(ctx, s, run, hb, rel, paths, infos)
	results := make([]pushed, len(paths))
	err = s.parallel(ctx, len(paths), func(ctx context.Context, i int) error {
		if p, ok := known[i]; ok {
			results[i] = p
			s.progress(p.size)
			return nil
		}
		var err error
		results[i], err = s.pushFile(ctx, run, id, tag, i, paths[i], infos[i], rel[i], jr)
		return err
	})
	if IsNotFound(err) {
		// The object's directory went while it was written (a directory
		// store's clean-up with no grace): the same as one found gone
		// before the commit.
		return nil, i18n.Errorf("push: %w (a clean-up on another machine?): not committed (%v)", ErrObjectsDeleted, err)
	}
	if err != nil {
		return nil, err
	}
	for i := range results {
		if _, ok := known[i]; !ok {
			sh.address(results[i : i+1])
		}
	}
	drop := sh.dedup(ctx, s, run, hb, results)
	objects, version, reused, resumed := assemble(entries, results)
	if sh != nil {
		version = max(version, versionShared)
	}
	m, body, err := s.sealManifest(run, id, src, entries, objects, version)
	if err != nil {
		return nil, err
	}
	if err := s.stillStored(ctx, objects); err != nil {
		return nil, err
	}
	switch {
	case own:
		if err := s.lease.Check(ctx); err != nil {
			return nil, err
		}
	case s.opt.Leases:
		l, err := s.TakeLease(ctx, run, "gpurent ckpt push", s.opt.Takeover)
		if err != nil {
			return nil, err
		}
		defer l.Release(ctx)
	}
	// The commit: until this object exists, nothing of the push is visible.
	if _, err := s.b.Put(ctx, manifestKey(run, id), func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return nil, err
	}
	committed = true
	defer func() {
		if committed {
			s.idMu.Lock()
			s.mine = append(s.mine, id)
			s.idMu.Unlock()
		}
	}()
	if tag != "" {
		// An adopted checkpoint is dated by its first push: a clean-up
		// that judged it dead before this push announced it may have
		// deleted parts after the check above. Withdrawn if so.
		if err := s.stillStored(ctx, objects); err != nil {
			s.b.Delete(context.WithoutCancel(ctx), manifestKey(run, id))
			committed = false
			return nil, err
		}
		s.sweep(ctx, m)
	}
	// Uploaded, then found stored already: nothing refers to them. Also
	// after a Ctrl-C, briefly: the push is committed.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, k := range drop {
		s.b.Delete(dctx, k)
	}
	jr.remember(rel, infos, results, walked)
	m.Reused, m.Resumed = reused, resumed
	return m, nil
}

// mayPush refuses, before anything is uploaded, a push into a run whose
// lease another session holds; own is whether this store holds it.
func (s *Store) mayPush(ctx context.Context, run string) (own bool, err error) {
	own = s.lease != nil && s.lease.info.Run == run
	if own || !s.opt.Leases || s.opt.Takeover {
		return own, nil
	}
	ls, err := s.leases(ctx, run)
	if err != nil {
		return false, i18n.Errorf("lease of run %s: %w", run, err)
	}
	if held, err := s.held(ctx, run, ls, s.leaseTTL()); err != nil {
		return false, i18n.Errorf("lease of run %s: %w", run, err)
	} else if held != nil {
		return false, held
	}
	return false, nil
}

// assemble numbers the pushed files' objects in the order of entries and
// points each entry at its object or parts; it returns the objects, the
// manifest version they need, and the bytes reused and resumed.
func assemble(entries []Entry, results []pushed) (objects []ObjRef, version int, reused, resumed int64) {
	version = versionNoParts
	for i := range entries {
		o := entries[i].Object
		if o < 0 {
			continue
		}
		r := results[o]
		base := len(objects)
		objects = append(objects, r.objs...)
		entries[i].Size, entries[i].SHA256 = r.size, r.sum
		if len(r.parts) > 0 {
			entries[i].Object, entries[i].Parts, version = -1, r.parts, max(version, versionParts)
			for k := range entries[i].Parts {
				entries[i].Parts[k].Object += base
			}
		} else {
			entries[i].Object = base
		}
		reused += r.reused
		resumed += r.resumed
	}
	for i := range entries {
		if entries[i].rawNames() {
			version = versionRawNames
		}
	}
	return objects, version, reused, resumed
}

// sealManifest seals and signs the manifest of a push and checks it as ls and
// pull will read it: what they would refuse is never committed.
func (s *Store) sealManifest(run, id, src string, entries []Entry, objects []ObjRef, version int) (*Manifest, []byte, error) {
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	list, err := json.Marshal(entries)
	if err != nil {
		return nil, nil, err
	}
	sealed, err := s.opt.Crypto.seal(list)
	if err != nil {
		return nil, nil, err
	}
	m := &Manifest{Version: version, ID: id, Run: run, Created: s.opt.Now().UTC(), Host: s.opt.Host, Gpurent: s.opt.Version, Name: pushName(src),
		Encrypted: s.opt.Crypto.Encrypting(), Recipients: s.opt.Crypto.Keys, Files: len(entries), Bytes: total, Objects: objects, FileList: sealed}
	if err := s.opt.Crypto.sign(m); err != nil {
		return nil, nil, err
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	if len(body) > maxManifest {
		return nil, nil, i18n.Errorf("push: the manifest of %d files takes %s, more than a manifest may (%s): push fewer files at once (a tar of them is one)", len(entries), report.Bytes(int64(len(body))), report.Bytes(maxManifest))
	}
	back, err := ParseManifest(body)
	if err != nil {
		return nil, nil, i18n.Errorf("push: %w", err)
	}
	if m.Auth != nil {
		if err := s.opt.Crypto.Authentic(back); err != nil {
			return nil, nil, i18n.Errorf("push: the manifest does not check as written: %w", err)
		}
	}
	return m, body, nil
}

// Holds is the run's newest checkpoint when it is src as it is now,
// pushed before (by ckpt push, or a session whose state was lost): the same
// name, and the same entries (path, type, mode, size, modification time,
// link), as rsync and restic judge a file unchanged. ok false when it is
// not, or when that cannot be told (no identity to read its file list).
func (s *Store) Holds(ctx context.Context, run, src string) (*Manifest, bool) {
	m, _, err := s.Latest(ctx, run)
	if err != nil || m.Name != pushName(src) {
		return nil, false
	}
	stored, err := s.Files(m)
	if err != nil {
		return nil, false
	}
	here, _, _, err := scan(src)
	if err != nil || len(here) != len(stored) {
		return nil, false
	}
	for i := range here {
		a, b := here[i], stored[i]
		if a.Path != b.Path || a.Type != b.Type || a.Mode != b.Mode || a.Size != b.Size || a.Link != b.Link || !a.MTime.Equal(b.MTime) {
			return nil, false
		}
	}
	return m, true
}

// pushFile stores file i of a push: in parts when it is larger than a
// segment, else whole.
func (s *Store) pushFile(ctx context.Context, run, id, tag string, i int, path string, info fs.FileInfo, rel string, jr *journal) (pushed, error) {
	jf := jr.file(rel, info)
	if info.Size() > s.segment() {
		return s.pushParts(ctx, run, id, tag, i, path, info, jr, jf)
	}
	if p, ok := s.adoptWhole(ctx, jr, jf, path, info); ok {
		return p, nil
	}
	jr.truncate(jf, 0) // uploaded anew
	var size int64
	var sum string
	key := partKey(run, id, i, -1, tag)
	stored, err := s.b.Put(ctx, key, func(w io.Writer) error {
		size, sum = 0, ""
		// The file as it was walked, as it is opened, as it is after
		// the copy, read and by its path: any difference is a file
		// rewritten or replaced while it was read, whose copy may mix
		// two versions.
		if err := unchanged(path, info, nil); err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return i18n.Errorf("push: %w", err)
		}
		defer f.Close()
		enc, err := s.opt.Crypto.wrapWriter(w)
		if err != nil {
			return err
		}
		hp := newHashPipe(s.progress)
		var src io.Reader = f
		if s.opt.Upload != nil {
			src = &limited{ctx: ctx, r: f, lim: s.opt.Upload}
		}
		n, err := io.CopyBuffer(enc, io.TeeReader(src, hp), make([]byte, 1<<20))
		if err == nil {
			err = enc.Close()
		}
		if err != nil {
			hp.abandon()
			return i18n.Errorf("push %s: %w", path, err)
		}
		if err := unchanged(path, info, f); err != nil {
			hp.abandon()
			return err
		}
		size, sum = n, hp.Sum()
		return nil
	})
	if err != nil {
		return pushed{}, err
	}
	etag := s.etagOf(ctx, key, size)
	jr.add(jf, journalPart{Key: key, Stored: stored, ETag: etag, Size: size, Prefix: sum})
	return pushed{objs: []ObjRef{{Key: key, Size: stored, ETag: etag}}, size: size, sum: sum}, nil
}

// adoptWhole takes up the object an earlier, unfinished push of this
// checkpoint stored for the file at path whole: when the journal recorded
// it for this file, unchanged, the file's bytes read again give the hash
// recorded, and the store still holds the object as it was stored. ok
// false: the file is uploaded again.
func (s *Store) adoptWhole(ctx context.Context, jr *journal, jf *journalFile, path string, info fs.FileInfo) (pushed, bool) {
	done, ok := jf.part(0)
	if !ok || done.Size != info.Size() || !jr.stillThere(ctx, s, done) {
		return pushed{}, false
	}
	// Opened as the upload opens what it sends, and more warily: no link
	// followed and no FIFO waited on (either may be planted between the
	// walk and this file's turn), the file the walk found, and never more
	// of it read than its size, cancelled with the push.
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow|nonBlock, 0)
	if err != nil {
		return pushed{}, false
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || differs(info, now) != "" {
		return pushed{}, false
	}
	h := sha256.New()
	var src io.Reader = io.LimitReader(f, info.Size()+1)
	n, err := io.CopyBuffer(h, &ctxReader{ctx: ctx, r: src}, make([]byte, 1<<20))
	sum := hex.EncodeToString(h.Sum(nil))
	if err != nil || n != done.Size || sum != done.Prefix || unchanged(path, info, f) != nil {
		return pushed{}, false
	}
	s.progress(n)
	return pushed{objs: []ObjRef{{Key: done.Key, Size: done.Stored, ETag: done.ETag}}, size: n, sum: sum, resumed: n}, true
}

// pushName is the base name of what is pushed, so that pull into a
// directory can restore it under its name: "." is the current directory's
// own name; the root has none.
func pushName(src string) string {
	abs, err := filepath.Abs(src)
	if err != nil {
		return ""
	}
	name := filepath.Base(abs)
	if name == "." || name == ".." || name == string(filepath.Separator) {
		return ""
	}
	return name
}

// parallel runs f(0..n-1) on the store's workers; the first error cancels
// the rest and is returned.
func (s *Store) parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range min(s.opt.Workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = context.Cause(ctx)
	}
	return first
}

// ctxReader ends a read when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
