//go:build unix && !linux

package wipe

import (
	"context"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/gpurent/gpurent/internal/homefiles"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// fileID identifies an entry between the plan and its removal; see the
// Linux version. Off Linux there is no mount id.
type fileID struct {
	Dev, Ino, Mnt uint64
	Mode          uint32
}

func (id fileID) otherMount(dir fileID) bool { return id.Dev != dir.Dev }
func (id fileID) isDir() bool                { return fs.FileMode(id.Mode).IsDir() }
func (id fileID) isRegular() bool            { return fs.FileMode(id.Mode).IsRegular() }
func (id fileID) isSymlink() bool            { return fs.FileMode(id.Mode)&fs.ModeSymlink != 0 }

// entry is what Lstat says of one entry; see the Linux version.
type entry struct {
	id           fileID
	size         int64
	nlink        uint64
	mtime, ctime time.Time
}

func identify(path string) (entry, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return entry{}, err
	}
	e := entry{id: fileID{Mode: uint32(st.Mode().Type())}, size: st.Size(), nlink: 1, mtime: st.ModTime(), ctime: homefiles.ChangeTime(st)}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		e.id.Dev, e.id.Ino, e.nlink = uint64(s.Dev), uint64(s.Ino), uint64(s.Nlink)
	}
	return e, nil
}

// remove: wipe deletes on the rented Linux machine only; elsewhere it
// plans (a dry run shows what it would do) but touches nothing.
func (x Exec) remove(_ context.Context, res *Result) {
	res.Status, res.Error = Failed, i18n.Errorf("wipe removes files on Linux only: nothing was touched").Error()
}

type mountLine struct{}

func readMountinfo() []mountLine { return nil }

// aliases: off Linux no mount table tells where a bind mount comes from.
func aliases(string, []mountLine) []string { return nil }

// openRegular opens path for reading if it is a regular file, not
// following a symlink (see the Linux version).
func openRegular(path string) (*os.File, error) {
	f, _, err := userfile.OpenNoFollow(path)
	return f, err
}
