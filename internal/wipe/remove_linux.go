//go:build linux

package wipe

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
	"golang.org/x/sys/unix"
)

// remover carries out one path item. Everything is done through directory
// fds, one component at a time, never following a symlink: the item's
// directory is reached without links and must be the one the plan saw;
// the item must be the entry the plan identified (device, inode, type,
// mount); each entry below is opened only if it is what the walk just
// described, and an entry on another mount (a file system, or a bind
// mount of a file or directory, made before or after the plan) is left
// in place and never entered, overwritten or unlinked.
type remover struct {
	x    Exec
	ctx  context.Context
	res  *Result
	keep map[string]bool // the plan's kept paths inside the item
	errs []error
	// opened are the directories made writable to empty them, with the
	// mode to give back to any that stays.
	opened map[int]uint32
}

func (r *remover) fail(err error) {
	r.res.Left++
	if len(r.errs) < 5 {
		r.errs = append(r.errs, err)
	}
}

// leadsToKept: path is a directory holding something kept, which stays
// with it.
func (r *remover) leadsToKept(path string) bool {
	for k := range r.keep {
		if strings.HasPrefix(k, path+"/") {
			return true
		}
	}
	return false
}

func (x Exec) remove(ctx context.Context, res *Result) {
	r := &remover{x: x, ctx: ctx, res: res, keep: map[string]bool{}, opened: map[int]uint32{}}
	for _, k := range res.Keep {
		r.keep[k] = true
	}
	kept := r.removeItem()
	switch {
	case len(r.errs) > 0:
		res.Status, res.Error = Failed, errors.Join(r.errs...).Error()
	case kept && !res.MountPoint && len(res.Kept) == 0:
		res.Status, res.Error = Failed, "still present after removal"
	default:
		res.Status = Removed
	}
}

// removeItem removes the item and reports whether it stays (a mount
// point, or a directory holding what is kept).
func (r *remover) removeItem() bool {
	res := r.res
	if !res.id.known() {
		r.fail(i18n.Errorf("%s: not identified when the plan was made: left as it is", res.Path))
		return true
	}
	dir, base := filepath.Dir(res.Path), filepath.Base(res.Path)
	pfd, err := openDirPath(dir)
	if err != nil {
		r.fail(i18n.Errorf("%s: left as it is: %w", res.Path, err))
		return true
	}
	defer unix.Close(pfd)
	if got, err := statAt(pfd, ""); err != nil || !got.id.same(res.parent) {
		r.fail(i18n.Errorf("%s: its directory %s %w", res.Path, dir, errChanged))
		return true
	}
	cur, err := statAt(pfd, base)
	if err == unix.ENOENT {
		return false // gone already: nothing left to remove
	}
	if err != nil {
		r.fail(i18n.Errorf("%s: %w", res.Path, err))
		return true
	}
	if !cur.id.same(res.id) || !cur.id.isDir() && cur.id.otherMount(res.parent) {
		r.fail(i18n.Errorf("%s %w", res.Path, errChanged))
		return true
	}
	if cur.id.isDir() {
		if r.clearDir(pfd, base, cur.id, res.Path) || res.MountPoint {
			return true
		}
		// The item's directory is outside the item: never made writable.
		if err := r.unlink(pfd, base, res.Path, unix.AT_REMOVEDIR, 0); err != nil {
			r.fail(err)
			return true
		}
		return false
	}
	r.removeFile(pfd, base, res.Path, cur, 0)
	return false
}

