//go:build unix

package wipe

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpurent/gpurent/internal/i18n"
)

// resolveItem is the entry a path names, as the kernel would reach it:
// made absolute against cwd, with every symlink and ".." in its
// directories resolved, but not its last component. A symlink named as an
// item is the link itself, which is removed, never followed. The
// refusals judge what resolveItem returns, so neither a link, a "..", a
// relative HOME nor a bind of names can slip a system directory past them.
func resolveItem(p, cwd string) (string, error) {
	if p == "" {
		return "", os.ErrNotExist
	}
	if !filepath.IsAbs(p) {
		p = cwd + "/" + p
	}
	// A trailing slash, "." or ".." as the last component all name a
	// directory through whatever link leads there: resolve it whole.
	if strings.HasSuffix(p, "/") {
		return resolveFull(p, cwd)
	}
	i := strings.LastIndex(p, "/")
	dir, base := p[:i], p[i+1:]
	if base == "." || base == ".." {
		return resolveFull(p, cwd)
	}
	if dir == "" {
		dir = "/"
	}
	// EvalSymlinks applies ".." to what a link resolved to, as the kernel
	// does, not to the text before it as filepath.Clean would.
	rdir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(rdir) {
		return "", &os.PathError{Op: "resolve", Path: dir, Err: os.ErrInvalid}
	}
	return filepath.Join(rdir, base), nil
}

