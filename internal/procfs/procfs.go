// Package procfs reads what Linux's /proc and /sys/fs/cgroup say about
// running processes: the files, directories and sockets each one holds, and
// the memory its cgroup (the container, on a rented box) may use. audit
// names the program behind a listening port with it, wipe keeps the temp
// files a running program still uses, bench judges the RAM a container
// really has (/proc/meminfo shows the host's) and run tells an
// out-of-memory kill from a crash. Off Linux there is no /proc and every
// answer is "nothing known", never an error.
package procfs

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is one process as /proc shows it to this user: another user's
// cwd, exe and fds are unreadable without privilege and stay empty.
type Process struct {
	PID  int
	Comm string // the command name, at most 15 bytes
	Cwd  string
	Exe  string
	// FDs are the fd link targets: a path, "socket:[INODE]", "pipe:[...]",
	// "anon_inode:..."; a deleted file's path ends in " (deleted)".
	FDs []string
	// Root is the process's root directory (a chroot, a container's).
	Root string
}

// Processes lists the processes under proc ("/proc"; tests give a fake
// tree), in directory order.
func Processes(proc string) []Process {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return nil
	}
	var out []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(proc, e.Name())
		p := Process{PID: pid}
		if b, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil {
			p.Comm = strings.TrimSpace(string(b))
		}
		p.Cwd, _ = os.Readlink(filepath.Join(dir, "cwd"))
		p.Exe, _ = os.Readlink(filepath.Join(dir, "exe"))
		p.Root, _ = os.Readlink(filepath.Join(dir, "root"))
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			if t, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil {
				p.FDs = append(p.FDs, t)
			}
		}
		out = append(out, p)
	}
	return out
}

// SocketInode is the inode of an fd link "socket:[INODE]", and false for
// any other link.
func SocketInode(link string) (uint64, bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64)
	return n, err == nil
}

// UnixSockets maps the inode of each unix socket bound to a path to that
// path, from proc/net/unix; abstract and unbound sockets have none.
func UnixSockets(proc string) map[uint64]string {
	f, err := os.Open(filepath.Join(proc, "net", "unix"))
	if err != nil {
		return map[uint64]string{}
	}
	defer f.Close()
	return ParseUnixSockets(f)
}

// ParseUnixSockets reads the /proc/net/unix table: "Num RefCount Protocol
// Flags Type St Inode Path", the path absent for unbound sockets and
// starting with "@" for abstract ones.
func ParseUnixSockets(r io.Reader) map[uint64]string {
	out := map[uint64]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// Seven fields, then the path, which may hold spaces.
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		rest := sc.Text()
		for i := 0; i < 7; i++ {
			rest = strings.TrimLeft(rest, " ")
			rest = rest[strings.IndexByte(rest, ' ')+1:]
		}
		path := strings.TrimLeft(rest, " ")
		if !strings.HasPrefix(path, "/") {
			continue
		}
		if n, err := strconv.ParseUint(f[6], 10, 64); err == nil {
			out[n] = path
		}
	}
	return out
}