// clearDir removes what is inside the directory name of dirfd, which must
// be want, and reports whether anything stays in it: something kept, a
// mount, or what could not be removed. Entries are judged against the
// directory's own mount, so a mount point named as an item is emptied.
func (r *remover) clearDir(dirfd int, name string, want fileID, path string) bool {
	fd, err := openChecked(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, want)
	if err != nil {
		r.fail(i18n.Errorf("%s: %w", path, err))
		return true
	}
	defer unix.Close(fd)
	self, err := statAt(fd, "")
	if err != nil {
		r.fail(i18n.Errorf("%s: %w", path, err))
		return true
	}
	stays := false
	defer func() {
		// A directory made writable that stays anyway (something kept in
		// it, something that would not go) gets its mode back.
		if mode, ok := r.opened[fd]; ok {
			if stays {
				unix.Fchmod(fd, mode)
			}
			delete(r.opened, fd)
		}
	}()
	names, err := readNames(fd)
	if err != nil {
		r.fail(i18n.Errorf("%s: %w", path, err))
		stays = true
		return true
	}
	for _, n := range names {
		if err := r.ctx.Err(); err != nil {
			r.fail(i18n.Errorf("interrupted: %w", err))
			stays = true
			return true
		}
		p := path + "/" + n
		e, err := statAt(fd, n)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			r.fail(i18n.Errorf("%s: %w", p, err))
			stays = true
			continue
		}
		if r.keep[p] || e.id.otherMount(self.id) || r.res.keepIDs[devIno{e.id.Dev, e.id.Ino}] != "" {
			r.res.Kept = append(r.res.Kept, p)
			stays = true
			continue
		}
		if e.id.isDir() {
			if r.clearDir(fd, n, e.id, p) || r.leadsToKept(p) {
				stays = true
				continue
			}
			if err := r.unlink(fd, n, p, unix.AT_REMOVEDIR, self.mode); err != nil {
				r.fail(err)
				stays = true
			}
			continue
		}
		if !r.removeFile(fd, n, p, e, self.mode) {
			stays = true
		}
	}
	return stays
}

// removeFile overwrites a regular file where the plan says so and unlinks
// any non-directory; it reports whether the entry is gone.
func (r *remover) removeFile(dirfd int, name, path string, e entry, dirMode uint32) bool {
	res := r.res
	if r.x.Frozen != nil {
		if frozen, same := r.x.Frozen(path, e.id.Ino, e.size, e.mtime, e.ctime); frozen && !same {
			r.fail(i18n.Errorf("%s appeared or changed after the backup check: left in place", path))
			return false
		}
	}
	if e.id.isRegular() && res.Overwrite {
		n, err := overwriteAt(dirfd, name, e)
		res.Overwritten += n
		switch {
		case errors.Is(err, errLinked):
			res.NotOverwritten++
		case err != nil:
			// Never unlink what could not be overwritten and checked:
			// it may not be the file the walk saw.
			r.fail(i18n.Errorf("overwrite %s: %w", path, err))
			return false
		}
	}
	if err := r.unlink(dirfd, name, path, 0, dirMode); err != nil {
		r.fail(err)
		return false
	}
	if e.id.isRegular() && e.nlink == 1 {
		res.Freed += min(e.size, e.blocks) // a linked file's blocks stay in use; a sparse file's holes were never used
	}
	return true
}

// unlink removes name from dirfd after the test hook. dirMode, when not
// zero, is the permission bits of the directory, which lies inside the
// item: a read-only one is made writable once (clearDir gives the mode
// back if the directory stays).
func (r *remover) unlink(dirfd int, name, path string, flags int, dirMode uint32) error {
	if r.x.BeforeRemove != nil {
		if err := r.x.BeforeRemove(path); err != nil {
			return i18n.Errorf("remove %s: %w", path, err)
		}
	}
	err := unix.Unlinkat(dirfd, name, flags)
	if _, done := r.opened[dirfd]; (err == unix.EACCES || err == unix.EPERM) && dirMode != 0 && dirMode&0o700 != 0o700 && !done && unix.Fchmod(dirfd, 0o700) == nil {
		r.opened[dirfd] = dirMode
		err = unix.Unlinkat(dirfd, name, flags)
	}
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return i18n.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// errLinked: the file has other hard links, so it was not overwritten.
var errLinked = i18n.Errorf("other hard links share this file's data")

// overwriteAt writes random bytes over the allocated extents of a regular
// file in place, and syncs: once is what NIST SP 800-88 asks of Clear by
// overwriting. The file is opened without following a symlink and only if
// it is the entry e describes, on the same mount (a file bind-mounted
// there since is refused, not written through); a read-only file of ours
// is made writable first. A file with other hard links is left as it is,
// mode included (errLinked): its data belongs to names outside the plan
// too, such as the objects a local git clone shares with the repository
// it came from. The link count is read again from the open file, so a
// link made since e was taken is seen before a byte is written.
func overwriteAt(dirfd int, name string, e entry) (int64, error) {
	if e.nlink > 1 {
		return 0, errLinked
	}
	fd, err := openChecked(dirfd, name, unix.O_WRONLY, e.id)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	now, err := statAt(fd, "")
	if err != nil {
		return 0, err
	}
	if now.nlink > 1 {
		return 0, errLinked
	}
	return overwriteFD(fd, now.size)
}
