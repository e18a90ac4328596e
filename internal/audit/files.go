package audit

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/homefiles"
	"github.com/gpurent/gpurent/internal/tokens"
	"github.com/gpurent/gpurent/internal/userfile"
)

// Audit reads files that their owner, or on a shared data disk anyone,
// can replace: a FIFO there would block a plain open forever and stop the
// audit, and /dev/zero would never end. Every such file is opened without
// blocking and read only as a regular file (package userfile), never past
// a cap that no real one reaches: these, and the history tail and the git
// config's 64 KiB below.
const (
	maxConfig = 1 << 20  // sshd_config, authorized_keys, login.defs: a few KiB
	maxTable  = 16 << 20 // /etc/passwd, utmp: a line or 384 bytes per account or session
)

// Secret is a credential file on this machine. Its content is never
// reported: a credential file is read no further than the few bytes that
// tell what it is, a history or git config only searched for a token's
// format.
type Secret struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Mode string `json:"mode"`
	Size int64  `json:"size"`
	// Target is where a credential that is a symlink points, the links
	// resolved; Mode, Size and the two below are then the target's.
	Target string `json:"target,omitempty"`
	// OthersCanRead: the file is world-readable and every directory above
	// it lets others through, so any account on the machine can read it.
	OthersCanRead bool `json:"others_can_read"`
	GroupCanRead  bool `json:"group_can_read"`
}

// tokensIn names the kinds of token in the last max bytes of path, where
// a history keeps what was typed most recently. A history that is no
// regular file (a FIFO, a link to /dev/null) holds none.
func tokensIn(path string, max int64) []string {
	f, st, err := userfile.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st.Size() > max {
		f.Seek(st.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, max))
	return tokenKinds(b)
}

// tokenKinds names the kinds of token in b (tokens.Kinds).
func tokenKinds(b []byte) []string { return tokens.Kinds(b) }

