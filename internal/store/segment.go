package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// A file larger than the segment size (1 GiB) is stored in parts: one
// object per segment, each encrypted on its own. A push cut short (the
// link gone, Ctrl-C, a spot machine stopped with its disk kept) keeps the
// parts and the smaller files it finished; pushing the same path to the
// same run again adopts the unfinished checkpoint and uploads only the
// parts and files that are not there.
// No secret is kept for this: each part has its own age file key, so
// nothing of an encryption in progress needs to survive.
//
// What the resumed push knows of the first comes from a journal on this
// machine (in gpurent's state directory, readable by the user alone):
// the checkpoint's id, and for each file in parts its identity (size,
// modification and change time, device and inode) and its finished parts
// (key, stored size, ETag, the file's running SHA-256 at the part's end;
// a smaller file is one part, its object).
// A part counts only when the file is the same one, unchanged, the part's
// bytes read again here give the running hash the journal recorded, and
// the store still holds the object at its size (and version, where the
// store names versions). Anything else is uploaded again.

// defaultSegment is the part size when Options.Segment is zero: large
// enough that the pause between parts costs little, small enough that a
// push cut short loses at most a minute or so of upload on most links,
// and far below S3's 5 GiB limit on a copied object.
const defaultSegment = 1 << 30

func (s *Store) segment() int64 {
	if s.opt.Segment > 0 {
		return s.opt.Segment
	}
	return defaultSegment
}

// partKey is the key of part j of file i (j < 0: the file whole). tag
// sets apart the keys of a resumed push from those it adopts.
func partKey(run, id string, i, j int, tag string) string {
	if j < 0 {
		return objectKey(run, id, i) + tag
	}
	return fmt.Sprintf("%s%06d.%d%s", dataPrefix(run, id), i, j, tag)
}

// pushed is what the push of one file stored.
type pushed struct {
	objs  []ObjRef
	parts []Part // Object: an index into objs; none for a whole object
	size  int64
	sum   string
	// reused were stored by a committed checkpoint and referred to,
	// resumed found stored by this checkpoint's earlier push.
	reused, resumed int64
}

