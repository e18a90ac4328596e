package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

// Pull restores checkpoint id (or the newest) of run to dest, which must
// not exist. Everything is written into a directory beside dest, private
// to this user, through an os.Root opened on it: no write of a pull
// follows a symlink or leaves that directory, whatever the manifest or
// an earlier pull left there. Every file is checked against the manifest
// before the directory is renamed into place, so dest never holds half a
// checkpoint.
//
// A pull cut short (the store gone past the retries, Ctrl-C, a spot
// machine stopped with its disk kept) keeps that directory, named by the
// checkpoint's id: pulling the same checkpoint to the same place again
// checks what is there against the manifest it now pulls (ids are not
// trust): whatever the manifest does not name is removed, every kept file
// is hashed again, and a file in parts goes on from its last part that
// hashes right. A checkpoint damaged in the store, or a disk that filled,
// removes it.
func (s *Store) Pull(ctx context.Context, run, id, dest string) (*Manifest, error) {
	if _, err := os.Lstat(dest); err == nil {
		return nil, i18n.Errorf("pull: %s already exists; pull into a new path (nothing was changed)", dest)
	}
	m, err := s.Find(ctx, run, id)
	if err != nil {
		return nil, err
	}
	// Decrypted first: a missing or wrong identity is the error to fix,
	// before whether the checkpoint is the owner's can be told.
	entries, err := s.Files(m)
	if err != nil {
		return nil, err
	}
	if err := s.opt.Crypto.trusted(m); err != nil {
		return nil, i18n.Errorf("pull: %w", err)
	}
	rootIsFile := len(entries) > 0 && entries[0].Path == "." && entries[0].Type != "dir"
	if rootIsFile && entries[0].Type == "symlink" {
		return nil, i18n.Errorf("pull: checkpoint %s is a symlink (to %q), not a file or directory: pulled, %s would lead wherever it points; nothing was written", m.ID, entries[0].Link, dest)
	}
	parent := filepath.Dir(filepath.Clean(dest))
	// Missing parents are made, as git clone makes them.
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, i18n.Errorf("pull: %w", err)
	}
	tmp := filepath.Join(parent, partialBase(dest)+m.ID)
	// An earlier pull of another checkpoint to this place is of no use
	// now.
	discardPartial(dest, m.ID)
	root, err := openPartial(tmp)
	if err != nil {
		return nil, i18n.Errorf("pull: %w", err)
	}
	defer root.Close()
	// place is an entry's name inside the partial.
	place := func(p string) string {
		if rootIsFile {
			return "root"
		}
		return filepath.FromSlash(p)
	}
	kept, err := keepPartial(root, entries, place)
	if err != nil {
		return nil, i18n.Errorf("pull: %w", err)
	}
	var keptBytes int64
	for _, e := range entries {
		if n, ok := kept[e.Path]; ok {
			keptBytes += min(n, e.Size)
		}
	}
	// A checkpoint of 140 GB pulled onto a 50 GB data disk would fail
	// with "no space left on device" after half an hour of paid
	// download: told now instead. (Files written sparsely can need less;
	// a checkpoint seldom is sparse.)
	if avail, ok := s.free(parent); ok && avail+uint64(keptBytes) < uint64(m.Bytes) {
		if len(kept) == 0 {
			root.Close()
			os.RemoveAll(tmp)
		}
		return nil, i18n.Errorf("pull: checkpoint %s holds %s and the file system of %s has %s free: make room or pull elsewhere (nothing was written)",
			m.ID, report.Bytes(m.Bytes-keptBytes), parent, report.Bytes(int64(avail)))
	}
	var files []int
	for i, e := range entries {
		switch e.Type {
		case "dir":
			if err := root.MkdirAll(place(e.Path), 0o700); err != nil {
				return nil, i18n.Errorf("pull: %w", err)
			}
		case "symlink":
			if err := root.Symlink(e.Link, place(e.Path)); err != nil {
				return nil, i18n.Errorf("pull: %w", err)
			}
		case "file":
			files = append(files, i)
		}
	}
	var done atomic.Int64    // files whole
	var checked atomic.Int64 // bytes there and hashed right, whole files or parts
	err = s.parallel(ctx, len(files), func(ctx context.Context, k int) error {
		e := entries[files[k]]
		_, keep := kept[e.Path]
		n, err := s.restoreFile(ctx, m, e, root, place(e.Path), keep)
		checked.Add(n)
		if err != nil {
			return err
		}
		done.Add(1)
		return nil
	})
	if err != nil {
		var bad damaged
		if errors.Is(err, syscall.ENOSPC) || errors.As(err, &bad) {
			// A full disk wants its space back; a checkpoint damaged
			// in the store will not mend by pulling it again.
			root.Close()
			os.RemoveAll(tmp)
			return nil, err
		}
		if n := checked.Load(); n > 0 || done.Load() > 0 {
			return nil, &PartialPull{Err: err, Files: int(done.Load()), Of: countFiles(entries), Bytes: n, Dir: tmp, ID: m.ID, Dest: dest}
		}
		root.Close()
		os.RemoveAll(tmp)
		return nil, err
	}
	// Modes and times last, deepest first, so directories stay writable
	// while they are filled; symlinks have neither to set (and Chmod
	// would follow them).
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Type == "symlink" {
			continue
		}
		p := place(e.Path)
		if err := root.Chmod(p, e.Mode); err != nil {
			return nil, i18n.Errorf("pull: %w", err)
		}
		root.Chtimes(p, e.MTime, e.MTime)
	}
	final := tmp
	if rootIsFile {
		final = filepath.Join(tmp, "root")
	}
	root.Close() // Windows renames no directory held open
	if err := os.Rename(final, dest); err != nil {
		return nil, i18n.Errorf("pull: %w", err)
	}
	if rootIsFile {
		os.Remove(tmp)
	}
	syncDir(parent)
	return m, nil
}

