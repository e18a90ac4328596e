//go:build unix

package wipe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gpurent/gpurent/internal/ckptdir"
	"github.com/gpurent/gpurent/internal/homefiles"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/store"
)

// Backups is what the backup check needs of a checkpoint store; a
// *store.Store is one.
type Backups interface {
	List(ctx context.Context, run string) ([]*store.Manifest, error)
	Files(m *store.Manifest) ([]store.Entry, error)
	Verify(ctx context.Context, run, id string, deep bool) ([]*store.Manifest, []store.Problem, error)
	Trusted(m *store.Manifest) error
}

// Backed is the evidence that a checkpoint directory may go: every file
// in it is in a committed checkpoint of run, byte for byte, and each of
// those checkpoints reads back whole.
type Backed struct {
	Dir string `json:"dir"`
	Run string `json:"run"`
	// Checkpoint and ID are the newest checkpoint that holds files of
	// Dir; IDs are all of them.
	Checkpoint string   `json:"checkpoint"`
	ID         string   `json:"id"`
	IDs        []string `json:"ids"`
	Files      int      `json:"files"`
	Bytes      int64    `json:"bytes"`
	// judged are the files the check judged, by full path: the removal
	// takes no other (Unchanged, Same).
	judged map[string]local
}

// RunOf reads the run name gpurent run recorded in a checkpoint
// directory, or "".
//
// The file is read as a regular file only, never through a symlink,
// capped, and nothing else is opened on the way: a directory being wiped
// may hold anything under that name (a FIFO, a device node, a link to
// /dev/zero or /dev/watchdog).
func RunOf(dir string) string {
	f, err := openRegular(filepath.Join(dir, ckptdir.StateFile))
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, stateFileMax))
	if err != nil {
		return ""
	}
	var s struct{ Run string }
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s.Run
}

// NotCovered is the backup check's refusal: files under a checkpoint
// directory that no committed checkpoint holds as they are.
type NotCovered struct {
	Dir, Run string
	Files    []string // relative to Dir, each with why
}

func (e *NotCovered) Error() string {
	list, more := e.Files, ""
	if len(list) > 5 {
		list, more = list[:5], fmt.Sprintf(" and %d more", len(e.Files)-5)
	}
	verb := "are"
	if len(e.Files) == 1 {
		verb = "is"
	}
	return fmt.Sprintf("%s in %s %s in no committed checkpoint of run %s as they are now: %s%s (push them, or --exclude them)",
		report.Count(len(e.Files), "file"), e.Dir, verb, e.Run, strings.Join(list, "; "), more)
}

// CheckBackup checks that everything under the checkpoint directory dir
// is safe in the store: every file (a checkpoint still being written or
// inside its quiet period, one copied in with old times, a log beside
// them) must be held, at its path, with its size and SHA-256, by a
// committed checkpoint of run, and every checkpoint that holds one is
// verified deeply: each object read back, decrypted and hashed. gpurent's
// own files (.gpurent*) and what kept says the wipe leaves are not
// judged. Any shortfall is an error saying which: *NotCovered for files
// the store lacks.
func CheckBackup(ctx context.Context, b Backups, run, dir string, kept func(path string) bool) (Backed, error) {
	files, err := walkCkpt(dir, kept)
	if err != nil {
		return Backed{}, err
	}
	all, err := b.List(ctx, run)
	if err != nil {
		return Backed{}, i18n.Errorf("list run %s: %w", run, err)
	}
	// A planted checkpoint must not vouch for files that were never
	// uploaded: only the owner's count.
	var ms []*store.Manifest
	for _, m := range all {
		if err := b.Trusted(m); err == nil {
			ms = append(ms, m)
		} else if errors.Is(err, store.ErrNoAuthKey) {
			return Backed{}, i18n.Errorf("run %s: %w", run, err)
		}
	}
	lists := map[string][]store.Entry{} // by manifest id, decrypted once
	entries := func(m *store.Manifest) ([]store.Entry, error) {
		if es, ok := lists[m.ID]; ok {
			return es, nil
		}
		es, err := b.Files(m)
		if err != nil {
			return nil, i18n.Errorf("checkpoint %s: %w", m.ID, err)
		}
		lists[m.ID] = es
		return es, nil
	}
	used := map[string]bool{}
	var missing []string
	var bytes int64
	for _, f := range files {
		if f.kind != "file" && f.kind != "symlink" {
			missing = append(missing, f.rel+" ("+f.kind+")")
			continue
		}
		sum := ""
		found, sameName := false, false
		for i := len(ms) - 1; i >= 0 && !found; i-- { // newest first
			m := ms[i]
			if m.Name != f.name {
				continue
			}
			sameName = true
			es, err := entries(m)
			if err != nil {
				return Backed{}, err
			}
			for _, e := range es {
				if e.Path != f.inner || e.Type != f.kind {
					continue
				}
				if f.kind == "symlink" {
					found = e.Link == f.link
				} else if e.Size == f.size {
					if sum == "" {
						if sum, err = hashFile(f.full); err != nil {
							return Backed{}, err
						}
					}
					found = e.SHA256 == sum
				}
				if found {
					used[m.ID] = true
					if f.kind == "file" {
						bytes += f.size
					}
				}
				break
			}
		}
		switch {
		case found:
		case sameName:
			missing = append(missing, f.rel+" (differs from every stored copy: changed since the upload?)")
		default:
			missing = append(missing, f.rel+" (never uploaded)")
		}
	}
	if len(missing) > 0 {
		return Backed{}, &NotCovered{Dir: dir, Run: run, Files: missing}
	}
	if len(files) == 0 {
		return Backed{}, i18n.Errorf("no checkpoint files in %s to check", dir)
	}
	out := Backed{Dir: dir, Run: run, Files: len(files), Bytes: bytes}
	for _, m := range ms { // oldest first: the last one kept is the newest
		if !used[m.ID] {
			continue
		}
		_, probs, err := b.Verify(ctx, run, m.ID, true)
		if err != nil {
			return Backed{}, i18n.Errorf("verify %s: %w", m.ID, err)
		}
		if len(probs) > 0 {
			return Backed{}, i18n.Errorf("checkpoint %s (%s) of run %s holds files of %s but fails verification: %s: %s", m.ID, m.Name, run, dir, probs[0].Path, probs[0].Msg)
		}
		out.IDs = append(out.IDs, m.ID)
		out.Checkpoint, out.ID = m.Name, m.ID
	}
	// What the check judged is frozen: a file that appeared or changed
	// while it read the store back (seconds to minutes) was not judged,
	// and the wipe must not take it.
	out.judged = map[string]local{}
	for _, f := range files {
		out.judged[f.full] = f
	}
	if err := out.Unchanged(kept); err != nil {
		return Backed{}, err
	}
	return out, nil
}

