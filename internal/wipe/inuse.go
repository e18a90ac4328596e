//go:build unix

package wipe

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/mounts"
	"github.com/gpurent/gpurent/internal/procfs"
)

// Holder is something running that uses a path: a process (a file it
// holds open or has mapped, its working or root directory, its executable,
// or a unix socket it has bound), or, with PID 0, the kernel (a loop
// device's backing file, an active swap file).
type Holder struct {
	Path string
	PID  int
	Comm string
	// ID is the file's device and inode, where known: a program may reach
	// the file through another name (a bind mount, a container's volume,
	// another mount namespace), which only the identity tells.
	ID devIno
}

// devIno identifies a file whatever name reaches it.
type devIno struct{ Dev, Ino uint64 }

func (d devIno) known() bool { return d.Ino != 0 }

func idOf(info os.FileInfo) devIno {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return devIno{uint64(st.Dev), uint64(st.Ino)}
	}
	return devIno{}
}

func (h Holder) String() string {
	if h.PID == 0 {
		return h.Comm
	}
	return fmt.Sprintf("PID %d (%s)", h.PID, h.Comm)
}

// procHolders lists the paths that running processes other than self hold,
// from proc (/proc): each process's cwd, exe, root, mapped files and fd
// links, with socket fds named by the path they are bound to, each with
// the identity of the file the link leads to (stat through /proc's links,
// which reach the file in whatever mount namespace it was opened). Then
// the kernel's own users: loop devices' backing files and swap files.
// Processes it may not read (another user's, without privilege) are left
// out; so is a file already deleted.
func procHolders(proc string, self int) []Holder {
	sockets := procfs.UnixSockets(proc)
	var out []Holder
	for _, p := range procfs.Processes(proc) {
		if p.PID == self {
			continue
		}
		dir := filepath.Join(proc, strconv.Itoa(p.PID))
		add := func(path, link string) {
			if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, " (deleted)") {
				return
			}
			h := Holder{Path: path, PID: p.PID, Comm: p.Comm}
			if link != "" {
				if info, err := os.Stat(link); err == nil {
					h.ID = idOf(info)
				}
			}
			out = append(out, h)
		}
		add(p.Cwd, filepath.Join(dir, "cwd"))
		add(p.Exe, filepath.Join(dir, "exe"))
		if p.Root != "/" {
			add(p.Root, filepath.Join(dir, "root"))
		}
		for _, m := range mapped(filepath.Join(dir, "maps")) {
			out = append(out, Holder{Path: m.path, PID: p.PID, Comm: p.Comm, ID: m.id})
		}
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			link := filepath.Join(dir, "fd", fd.Name())
			target, err := os.Readlink(link)
			if err != nil {
				continue
			}
			if inode, ok := procfs.SocketInode(target); ok {
				add(sockets[inode], "") // the socket's path; its fd is sockfs's
				continue
			}
			add(target, link)
		}
	}
	return append(out, kernelHolders(proc)...)
}

type mapping struct {
	path string
	id   devIno
}

// mapped reads a maps file: each mapped file once, with the device and
// inode the kernel gives for it (so a file mapped through another name is
// still known).
func mapped(path string) []mapping {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []mapping
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// address perms offset dev(major:minor, hex) inode path
		fl := strings.SplitN(sc.Text(), " ", 6)
		if len(fl) < 6 {
			continue
		}
		p := strings.TrimLeft(fl[5], " ")
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") || seen[p] {
			continue
		}
		seen[p] = true
		m := mapping{path: p}
		maj, min, ok := strings.Cut(fl[3], ":")
		a, err1 := strconv.ParseUint(maj, 16, 32)
		b, err2 := strconv.ParseUint(min, 16, 32)
		ino, err3 := strconv.ParseUint(fl[4], 10, 64)
		if ok && err1 == nil && err2 == nil && err3 == nil && ino != 0 {
			m.id = devIno{unix.Mkdev(uint32(a), uint32(b)), ino}
		}
		out = append(out, m)
	}
	return out
}

// kernelHolders are the files the kernel itself uses: a loop device's
// backing file (a mounted disk image: overwriting it corrupts what is
// mounted), from sys/block/loop*/loop/backing_file, and active swap
// files, from proc/swaps. proc is ".../proc"; sys beside it.
func kernelHolders(proc string) []Holder {
	var out []Holder
	add := func(path, what string) {
		path = strings.TrimSuffix(path, " (deleted)")
		if !strings.HasPrefix(path, "/") {
			return
		}
		h := Holder{Path: path, Comm: what}
		if info, err := os.Stat(path); err == nil {
			h.ID = idOf(info)
		}
		out = append(out, h)
	}
	sys := filepath.Join(filepath.Dir(proc), "sys")
	loops, _ := filepath.Glob(filepath.Join(sys, "block", "loop*", "loop", "backing_file"))
	for _, l := range loops {
		if b, err := os.ReadFile(l); err == nil {
			add(strings.TrimSpace(string(b)), filepath.Base(filepath.Dir(filepath.Dir(l)))+" (a loop device)")
		}
	}
	if f, err := os.Open(filepath.Join(proc, "swaps")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if fl := strings.Fields(sc.Text()); len(fl) >= 2 && fl[1] == "file" {
				add(mounts.Unescape(fl[0]), "swap")
			}
		}
	}
	return out
}

// holderIndex finds the holders of a path and what is inside it by name,
// in the time of a binary search: a busy machine has thousands of
// processes, each with hundreds of open and mapped files.
type holderIndex []Holder

func indexHolders(hs []Holder) holderIndex {
	out := append(holderIndex(nil), hs...)
	slices.SortFunc(out, func(a, b Holder) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// by lists the holders of path or of anything inside it.
func (x holderIndex) by(path string) []Holder {
	i, _ := slices.BinarySearchFunc(x, path, func(h Holder, p string) int { return strings.Compare(h.Path, p) })
	var out []Holder
	for ; i < len(x) && strings.HasPrefix(x[i].Path, path); i++ {
		if within(x[i].Path, path) {
			out = append(out, x[i])
		}
	}
	return out
}

// describeHolders names the first holder and counts the other processes.
func describeHolders(hs []Holder) i18n.Text {
	pids := map[int]bool{}
	for _, h := range hs {
		pids[h.PID] = true
	}
	first := i18n.Plain(hs[0].String())
	if n := len(pids) - 1; n > 0 {
		return i18n.Textf("%s%s", first, i18n.Plural(n, " and %d other process", " and %d other processes"))
	}
	return first
}
