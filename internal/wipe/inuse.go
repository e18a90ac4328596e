package wipe

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Holder is a running process that uses a path: a file it holds open, its
// working directory, its executable, or a unix socket it has bound.
type Holder struct {
	Path string
	PID  int
	Comm string
}

func (h Holder) String() string { return fmt.Sprintf("PID %d (%s)", h.PID, h.Comm) }

// procHolders lists the paths that running processes other than self hold,
// from proc (/proc): each process's cwd, exe and fd links, with socket
// fds named by the path /proc/net/unix gives their inode. Processes it may
// not read (another user's, without privilege) are left out; so is a file
// already deleted. Off Linux there is no /proc and the list is empty.
func procHolders(proc string, self int) []Holder {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	sockets := unixSockets(filepath.Join(proc, "net", "unix"))
	var out []Holder
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join(proc, e.Name())
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		add := func(p string) {
			if strings.HasPrefix(p, "/") && !strings.HasSuffix(p, " (deleted)") {
				out = append(out, Holder{Path: p, PID: pid, Comm: strings.TrimSpace(string(comm))})
			}
		}
		for _, l := range []string{"cwd", "exe"} {
			if p, err := os.Readlink(filepath.Join(dir, l)); err == nil {
				add(p)
			}
		}
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			p, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil {
				continue
			}
			if inode, ok := strings.CutPrefix(p, "socket:["); ok {
				p = sockets[strings.TrimSuffix(inode, "]")]
			}
			add(p)
		}
	}
	return out
}

// unixSockets maps the inode of each bound unix socket to its path, from
// /proc/net/unix ("Num RefCount Protocol Flags Type St Inode Path").
func unixSockets(path string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 && strings.HasPrefix(fields[7], "/") {
			out[fields[6]] = fields[7]
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