// local is a file under a checkpoint directory, as the backup check
// found it.
type local struct {
	rel, name, inner string // rel is name/inner; inner is "." for a file pushed alone
	full             string
	kind             string // file, symlink, or what else it is
	size             int64
	link             string
	// ino, mtime and ctime tell the same file unchanged (Unchanged).
	ino          uint64
	mtime, ctime time.Time
}

// gpurentOwn: an entry of a checkpoint directory that is gpurent's own
// (its state, lock, ledger, a pull in progress), which the check does not
// judge.
func gpurentOwn(name string) bool {
	return strings.HasPrefix(name, ".gpurent") || strings.Contains(name, ".gpurent-pull-")
}

// walkCkpt lists the files under a checkpoint directory that the backup
// check judges: not gpurent's own (.gpurent*), nor what kept says stays.
func walkCkpt(dir string, kept func(path string) bool) ([]local, error) {
	var files []local
	err := filepath.WalkDir(dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if full == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, full)
		rel = filepath.ToSlash(rel)
		name, inner, ok := strings.Cut(rel, "/")
		if !ok {
			inner = "."
		}
		if gpurentOwn(name) || kept != nil && kept(full) {
			return skip(d)
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		l := local{rel: rel, name: name, inner: inner, full: full, kind: "file", size: info.Size(), mtime: info.ModTime(), ctime: homefiles.ChangeTime(info)}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			l.ino = uint64(st.Ino)
		}
		switch {
		case info.Mode().IsRegular():
		case info.Mode()&fs.ModeSymlink != 0:
			l.kind = "symlink"
			l.link, _ = os.Readlink(full)
		default:
			l.kind = info.Mode().Type().String()
		}
		files = append(files, l)
		return nil
	})
	if err != nil {
		return nil, i18n.Errorf("read %s: %w", dir, err)
	}
	return files, nil
}

// ErrChangedSinceCheck is wrapped by the refusal of a wipe whose
// checkpoint directory gained or changed files after the backup check
// judged it.
var ErrChangedSinceCheck = i18n.Errorf("changed since the backup check")

// Unchanged is nil while the checkpoint directory holds exactly the files
// the check judged, each the same file (inode) with the same size and
// times; else an error naming what appeared or changed. A file removed
// since is no loss.
func (b Backed) Unchanged(kept func(path string) bool) error {
	now, err := walkCkpt(b.Dir, kept)
	if err != nil {
		return err
	}
	var changed []string
	for _, f := range now {
		was, ok := b.judged[f.full]
		switch {
		case !ok:
			changed = append(changed, f.rel+" (new)")
		case !b.Same(f.full, f.ino, f.size, f.mtime, f.ctime) || was.kind != f.kind:
			changed = append(changed, f.rel+" (changed)")
		}
	}
	if len(changed) == 0 {
		return nil
	}
	var more i18n.Text
	if len(changed) > 5 {
		more = i18n.Textf(" and %d more", len(changed)-5)
		changed = changed[:5]
	}
	return i18n.Errorf("%s %w: %s%s; run the check again once the directory is still", b.Dir, ErrChangedSinceCheck, strings.Join(changed, ", "), more)
}

// FrozenFor is Exec.Frozen for the directories bs judged.
func FrozenFor(bs []Backed) func(path string, ino uint64, size int64, mtime, ctime time.Time) (frozen, same bool) {
	return func(path string, ino uint64, size int64, mtime, ctime time.Time) (bool, bool) {
		for _, b := range bs {
			if !within(path, b.Dir) || path == b.Dir {
				continue
			}
			// gpurent's own files, which the check does not judge
			// (walkCkpt), go as the plan says.
			if name, _, _ := strings.Cut(strings.TrimPrefix(path, b.Dir+"/"), "/"); gpurentOwn(name) {
				return false, false
			}
			return true, b.Same(path, ino, size, mtime, ctime)
		}
		return false, false
	}
}

// Same reports whether the file at path is the one the check judged: the
// same inode, size and times.
func (b Backed) Same(path string, ino uint64, size int64, mtime, ctime time.Time) bool {
	was, ok := b.judged[path]
	return ok && was.ino == ino && was.size == size && was.mtime.Equal(mtime) && was.ctime.Equal(ctime)
}

// stateFileMax caps gpurent run's state file: it holds a run name and
// the committed checkpoints' names and ids, kilobytes in practice.
const stateFileMax = 16 << 20

// hashFile hashes a checkpoint file, opened without blocking and only if
// it is a regular file (one swapped for a FIFO since the scan would hang
// the check).
func hashFile(path string) (string, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", i18n.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