func secrets(e Env) []Secret {
	out := []Secret{}
	add := func(path, kind, marker string) {
		if !(homefiles.KnownSecret{Path: path, Marker: marker}).Present() {
			return
		}
		st, err := os.Lstat(path)
		if err != nil {
			return
		}
		s := Secret{Path: path, Kind: kind}
		dir := filepath.Dir(path)
		if st.Mode()&fs.ModeSymlink != 0 {
			// Judged as the file it leads to: others read that by its
			// own path, through its own directories.
			if s.Target, err = filepath.EvalSymlinks(path); err != nil {
				return
			}
			if st, err = os.Stat(s.Target); err != nil {
				return
			}
			dir = filepath.Dir(s.Target)
		}
		perm := st.Mode().Perm()
		s.Mode, s.Size = perm.String(), st.Size()
		s.OthersCanRead, s.GroupCanRead = perm&0o004 != 0 && traversable(dir), perm&0o040 != 0
		out = append(out, s)
	}
	for _, s := range homefiles.SecretFiles(e.Home, e.Lookup) {
		add(s.Path, s.Kind, s.Marker)
	}
	for _, p := range homefiles.PrivateKeys(e.Home) {
		add(p, "SSH private key", "")
	}
	for _, p := range homefiles.EnvFiles(e.Cwd) {
		add(p, "dotenv file (often API keys)", "")
	}
	for _, p := range gitConfigsWithPasswords(e) {
		add(p, gitRemoteKind, "")
	}
	for _, p := range homefiles.HistoryFiles(e.Home) {
		if found := tokensIn(p, 16<<20); len(found) > 0 {
			add(p, historyKind+" ("+strings.Join(found, ", ")+")", "")
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	seen := map[string]bool{}
	uniq := out[:0]
	for _, s := range out {
		if !seen[s.Path] {
			seen[s.Path] = true
			uniq = append(uniq, s)
		}
	}
	return uniq
}

// gitRemoteKind names a git config whose remote URL holds a secret, and
// historyKind a history that holds a token typed on a command line.
const (
	gitRemoteKind = "git remote URL holding a password or token"
	historyKind   = "history holding a token"
)

// remoteWithPassword is a remote URL in a git config that carries a
// password or token: https://user:TOKEN@host/..., or a token of a known
// format (internal/tokens) as the user name (git-clone(1): the URL's user
// information is kept in .git/config as typed). A user name alone is no
// secret and does not match.
var remoteWithPassword = regexp.MustCompile(`(?mi)^\s*(url|pushurl)\s*=\s*https?://([^/\s@:]*:[^/\s@]+|gh[pousr]_[A-Za-z0-9_]{36,}|github_pat_[A-Za-z0-9_]{22,}|hf_[A-Za-z0-9]{30,})@`)

// gitConfigsWithPasswords finds the repositories cloned with a token in
// their URL, a common way to clone private code onto a rented machine: in
// the working directory, the home and the data directories, and one level
// below each. Others can write the data directories: a config there that
// is a symlink is not followed, nor a FIFO waited on.
func gitConfigsWithPasswords(e Env) []string {
	var out []string
	roots := []string{e.Cwd, e.Home}
	for _, d := range dataRoots() {
		if d != "/home" && d != "/mnt" {
			roots = append(roots, e.path(d))
		}
	}
	seen := map[string]bool{}
	for _, r := range roots {
		if r == "" {
			continue
		}
		cands := []string{filepath.Join(r, ".git", "config")}
		if m, err := filepath.Glob(filepath.Join(r, "*", ".git", "config")); err == nil {
			cands = append(cands, m...)
		}
		for _, c := range cands {
			if seen[c] {
				continue
			}
			seen[c] = true
			f, _, err := userfile.OpenNoFollow(c)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(io.LimitReader(f, 64<<10))
			f.Close()
			if remoteWithPassword.Match(b) {
				out = append(out, c)
			}
		}
	}
	return out
}

// OpenDir is a directory of yours that any account on the machine can
// list (r) and enter (x), through parents that let it pass: what is below
// it is theirs to read unless each file says otherwise.
type OpenDir struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
}

// openDirs looks at your home, the working directory and the data
// directories rented machines use (dataRoots, but /home and /mnt, which
// hold others' homes and mounts), where owned by you.
func openDirs(e Env) []OpenDir {
	out := []OpenDir{}
	seen := map[string]bool{}
	cands := []string{e.Home, e.Cwd}
	for _, d := range dataRoots() {
		if d != "/home" && d != "/mnt" {
			cands = append(cands, e.path(d))
		}
	}
	for _, d := range cands {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			continue
		}
		if uid, ok := ownerUID(st); !ok || uid != e.UID {
			continue
		}
		if perm := st.Mode().Perm(); perm&0o005 == 0o005 && traversable(filepath.Dir(d)) {
			out = append(out, OpenDir{Path: d, Mode: st.Mode().String()})
		}
	}
	return out
}

