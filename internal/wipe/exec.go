//go:build unix

package wipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Statuses of a report item.
const (
	Planned = "planned"
	Removed = "removed"
	Failed  = "failed"
	NotRun  = "not-run"
)

// Result is what happened to one plan item.
type Result struct {
	Item
	Status      string `json:"status"`
	Freed       int64  `json:"freed"`       // bytes of files removed (not counting those with other hard links)
	Left        int    `json:"left"`        // entries that could not be removed
	Overwritten int64  `json:"overwritten"` // bytes overwritten before unlinking
	// NotOverwritten counts files only unlinked because other hard links
	// share their data (see Item.Linked); not a failure.
	NotOverwritten int `json:"not_overwritten"`
	// Kept are the paths inside the item left in place, with the
	// directories leading to them: the plan's (Item.Keep) and file
	// systems found mounted since the plan.
	Kept  []string `json:"kept,omitempty"`
	Error string   `json:"error,omitempty"`
}

// Report is the record of a wipe, saved after every item.
type Report struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	DryRun   bool      `json:"dry_run"`
	Complete bool      `json:"complete"` // every item was attempted
	Freed    int64     `json:"freed"`
	Failed   int       `json:"failed"`
	Items    []Result  `json:"items"`
	Warnings []string  `json:"warnings"`
}

// Exec is how a plan is carried out.
type Exec struct {
	// Save is called with the report after every item and at the end.
	Save func(*Report) error
	// Docker runs the docker CLI for image items.
	Docker func(ctx context.Context, args ...string) ([]byte, error)
	// BeforeRemove, when set, is called with each path about to be
	// removed; an error fails that removal. Tests inject faults with it.
	BeforeRemove func(path string) error
	// Done, when set, is told of each item as it finishes, for a person
	// watching a long wipe.
	Done func(Result)
	Now  func() time.Time
}

// DryRun is the report of a plan not carried out.
func DryRun(p *Plan, now time.Time) *Report {
	r := &Report{Started: now, Finished: now, DryRun: true, Items: []Result{}, Warnings: p.Warnings}
	for _, it := range p.Items {
		r.Items = append(r.Items, Result{Item: it, Status: Planned})
	}
	return r
}

// Run carries out the plan. A failing item does not stop the others; a
// cancelled context stops after the current file, and the report says
// which items were not run. The error is Save's, or the context's.
func Run(ctx context.Context, p *Plan, x Exec) (*Report, error) {
	if x.Now == nil {
		x.Now = time.Now
	}
	r := &Report{Started: x.Now().UTC(), Items: make([]Result, len(p.Items)), Warnings: p.Warnings}
	for i, it := range p.Items {
		r.Items[i] = Result{Item: it, Status: NotRun}
	}
	save := func() error {
		if x.Save == nil {
			return nil
		}
		return x.Save(r)
	}
	if err := save(); err != nil {
		return r, err
	}
	for i := range r.Items {
		res := &r.Items[i]
		if err := ctx.Err(); err != nil {
			r.Finished = x.Now().UTC()
			return r, errors.Join(err, save())
		}
		if res.Image != "" {
			x.docker(ctx, res)
		} else {
			x.remove(ctx, res)
		}
		r.Freed += res.Freed
		if res.Status == Failed {
			r.Failed++
		}
		if x.Done != nil {
			x.Done(*res)
		}
		if err := save(); err != nil {
			return r, err
		}
	}
	r.Complete = true
	r.Finished = x.Now().UTC()
	return r, save()
}

func (x Exec) docker(ctx context.Context, res *Result) {
	if x.Docker == nil {
		res.Status, res.Error = Failed, "no docker command"
		return
	}
	if out, err := x.Docker(ctx, "image", "rm", "--force", res.Image); err != nil {
		res.Status, res.Error = Failed, fmt.Sprintf("docker image rm: %v %s", err, firstLine(out))
		return
	}
	res.Status, res.Freed = Removed, res.Bytes
}