// partialBase begins the names of what pulls to dest keep beside it.
func partialBase(dest string) string { return "." + filepath.Base(dest) + ".gpurent-pull-" }

// openPartial opens the private directory a pull writes into: made here
// (mode 0700), or one an earlier pull of this user made. Anything else
// there (another user's, a symlink, a file, a directory others can write
// to) is removed, or when it cannot be, refused: what another user could
// put in it must never end up in the checkpoint.
func openPartial(tmp string) (*os.Root, error) {
	for range 3 {
		st, err := os.Lstat(tmp)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(tmp, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, err
			}
			continue
		case err != nil:
			return nil, err
		case !private(st):
			if err := os.RemoveAll(tmp); err != nil {
				return nil, i18n.Errorf("%s is in the way and is not a directory of this user's that only it can write to (%w): remove it, or pull elsewhere", tmp, err)
			}
			continue
		}
		root, err := os.OpenRoot(tmp)
		if err != nil {
			return nil, err
		}
		if now, err := root.Stat("."); err != nil || !os.SameFile(st, now) || !private(now) {
			root.Close()
			continue // replaced in between
		}
		return root, nil
	}
	return nil, i18n.Errorf("%s keeps changing under the pull: is another pull to the same place running?", tmp)
}

// keepPartial checks what an earlier pull left in root against entries:
// whatever the manifest does not name, or names as something else, is
// removed (so are all symlinks: the pull makes them again). It returns
// the regular files kept, by path, with their sizes; each is hashed again
// before it counts.
func keepPartial(root *os.Root, entries []Entry, place func(string) string) (map[string]int64, error) {
	want := map[string]Entry{}
	for _, e := range entries {
		want[filepath.ToSlash(place(e.Path))] = e
	}
	type found struct {
		name string
		d    fs.DirEntry
	}
	var all []found
	err := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name != "." {
			all = append(all, found{name, d})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Deepest first, so a directory's contents go before it is judged.
	sort.Slice(all, func(i, j int) bool { return strings.Count(all[i].name, "/") > strings.Count(all[j].name, "/") })
	kept := map[string]int64{}
	for _, f := range all {
		e, named := want[f.name]
		t := f.d.Type()
		ok := named && (e.Type == "dir" && t.IsDir() || e.Type == "file" && t.IsRegular())
		if ok && e.Type == "file" {
			info, err := root.Lstat(f.name)
			ok = err == nil && info.Mode().IsRegular() && ownedHere(info)
			if ok {
				kept[e.Path] = info.Size()
			}
		}
		if !ok {
			if err := root.RemoveAll(f.name); err != nil {
				return nil, i18n.Errorf("clear what an earlier pull left: %w", err)
			}
		}
	}
	return kept, nil
}

// PartialPull is a pull cut short that kept what it pulled beside its
// destination: pulling the same checkpoint there again checks it and
// fetches only the rest, and DiscardPartial removes it.
type PartialPull struct {
	Err       error
	Files, Of int   // files finished, of the checkpoint's
	Bytes     int64 // bytes there and checked, of whole files and parts
	Dir       string
	ID, Dest  string
}

func (p *PartialPull) Error() string {
	return fmt.Sprintf("%v; what was pulled (%d of %d files whole, %s checked) is kept in %s: pulling checkpoint %s to %s again checks it and fetches only the rest",
		p.Err, p.Files, p.Of, report.Bytes(p.Bytes), p.Dir, p.ID, p.Dest)
}

func (p *PartialPull) Unwrap() error { return p.Err }

// DiscardPartial removes what pulls to dest cut short kept beside it.
func DiscardPartial(dest string) { discardPartial(dest, "") }

// discardPartial removes the kept pulls to dest but checkpoint keep's
// (and the journals pulls before this one kept beside them). Names are
// matched exactly, never as a glob: a parent named /data/*/ckpt must not
// reach into every directory the pattern would.
func discardPartial(dest, keep string) {
	parent, base := filepath.Dir(filepath.Clean(dest)), partialBase(dest)
	names, _ := os.ReadDir(parent)
	for _, d := range names {
		rest, ok := strings.CutPrefix(d.Name(), base)
		if !ok {
			continue
		}
		id := strings.TrimSuffix(rest, ".journal")
		// Only DEST's own: another destination named
		// "out.gpurent-pull-X" has partials that begin the same way.
		if ValidID(id) != nil || id == keep && rest == id {
			continue
		}
		os.RemoveAll(filepath.Join(parent, d.Name()))
	}
}

// damaged is a checkpoint's object missing or corrupt in the store: no
// retry mends it.
type damaged struct{ error }

func (d damaged) Unwrap() error { return d.error }

// transportError is the store's answer breaking off (a reset connection,
// a timeout, a server gone): the object may well be whole, and reading it
// again may succeed.
type transportError struct{ error }

func (t transportError) Unwrap() error { return t.error }

// writeError is a failure to write what was read (a full disk).
type writeError struct{ error }

func (w writeError) Unwrap() error { return w.error }

func countFiles(entries []Entry) int {
	n := 0
	for _, e := range entries {
		if e.Type == "file" {
			n++
		}
	}
	return n
}

// fileParts are a file's objects as parts: its parts, or its one object
// as a single part whose running hash is the file's.
func fileParts(e Entry) []Part {
	if len(e.Parts) > 0 {
		return e.Parts
	}
	return []Part{{Object: e.Object, Size: e.Size, Prefix: e.SHA256}}
}

// restoreFile writes file e into name under root, checking its size and
// SHA-256, and says how many of its bytes are there and hashed right.
// keep: a file an earlier pull left there, whose parts that hash right
// are kept and the rest fetched.
func (s *Store) restoreFile(ctx context.Context, m *Manifest, e Entry, root *os.Root, name string, keep bool) (int64, error) {
	parts := fileParts(e)
	h := sha256.New()
	var f *os.File
	var off int64
	first := 0
	if keep {
		var err error
		if f, err = root.OpenFile(name, os.O_RDWR, 0); err != nil {
			return 0, i18n.Errorf("pull: %w", err)
		}
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || !ownedHere(st) {
			f.Close()
			return 0, i18n.Errorf("pull: %s changed under the pull", name)
		}
		if first, off, err = verifiedParts(f, parts, h, s.progress); err != nil {
			f.Close()
			return 0, i18n.Errorf("pull: %w", err)
		}
		if first == len(parts) {
			return off, f.Close() // whole, and hashed right
		}
		if err := f.Truncate(off); err != nil {
			f.Close()
			return 0, i18n.Errorf("pull: %w", err)
		}
	} else {
		var err error
		if f, err = root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err != nil {
			return 0, i18n.Errorf("pull: %w", err)
		}
	}
	sw := &sparseWriter{f: f, off: off, wb: writeBehind{f: f, flushed: off}}
	rewind := func(to int64) error {
		sw.off, sw.wb.flushed = to, min(sw.wb.flushed, to)
		return f.Truncate(to)
	}
	n, err := s.fetchParts(ctx, m, e, parts, first, off, h, sw, rewind)
	if err == nil {
		err = sw.finish(n)
	} else {
		f.Truncate(n) // what is past the last part checked is not kept
	}
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.As(err, new(damaged)) || errors.As(err, new(transportError)) || ctx.Err() != nil {
			return n, err
		}
		return n, i18n.Errorf("pull %s: %w", e.Path, err)
	}
	return n, nil
}

