package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// Options configure a Store.
type Options struct {
	Crypto  *Crypto
	Host    string // recorded in manifests
	Version string // gpurent's version, recorded in manifests
	// Workers is how many files move in parallel (4 when zero).
	Workers int
	// Grace: uncommitted data younger than this is left alone by the
	// clean-up, in case its push is still running (10 minutes when zero;
	// negative means no grace). The age is the push's heartbeat's, by the
	// store's clock, where it has one (heartbeat.go).
	Grace time.Duration
	// Progress, when set, is told of every chunk of plaintext moved.
	Progress func(n int64)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Upload caps the bytes read for uploads, across all workers (nil: no
	// cap), so a push never takes the link the training job needs.
	Upload *rate.Limiter
	// Download caps the bytes read from the store for pulls and deep
	// verifies likewise (nil: no cap).
	Download *rate.Limiter
	// Free is the space free to this user on the file system of dir
	// (freeSpace when nil; ok false when it cannot tell).
	Free func(dir string) (free uint64, ok bool)
	// Leases makes a Push outside a held lease (Hold) take the run's
	// lease for its commit, refusing when another session holds it
	// unless Takeover (lease.go). LeaseTTL is LeaseTTL when zero.
	Leases   bool
	Takeover bool
	LeaseTTL time.Duration
	// Segment is the size of the parts a larger file is stored in
	// (segment.go; 1 GiB when zero).
	Segment int64
	// Journal is the directory where pushes of files in parts keep what
	// they stored, so that one cut short resumes ("": none resumes).
	// Where names the store in it.
	Journal string
	Where   string
	// Say, when set, is told what a person should know and no error
	// says: a clock more than a minute off the store's, once.
	Say func(format string, a ...any)
}

// limited reads no faster than its limiter allows.
type limited struct {
	ctx context.Context
	r   io.Reader
	lim *rate.Limiter
}

func (l *limited) Read(p []byte) (int, error) {
	if b := l.lim.Burst(); len(p) > b {
		p = p[:b]
	}
	n, err := l.r.Read(p)
	if n > 0 {
		if werr := l.lim.WaitN(l.ctx, n); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// NewUploadLimit is a limiter for Options.Upload at bytesPerSecond, with
// bursts of a tenth of a second (at least 64 KiB).
func NewUploadLimit(bytesPerSecond float64) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(bytesPerSecond), max(64<<10, int(bytesPerSecond/10)))
}

// Store is a checkpoint store on a Backend.
type Store struct {
	b   Backend
	opt Options
	// logInfos caches log sessions' info.json by key: written once and
	// never changed, read again at every poll of `ckpt log --follow`.
	logInfos sync.Map
	// beat is how often a push rewrites its heartbeat (heartbeat.go).
	beat time.Duration
	// lease, when set (Hold), is checked before every commit.
	lease *Lease
	// pullWait is the first wait before an object whose reading broke
	// off is read again; it doubles each time.
	pullWait time.Duration
	// idMu guards idAt, the time of the last checkpoint id made here:
	// the next is a millisecond later at least, so that two pushes of
	// one process in the same millisecond sort in the order made, and
	// latest is the last one pushed.
	idMu sync.Mutex
	idAt time.Time
	// mine are the ids this Store committed, in the order committed: a
	// prune here never deletes the newest keep of them, whatever another
	// writer's ids say (PlanPrune).
	mine []string
	// skewTold is set once the clock's distance from the store's was
	// measured (and, if over a minute, said).
	skewTold sync.Once
}

// New wraps a backend. The crypto may be nil for plaintext.
func New(b Backend, opt Options) *Store {
	if opt.Crypto == nil {
		opt.Crypto = &Crypto{}
	}
	if opt.Workers <= 0 {
		opt.Workers = 4
	}
	if opt.Grace == 0 {
		opt.Grace = defaultGrace
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Store{b: b, opt: opt, beat: beatInterval(opt.Grace), pullWait: time.Second}
}

func (s *Store) progress(n int64) {
	if s.opt.Progress != nil && n > 0 {
		s.opt.Progress(n)
	}
}

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
	own := s.lease != nil && s.lease.info.Run == run
	if !own && s.opt.Leases && !s.opt.Takeover {
		// Refused before the upload, not after it.
		ls, err := s.leases(ctx, run)
		if err != nil {
			return nil, i18n.Errorf("lease of run %s: %w", run, err)
		}
		if held, err := s.held(ctx, run, ls, s.leaseTTL()); err != nil {
			return nil, i18n.Errorf("lease of run %s: %w", run, err)
		} else if held != nil {
			return nil, held
		}
	}
	entries, paths, infos, err := scan(src)
	if err != nil {
		return nil, err
	}
	rel := make([]string, len(paths)) // each object's path in the checkpoint
	walked := map[string]fs.FileInfo{}
	large := false
	for _, e := range entries {
		if e.Object >= 0 {
			rel[e.Object] = e.Path
			walked[e.Path] = infos[e.Object]
			large = large || e.Size > s.segment()
		}
	}
	var jr *journal
	if large {
		jr = s.openJournal(run, src)
	}
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
	if was, at, ok := jr.adopt(ctx, s, walked); ok && was > floor {
		id, started, tag = was, at, resumeTag()
	} else {
		jr.begin(id, started)
	}
	// Announced before the clean-up, which then leaves an adopted
	// checkpoint's parts alone.
	stop, err := s.announce(ctx, run, id, started)
	if err != nil {
		return nil, err
	}
	defer stop()
	if _, err := s.cleanLeftovers(ctx, run); err != nil {
		return nil, err
	}
	prev := s.reuseSource(ctx, run)
	results := make([]pushed, len(paths))
	err = s.parallel(ctx, len(paths), func(ctx context.Context, i int) error {
		var err error
		results[i], err = s.pushFile(ctx, run, id, tag, i, paths[i], infos[i], rel[i], prev, jr)
		return err
	})
	if err != nil {
		return nil, err
	}
	var objects []ObjRef
	version := versionNoParts
	var reused, resumed int64
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
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	for i := range entries {
		if entries[i].rawNames() {
			version = versionRawNames
		}
	}
	list, err := json.Marshal(entries)
	if err != nil {
		return nil, err
	}
	sealed, err := s.opt.Crypto.seal(list)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Version: version, ID: id, Run: run, Created: s.opt.Now().UTC(), Host: s.opt.Host, Gpurent: s.opt.Version, Name: pushName(src),
		Encrypted: s.opt.Crypto.Encrypting(), Recipients: s.opt.Crypto.Keys, Files: len(entries), Bytes: total, Objects: objects, FileList: sealed}
	if err := s.opt.Crypto.sign(m); err != nil {
		return nil, err
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	// What ls and pull would refuse is never committed: check it as they will.
	if len(body) > maxManifest {
		return nil, i18n.Errorf("push: the manifest of %d files takes %s, more than a manifest may (%s): push fewer files at once (a tar of them is one)", len(entries), report.Bytes(int64(len(body))), report.Bytes(maxManifest))
	}
	back, err := ParseManifest(body)
	if err != nil {
		return nil, i18n.Errorf("push: %w", err)
	}
	if m.Auth != nil {
		if err := s.opt.Crypto.Authentic(back); err != nil {
			return nil, i18n.Errorf("push: the manifest does not check as written: %w", err)
		}
	}
	if err := s.stillStored(ctx, run, id, objects); err != nil {
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
		if err := s.stillStored(ctx, run, id, objects); err != nil {
			s.b.Delete(context.WithoutCancel(ctx), manifestKey(run, id))
			committed = false
			return nil, err
		}
		s.sweep(ctx, m)
	}
	m.Reused, m.Resumed = reused, resumed
	return m, nil
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

// pushFile stores file i of a push: copied in the store when it did not
// change since the previous checkpoint, in parts when it is larger than a
// segment, else whole.
func (s *Store) pushFile(ctx context.Context, run, id, tag string, i int, path string, info fs.FileInfo, rel string, prev *reusable, jr *journal) (pushed, error) {
	if pe, po, ok := prev.candidate(rel, info); ok {
		p, done, err := s.reuse(ctx, path, info, pe, po, func(j int) string { return partKey(run, id, i, j, tag) })
		if err != nil || done {
			return p, err
		}
	}
	if info.Size() > s.segment() {
		return s.pushParts(ctx, run, id, tag, i, path, info, jr, jr.file(rel, info))
	}
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
	return pushed{objs: []ObjRef{{Key: key, Size: stored, ETag: s.etagOf(ctx, key, size)}}, size: size, sum: sum}, nil
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

// List returns the committed checkpoints of run, oldest first. A
// manifest that cannot be read as one (damaged, planted, of a newer
// gpurent) fails it: ListAll goes on past them.
func (s *Store) List(ctx context.Context, run string) ([]*Manifest, error) {
	ms, bad, err := s.ListAll(ctx, run)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, bad[0].Err
	}
	return ms, nil
}

// Unreadable is a manifest in the store that is not one gpurent can read.
type Unreadable struct {
	Key string `json:"key"`
	Err error  `json:"-"`
}

// ListAll is List that goes on past manifests it cannot read, and names
// them: one broken manifest must not hide the rest of a run from ls,
// verify and prune. A failure of the store itself is still an error.
func (s *Store) ListAll(ctx context.Context, run string) ([]*Manifest, []Unreadable, error) {
	if err := ValidRun(run); err != nil {
		return nil, nil, err
	}
	objs, err := s.b.List(ctx, runPrefix(run)+"manifests/")
	if err != nil {
		return nil, nil, err
	}
	var keys []string
	for _, o := range objs {
		if strings.HasSuffix(o.Key, ".json") {
			keys = append(keys, o.Key)
		}
	}
	all, errs := s.manifests(ctx, keys)
	var out []*Manifest
	var bad []Unreadable
	for i, err := range errs {
		var se *OpError
		switch {
		case err == nil:
			out = append(out, all[i])
		case IsNotFound(err):
			// pruned since the listing
		case errors.As(err, &se):
			return nil, nil, err
		default:
			bad = append(bad, Unreadable{Key: keys[i], Err: err})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, bad, nil
}

// manifestReads is how many manifests are read at once. A store far away
// answers each read in tens to hundreds of milliseconds, so a run of a
// few hundred checkpoints read one by one takes most of a minute to list;
// eight at a time it takes seconds, and eight small reads in flight are
// few beside the parallel part uploads a push makes.
const manifestReads = 8

// manifests reads the manifests at keys, manifestReads at a time: each
// result, or its error, at its key's index.
func (s *Store) manifests(ctx context.Context, keys []string) ([]*Manifest, []error) {
	out := make([]*Manifest, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, manifestReads)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = s.manifest(ctx, k)
		}()
	}
	wg.Wait()
	return out, errs
}

// maxManifest is the most a manifest may hold: its file list takes some
// 300 bytes a file, so a checkpoint of some 200,000 files.
const maxManifest = 64 << 20

func (s *Store) manifest(ctx context.Context, key string) (*Manifest, error) {
	r, err := s.b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// Sized before a byte is read where the store says: a huge object
	// planted as a manifest must not fill the memory, eight at a time.
	if sz, ok := r.(interface{ Size() int64 }); ok && sz.Size() > maxManifest {
		return nil, i18n.Errorf("%s holds %s, more than a manifest may (%s)", key, report.Bytes(sz.Size()), report.Bytes(maxManifest))
	}
	data, err := io.ReadAll(io.LimitReader(r, maxManifest+1))
	if err != nil {
		return nil, i18n.Errorf("read %s: %w", key, err)
	}
	if len(data) > maxManifest {
		return nil, i18n.Errorf("%s holds more than a manifest may (%s)", key, report.Bytes(maxManifest))
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, i18n.Errorf("%s: %w", key, err)
	}
	if key != manifestKey(m.Run, m.ID) {
		return nil, i18n.Errorf("%s holds checkpoint %s of run %s", key, m.ID, m.Run)
	}
	return m, nil
}

// committed lists the ids of run's committed checkpoints (those with a
// manifest), from the listing alone, in no particular order.
func (s *Store) committed(ctx context.Context, run string) ([]string, error) {
	prefix := runPrefix(run) + "manifests/"
	objs, err := s.b.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, o := range objs {
		if id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefix), ".json"); ok && ValidID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Find returns checkpoint id of run, or the newest for "" and "latest".
func (s *Store) Find(ctx context.Context, run, id string) (*Manifest, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	if id != "" && id != "latest" {
		if err := ValidID(id); err != nil {
			return nil, err
		}
		m, err := s.manifest(ctx, manifestKey(run, id))
		if IsNotFound(err) {
			return nil, i18n.Errorf("run %s has %w %s", run, ErrNoCheckpoint, id)
		}
		return m, err
	}
	// Ids begin with the time their push began, at a fixed width, so the
	// greatest key is the newest, as List orders them: one manifest read,
	// not one per checkpoint (gpurent run asks at every start, and a run
	// kept whole can hold thousands).
	latest, err := s.newestCommitted(ctx, run)
	if err != nil {
		return nil, err
	}
	if latest == "" {
		return nil, i18n.Errorf("run %s has %w yet", run, ErrNoCheckpoint)
	}
	return s.manifest(ctx, manifestKey(run, latest))
}

// Latest is the newest checkpoint of run that readers may use (with
// CheckAuth: the newest authenticated one), and the newer ones it passed
// over as unauthenticated, newest first, for the caller to name: a planted
// checkpoint is refused out loud, not resumed from and not hidden. A run
// whose checkpoints are all refused is an error saying why the newest is.
func (s *Store) Latest(ctx context.Context, run string) (*Manifest, []*Manifest, error) {
	if !s.opt.Crypto.CheckAuth {
		m, err := s.Find(ctx, run, "latest")
		return m, nil, err
	}
	if err := ValidRun(run); err != nil {
		return nil, nil, err
	}
	var found *Manifest
	var passed []*Manifest
	var first error
	listed := false
	err := s.newestFirst(ctx, run, func(m *Manifest, err error) (bool, error) {
		listed = true
		var se *OpError
		switch {
		case err == nil:
		case IsNotFound(err):
			return false, nil // pruned since the listing
		case errors.As(err, &se), errors.Is(err, ErrNewerManifest):
			return true, err
		default:
			// Not a manifest gpurent wrote (anyone with the write key
			// can put one there): it cannot be the owner's newest.
			if first == nil {
				first = err
			}
			return false, nil
		}
		err = s.opt.Crypto.Authentic(m)
		if err == nil {
			found = m
			return true, nil
		}
		if errors.Is(err, ErrNoAuthKey) {
			if _, ferr := s.Files(m); errors.Is(ferr, ErrNoIdentity) {
				return true, ferr // the error to fix first
			}
			return true, err
		}
		if first == nil {
			first = err
		}
		passed = append(passed, m)
		return false, nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case found != nil:
		return found, passed, nil
	case !listed:
		return nil, nil, i18n.Errorf("run %s has %w yet", run, ErrNoCheckpoint)
	}
	// A wrong or missing identity passes over every checkpoint: that
	// is the error to fix, not a store of planted ones.
	if len(passed) > 0 {
		if _, err := s.Files(passed[0]); errors.Is(err, ErrWrongIdentity) || errors.Is(err, ErrNoIdentity) {
			return nil, passed, err
		}
	}
	return nil, passed, i18n.Errorf("none of the %d checkpoints of run %s is authenticated; the newest: %w", len(passed), run, first)
}

// newestFirst reads run's committed manifests newest first,
// manifestReads at a time, handing each (or why it could not be read) to
// visit until visit says stop or fails: a run kept whole can hold
// thousands, and what is looked for is most often recent.
func (s *Store) newestFirst(ctx context.Context, run string, visit func(m *Manifest, err error) (stop bool, _ error)) error {
	ids, err := s.committed(ctx, run)
	if err != nil {
		return err
	}
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(b, a) })
	for len(ids) > 0 {
		batch := ids[:min(manifestReads, len(ids))]
		ids = ids[len(batch):]
		keys := make([]string, len(batch))
		for i, id := range batch {
			keys[i] = manifestKey(run, id)
		}
		ms, errs := s.manifests(ctx, keys)
		for i, m := range ms {
			if stop, err := visit(m, errs[i]); stop || err != nil {
				return err
			}
		}
	}
	return nil
}

// Resolve turns what a person typed for a checkpoint into its id: an id
// or "latest" as they are, else a NAME as ckpt ls shows it (checkpoint-5000,
// last.ckpt), which is the newest checkpoint pushed under that name. A
// person knows the step, not the id. A name no checkpoint has is an error
// wrapping ErrNoCheckpoint that lists the names there are, newest first.
func (s *Store) Resolve(ctx context.Context, run, ref string) (string, error) {
	if ref == "" || ref == "latest" || ValidID(ref) == nil {
		return ref, nil
	}
	if strings.ContainsAny(ref, `/\`) || ref == "." || ref == ".." {
		return "", i18n.Errorf("%q is neither a checkpoint id from gpurent ckpt ls, a NAME it shows, nor latest", ref)
	}
	if err := ValidRun(run); err != nil {
		return "", err
	}
	// Newest first (newestFirst): the step asked for is most often a
	// recent one.
	var names []string
	var refused error // why the newest of that name was passed over
	var found string
	seen := map[string]bool{}
	err := s.newestFirst(ctx, run, func(m *Manifest, err error) (bool, error) {
		if err != nil {
			return true, err
		}
		if m.Name == ref {
			err := s.opt.Crypto.trusted(m)
			if err == nil {
				found = m.ID // the newest of that name the owner wrote
				return true, nil
			}
			if refused == nil {
				refused = err
			}
		}
		if n := m.Name; n != "" && !seen[n] {
			seen[n] = true
			names = append(names, report.Safe(n))
		}
		return false, nil
	})
	if err != nil || found != "" {
		return found, err
	}
	if refused != nil {
		return "", refused
	}
	if len(names) == 0 {
		return "", i18n.Errorf("run %s has %w named %s", run, ErrNoCheckpoint, report.Safe(ref))
	}
	more := ""
	if len(names) > 10 {
		names, more = names[:10], fmt.Sprintf(" and %d more", len(names)-10)
	}
	return "", i18n.Errorf("run %s has %w named %s; its names, newest first: %s%s", run, ErrNoCheckpoint, report.Safe(ref), strings.Join(names, ", "), more)
}

// DescribeRuns names the store's runs and how many checkpoints each has,
// in one line, for a person who named a run with no checkpoint: most often
// a mistyped name, or one forgotten on a new machine.
func (s *Store) DescribeRuns(ctx context.Context) i18n.Text {
	rs, err := s.Runs(ctx)
	switch {
	case err != nil:
		return i18n.Textf("the store's runs could not be listed: %v", err)
	case len(rs) == 0:
		return i18n.Textf("this store has no checkpoints in any run yet")
	}
	names := make([]string, 0, min(len(rs), 10))
	for _, r := range rs[:min(len(rs), 10)] {
		names = append(names, fmt.Sprintf("%s (%d)", r.Run, r.Checkpoints))
	}
	more := i18n.Text{}
	if len(rs) > 10 {
		more = i18n.Textf(" and %d more", len(rs)-10)
	}
	return i18n.Textf("runs in this store (checkpoints): %s%s", strings.Join(names, ", "), more)
}

// ErrNoCheckpoint is wrapped by Find's error when the run has no committed
// checkpoint (or none with the id asked for).
var ErrNoCheckpoint = i18n.Errorf("no checkpoint")

// RunInfo is one run of a store: its committed checkpoints, the newest
// one's id and creation time, and its log sessions (gpurent run --log).
type RunInfo struct {
	Run           string    `json:"run"`
	Checkpoints   int       `json:"checkpoints"`
	Newest        string    `json:"newest"`
	NewestCreated time.Time `json:"newest_created"`
	// NewestName is what the newest checkpoint was pushed as
	// (checkpoint-6000): the step a resume starts from, which its id does
	// not say. Empty until NameNewest reads it, and for a checkpoint
	// pushed without a name.
	NewestName  string `json:"newest_name,omitempty"`
	LogSessions int    `json:"log_sessions"`
	// SpendSessions counts the gpurent run sessions that recorded what
	// the machine cost (with --price): their records are read with Spends.
	SpendSessions int      `json:"spend_sessions"`
	spendKeys     []string // their keys, for RunSpends
	// StoredBytes is what the listing says the run's objects hold:
	// checkpoints (encrypted), manifests, logs and leftovers of killed
	// pushes; the store bills it every month, long after the machine is
	// gone.
	StoredBytes int64 `json:"stored_bytes"`
}

// Runs lists the runs with a committed checkpoint, a log or a spend
// record, by name: what a person who mistyped a run name, or forgot it on
// a new machine, needs (a run that died before its first checkpoint has
// only its log, or what it cost). It
// reads only the listing (a checkpoint is committed when its manifest
// exists, and an id begins with its creation time), no manifest.
func (s *Store) Runs(ctx context.Context) ([]RunInfo, error) {
	objs, err := s.b.List(ctx, "runs/")
	if err != nil {
		return nil, err
	}
	byRun := map[string]*RunInfo{}
	stored := map[string]int64{}
	for _, o := range objs {
		run, rest, _ := strings.Cut(strings.TrimPrefix(o.Key, "runs/"), "/")
		if ValidRun(run) != nil {
			continue
		}
		stored[run] += o.Size
		info := func() *RunInfo {
			r := byRun[run]
			if r == nil {
				r = &RunInfo{Run: run}
				byRun[run] = r
			}
			return r
		}
		if name, ok := strings.CutPrefix(rest, "manifests/"); ok {
			if id, ok := strings.CutSuffix(name, ".json"); ok && idRe.MatchString(id) {
				r := info()
				r.Checkpoints++
				r.Newest = max(r.Newest, id)
			}
		} else if name, ok := strings.CutPrefix(rest, "logs/"); ok {
			if sess, ok := strings.CutSuffix(name, "/info.json"); ok && idRe.MatchString(sess) {
				info().LogSessions++
			}
		} else if name, ok := strings.CutPrefix(rest, "spend/"); ok {
			if sess, ok := strings.CutSuffix(name, ".json"); ok && idRe.MatchString(sess) {
				r := info()
				r.SpendSessions++
				r.spendKeys = append(r.spendKeys, o.Key)
			}
		}
	}
	out := make([]RunInfo, 0, len(byRun))
	for _, r := range byRun {
		if r.Newest != "" {
			r.NewestCreated, _ = idTime(r.Newest)
		}
		r.StoredBytes = stored[r.Run]
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run < out[j].Run })
	return out, nil
}

// NameNewest fills each run's NewestName from its newest manifest: one
// read per run, manifestReads at a time. Manifests are not encrypted, so
// no identity is needed. A manifest that cannot be read leaves its name
// empty, the others are still named, and the first such error is
// returned.
func (s *Store) NameNewest(ctx context.Context, rs []RunInfo) error {
	var keys []string
	var of []int // the run of each key
	for i, r := range rs {
		if r.Newest != "" {
			keys, of = append(keys, manifestKey(r.Run, r.Newest)), append(of, i)
		}
	}
	ms, errs := s.manifests(ctx, keys)
	var first error
	for j, m := range ms {
		switch {
		case errs[j] != nil && first == nil:
			first = i18n.Errorf("run %s: %w", rs[of[j]].Run, errs[j])
		case errs[j] == nil:
			rs[of[j]].NewestName = m.Name
		}
	}
	return first
}

// Files decrypts and checks the file list of m.
func (s *Store) Files(m *Manifest) ([]Entry, error) {
	plain, err := s.opt.Crypto.open(m)
	if err != nil {
		return nil, err
	}
	return ParseFileList(m, plain)
}

// Problem is one defect verify found.
type Problem struct {
	ID   string    `json:"id"`
	Path string    `json:"path"` // the file, or the object key when the file list cannot be read
	Msg  i18n.Text `json:"msg"`
}

// Verify checks the checkpoints of run (or only id): every object exists
// with its recorded size; with deep, every object is read, decrypted and
// hashed against the file list. It returns the problems; err is for
// failures to check at all.
func (s *Store) Verify(ctx context.Context, run, id string, deep bool) ([]*Manifest, []Problem, error) {
	var ms []*Manifest
	if id != "" {
		m, err := s.Find(ctx, run, id)
		if err != nil {
			return nil, nil, err
		}
		ms = []*Manifest{m}
	}
	var probs []Problem
	if id == "" {
		var bad []Unreadable
		var err error
		if ms, bad, err = s.ListAll(ctx, run); err != nil {
			return nil, nil, err
		}
		for _, u := range bad {
			probs = append(probs, Problem{Path: u.Key, Msg: i18n.Textf("not a manifest this gpurent can read: %v", u.Err)})
		}
	}
	var mu sync.Mutex
	for _, m := range ms {
		if err := s.opt.Crypto.trusted(m); err != nil {
			// A shallow verify needs no secret: with no key here it
			// checks the objects alone (ckpt verify says authenticity
			// went unchecked).
			if !errors.Is(err, ErrNoAuthKey) || deep {
				probs = append(probs, Problem{ID: m.ID, Msg: i18n.Textf("%v", err)})
			}
		}
		names := map[int]string{}
		fileOf := map[int]string{} // the path of the file each object is of
		var entries []Entry
		if deep || len(s.opt.Crypto.Identities) > 0 || !m.Encrypted {
			es, err := s.Files(m)
			if err != nil {
				if deep || errors.Is(err, ErrWrongIdentity) {
					return nil, nil, err
				}
				// Its file list cannot be read: nothing of it can be
				// restored, whatever its objects say.
				probs = append(probs, Problem{ID: m.ID, Msg: i18n.Textf("file list: %v", err)})
			} else {
				entries = es
				for _, e := range es {
					if e.Type != "file" {
						continue
					}
					for k, o := range e.objects() {
						names[o], fileOf[o] = e.Path, e.Path
						if len(e.Parts) > 0 {
							names[o] = fmt.Sprintf("%s (part %d of %d)", e.Path, k+1, len(e.Parts))
						}
					}
				}
			}
		}
		name := func(i int) string {
			if n, ok := names[i]; ok {
				return n
			}
			return m.Objects[i].Key
		}
		err := s.parallel(ctx, len(m.Objects), func(ctx context.Context, i int) error {
			o := m.Objects[i]
			size, err := s.b.Size(ctx, o.Key)
			var msg i18n.Text
			switch {
			case IsNotFound(err):
				msg = i18n.Textf("missing from the store")
			case err != nil:
				return err
			case size != o.Size:
				msg = i18n.Textf("stored object is %d bytes, the manifest says %d (truncated or replaced)", size, o.Size)
			}
			if !msg.IsZero() {
				mu.Lock()
				probs = append(probs, Problem{ID: m.ID, Path: name(i), Msg: msg})
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		if !deep {
			continue
		}
		bad := map[string]bool{}
		for _, p := range probs {
			bad[p.ID+"\x00"+p.Path] = true
		}
		for i, o := range m.Objects {
			if bad[m.ID+"\x00"+name(i)] || bad[m.ID+"\x00"+o.Key] {
				bad[m.ID+"\x00"+fileOf[i]] = true
			}
		}
		var files []Entry
		for _, e := range entries {
			if e.Type == "file" && !bad[m.ID+"\x00"+e.Path] {
				files = append(files, e)
			}
		}
		err = s.parallel(ctx, len(files), func(ctx context.Context, k int) error {
			if err := s.checkFile(ctx, m, files[k]); err != nil {
				if errors.Is(err, ErrWrongIdentity) || errors.Is(err, context.Canceled) {
					return err
				}
				mu.Lock()
				probs = append(probs, Problem{ID: m.ID, Path: files[k].Path, Msg: i18n.Textf("%v", err)})
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	sort.Slice(probs, func(i, j int) bool { return probs[i].ID+probs[i].Path < probs[j].ID+probs[j].Path })
	return ms, probs, nil
}

func (s *Store) checkFile(ctx context.Context, m *Manifest, e Entry) error {
	_, _, err := s.readFile(ctx, m, e, io.Discard)
	var te transportError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return i18n.Errorf("not checked: the store broke off each of %d reads, the last with %v", pullTries, te.error)
	default:
		return err
	}
}

// PrunePlan is what Prune(ctx, run, keep) would delete, deleting nothing:
// the checkpoints beyond the newest keep, oldest first, and the data keys
// of pushes that never committed and are older than the grace period. It is
// how `ckpt prune --dry-run` shows a deletion before it is made.
type PrunePlan struct {
	Checkpoints []*Manifest
	// Unreadable are manifests left alone, uncounted: not ones this
	// gpurent can read.
	Unreadable []Unreadable
	// Unauthenticated are checkpoints left alone because no key here
	// signed them (with CheckAuth): not counted, not deleted.
	Unauthenticated []*Manifest
	Leftovers       []string
	// Uploads are multipart uploads a killed push began and never ended:
	// S3 bills their parts, and only aborting them deletes the parts.
	Uploads []Upload
	// UploadsErr says why they could not be listed (credentials without
	// s3:ListBucketMultipartUploads, a service without the call); the rest
	// of the prune does not depend on it.
	UploadsErr error
}

// PlanPrune lists what a prune of run keeping the newest keep checkpoints
// deletes.
func (s *Store) PlanPrune(ctx context.Context, run string, keep int) (*PrunePlan, error) {
	if keep < 0 {
		return nil, i18n.Errorf("prune: --keep must be 0 or more, got %d", keep)
	}
	all, bad, err := s.ListAll(ctx, run)
	if err != nil {
		return nil, err
	}
	// Manifests that cannot be read are left alone, named: what they hold
	// cannot be told, so neither kept nor deleted on their word.
	p := &PrunePlan{Unreadable: bad}
	if s.opt.Crypto.CheckAuth {
		// Only the owner's checkpoints count toward keep: planted ones
		// must not push real ones out of it. Those without proof stay
		// (a store written before proofs holds only such), named.
		if len(s.opt.Crypto.Auth) == 0 && len(all) > 0 {
			return nil, i18n.Errorf("prune: this machine holds no identity or auth key to tell the run's own checkpoints from planted ones (%w): pass --identity FILE, or --allow-unauthenticated to count every checkpoint", ErrNoAuthKey)
		}
		var own []*Manifest
		for _, m := range all {
			if s.opt.Crypto.Authentic(m) == nil {
				own = append(own, m)
			} else {
				p.Unauthenticated = append(p.Unauthenticated, m)
			}
		}
		all = own
	}
	if len(all) > keep {
		p.Checkpoints = all[:len(all)-keep]
	}
	// The newest keep checkpoints this Store committed stay, whatever
	// the order of ids says: a session never prunes its own work as the
	// oldest.
	s.idMu.Lock()
	own := slices.Clone(s.mine[max(0, len(s.mine)-keep):])
	s.idMu.Unlock()
	p.Checkpoints = slices.DeleteFunc(p.Checkpoints, func(m *Manifest) bool { return slices.Contains(own, m.ID) })
	c, err := s.judge(ctx, run)
	if err != nil {
		return nil, err
	}
	p.Leftovers = c.leftovers
	p.Uploads, p.UploadsErr = s.incompleteUploads(ctx, run, c)
	return p, nil
}

// incompleteUploads lists the run's multipart uploads older than the grace
// period (a younger one may belong to a push still running), by the
// store's clock where c read it, but for those of pushes c found alive.
func (s *Store) incompleteUploads(ctx context.Context, run string, c *cleanup) ([]Upload, error) {
	u, ok := s.b.(uploads)
	if !ok {
		return nil, nil
	}
	var before time.Time
	if s.opt.Grace > 0 {
		now := c.now
		if now.IsZero() {
			now = s.opt.Now()
		}
		before = now.Add(-s.opt.Grace)
	}
	ups, err := u.IncompleteUploads(ctx, runPrefix(run)+"data/", before)
	if err != nil {
		return nil, err
	}
	out := ups[:0]
	for _, up := range ups {
		id, _, _ := strings.Cut(strings.TrimPrefix(up.Key, runPrefix(run)+"data/"), "/")
		if !c.alive[id] {
			out = append(out, up)
		}
	}
	return out, nil
}

// abortUploads aborts ups, counting those aborted.
func (s *Store) abortUploads(ctx context.Context, ups []Upload) (int, error) {
	u, ok := s.b.(uploads)
	if !ok {
		return 0, nil
	}
	n := 0
	for _, up := range ups {
		if err := u.AbortUpload(ctx, up); err != nil && !IsNotFound(err) {
			return n, err
		}
		n++
	}
	return n, nil
}

// Pruned is what a prune deleted.
type Pruned struct {
	Checkpoints []string // ids, oldest first
	// Unauthenticated are ids left alone, uncounted (PrunePlan's).
	Unauthenticated []string
	// Unreadable are manifests left alone (PrunePlan's).
	Unreadable []Unreadable
	Leftovers  int   // data objects of pushes that never committed
	Uploads    int   // incomplete multipart uploads aborted
	UploadsErr error // why they could not be listed or aborted
}

// Prune keeps the newest keep checkpoints of run and deletes the rest:
// manifest first (the checkpoint disappears whole), then its objects. It
// also removes what killed pushes left: data objects that never committed
// and, on S3, multipart uploads never completed.
func (s *Store) Prune(ctx context.Context, run string, keep int) (*Pruned, error) {
	p, err := s.PlanPrune(ctx, run, keep)
	if err != nil {
		return nil, err
	}
	r := &Pruned{Checkpoints: []string{}, Unreadable: p.Unreadable}
	for _, m := range p.Unauthenticated {
		r.Unauthenticated = append(r.Unauthenticated, m.ID)
	}
	for _, m := range p.Checkpoints {
		if err := s.b.Delete(ctx, manifestKey(run, m.ID)); err != nil && !IsNotFound(err) {
			return r, err
		}
		for _, o := range m.Objects {
			if err := s.b.Delete(ctx, o.Key); err != nil && !IsNotFound(err) {
				return r, err
			}
		}
		r.Checkpoints = append(r.Checkpoints, m.ID)
	}
	if r.Leftovers, err = s.deleteKeys(ctx, p.Leftovers); err != nil {
		return r, err
	}
	r.UploadsErr = p.UploadsErr
	if r.UploadsErr == nil {
		r.Uploads, r.UploadsErr = s.abortUploads(ctx, p.Uploads)
	}
	return r, nil
}

// cleanLeftovers deletes data of checkpoints of run that never committed
// and are older than the grace period, and aborts the run's incomplete
// multipart uploads as old.
func (s *Store) cleanLeftovers(ctx context.Context, run string) (int, error) {
	c, err := s.judge(ctx, run)
	if err != nil {
		return 0, err
	}
	n, err := s.deleteKeys(ctx, c.leftovers)
	if err != nil {
		return n, err
	}
	// Best effort: credentials that may push need not be allowed to list
	// multipart uploads, and a push must not fail for it (prune says so).
	if ups, err := s.incompleteUploads(ctx, run, c); err == nil {
		a, _ := s.abortUploads(ctx, ups)
		n += a
	}
	return n, nil
}

// deleteKeys deletes keys, counting those deleted; one already gone counts
// as deleted, since a concurrent clean-up got there first.
func (s *Store) deleteKeys(ctx context.Context, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		if err := s.b.Delete(ctx, k); err != nil && !IsNotFound(err) {
			return n, err
		}
		n++
	}
	return n, nil
}

// CheckWrite writes a small object under run and deletes it: a store that
// lists but refuses writes (a read-only key, a bucket policy without
// PutObject) would otherwise be found out at the first checkpoint, hours
// of paid training later. The object, runs/<run>/write-check, holds
// nothing secret. A store that takes the write but refuses the delete (a
// write-only key, kept so the machine cannot erase backups) is fine for
// pushing; deleted says whether the object went, and pruning will fail
// there the same way.
func (s *Store) CheckWrite(ctx context.Context, run string) (deleted bool, err error) {
	key := runPrefix(run) + "write-check"
	body := []byte("gpurent checks that it can write here before a run starts; this object can be deleted\n")
	if _, err := s.b.Put(ctx, key, func(w io.Writer) error { _, err := w.Write(body); return err }); err != nil {
		return false, i18n.Errorf("the store does not take writes: %w", err)
	}
	return s.b.Delete(ctx, key) == nil, nil
}

// Remove deletes checkpoint id of run: its manifest first, so it
// disappears whole, then its objects and anything else stored under its
// id (what a resumed push left, a killed write's temporary file older
// than the grace). It returns the manifest it deleted. A manifest that
// cannot be read is deleted with whatever is stored under its id. A
// checkpoint a push may still be writing (its heartbeat is fresh) is
// refused.
func (s *Store) Remove(ctx context.Context, run, id string) (*Manifest, error) {
	if err := ValidRun(run); err != nil {
		return nil, err
	}
	if err := ValidID(id); err != nil {
		return nil, err
	}
	m, err := s.manifest(ctx, manifestKey(run, id))
	var se *OpError
	switch {
	case IsNotFound(err):
		return nil, i18n.Errorf("run %s has %w %s", run, ErrNoCheckpoint, id)
	case errors.As(err, &se):
		return nil, err
	}
	c, err := s.judge(ctx, run)
	if err != nil {
		return nil, err
	}
	if c.alive[id] {
		return nil, i18n.Errorf("checkpoint %s is being written by a push that announced itself less than the grace ago (a resumed push?): not deleted", id)
	}
	if err := s.b.Delete(ctx, manifestKey(run, id)); err != nil && !IsNotFound(err) {
		return nil, err
	}
	keys := []string{}
	if m != nil {
		for _, o := range m.Objects {
			keys = append(keys, o.Key)
		}
	}
	objs, lerr := s.b.List(ctx, dataPrefix(run, id))
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	for _, k := range c.leftovers {
		if tempID(strings.TrimPrefix(k, runPrefix(run))) == id {
			keys = append(keys, k)
		}
	}
	if _, err := s.deleteKeys(ctx, keys); err != nil || lerr != nil {
		return m, i18n.Errorf("checkpoint %s is gone, but perhaps not all of its objects: %w (the next prune removes them)", id, errors.Join(err, lerr))
	}
	if e, ok := s.b.(emptyDirs); ok {
		e.RemoveEmpty(dataPrefix(run, id))
	}
	if m == nil {
		m = &Manifest{ID: id, Run: run}
	}
	return m, nil
}