func firstLine(b []byte) string {
	s := string(b)
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// remove deletes one item. Directories are opened as an os.Root, so every
// operation below them stays inside them even if an entry is swapped for
// a symlink meanwhile; symlinks are unlinked, never followed.
func (x Exec) remove(ctx context.Context, res *Result) {
	var errs []error
	fail := func(err error) {
		res.Left++
		if len(errs) < 5 {
			errs = append(errs, err)
		}
	}
	keepRoot := res.MountPoint
	defer func() {
		if keepRoot {
			if ents, err := os.ReadDir(res.Path); err == nil && len(ents) > 0 && len(errs) == 0 && len(res.Kept) == 0 {
				errs = append(errs, fmt.Errorf("%d entries still in the mount point", len(ents)))
			}
			res.Status = Removed
			if len(errs) > 0 {
				res.Status, res.Error = Failed, errors.Join(errs...).Error()
			}
			return
		}
		if _, err := os.Lstat(res.Path); err == nil {
			res.Status = Failed
			if len(errs) == 0 {
				errs = append(errs, errors.New("still present after removal"))
			}
		} else if len(errs) == 0 {
			res.Status = Removed
		} else {
			res.Status = Failed
		}
		if len(errs) > 0 {
			res.Error = errors.Join(errs...).Error()
		}
	}()
	st, err := os.Lstat(res.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return // gone already: nothing left to remove
	}
	if err != nil {
		fail(err)
		return
	}
	if st.IsDir() {
		if res.Kept = x.removeTree(ctx, res, fail); len(res.Kept) > 0 {
			keepRoot = true
		}
	} else {
		if st.Mode().IsRegular() && res.Overwrite {
			n, err := overwrite(func(flag int) (*os.File, error) { return os.OpenFile(res.Path, flag, 0) },
				func() error { return os.Chmod(res.Path, 0o600) }, st)
			res.Overwritten += n
			switch {
			case errors.Is(err, errLinked):
				res.NotOverwritten++
			case err != nil:
				fail(fmt.Errorf("overwrite %s: %w", res.Path, err))
			}
		}
		if err := x.unlink(res.Path, func() error { return os.Remove(res.Path) }); err != nil {
			fail(err)
			return
		}
		if st.Mode().IsRegular() && links(st) == 1 {
			res.Freed += st.Size()
		}
		return
	}
	if keepRoot {
		return
	}
	if err := x.unlink(res.Path, func() error { return os.Remove(res.Path) }); err != nil && res.Left == 0 {
		fail(err)
	}
}

func (x Exec) unlink(path string, rm func() error) error {
	if x.BeforeRemove != nil {
		if err := x.BeforeRemove(path); err != nil {
			return fmt.Errorf("remove %s: %w", path, err)
		}
	}
	if err := rm(); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// removeTree removes what is inside res.Path, and returns what it left in
// place (see Result.Kept).
func (x Exec) removeTree(ctx context.Context, res *Result, fail func(error)) []string {
	root, err := os.OpenRoot(res.Path)
	if err != nil {
		fail(err)
		return nil
	}
	defer root.Close()
	type entry struct {
		rel  string
		info fs.FileInfo
	}
	rootInfo, err := root.Lstat(".")
	if err != nil {
		fail(err)
		return nil
	}
	// What stays: what the plan keeps (mounted file systems, --keep), and
	// a directory on another device (a file system mounted since).
	planned := map[string]bool{}
	for _, k := range res.Keep {
		if rel, err := filepath.Rel(res.Path, k); err == nil {
			planned[filepath.ToSlash(rel)] = true
		}
	}
	stays := func(rel string, d fs.DirEntry) bool {
		if planned[rel] {
			return true
		}
		if !d.IsDir() {
			return false
		}
		info, err := d.Info()
		return err == nil && !sameDevice(info, rootInfo)
	}
	// An unreadable directory of ours is opened up and the walk redone;
	// three passes cover nested ones without looping forever.
	var all []entry
	var kept []string
	for pass := 0; pass < 3; pass++ {
		all, kept = all[:0], kept[:0]
		opened := false
		var walkErrs []error
		_ = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				if d != nil && d.IsDir() && rel != "." && root.Chmod(rel, 0o700) == nil {
					opened = true
					return fs.SkipDir
				}
				walkErrs = append(walkErrs, err)
				return nil
			}
			if rel == "." {
				return nil
			}
			if stays(rel, d) {
				kept = append(kept, rel)
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if info, err := d.Info(); err == nil {
				all = append(all, entry{rel, info})
			}
			return nil
		})
		if !opened || pass == 2 {
			for _, err := range walkErrs {
				fail(err)
			}
			break
		}
	}
	// The directories leading to a kept mount stay, or it would be
	// removed with them (and a mounted one cannot be).
	all = slices.DeleteFunc(all, func(e entry) bool {
		return slices.ContainsFunc(kept, func(k string) bool { return strings.HasPrefix(k, e.rel+"/") })
	})
	var keptAbs []string
	for _, k := range kept {
		keptAbs = append(keptAbs, filepath.Join(res.Path, filepath.FromSlash(k)))
	}
	slices.Reverse(all) // children before their directory
	for _, e := range all {
		if ctx.Err() != nil {
			fail(fmt.Errorf("interrupted: %w", ctx.Err()))
			return keptAbs
		}
		full := filepath.Join(res.Path, e.rel)
		if e.info.Mode().IsRegular() && res.Overwrite {
			n, err := overwrite(func(flag int) (*os.File, error) { return root.OpenFile(e.rel, flag, 0) },
				func() error { return root.Chmod(e.rel, 0o600) }, e.info)
			res.Overwritten += n
			switch {
			case errors.Is(err, errLinked):
				res.NotOverwritten++
			case err != nil:
				fail(fmt.Errorf("overwrite %s: %w", full, err))
			}
		}
		err := x.unlink(full, func() error {
			err := root.Remove(e.rel)
			if errors.Is(err, fs.ErrPermission) {
				// A read-only directory of ours: let us write it, once.
				if dir := filepath.Dir(e.rel); dir != "." && root.Chmod(dir, 0o700) == nil {
					err = root.Remove(e.rel)
				}
			}
			return err
		})
		if err != nil {
			fail(err)
			continue
		}
		if e.info.Mode().IsRegular() && links(e.info) == 1 {
			res.Freed += e.info.Size() // a linked file's blocks stay in use
		}
	}
	return keptAbs
}

