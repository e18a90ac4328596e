package audit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// passwd maps uids to names, from the root's /etc/passwd.
type passwd map[int]string

func readPasswd(root string) passwd {
	p := passwd{}
	b, err := userfile.Read(filepath.Join(root, "etc/passwd"), maxTable)
	if err != nil {
		return p
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 3 {
			continue
		}
		if uid, err := strconv.Atoi(f[2]); err == nil {
			if _, dup := p[uid]; !dup {
				p[uid] = f[0]
			}
		}
	}
	return p
}

func (p passwd) name(uid int) string {
	if n, ok := p[uid]; ok {
		return n
	}
	return "uid " + strconv.Itoa(uid)
}

// uidMin is the first uid of a person rather than a service: UID_MIN in
// /etc/login.defs, 1000 when it does not say.
func uidMin(root string) int {
	b, _ := userfile.Read(filepath.Join(root, "etc/login.defs"), maxConfig)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "UID_MIN" {
			if n, err := strconv.Atoi(f[1]); err == nil {
				return n
			}
		}
	}
	return 1000
}

// TenancyStart is when this tenancy began as far as the machine can
// tell: when PID 1 started (this boot, or this container), false where
// /proc does not say. A reboot during the tenancy moves it later.
func TenancyStart(root string) (time.Time, bool) { return pid1Start(root) }

// pid1Start is when PID 1 started: boot time (btime in /proc/stat) plus
// its start time in clock ticks (field 22 of /proc/1/stat, USER_HZ 100 on
// every Linux architecture gpurent ships for).
func pid1Start(root string) (time.Time, bool) {
	st, err := os.ReadFile(filepath.Join(root, "proc/stat"))
	if err != nil {
		return time.Time{}, false
	}
	var btime int64 = -1
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			btime, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	p1, err := os.ReadFile(filepath.Join(root, "proc/1/stat"))
	if err != nil || btime < 0 {
		return time.Time{}, false
	}
	// The command name may hold spaces and parentheses: fields count from
	// the last ')'.
	s := string(p1)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return time.Time{}, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return time.Time{}, false
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(btime, 0).Add(time.Duration(ticks) * 10 * time.Millisecond), true
}

// Login is one login session from utmp or wtmp.
type Login struct {
	User string    `json:"user"`
	Line string    `json:"line"`
	Host string    `json:"host,omitempty"`
	Time time.Time `json:"time"`
}

// utmp records (glibc, x86-64 and arm64): 384 bytes; ut_type at 0, ut_line
// at 8 (32), ut_user at 44 (32), ut_host at 76 (256), ut_tv.tv_sec at 340
// (int32).
const (
	utmpSize      = 384
	utUserProcess = 7
	recentLogins  = 7 * 24 * time.Hour
	wtmpTail      = 4 << 20 // read the newest 4 MiB of wtmp
)

func parseUtmp(b []byte) []Login {
	var out []Login
	for off := 0; off+utmpSize <= len(b); off += utmpSize {
		r := b[off : off+utmpSize]
		if int32(binary.LittleEndian.Uint32(r[0:])) != utUserProcess {
			continue
		}
		out = append(out, Login{
			Line: cstr(r[8:40]), User: cstr(r[44:76]), Host: cstr(r[76:332]),
			Time: time.Unix(int64(int32(binary.LittleEndian.Uint32(r[340:]))), 0).UTC(),
		})
	}
	return out
}

func cstr(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b))
}

// logins lists other users logged in now (utmp) and in the last week
// (wtmp).
func logins(e Env, me string, unseen func(string)) (now, recent []Login) {
	now, recent = []Login{}, []Login{}
	var utmp []byte
	for _, p := range []string{"run/utmp", "var/run/utmp"} {
		if b, err := userfile.Read(e.path(p), maxTable); err == nil {
			utmp = b
			break
		}
	}
	if utmp == nil {
		unseen(i18n.Key("current logins: no utmp (containers often have none)"))
	}
	for _, l := range parseUtmp(utmp) {
		if l.User != me {
			now = append(now, l)
		}
	}
	f, st, err := userfile.Open(e.path("var/log/wtmp"))
	if err != nil {
		unseen(i18n.Key("recent logins: no readable /var/log/wtmp"))
		return now, recent
	}
	defer f.Close()
	if st.Size() > wtmpTail {
		start := st.Size() - wtmpTail
		start -= start % utmpSize
		_, _ = f.Seek(start, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, wtmpTail))
	cut := e.Now().Add(-recentLogins)
	for _, l := range parseUtmp(b) {
		if l.User != me && l.Time.After(cut) {
			recent = append(recent, l)
		}
	}
	sort.Slice(recent, func(i, j int) bool { return recent[i].Time.After(recent[j].Time) })
	return now, recent
}

// Proc is another user's process. Only its name is kept: a command line
// can carry that user's secrets, which gpurent does not copy.
type Proc struct {
	PID  int    `json:"pid"`
	UID  int    `json:"uid"`
	User string `json:"user"`
	Name string `json:"name"`
}

// TokenArg is a process of yours with a token on its command line, which
// every account on the machine can read (ps, /proc/PID/cmdline) unless
// /proc hides other users' processes.
type TokenArg struct {
	PID  int    `json:"pid"`
	Name string `json:"name"`
	Kind string `json:"kind"` // as internal/tokens names it
}

// processes lists processes of people other than this user: uids from
// UID_MIN up, except nobody (65534); and this user's processes that carry
// a token on their command line.
func processes(e Env, users passwd, unseen func(string)) ([]Proc, []TokenArg, bool) {
	out := []Proc{}
	args := []TokenArg{}
	hidden := false
	if b, err := os.ReadFile(e.path("proc/self/mounts")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 4 && f[2] == "proc" && strings.Contains(f[3], "hidepid=") && !strings.Contains(f[3], "hidepid=0") {
				hidden = true
			}
		}
	}
	if hidden && e.UID != 0 {
		unseen(i18n.Key("other users' processes: /proc is mounted with hidepid"))
	}
	ents, err := os.ReadDir(e.path("proc"))
	if err != nil {
		unseen(i18n.Key("processes: no /proc"))
		return out, args, hidden
	}
	min := uidMin(e.Root)
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(e.path(fmt.Sprintf("proc/%d/status", pid)))
		if err != nil {
			continue
		}
		var name string
		uid := -1
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Name:"); ok {
				name = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					uid, _ = strconv.Atoi(f[0])
				}
			}
		}
		if uid == e.UID {
			if cmd, err := os.ReadFile(e.path(fmt.Sprintf("proc/%d/cmdline", pid))); err == nil {
				for _, kind := range tokenKinds(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})) {
					args = append(args, TokenArg{PID: pid, Name: name, Kind: kind})
				}
			}
			continue
		}
		if uid < min || uid == 65534 {
			continue
		}
		out = append(out, Proc{PID: pid, UID: uid, User: users.name(uid), Name: name})
	}
	return out, args, hidden
}
