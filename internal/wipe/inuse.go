//go:build unix

package wipe

import (
	"fmt"
	"strings"

	"github.com/gpurent/gpurent/internal/procfs"
)

// Holder is a running process that uses a path: a file it holds open or
// has mapped, its working or root directory, its executable, or a unix
// socket it has bound.
type Holder struct {
	Path string
	PID  int
	Comm string
}

func (h Holder) String() string { return fmt.Sprintf("PID %d (%s)", h.PID, h.Comm) }

// procHolders lists the paths that running processes other than self hold,
// from proc (/proc): each process's cwd, exe, root, mapped files and fd
// links, with socket fds named by the path they are bound to. Processes it may not read (another
// user's, without privilege) are left out; so is a file already deleted.
func procHolders(proc string, self int) []Holder {
	sockets := procfs.UnixSockets(proc)
	var out []Holder
	for _, p := range procfs.Processes(proc) {
		if p.PID == self {
			continue
		}
		add := func(path string) {
			if strings.HasPrefix(path, "/") && !strings.HasSuffix(path, " (deleted)") {
				out = append(out, Holder{Path: path, PID: p.PID, Comm: p.Comm})
			}
		}
		add(p.Cwd)
		add(p.Exe)
		if p.Root != "/" {
			add(p.Root)
		}
		for _, m := range p.Maps {
			add(m)
		}
		for _, fd := range p.FDs {
			if inode, ok := procfs.SocketInode(fd); ok {
				fd = sockets[inode]
			}
			add(fd)
		}
	}
	return out
}

// usedBy lists the holders of path or of anything inside it.
func usedBy(path string, holders []Holder) []Holder {
	var out []Holder
	for _, h := range holders {
		if within(h.Path, path) {
			out = append(out, h)
		}
	}
	return out
}

// describeHolders names the first holder and counts the other processes.
func describeHolders(hs []Holder) string {
	pids := map[int]bool{}
	for _, h := range hs {
		pids[h.PID] = true
	}
	s := hs[0].String()
	if n := len(pids) - 1; n > 0 {
		s += fmt.Sprintf(" and %d other process", n)
		if n > 1 {
			s += "es"
		}
	}
	return s
}