// errLinked: the file has other hard links, so it was not overwritten.
var errLinked = errors.New("other hard links share this file's data")

// overwrite writes size random bytes over a regular file, in place, and
// syncs: once is what NIST SP 800-88 asks of Clear by overwriting. The
// file is opened without following a symlink; a read-only file of ours is
// made writable first. A file with other hard links is left as it is,
// mode included (errLinked): its data belongs to names outside the plan
// too, such as the objects a local git clone shares with the repository it
// came from. The link count is read again from the open file, so a link
// made since info was taken is seen before a byte is written.
func overwrite(open func(flag int) (*os.File, error), chmod func() error, info fs.FileInfo) (int64, error) {
	if links(info) > 1 {
		return 0, errLinked
	}
	size := info.Size()
	flag := os.O_WRONLY | syscall.O_NOFOLLOW
	f, err := open(flag)
	if errors.Is(err, fs.ErrPermission) && chmod() == nil {
		f, err = open(flag)
	}
	if err != nil {
		return 0, err
	}
	if info, err := f.Stat(); err != nil || links(info) > 1 {
		f.Close()
		if err != nil {
			return 0, err
		}
		return 0, errLinked
	}
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rand.Uint32())
	}
	src := rand.NewChaCha8(seed)
	n, err := io.CopyBuffer(f, io.LimitReader(src, size), make([]byte, 1<<20))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}
