package audit

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/procfs"
)

// Listener is a socket waiting for connections (TCP) or datagrams (UDP).
type Listener struct {
	Proto   string `json:"proto"` // tcp, tcp6, udp, udp6
	Addr    string `json:"addr"`
	Port    int    `json:"port"`
	UID     int    `json:"uid"`
	User    string `json:"user"`
	PID     int    `json:"pid,omitempty"` // 0 when the owner could not be seen
	Process string `json:"process,omitempty"`
	inode   uint64
}

// Loopback reports whether only this machine can reach the socket.
func (l Listener) Loopback() bool {
	a, err := netip.ParseAddr(l.Addr)
	return err == nil && a.Unmap().IsLoopback()
}

// listeners reads the kernel's socket tables: TCP sockets in LISTEN (0A)
// and UDP sockets not connected to a peer (state 07, remote port 0).
func listeners(e Env, users passwd, unseen func(string)) []Listener {
	out := []Listener{}
	read := 0
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		b, err := os.ReadFile(e.path("proc/net/" + proto))
		if err != nil {
			continue
		}
		read++
		out = append(out, parseSockets(proto, string(b))...)
	}
	if read == 0 {
		unseen(i18n.Key("listening sockets: no /proc/net/tcp"))
		return out
	}
	owners := socketOwners(e)
	seen := map[string]bool{}
	var uniq []Listener
	for _, l := range out {
		l.User = users.name(l.UID)
		if o, ok := owners[l.inode]; ok {
			l.PID, l.Process = o.pid, o.name
		}
		key := fmt.Sprintf("%s|%s|%d|%d", l.Proto, l.Addr, l.Port, l.PID)
		if !seen[key] {
			seen[key] = true
			uniq = append(uniq, l)
		}
	}
	sort.SliceStable(uniq, func(i, j int) bool { return uniq[i].Port < uniq[j].Port })
	if uniq == nil {
		uniq = []Listener{}
	}
	return uniq
}

// parseSockets reads one /proc/net table. Addresses are hex in the host's
// byte order, 32 bits at a time.
func parseSockets(proto, table string) []Listener {
	var out []Listener
	udp := strings.HasPrefix(proto, "udp")
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		state := f[3]
		if (!udp && state != "0A") || (udp && state != "07") {
			continue
		}
		addr, port, ok := hexAddr(f[1])
		if !ok {
			continue
		}
		if udp {
			if _, rport, ok := hexAddr(f[2]); !ok || rport != 0 {
				continue
			}
		}
		uid, _ := strconv.Atoi(f[7])
		inode, _ := strconv.ParseUint(f[9], 10, 64)
		out = append(out, Listener{Proto: proto, Addr: addr, Port: port, UID: uid, inode: inode})
	}
	return out
}

func hexAddr(s string) (string, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return "", 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return "", 0, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return "", 0, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap().String(), int(port), true
}

type owner struct {
	pid  int
	name string
}

// socketOwners maps socket inodes to the processes holding them, from the
// fd links in /proc; other users' fds are unreadable without root.
func socketOwners(e Env) map[uint64]owner {
	out := map[uint64]owner{}
	for _, p := range procfs.Processes(e.path("proc")) {
		for _, fd := range p.FDs {
			if ino, ok := procfs.SocketInode(fd); ok {
				if _, seen := out[ino]; !seen {
					out[ino] = owner{pid: p.PID, name: p.Comm}
				}
			}
		}
	}
	return out
}