// verifiedParts hashes the parts of parts that f holds, in order, while
// each ends with its running hash: it returns the first part to fetch,
// the bytes before it, and h at that point.
func verifiedParts(f *os.File, parts []Part, h hash.Hash, progress func(int64)) (int, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	var off int64
	buf := make([]byte, 1<<20)
	for k, p := range parts {
		if off+p.Size > st.Size() {
			return k, off, nil
		}
		state, _ := h.(encoding.BinaryMarshaler).MarshalBinary()
		if _, err := io.CopyBuffer(h, io.NewSectionReader(f, off, p.Size), buf); err != nil {
			return 0, 0, err
		}
		if hex.EncodeToString(h.Sum(nil)) != p.Prefix {
			return k, off, h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state)
		}
		if progress != nil {
			progress(p.Size)
		}
		off += p.Size
	}
	if off != st.Size() {
		// Longer than the file: the parts are right, the tail is not.
		return len(parts) - 1, off - parts[len(parts)-1].Size, rewindLast(f, parts, h)
	}
	return len(parts), off, nil
}

// rewindLast hashes all but the last part again into a fresh h: a kept
// file longer than the checkpoint's fetches its last part again.
func rewindLast(f *os.File, parts []Part, h hash.Hash) error {
	h.Reset()
	var off int64
	for _, p := range parts[:len(parts)-1] {
		if _, err := io.Copy(h, io.NewSectionReader(f, off, p.Size)); err != nil {
			return err
		}
		off += p.Size
	}
	return nil
}