// traversable: every directory from dir up to / lets others pass (o+x).
func traversable(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// Leftover is a top-level entry of a home, data or temp directory that
// someone other than this tenant left: owned by another user, or (outside
// the home) untouched since before this tenancy began.
type Leftover struct {
	Path   string    `json:"path"`
	Where  string    `json:"where"` // home, data, temp
	Bytes  int64     `json:"bytes"`
	Files  int       `json:"files"`
	Owners []string  `json:"owners,omitempty"` // other users owning files inside
	Newest time.Time `json:"newest"`           // the newest modification time inside
	// Old: nothing inside changed since the tenancy began, by the change
	// time (ctime), which unpacking an archive or cp -p cannot set back as
	// they set the modification time: data the tenant unpacked today with
	// last year's times is not taken for someone else's.
	Old     bool `json:"old"`
	Partial bool `json:"partial,omitempty"`

	changed time.Time
}

type walkBudget struct {
	deadline time.Time
	left     int
}

func (b *walkBudget) spend() bool {
	b.left--
	return b.left >= 0 && (b.left%256 != 0 || time.Now().Before(b.deadline))
}

// leftovers walks the home, data and temp directories, one subtree per
// top-level entry, within the time budget. In the home only other users'
// files count: files older than the tenancy there are mostly the image's
// own (conda, dotfiles) and would bury the rest.
func leftovers(e Env, since time.Time, users passwd) ([]Leftover, string) {
	b := &walkBudget{deadline: time.Now().Add(e.Budget), left: 500000}
	skel := map[string]bool{}
	if ents, err := os.ReadDir(e.path("etc/skel")); err == nil {
		for _, d := range ents {
			skel[d.Name()] = true
		}
	}
	type root struct{ path, where string }
	var roots []root
	if e.Home != "" {
		roots = append(roots, root{e.Home, "home"})
	}
	for _, p := range dataRoots() {
		roots = append(roots, root{e.path(p), "data"})
	}
	for _, p := range e.DataDirs {
		roots = append(roots, root{p, "data"})
	}
	for _, p := range tempRoots() {
		roots = append(roots, root{e.path(p), "temp"})
	}
	out := []Leftover{}
	partial := ""
	done := map[string]bool{}
	for _, r := range roots {
		ents, err := os.ReadDir(r.path)
		if err != nil {
			continue
		}
		for _, d := range ents {
			p := filepath.Join(r.path, d.Name())
			if done[p] || p == e.Home || strings.HasPrefix(e.Home+"/", p+"/") || (r.where == "home" && skel[d.Name()]) {
				continue
			}
			done[p] = true
			l := Leftover{Path: p, Where: r.where}
			owners := map[int]bool{}
			measure := func(info fs.FileInfo) {
				if info.Mode().IsRegular() {
					l.Bytes += info.Size()
					l.Files++
				}
				if info.ModTime().After(l.Newest) {
					l.Newest = info.ModTime()
				}
				if c := homefiles.ChangeTime(info); c.After(l.changed) {
					l.changed = c
				}
				if uid, ok := ownerUID(info); ok && uid != e.UID && uid != 0 {
					owners[uid] = true
				}
			}
			ok := true
			if r.where == "home" {
				// Only ownership counts in the home, and the home holds the
				// big trees (toolchains, caches): look one level down, and
				// walk all of an entry only when someone else owns it.
				walkDepth(p, b, 1, measure)
				if len(owners) > 0 {
					l.Bytes, l.Files = 0, 0
					ok = walkDepth(p, b, -1, measure)
				}
			} else {
				ok = walkDepth(p, b, -1, measure)
			}
			l.Partial = !ok
			if !ok && partial == "" {
				partial = "the walk stopped at " + p + " (time budget); entries after it were not looked at"
			}
			for uid := range owners {
				l.Owners = append(l.Owners, users.name(uid))
			}
			sort.Strings(l.Owners)
			l.Old = !since.IsZero() && !l.changed.IsZero() && l.changed.Before(since) && r.where != "home"
			if len(l.Owners) > 0 || l.Old {
				l.Newest = l.Newest.UTC()
				out = append(out, l)
			}
			if !ok {
				sort.Slice(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
				return out, partial
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Bytes > out[j].Bytes })
	return out, partial
}

// walkDepth visits path and what lies below it, down to depth levels
// (negative: all), without following symlinks; it returns false when the
// budget ran out.
func walkDepth(path string, b *walkBudget, depth int, visit func(fs.FileInfo)) bool {
	ok := true
	base := strings.Count(path, string(filepath.Separator))
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: counted as what could be seen
		}
		if !b.spend() {
			ok = false
			return filepath.SkipAll
		}
		if info, err := d.Info(); err == nil {
			visit(info)
		}
		if depth >= 0 && d.IsDir() && strings.Count(p, string(filepath.Separator))-base >= depth {
			return filepath.SkipDir
		}
		return nil
	})
	return ok
}