// resolveFull resolves every symlink in p, the last component's too.
func resolveFull(p, cwd string) (string, error) {
	if p == "" {
		return "", os.ErrNotExist
	}
	if !filepath.IsAbs(p) {
		p = cwd + "/" + p
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(r) {
		return "", &os.PathError{Op: "resolve", Path: p, Err: os.ErrInvalid}
	}
	return r, nil
}

// resolveMaybe resolves a path that may not exist yet (the report): as
// resolveItem where its directory exists, else its nearest existing
// ancestor resolved and the rest appended.
func resolveMaybe(p, cwd string) string {
	if r, err := resolveItem(p, cwd); err == nil {
		return r
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == "/" || dir == "." {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// System directories. Nothing at any depth under deepSystem is a wipe's
// to remove (packages, configuration, the kernel's views, the running
// system's state), except the entries of the temp directories. The
// shallow ones hold users' data: their entries can be named, the
// directories themselves cannot.
var (
	deepSystem = []string{"/bin", "/boot", "/dev", "/efi", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
		"/run", "/sbin", "/snap", "/sys", "/usr", "/var"}
	tempDirs      = []string{"/tmp", "/var/tmp", "/dev/shm"}
	shallowSystem = []string{"/", "/home", "/root", "/opt", "/srv", "/mnt", "/media", "/data", "/workspace", "/lost+found"}
)

// refusal says why a resolved path may never be a wipe item, or "".
// home is the resolved home; root, when not "/", is a fake root whose
// system directories are refused as well as the real ones.
func refusal(path, home, root string) i18n.Text {
	if path == home {
		return i18n.Textf("is your home directory")
	}
	if within(home, path) {
		return i18n.Textf("holds your home directory (%s)", home)
	}
	bases := []string{""}
	if root != "" && root != "/" {
		bases = append(bases, filepath.Clean(root))
	}
	for _, b := range bases {
		for _, d := range append(append(append([]string{}, shallowSystem...), tempDirs...), deepSystem...) {
			if path == filepath.Clean(b+d) {
				return i18n.Textf("is a system directory")
			}
		}
		inTemp := false
		for _, t := range tempDirs {
			if strings.HasPrefix(path, filepath.Clean(b+t)+"/") {
				inTemp = true
			}
		}
		for _, d := range deepSystem {
			if !inTemp && within(path, filepath.Clean(b+d)) {
				return i18n.Textf("lies inside the system directory %s", filepath.Clean(b+d))
			}
		}
	}
	return i18n.Text{}
}

// linksOnTheWay are the symlinks a path passes through as typed (each as
// the link itself, resolved as an item): keeping a path keeps the way to
// it as well.
func linksOnTheWay(p, cwd string) []string {
	if !filepath.IsAbs(p) {
		p = cwd + "/" + p
	}
	var out []string
	prefix := ""
	parts := strings.Split(p, "/")
	for i, c := range parts[:len(parts)-1] {
		if i == 0 {
			continue // before the leading slash
		}
		prefix += "/" + c
		if c == "" || c == "." || c == ".." {
			continue
		}
		if st, err := os.Lstat(prefix); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			if r, err := resolveItem(prefix, cwd); err == nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// protection judges paths by the rule (refusal) and by identity: a
// system directory or the home reached through another name (a bind
// mount of / or of the home, as containers started with -v /:/host have)
// is still what it is.
type protection struct {
	home, root string
	mounts     []mountLine
	// temps are the temp directories as resolved (/dev/shm may be a link
	// to /run/shm): their entries are allowed wherever they live.
	temps []string
	self  map[devIno]i18n.Text // what a path may not be, said of another name of it
	deep  map[devIno]string    // what a path may not lie inside
	temp  map[devIno]bool      // whose entries are allowed anyway
}

func newProtection(home, root string) *protection {
	pr := &protection{home: home, root: root, self: map[devIno]i18n.Text{}, deep: map[devIno]string{}, temp: map[devIno]bool{}, mounts: readMountinfo()}
	id := func(p string) (devIno, bool) {
		st, err := os.Stat(p)
		if err != nil {
			return devIno{}, false
		}
		d := idOf(st)
		return d, d.known()
	}
	bases := []string{""}
	if root != "" && root != "/" {
		bases = append(bases, filepath.Clean(root))
	}
	for _, b := range bases {
		for _, d := range append(append(append([]string{}, shallowSystem...), tempDirs...), deepSystem...) {
			if i, ok := id(filepath.Clean(b + d)); ok {
				pr.self[i] = i18n.Textf("is, under another name, the system directory %s", filepath.Clean(b+d))
			}
		}
		for _, d := range deepSystem {
			if i, ok := id(filepath.Clean(b + d)); ok {
				pr.deep[i] = filepath.Clean(b + d)
			}
		}
		for _, d := range tempDirs {
			if i, ok := id(filepath.Clean(b + d)); ok {
				pr.temp[i] = true
			}
			if r, err := filepath.EvalSymlinks(filepath.Clean(b + d)); err == nil {
				pr.temps = append(pr.temps, r)
			}
		}
	}
	for a := home; ; a = filepath.Dir(a) {
		if i, ok := id(a); ok {
			if a == home {
				pr.self[i] = i18n.Textf("is, under another name, your home directory")
			} else {
				pr.self[i] = i18n.Textf("holds your home directory (%s)", home)
			}
		}
		if a == "/" || a == "." {
			break
		}
	}
	return pr
}

// inTemp: path is an entry of a temp directory (or lies in one), as the
// temp directories resolve.
func (pr *protection) inTemp(path string) bool {
	for _, t := range pr.temps {
		if strings.HasPrefix(path, t+"/") {
			return true
		}
	}
	return false
}

// why says why the resolved path may never be an item, or "".
func (pr *protection) why(path string) i18n.Text {
	if w := pr.text(path); !w.IsZero() {
		return w
	}
	// Under every other name this namespace shows it by (a bind mount of
	// /etc/ssh, of /var/lib, of the home), the rule holds the same.
	for _, a := range aliases(path, pr.mounts) {
		if w := pr.text(a); !w.IsZero() {
			return i18n.Textf("is %s under another name (a bind mount), which %s", a, w)
		}
	}
	return pr.identity(path)
}

// text is the rule on the path's text, with the resolved temp
// directories' entries allowed.
func (pr *protection) text(path string) i18n.Text {
	if pr.inTemp(path) && path != pr.home && !within(pr.home, path) {
		return i18n.Text{}
	}
	return refusal(path, pr.home, pr.root)
}

// identity is the rule by device and inode, for the path and the
// directories above it.
func (pr *protection) identity(path string) i18n.Text {
	st, err := os.Lstat(path)
	if err != nil {
		return i18n.Text{}
	}
	if st.IsDir() {
		if w, ok := pr.self[idOf(st)]; ok {
			return i18n.Textf("%s (a bind mount or a link of it)", w)
		}
	}
	for a := filepath.Dir(path); ; a = filepath.Dir(a) {
		if st, err := os.Stat(a); err == nil {
			i := idOf(st)
			if pr.temp[i] {
				return i18n.Text{}
			}
			if d, ok := pr.deep[i]; ok {
				return i18n.Textf("lies inside the system directory %s, reached as %s (a bind mount of it)", d, a)
			}
		}
		if a == "/" || a == "." {
			return i18n.Text{}
		}
	}
}