// pullTries is how often one object is read before a pull gives up on
// it for now (the kept partial lets the next pull go on).
const pullTries = 5

// fetchParts reads parts from part first on (at byte off, h the running
// hash of the bytes before) into w, checking each part as it ends. A
// transport failure reads the part again from its start, rewind(at)
// putting w back there, up to pullTries times with a growing wait. It
// returns the bytes of the file w then holds.
func (s *Store) fetchParts(ctx context.Context, m *Manifest, e Entry, parts []Part, first int, off int64, h hash.Hash, w io.Writer, rewind func(int64) error) (int64, error) {
	for k := first; k < len(parts); k++ {
		p := parts[k]
		state, _ := h.(encoding.BinaryMarshaler).MarshalBinary()
		for try := 1; ; try++ {
			n, err := s.readObject(ctx, m, e, k, len(parts), m.Objects[p.Object], w, h, p.Size)
			if err == nil {
				if n != p.Size || hex.EncodeToString(h.Sum(nil)) != p.Prefix {
					// A read cut by a cancel can end early without an
					// error: that is the cancel, never corruption.
					if err := ctx.Err(); err != nil {
						return off, err
					}
					return off, damaged{i18n.Errorf("checkpoint %s: %s is corrupt in the store: %s does not hash as the manifest says", m.ID, e.Path, partName(k, len(parts), m.Objects[p.Object].Key))}
				}
				off += n
				break
			}
			if !errors.As(err, new(transportError)) || try == pullTries || ctx.Err() != nil {
				return off, err
			}
			if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
				return off, err
			}
			if err := rewind(off); err != nil {
				return off, writeError{err}
			}
			wait := s.opt.PullWait << (try - 1)
			wait += time.Duration(rand.Int64N(int64(wait)/2 + 1))
			select {
			case <-ctx.Done():
				return off, err
			case <-time.After(wait):
			}
		}
	}
	return off, nil
}

// partName names part k of n for a person: the object, and which part.
func partName(k, n int, key string) string {
	if n == 1 {
		return "object " + path.Base(key)
	}
	return fmt.Sprintf("part %d of %d (object %s)", k+1, n, path.Base(key))
}

// tagReader remembers a failure of the store's answer itself, so that
// what it becomes further up (age cannot read a header, a chunk is cut
// short) is still told from damage.
type tagReader struct {
	r      io.Reader
	failed error
}

func (t *tagReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.failed = err
	}
	return n, err
}

