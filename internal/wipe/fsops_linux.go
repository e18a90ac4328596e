//go:build linux

package wipe

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/mounts"
)

// fileID identifies an entry between the plan and its removal. A path can
// be swapped after the plan (a symlink, a bind mount, another directory
// renamed into place); its device, inode and mount cannot be forged.
type fileID struct {
	Dev, Ino uint64
	// Mnt is the kernel's mount id (statx's STATX_MNT_ID, Linux 5.8): a
	// bind mount of the same file system has the same device but another
	// mount id. Zero where the kernel does not say; the device still tells
	// another file system.
	Mnt  uint64
	Mode uint32 // the type bits (S_IFMT)
}

func (id fileID) known() bool { return id.Ino != 0 }

// same: the entry is the one identified before.
func (id fileID) same(o fileID) bool {
	return id.Dev == o.Dev && id.Ino == o.Ino && id.Mode == o.Mode && (id.Mnt == 0 || o.Mnt == 0 || id.Mnt == o.Mnt)
}

// otherMount: an entry with this id, inside a directory with dir's, is on
// another mount: a file system or a bind mount (of a file or a directory)
// placed there.
func (id fileID) otherMount(dir fileID) bool {
	return id.Dev != dir.Dev || (id.Mnt != 0 && dir.Mnt != 0 && id.Mnt != dir.Mnt)
}

func (id fileID) isDir() bool     { return id.Mode == unix.S_IFDIR }
func (id fileID) isRegular() bool { return id.Mode == unix.S_IFREG }
func (id fileID) isSymlink() bool { return id.Mode == unix.S_IFLNK }

// entry is what statx says of one directory entry, not following it.
type entry struct {
	id     fileID
	mode   uint32 // permission bits, with setuid, setgid and sticky
	size   int64
	blocks int64 // allocated bytes
	nlink  uint32
	// The modification and change times, which the temp sweep dates by.
	mtime, ctime time.Time
}

const statxMask = unix.STATX_TYPE | unix.STATX_MODE | unix.STATX_INO | unix.STATX_NLINK | unix.STATX_SIZE | unix.STATX_BLOCKS |
	unix.STATX_MTIME | unix.STATX_CTIME | unix.STATX_MNT_ID

func fromStatx(sx *unix.Statx_t) entry {
	e := entry{
		id:     fileID{Dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), Ino: sx.Ino, Mode: uint32(sx.Mode) & unix.S_IFMT},
		mode:   uint32(sx.Mode) & 0o7777,
		size:   int64(sx.Size),
		blocks: int64(sx.Blocks) * 512,
		nlink:  sx.Nlink,
		mtime:  time.Unix(sx.Mtime.Sec, int64(sx.Mtime.Nsec)),
		ctime:  time.Unix(sx.Ctime.Sec, int64(sx.Ctime.Nsec)),
	}
	if sx.Mask&unix.STATX_MNT_ID != 0 {
		e.id.Mnt = sx.Mnt_id
	}
	return e
}

// statAt describes name in the directory dirfd without following a
// symlink or triggering an automount; name "" describes dirfd itself.
func statAt(dirfd int, name string) (entry, error) {
	var sx unix.Statx_t
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	for {
		err := unix.Statx(dirfd, name, flags, statxMask, &sx)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return entry{}, err
		}
		return fromStatx(&sx), nil
	}
}

// identify describes path, not following its last component.
func identify(path string) (entry, error) {
	e, err := statAt(unix.AT_FDCWD, path)
	if err != nil {
		return entry{}, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	return e, nil
}

// errSymlinkOnPath: a directory on the way to an item is a symlink now,
// which the plan's resolved path did not have.
var errSymlinkOnPath = i18n.Errorf("a directory on the way is now a symlink")

// openDirPath opens an absolute directory path one component at a time,
// never following a symlink: a directory swapped for a link after the plan
// stops the walk instead of leading elsewhere. The fd is O_PATH: enough to
// name entries (statx, openat, unlinkat) without read permission.
func openDirPath(path string) (int, error) {
	if !strings.HasPrefix(path, "/") {
		return -1, i18n.Errorf("%s: not an absolute path", path)
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	for _, c := range strings.Split(strings.Trim(path, "/"), "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			unix.Close(fd)
			return -1, i18n.Errorf("%s: .. in a resolved path", path)
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err == unix.ELOOP || err == unix.ENOTDIR {
			return -1, i18n.Errorf("%s: %w", path, errSymlinkOnPath)
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		fd = next
	}
	return fd, nil
}

// chmodFD sets the mode of what an O_PATH fd names through /proc's magic
// link to it: the inode the fd holds, never a symlink put in its place.
func chmodFD(fd int, mode uint32) error {
	return unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), mode, 0)
}

// openChecked opens name in dirfd without following a symlink and returns
// the fd only if it is the entry want describes (device, inode, type and
// mount): a bind mount or another file put there since it was looked at is
// refused (errChanged). A permission error is met once by making our own
// entry writable and readable (u+rw, and x for a directory), through an
// O_PATH fd that was checked the same way.
func openChecked(dirfd int, name string, flags int, want fileID) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
	if flags&unix.O_DIRECTORY == 0 {
		return openFileChecked(dirfd, name, flags, want)
	}
	// O_DIRECTORY refuses anything but a directory before any driver's
	// open runs; the identity is checked on the fd.
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err == unix.EACCES || err == unix.EPERM {
		if err := chmodChecked(dirfd, name, want); err != nil {
			return -1, err
		}
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	if err != nil {
		return -1, err
	}
	got, err := statAt(fd, "")
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	if !got.id.same(want) {
		unix.Close(fd)
		return -1, errChanged
	}
	return fd, nil
}

// openFileChecked opens a file that must be want without opening anything
// else first: an O_PATH fd (which runs no driver's open and does not wake
// a FIFO's reader) is checked, then reopened through /proc's link to it.
// Where /proc is not mounted the open fails; the file is then not written.
func openFileChecked(dirfd int, name string, flags int, want fileID) (int, error) {
	p, got, err := pathFD(dirfd, name)
	if err != nil {
		return -1, err
	}
	defer unix.Close(p)
	if !got.id.same(want) || !got.id.isRegular() {
		return -1, errChanged
	}
	flags &^= unix.O_NOFOLLOW // the link is /proc's, to this very file
	fd, err := reopen(p, flags, want)
	if err == unix.EACCES || err == unix.EPERM {
		if err := chmodFD(p, 0o600); err != nil {
			return -1, err
		}
		fd, err = reopen(p, flags, want)
	}
	return fd, err
}

// pathFD opens name in dirfd as an O_PATH fd, never following a symlink,
// and describes it: nothing is opened for reading or writing yet, so no
// driver's open runs and no FIFO's peer is woken.
func pathFD(dirfd int, name string) (int, entry, error) {
	p, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, entry{}, err
	}
	e, err := statAt(p, "")
	if err != nil {
		unix.Close(p)
		return -1, entry{}, err
	}
	return p, e, nil
}