// pushParts uploads the file at path in parts, going on from what jf says
// an earlier push of it finished.
func (s *Store) pushParts(ctx context.Context, run, id, tag string, i int, path string, info fs.FileInfo, jr *journal, jf *journalFile) (pushed, error) {
	var out pushed
	if err := unchanged(path, info, nil); err != nil {
		return out, err
	}
	f, err := os.Open(path)
	if err != nil {
		return out, i18n.Errorf("push: %w", err)
	}
	defer f.Close()
	seg, size := s.segment(), info.Size()
	hp := newHashPipe(s.progress)
	ok := false
	defer func() {
		if !ok {
			hp.abandon()
		}
	}()
	buf := make([]byte, 1<<20)
	for j := 0; int64(j)*seg < size; j++ {
		off := int64(j) * seg
		n := min(seg, size-off)
		_, start := hp.mark()
		if done, ok := jf.part(j); ok && done.Size == n {
			if _, err := io.CopyBuffer(hp, io.NewSectionReader(f, off, n), buf); err != nil {
				return out, i18n.Errorf("push %s: %w", path, err)
			}
			sum, _ := hp.mark()
			if sum == done.Prefix && jr.stillThere(ctx, s, done) {
				out.objs = append(out.objs, ObjRef{Key: done.Key, Size: done.Stored, ETag: done.ETag})
				out.parts = append(out.parts, Part{Object: len(out.objs) - 1, Size: n, Prefix: sum})
				out.resumed += n
				continue
			}
			if err := hp.rewind(start); err != nil {
				return out, err
			}
		}
		jr.truncate(jf, j) // what follows is uploaded anew
		key := partKey(run, id, i, j, tag)
		stored, err := s.b.Put(ctx, key, func(w io.Writer) error {
			// A retried upload hashes the part again from its start.
			if err := hp.rewind(start); err != nil {
				return err
			}
			enc, err := s.opt.Crypto.wrapWriter(w)
			if err != nil {
				return err
			}
			var src io.Reader = io.NewSectionReader(f, off, n)
			if s.opt.Upload != nil {
				src = &limited{ctx: ctx, r: src, lim: s.opt.Upload}
			}
			k, err := io.CopyBuffer(enc, io.TeeReader(src, hp), buf)
			if err == nil {
				err = enc.Close()
			}
			if err != nil {
				return i18n.Errorf("push %s: %w", path, err)
			}
			if k != n {
				if err := unchanged(path, info, f); err != nil {
					return err
				}
				return i18n.Errorf("push: %s %w (%d bytes read of part %d, which has %d): not committed", path, ErrChanged, k, j+1, n)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
		sum, _ := hp.mark()
		ref := ObjRef{Key: key, Size: stored, ETag: s.etagOf(ctx, key, size)} // the file's size: every part is copied or none
		out.objs = append(out.objs, ref)
		out.parts = append(out.parts, Part{Object: len(out.objs) - 1, Size: n, Prefix: sum})
		jr.add(jf, journalPart{Key: key, Stored: stored, ETag: ref.ETag, Size: n, Prefix: sum})
	}
	if err := unchanged(path, info, f); err != nil {
		return out, err
	}
	ok = true
	out.size, out.sum = size, hp.Sum()
	return out, nil
}

// journal is what a push of files in parts has stored so far, kept on
// this machine so that the next push of the same path goes on from it.
type journal struct {
	mu    sync.Mutex
	path  string
	lock  *os.File
	state journalState
	// listed are the sizes of the adopted checkpoint's stored objects.
	listed map[string]int64
	// dirty: records not written yet, since wrote; cost: how long the
	// last write took.
	dirty bool
	wrote time.Time
	cost  time.Duration
}

type journalState struct {
	Version int       `json:"version"`
	Store   string    `json:"store"`
	Run     string    `json:"run"`
	Src     string    `json:"src"`
	Host    string    `json:"host"`
	ID      string    `json:"id"`
	Started time.Time `json:"started"`
	Segment int64     `json:"segment"`
	// Encrypted and Recipients are how the objects were stored: a push
	// that encrypts otherwise (to other recipients, or at all) adopts
	// none of them, or its checkpoint would name objects its readers
	// cannot open, or plaintext under a manifest that says encrypted.
	Encrypted  bool     `json:"encrypted"`
	Recipients []string `json:"recipients,omitempty"`
	// Files are by their path in the checkpoint.
	Files map[string]*journalFile `json:"files"`
}

type journalFile struct {
	Size  int64         `json:"size"`
	MTime time.Time     `json:"mtime"`
	CTime time.Time     `json:"ctime"`
	Dev   uint64        `json:"dev"`
	Ino   uint64        `json:"ino"`
	Parts []journalPart `json:"parts"`
}

type journalPart struct {
	Key    string `json:"key"`
	Stored int64  `json:"stored"`
	ETag   string `json:"etag,omitempty"`
	Size   int64  `json:"size"`
	Prefix string `json:"prefix_sha256"`
}

// openJournal takes the journal of pushes of src to run in this store,
// locked so that two pushes of one path never adopt one checkpoint. nil
// when pushes are not resumable here (no journal directory, a system
// without inodes or locks, another push of the same path running).
func (s *Store) openJournal(run, src string) *journal {
	if s.opt.Journal == "" {
		return nil
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil
	}
	if err := os.MkdirAll(s.opt.Journal, 0o700); err != nil {
		return nil
	}
	// The directory as it is, not through a link: a link planted in its
	// place would have the chmod and the lock follow it elsewhere.
	if st, err := os.Lstat(s.opt.Journal); err != nil || !st.IsDir() || !ownedHere(st) {
		return nil
	} else if !private(st) && os.Chmod(s.opt.Journal, 0o700) != nil {
		return nil
	}
	if st, err := os.Lstat(s.opt.Journal); err != nil || !private(st) {
		return nil
	}
	h := sha256.Sum256([]byte(s.opt.Where + "\x00" + run + "\x00" + abs))
	base := filepath.Join(s.opt.Journal, hex.EncodeToString(h[:12]))
	lock, ok := lockFile(base + ".lock")
	if !ok {
		return nil
	}
	j := &journal{path: base + ".json", lock: lock}
	j.state = journalState{Version: journalVersion, Store: s.opt.Where, Run: run, Src: abs, Host: s.opt.Host, Segment: s.segment()}
	if c := s.opt.Crypto; c != nil && c.Encrypting() {
		j.state.Encrypted, j.state.Recipients = true, slices.Sorted(slices.Values(c.Keys))
	}
	return j
}

// journalVersion 2 records how the objects were encrypted; a journal of
// version 1 does not say, and is not adopted.
const journalVersion = 2

// adopt reads the journal and says which unfinished checkpoint to go on
// with: one pushed from this host, to this store and run, in parts of
// this size, never committed, with parts of a file that is still the
// same (files[path] is what the walk found there). ok false: a new
// checkpoint, dated now.
func (j *journal) adopt(ctx context.Context, s *Store, files map[string]fs.FileInfo) (id string, started time.Time, ok bool) {
	if j == nil {
		return "", time.Time{}, false
	}
	b, err := readSmall(j.path, journalMax)
	if err != nil {
		return "", time.Time{}, false
	}
	var st journalState
	if err := json.Unmarshal(b, &st); err != nil || st.Version != journalVersion || st.Store != j.state.Store || st.Run != j.state.Run ||
		st.Src != j.state.Src || st.Host != j.state.Host || st.Segment != j.state.Segment || ValidID(st.ID) != nil || len(st.Files) == 0 ||
		st.Encrypted != j.state.Encrypted || !slices.Equal(st.Recipients, j.state.Recipients) {
		return "", time.Time{}, false
	}
	same := false
	keys := map[string]bool{}
	for rel, f := range st.Files {
		if f == nil {
			return "", time.Time{}, false
		}
		// Each part's key is one of this checkpoint's, for that part,
		// and no other part's: a journal cannot have one part stand in
		// for another.
		// A file of a segment or less is one object, whole.
		whole := f.Size <= st.Segment
		for k, p := range f.Parts {
			name, under := strings.CutPrefix(p.Key, dataPrefix(st.Run, st.ID))
			if !under || keys[p.Key] {
				return "", time.Time{}, false
			}
			if whole && (k > 0 || !wholeKeyRe.MatchString(name)) || !whole && (!partKeyRe.MatchString(name) || partIndex(p.Key) != k) {
				return "", time.Time{}, false
			}
			keys[p.Key] = true
		}
		if info, ok := files[rel]; ok && len(f.Parts) > 0 && f.same(info) {
			same = true
		}
	}
	if !same {
		return "", time.Time{}, false
	}
	// Never committed, and nothing committed since: a checkpoint keeps
	// the id, and so the time, of its first push, and one older than
	// the run's newest would be neither resumed from nor kept by prune.
	ids, err := s.committed(ctx, st.Run)
	if err != nil {
		return "", time.Time{}, false
	}
	for _, id := range ids {
		if id >= st.ID {
			return "", time.Time{}, false
		}
	}
	objs, err := s.b.List(ctx, dataPrefix(st.Run, st.ID))
	if err != nil || len(objs) == 0 {
		return "", time.Time{}, false
	}
	j.listed = make(map[string]int64, len(objs))
	for _, o := range objs {
		j.listed[o.Key] = o.Size
	}
	j.state = st
	return st.ID, st.Started, true
}

// partKeyRe is the name of a part's object under its checkpoint's data:
// file, part, and the tag of a resumed push.
var partKeyRe = regexp.MustCompile(`^\d{6}\.(\d{1,9})(-[0-9a-f]{8})?$`)

// wholeKeyRe is the name of a file's object stored whole.
var wholeKeyRe = regexp.MustCompile(`^\d{6}(-[0-9a-f]{8})?$`)

// partIndex is the part a part's key names.
func partIndex(key string) int {
	m := partKeyRe.FindStringSubmatch(path.Base(key))
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// readSmall reads a regular file of at most max bytes, following no
// symlink (a FIFO or a huge file there is refused, not waited on).
func readSmall(name string, max int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|noFollow|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > max {
		return nil, i18n.Errorf("%s is not a regular file of at most %d bytes", name, max)
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// begin makes the journal that of a new checkpoint.
func (j *journal) begin(id string, started time.Time) {
	if j == nil {
		return
	}
	j.state.ID, j.state.Started, j.state.Files = id, started.UTC(), map[string]*journalFile{}
}

// file is the journal's record of the file at rel, as it is now: the
// parts recorded go with it only when it is the same file, unchanged.
func (j *journal) file(rel string, info fs.FileInfo) *journalFile {
	if j == nil {
		return nil
	}
	dev, ino, ok := inode(info)
	if !ok {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if was := j.state.Files[rel]; was != nil && was.same(info) {
		return was
	}
	now := &journalFile{Size: info.Size(), MTime: info.ModTime().UTC(), CTime: changeTime(info).UTC(), Dev: dev, Ino: ino}
	j.state.Files[rel] = now
	return now
}

// same says whether info is the file f recorded, unchanged: the same
// inode, size, modification and change time.
func (f *journalFile) same(info fs.FileInfo) bool {
	dev, ino, ok := inode(info)
	ct := changeTime(info)
	return ok && !ct.IsZero() && f.Dev == dev && f.Ino == ino && f.Size == info.Size() && f.MTime.Equal(info.ModTime()) && f.CTime.Equal(ct)
}

// part is the journal's part j of f.
func (jf *journalFile) part(j int) (journalPart, bool) {
	if jf == nil || j >= len(jf.Parts) {
		return journalPart{}, false
	}
	return jf.Parts[j], true
}

// stillThere says whether the store holds part p as it was stored.
func (j *journal) stillThere(ctx context.Context, s *Store, p journalPart) bool {
	if j == nil || j.listed[p.Key] != p.Stored || p.Stored == 0 {
		return false
	}
	if p.ETag == "" {
		return true
	}
	c, ok := s.b.(copier)
	if !ok {
		return false
	}
	tag, err := c.ETag(ctx, p.Key)
	return err == nil && tag == p.ETag
}

// truncate forgets f's parts from j on.
func (j *journal) truncate(f *journalFile, n int) {
	if j == nil || f == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if n < len(f.Parts) {
		f.Parts = f.Parts[:n]
	}
}

// add records a part (or a small file's object) stored and writes the
// journal: each part at once, small files at most every journalEvery (a
// push of 100,000 of them would otherwise rewrite it as often), the rest
// when the push fails (kept). A journal that cannot be written costs the
// resumption, never the push.
func (j *journal) add(f *journalFile, p journalPart) {
	if j == nil || f == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	f.Parts = append(f.Parts, p)
	j.dirty = true
	if f.Size <= j.state.Segment && time.Since(j.wrote) < max(journalEvery, 10*j.cost) {
		return
	}
	j.flush()
}

// journalEvery is how often at most small files' records are written: a
// push killed loses at most this much of them (or, for a journal so large
// that writing it takes over a tenth of that, ten times its cost, so that
// a push of 100,000 files spends at most a tenth of its time on it).
const journalEvery = 250 * time.Millisecond

// flush writes the journal; j.mu held. One larger than adopt reads is not
// written: what it would record could not be taken up.
func (j *journal) flush() {
	start := time.Now()
	if b, err := json.Marshal(&j.state); err == nil && len(b) <= journalMax {
		writeJournal(j.path, b)
	}
	j.dirty, j.wrote, j.cost = false, time.Now(), time.Since(start)
}

// journalMax is the most of a journal adopt reads.
const journalMax = 64 << 20

// writeJournal replaces the journal through a rename, never syncing it:
// on ext4 (data=ordered) an fsync commits every file's dirty pages with
// it, so a push would wait for the writes of whatever ran before it, and
// a journal lost to a power cut costs only the resumption.
func writeJournal(path string, b []byte) {
	var r [4]byte
	rand.Read(r[:])
	tmp := path + "." + hex.EncodeToString(r[:]) + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return
	}
	if os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}

// kept says, after a failed push, what it stored that the same push
// again would go on from; nothing where it would not (a file changed
// under it, a run another session holds).
func (j *journal) kept(err error) error {
	var held *HeldError
	if j == nil || errors.Is(err, ErrChanged) || errors.Is(err, ErrLeaseLost) || errors.As(err, &held) {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.dirty {
		j.flush()
	}
	var n int64
	for _, f := range j.state.Files {
		if f == nil {
			continue
		}
		for _, p := range f.Parts {
			n += p.Size
		}
	}
	if n == 0 {
		return err
	}
	return i18n.Errorf("%w (the %s of it stored is kept: the same push again goes on from there)", err, report.Bytes(n))
}

// close releases the journal; done (the checkpoint committed) removes it.
func (j *journal) close(done bool) {
	if j == nil {
		return
	}
	if done {
		os.Remove(j.path)
		os.Remove(j.lock.Name())
	}
	j.lock.Close()
}

// hashCache is what the last committed push of these files to this run
// learnt of each: its identity and times, and its SHA-256 (with the
// running hashes at its parts' ends, for a file in parts). A file found
// the same again is known unchanged without reading it (shared.go), as
// restic's and rsync's quick checks judge one. It lives beside the journal,
// readable by the user alone.
type hashCache struct {
	Version int                    `json:"version"`
	Segment int64                  `json:"segment"`
	Files   map[string]*cachedFile `json:"files"`
}

type cachedFile struct {
	journalFile
	Sum string `json:"sha256"`
	// Parts are the part sizes and running hashes (Object unused).
	Parts []Part `json:"parts,omitempty"`
	// Racy: it changed less than racyWindow before it was walked, so a
	// write in the same tick of the file system's clock could have left
	// its times as recorded (git's "racily clean"). Such a file is read
	// and hashed before it is taken for unchanged.
	Racy bool `json:"racy,omitempty"`
}

// racyWindow is how recent a change makes a file racy: more than the
// coarsest time stamps of the file systems gpurent meets (ext4's kernel
// tick, a second on some network mounts).
const racyWindow = 2 * time.Second

const hashCacheVersion = 1

func (j *journal) hashesPath() string { return strings.TrimSuffix(j.path, ".json") + ".hashes.json" }

// hashes reads the hash cache, nil when there is none of this segment
// size.
func (j *journal) hashes(segment int64) *hashCache {
	if j == nil {
		return nil
	}
	b, err := readSmall(j.hashesPath(), journalMax)
	if err != nil {
		return nil
	}
	var c hashCache
	if json.Unmarshal(b, &c) != nil || c.Version != hashCacheVersion || c.Segment != segment || c.Files == nil {
		return nil
	}
	for rel, f := range c.Files {
		if f == nil || !hexRe.MatchString(f.Sum) {
			delete(c.Files, rel)
		}
	}
	return &c
}

// remember replaces the hash cache with what a committed push stored:
// the files as the walk found them (each upload checked the file was
// still that one as it read it), with their hashes.
func (j *journal) remember(rel []string, infos []fs.FileInfo, results []pushed, walked time.Time) {
	if j == nil {
		return
	}
	c := hashCache{Version: hashCacheVersion, Segment: j.state.Segment, Files: map[string]*cachedFile{}}
	for i, info := range infos {
		dev, ino, ok := inode(info)
		ct := changeTime(info)
		if !ok || ct.IsZero() || results[i].sum == "" {
			continue
		}
		f := &cachedFile{journalFile: journalFile{Size: info.Size(), MTime: info.ModTime().UTC(), CTime: ct.UTC(), Dev: dev, Ino: ino}, Sum: results[i].sum,
			Racy: !ct.Before(walked.Add(-racyWindow)) || !info.ModTime().Before(walked.Add(-racyWindow))}
		for _, p := range results[i].parts {
			f.Parts = append(f.Parts, Part{Size: p.Size, Prefix: p.Prefix})
		}
		c.Files[rel[i]] = f
	}
	if b, err := json.Marshal(&c); err == nil && len(b) <= journalMax {
		writeJournal(j.hashesPath(), b)
	}
}

// resumeTag is the suffix of the keys a push writes when it adopts an
// unfinished checkpoint: never the name of a part it adopts.
func resumeTag() string {
	var b [4]byte
	rand.Read(b[:])
	return "-" + hex.EncodeToString(b[:])
}

// sweep deletes what an adopted checkpoint's earlier pushes stored that
// the committed manifest does not name: a part finished after the last
// journal write, or uploaded again.
func (s *Store) sweep(ctx context.Context, m *Manifest) {
	objs, err := s.b.List(ctx, dataPrefix(m.Run, m.ID))
	if err != nil {
		return
	}
	named := make(map[string]bool, len(m.Objects))
	for _, o := range m.Objects {
		named[o.Key] = true
	}
	for _, o := range objs {
		if !named[o.Key] {
			s.b.Delete(ctx, o.Key)
		}
	}
}

// What S3 allows a multipart upload: parts of 5 MiB to 5 GiB, at most
// 10,000 of them (so an object of at most 5 TiB).
const (
	MinPartSize = 5 << 20
	MaxPartSize = 5 << 30
	maxParts    = 10000
)

// storedBound is at most how large age makes plain bytes: a header (for
// up to a few dozen recipients) and a 16-byte tag for each 64 KiB chunk.
func storedBound(plain int64) int64 { return plain + 16*(plain/(64<<10)+1) + 16<<10 }

// uploadPlan is what a file of size becomes: how many objects, and the
// most multipart parts of partSize any of them needs. Files larger than
// a segment are split, so no object needs more than a segment's worth of
// parts however large the file.
func uploadPlan(size, segment, partSize int64) (objects, parts int64) {
	objects = max(1, (size+segment-1)/segment)
	largest := storedBound(min(size, segment))
	return objects, (largest + partSize - 1) / partSize
}

// CheckPartSize refuses a multipart part size S3 refuses, and one at
// which an object of a whole segment would need more than 10,000 parts.
func CheckPartSize(partSize int64) error {
	if partSize < MinPartSize || partSize > MaxPartSize {
		return i18n.Errorf("want 5MiB to 5GiB (S3's limits on a part), got %d bytes", partSize)
	}
	if _, parts := uploadPlan(defaultSegment, defaultSegment, partSize); parts > maxParts {
		return i18n.Errorf("%d bytes makes an object of 1 GiB %d parts, more than S3's %d", partSize, parts, maxParts)
	}
	return nil
}