// readObject reads part k (of n) of file e, obj, decrypted, into w and h,
// and sorts a failure: damaged (missing, corrupt), transportError (the
// store's answer broke off), or the writer's.
func (s *Store) readObject(ctx context.Context, m *Manifest, e Entry, k, n int, obj ObjRef, w io.Writer, h hash.Hash, size int64) (int64, error) {
	what := fmt.Sprintf("checkpoint %s: %s, %s", m.ID, e.Path, partName(k, n, obj.Key))
	rc, err := openObject(ctx, s.b, obj.Key, obj.Size)
	if err != nil {
		return 0, s.sortFailure(ctx, what, obj, err, err)
	}
	defer rc.Close()
	tag := &tagReader{r: rc}
	var src io.Reader = tag
	if s.opt.Download != nil {
		src = &limited{ctx: ctx, r: tag, lim: s.opt.Download}
	}
	plain, err := s.opt.Crypto.wrapReader(src, m.Encrypted, m.Recipients, "checkpoint")
	if err != nil {
		return 0, s.sortFailure(ctx, what, obj, err, tag.failed)
	}
	got, _, err := fanout(writerOf{w}, io.LimitReader(plain, size+1), s.progress, h)
	if err != nil {
		return got, s.sortFailure(ctx, what, obj, err, tag.failed)
	}
	return got, nil
}

// writerOf marks its writer's failures as writeError.
type writerOf struct{ w io.Writer }

func (w writerOf) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil {
		err = writeError{err}
	}
	return n, err
}

// sortFailure says what a failure to read an object is. failed is the
// store's own failure, when there was one.
func (s *Store) sortFailure(ctx context.Context, what string, obj ObjRef, err, failed error) error {
	if ctx.Err() != nil {
		return i18n.Errorf("%s: %w", what, context.Cause(ctx))
	}
	var we writeError
	if errors.As(err, &we) {
		return we
	}
	if IsNotFound(failed) || IsNotFound(err) {
		return damaged{i18n.Errorf("%s: missing from the store", what)}
	}
	if failed != nil {
		// A reply cut short and an object stored short both end in an
		// unexpected EOF: the stored size tells them apart.
		if n, serr := s.b.Size(ctx, obj.Key); serr == nil && n != obj.Size {
			return damaged{i18n.Errorf("%s: the stored object is %d bytes, the manifest says %d (truncated or replaced)", what, n, obj.Size)}
		} else if IsNotFound(serr) {
			return damaged{i18n.Errorf("%s: missing from the store", what)}
		}
		return transportError{i18n.Errorf("%s: reading it from the store: %w", what, failed)}
	}
	if (errors.Is(err, ErrWrongIdentity) || errors.Is(err, ErrNoIdentity)) && !errors.Is(err, errHeaderDamaged) {
		return err
	}
	return damaged{i18n.Errorf("%s: corrupt in the store: %w", what, err)}
}

// readFile streams the plaintext of file e of m to dst, part by part,
// checking each part as it ends (so a damaged part is named) and reading
// one again after a transport failure. It returns the bytes and the
// SHA-256 of the whole.
func (s *Store) readFile(ctx context.Context, m *Manifest, e Entry, dst io.Writer) (int64, string, error) {
	h := sha256.New()
	n, err := s.fetchParts(ctx, m, e, fileParts(e), 0, 0, h, dst, func(int64) error { return nil })
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// sparseWriter skips all-zero blocks with a seek, so sparse files stay
// sparse; finish sets the final size.
type sparseWriter struct {
	f   *os.File
	off int64
	wb  writeBehind
}

func (w *sparseWriter) Write(p []byte) (int, error) {
	const block = 64 << 10
	for start := 0; start < len(p); start += block {
		end := min(start+block, len(p))
		chunk := p[start:end]
		if allZero(chunk) {
			w.off += int64(len(chunk))
			continue
		}
		if _, err := w.f.WriteAt(chunk, w.off); err != nil {
			return start, err
		}
		w.off += int64(len(chunk))
	}
	w.wb.advance(w.off)
	return len(p), nil
}

func (w *sparseWriter) finish(size int64) error { return w.f.Truncate(size) }

// zeroBlock is compared against with bytes.Equal, which is vectorised; a
// byte loop here costs more than the decryption.
var zeroBlock = make([]byte, 64<<10)

func allZero(b []byte) bool {
	return len(b) <= len(zeroBlock) && bytes.Equal(b, zeroBlock[:len(b)])
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