// reopen opens what the O_PATH fd p holds with flags, through /proc's
// link to it, and returns the fd only if it is still want.
func reopen(p, flags int, want fileID) (int, error) {
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(p), flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return -1, err
	}
	if again, err := statAt(fd, ""); err != nil || !again.id.same(want) {
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		return -1, errChanged
	}
	return fd, nil
}
func chmodChecked(dirfd int, name string, want fileID) error {
	p, got, err := pathFD(dirfd, name)
	if err != nil {
		return err
	}
	defer unix.Close(p)
	if !got.id.same(want) {
		return errChanged
	}
	mode := uint32(0o600)
	if want.isDir() {
		mode = 0o700
	}
	return chmodFD(p, mode)
}

// errChanged: the entry is not the one the plan or the walk saw.
var errChanged = i18n.Errorf("changed since it was looked at (another file, a symlink or a mount is there now): left as it is")

// readNames lists a directory opened for reading.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	return f.Readdirnames(-1)
}

// overwriteFD writes random bytes over the allocated extents of the open
// regular file fd (SEEK_DATA/SEEK_HOLE): a sparse file's holes hold no
// data, and filling them would take disk space a full disk does not have
// and time for nothing. It syncs, and returns the bytes written.
func overwriteFD(fd int, size int64) (int64, error) {
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rand.Uint32())
	}
	src := rand.NewChaCha8(seed)
	buf := make([]byte, 1<<20)
	var written int64
	pos := int64(0)
	for pos < size {
		start, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if err == unix.ENXIO {
			break // no data past pos
		}
		if err == unix.EINVAL {
			start = pos // no SEEK_DATA here: treat it all as data
		} else if err != nil {
			return written, err
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err == unix.EINVAL {
			end = size
		} else if err != nil {
			return written, err
		}
		end = min(end, size)
		for off := start; off < end; {
			n := int(min(int64(len(buf)), end-off))
			if _, err := io.ReadFull(src, buf[:n]); err != nil {
				return written, err
			}
			w, err := unix.Pwrite(fd, buf[:n], off)
			if err != nil {
				return written, err
			}
			if w == 0 {
				return written, io.ErrShortWrite
			}
			off += int64(w)
			written += int64(w)
		}
		pos = end
	}
	return written, unix.Fsync(fd)
}

// mountLine is one line of /proc/self/mountinfo: a mount's id, its
// device, the directory of its file system it shows (root: "/" for a
// whole file system, a subdirectory for a bind mount of one) and where.
type mountLine struct {
	id         uint64
	dev        string
	root, path string
}

func readMountinfo() []mountLine {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []mountLine
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		id, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, mountLine{id: id, dev: f[2], root: mounts.Unescape(f[3]), path: mounts.Unescape(f[4])})
	}
	return out
}

// aliases are the other paths under which this mount namespace shows the
// entry at path: where it sits in its file system (its mount's root plus
// the rest of the path), seen through every mount of that file system
// whose root holds it. A bind mount of /etc/ssh at /data/sshcfg makes
// /data/sshcfg/x also /etc/ssh/x.
func aliases(path string, tab []mountLine) []string {
	e, err := identify(path)
	if err != nil || e.id.Mnt == 0 {
		return nil
	}
	var m *mountLine
	for i := range tab {
		if tab[i].id == e.id.Mnt {
			m = &tab[i]
		}
	}
	if m == nil || !within(path, m.path) && m.path != "/" {
		return nil
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(path, m.path), "/")
	inFS := filepath.Join(m.root, rel)
	var out []string
	for _, o := range tab {
		if o.dev != m.dev || !within(inFS, o.root) && o.root != "/" {
			continue
		}
		a := filepath.Join(o.path, strings.TrimPrefix(strings.TrimPrefix(inFS, o.root), "/"))
		if a != path {
			out = append(out, a)
		}
	}
	return out
}

// openRegular opens path for reading only if it is a regular file, and
// opens nothing else on the way: an O_PATH fd (no driver's open, no FIFO
// woken) is checked, not following a symlink, then reopened through
// /proc's link to it. A planted FIFO or device node (a tarball unpacked as
// root may hold one) is refused without being opened.
func openRegular(path string) (*os.File, error) {
	p, e, err := pathFD(unix.AT_FDCWD, path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(p)
	if !e.id.isRegular() {
		return nil, i18n.Errorf("%s is not a regular file", path)
	}
	fd, err := reopen(p, unix.O_RDONLY, e.id)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
