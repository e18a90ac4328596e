//go:build linux

package wipe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The property of wipe: whatever the tree (files, directories, symlinks
// in and out, hard links to files outside, FIFOs, sparse and read-only
// files, and in a private mount namespace bind mounts of files and
// directories made before or after the plan) and whatever the environment
// points at (in, out, the home, what holds it, system directories,
// through links, relative), after wipe --yes every entry outside the
// planned items and every kept path is byte for byte and mode for mode as
// it was; a refused plan changes nothing.
//
// GPURENT_WIPE_SEED=N reproduces a run (each tree's seed is printed on
// failure; with GPURENT_WIPE_TREES=1 that seed replays the one tree).
func TestWipeProperty(t *testing.T) {
	runProperty(t, envInt("GPURENT_WIPE_TREES", 500), false)
}

// The same with bind mounts, in a private mount namespace (the test
// re-runs itself under unshare(1)); where the machine allows none (not
// root, no unshare) it says it did not run.
func TestWipePropertyMounts(t *testing.T) {
	if os.Getenv("GPURENT_WIPE_NS") == "1" {
		runProperty(t, envInt("GPURENT_WIPE_TREES", 150), true)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root: the mount property did not run")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1): the mount property did not run")
	}
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", os.Args[0], "-test.run=^TestWipePropertyMounts$", "-test.v")
	cmd.Env = append(os.Environ(), "GPURENT_WIPE_NS=1")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "unshare failed") || strings.Contains(string(out), "unshare: ") {
		t.Skipf("no private mount namespace here: the mount property did not run: %s", firstLine(out))
	}
	t.Logf("in a private mount namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the mount property failed: %v", err)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func runProperty(t *testing.T, trees int, mounts bool) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("GPURENT_WIPE_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d, %d trees, bind mounts %v (GPURENT_WIPE_SEED=%d reproduces)", seed, trees, mounts, seed)
	var stats propStats
	for i := 0; i < trees; i++ {
		s := seed + uint64(i)
		if !t.Run(fmt.Sprintf("tree-%d", s), func(t *testing.T) { oneTree(t, s, mounts, &stats) }) {
			t.Fatalf("tree seed %d failed: GPURENT_WIPE_SEED=%d GPURENT_WIPE_TREES=1 go test -run '%s' ./internal/wipe", s, s, t.Name())
		}
	}
	t.Logf("%d plans refused, %d run: %d items removed, %d failed, %d kept inside items, %d bind mounts", stats.refused, stats.run, stats.removed, stats.failed, stats.kept, stats.binds)
	// A property that never deletes anything proves nothing.
	if stats.run < trees/4 || stats.removed < trees {
		t.Errorf("too little was wiped to test anything: %+v", stats)
	}
}

type propStats struct{ refused, run, removed, failed, kept, binds int }

// tree builds one random machine under base.
type tree struct {
	t       *testing.T
	rng     *rand.Rand
	base    string
	paths   []string // every entry made, for choosing targets
	dirs    []string
	mounts  bool
	nbinds  int
	bound   map[string]string // mount point -> its source
	outside []string
}

func (g *tree) pick(from []string) string { return from[g.rng.IntN(len(from))] }

func (g *tree) name() string {
	names := []string{"a", "b", "data", "ckpt", "x.bin", "model.pt", ".hidden", "sp ace", "ü", "log"}
	return g.pick(names) + strconv.Itoa(g.rng.IntN(100))
}

// fill makes random entries in dir, recursing to depth.
func (g *tree) fill(dir string, depth int) {
	must(g.t, os.MkdirAll(dir, 0o755))
	g.dirs = append(g.dirs, dir)
	for n := g.rng.IntN(6); n > 0; n-- {
		p := filepath.Join(dir, g.name())
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		switch k := g.rng.IntN(20); {
		case k < 7:
			g.file(p)
		case k < 11 && depth > 0:
			g.fill(p, depth-1)
			if g.rng.IntN(8) == 0 {
				os.Chmod(p, 0o555) // read-only directory
			}
		case k < 13 && len(g.paths) > 0: // a symlink in the tree or out of it
			must(g.t, os.Symlink(g.pick(g.paths), p))
		case k < 14:
			must(g.t, os.Symlink(g.pick([]string{"/etc", "/", "/usr/lib", "../../..", "nowhere"}), p))
		case k < 15 && len(g.outside) > 0: // a hard link of a file outside
			if err := os.Link(g.pick(g.outside), p); err != nil {
				continue
			}
		case k < 16:
			must(g.t, syscall.Mkfifo(p, 0o644))
		case k < 17:
			f, err := os.Create(p) // sparse
			must(g.t, err)
			must(g.t, f.Truncate(int64(1+g.rng.IntN(8))<<20))
			f.WriteAt([]byte("data in the middle"), int64(g.rng.IntN(1<<20)))
			f.Close()
		default:
			g.file(p)
			os.Chmod(p, 0o444) // read-only file
		}
		g.paths = append(g.paths, p)
	}
}

func (g *tree) file(p string) {
	b := make([]byte, g.rng.IntN(3000))
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	must(g.t, os.WriteFile(p, b, 0o644))
}

// bind mounts a random outside file or directory on a random entry of
// the same type inside the data or temp trees.
func (g *tree) bind(inside []string) {
	if !g.mounts || len(inside) == 0 {
		return
	}
	dst := g.pick(inside)
	st, err := os.Lstat(dst)
	if err != nil {
		return
	}
	var src string
	switch {
	case st.Mode().IsRegular():
		src = filepath.Join(g.base, "outside", "bound-file-"+strconv.Itoa(g.rng.IntN(1000)))
		g.file(src)
	case st.IsDir():
		src = filepath.Join(g.base, "outside", "bound-dir-"+strconv.Itoa(g.rng.IntN(1000)))
		g.fill(src, 1)
	default:
		return
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		g.t.Fatalf("bind %s on %s: %v", src, dst, err)
	}
	g.nbinds++
	g.bound[dst] = src
	g.t.Cleanup(func() { syscall.Unmount(dst, syscall.MNT_DETACH) })
}

func oneTree(t *testing.T, seed uint64, mounts bool, stats *propStats) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	base := t.TempDir()
	g := &tree{t: t, rng: rng, base: base, mounts: mounts, bound: map[string]string{}}
	root, home, cwd := base+"/root", base+"/root/home/me", base+"/work"
	since := time.Now().Add(-time.Second)
	put(t, root+"/proc/self/mounts", "/dev/vda1 / ext4 rw 0 0\n", 0o644)
	// Outside: what no wipe of this tree may touch.
	g.fill(base+"/outside", 1)
	for _, p := range g.paths {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			g.outside = append(g.outside, p)
		}
	}
	put(t, home+"/.ssh/authorized_keys", "ssh-ed25519 AAAA me\n", 0o600)
	put(t, home+"/.config/gpurent/identity.txt", "AGE-SECRET-KEY-1FAKE\n", 0o600)
	put(t, home+"/.bashrc", "# mine\n", 0o644)
	put(t, home+"/.cache/huggingface/token", "hf_x", 0o600)
	put(t, home+"/.aws/credentials", "[default]\n", 0o600)
	if rng.IntN(4) == 0 {
		must(t, syscall.Mkfifo(home+"/.bash_history", 0o600))
	} else {
		put(t, home+"/.bash_history", "ls\n", 0o600)
	}
	if rng.IntN(4) == 0 { // a credential that is a link to a file outside
		must(t, os.Symlink(g.pick(append(g.outside, "/etc/passwd")), home+"/.netrc"))
	}
	g.fill(home+"/.cache/torch", 2)
	g.fill(home+"/.cache/pip", 1)
	g.fill(base+"/data", 3)
	g.fill(root+"/tmp", 2)
	g.fill(root+"/var/tmp", 1)
	must(t, os.MkdirAll(cwd, 0o755))
	if rng.IntN(3) == 0 {
		put(t, cwd+"/.env", "KEY=1\n", 0o600)
	}
	must(t, os.Symlink(home, base+"/homelink"))
	must(t, os.Symlink(base+"/data", base+"/datalink"))
	var inside []string // what a bind mount may cover: not the outside
	for _, q := range g.paths {
		if !strings.HasPrefix(q, base+"/outside/") {
			inside = append(inside, q)
		}
	}
	g.bind(inside)

	// The environment and the names: in, out, the home, what holds it,
	// system directories, through links, relative.
	risky := append([]string{home, base + "/homelink", root + "/home", root, "/etc", "/usr/lib", "/var/lib", "/", "/proc/self",
		base + "/homelink/.cache/torch", home + "/.cache/../.cache/torch", base + "/datalink", "../root/home/me", "data", "/etc/passwd",
		home + "/.config"}, g.paths...)
	// Mostly paths in the tree, sometimes a risky one.
	choice := func() string {
		if rng.IntN(4) == 0 {
			return g.pick(risky)
		}
		return g.pick(g.paths)
	}
	envs := map[string]string{}
	for _, v := range []string{"HF_HOME", "TORCH_HOME", "PIP_CACHE_DIR", "XDG_CACHE_HOME", "HF_TOKEN_PATH"} {
		if rng.IntN(4) == 0 {
			envs[v] = choice()
		}
	}
	var o Options
	for n := rng.IntN(3); n > 0; n-- {
		o.Data = append(o.Data, choice())
	}
	for n := rng.IntN(3); n > 0; n-- {
		var under []string // mostly a path inside what is named
		for _, d := range o.Data {
			for _, q := range g.paths {
				if strings.HasPrefix(q, d+"/") {
					under = append(under, q)
				}
			}
		}
		k := choice()
		if len(under) > 0 && rng.IntN(3) > 0 {
			k = g.pick(under)
		}
		if strings.HasPrefix(k, base+"/data/") && rng.IntN(2) == 0 {
			k = base + "/datalink/" + strings.TrimPrefix(k, base+"/data/") // through a link
		}
		o.Exclude = append(o.Exclude, k)
	}
	if rng.IntN(5) == 0 {
		o.Identity = choice()
	} else {
		o.KeptIdentity = home + "/.config/gpurent/identity.txt"
	}
	o.NoOverwrite = rng.IntN(4) == 0
	e := Env{Root: root, Home: home, Cwd: cwd, UID: os.Getuid(), Since: since,
		Lookup:  func(k string) (string, bool) { v, ok := envs[k]; return v, ok },
		Holders: func() []Holder { return nil },
		Now:     func() time.Time { return time.Now().Add(time.Hour) }}
	if rng.IntN(3) == 0 {
		e.Home = "root/home/me" // relative, from cwd's parent
		e.Cwd = base
	}
	t.Logf("env %v, data %q, keep %q, identity %q, home %q", envs, o.Data, o.Exclude, o.Identity, e.Home)

	before := fullSnapshot(t, base)
	p, err := Make(context.Background(), e, o)
	if err != nil {
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("plan: %v", err)
		}
		stats.refused++
		t.Logf("refused: %v", err)
		compare(t, before, fullSnapshot(t, base), nil, nil, g.bound)
		return
	}
	// The test's own guard: never run a plan that reaches outside this
	// tree, whatever the code under test does.
	for _, it := range p.Items {
		if it.Path != "" && !strings.HasPrefix(it.Path, base+"/") {
			t.Fatalf("the plan reaches outside the test's tree: %s (not run)", it.Path)
		}
		if it.Path == home || strings.HasPrefix(home+"/", it.Path+"/") {
			t.Fatalf("the plan holds the home: %s", it.Path)
		}
	}
	// Sometimes a bind mount appears between the plan and the run.
	late := false
	if mounts && rng.IntN(2) == 0 {
		var in []string
		for _, q := range inside {
			for _, it := range p.Items {
				if strings.HasPrefix(q, it.Path+"/") {
					in = append(in, q)
				}
			}
		}
		n := g.nbinds
		g.bind(in)
		if g.nbinds > n {
			late = true
			before = fullSnapshot(t, base)
		}
	}
	r, err := Run(context.Background(), p, Exec{})
	if err != nil {
		t.Fatal(err)
	}
	stats.run++
	stats.binds += g.nbinds
	for _, res := range r.Items {
		stats.kept += len(res.Kept)
		switch res.Status {
		case Removed:
			stats.removed++
			if _, err := os.Lstat(res.Path); err == nil && !res.MountPoint && len(res.Kept) == 0 {
				t.Errorf("%s reported removed but is there", res.Path)
			}
		case Failed:
			stats.failed++
			if !late && g.nbinds == 0 {
				t.Errorf("%s failed with nothing in its way: %s", res.Path, res.Error)
			}
		}
	}
	// A directory mount point named as an item is emptied: its source's
	// entries are the item's (a data disk named to be wiped).
	results := r.Items
	for _, it := range r.Items {
		if src, ok := g.bound[it.Path]; ok && it.MountPoint {
			results = append(results, Result{Item: Item{Path: src}})
		}
	}
	compare(t, before, fullSnapshot(t, base), results, keptPaths(t, e, o), g.bound)
}

// keptPaths are what the plan must keep whatever it holds, resolved.
func keptPaths(t *testing.T, e Env, o Options) map[string]bool {
	out := map[string]bool{}
	home, _ := resolveFull(e.Home, e.Cwd)
	add := func(p string) {
		if r, err := resolveFull(p, e.Cwd); err == nil {
			out[r] = true
		}
		if r, err := resolveItem(p, e.Cwd); err == nil {
			out[r] = true
		}
	}
	add(home + "/.ssh/authorized_keys")
	if o.Identity == "" {
		add(o.KeptIdentity)
	}
	for _, k := range o.Exclude {
		add(k)
	}
	return out
}

// fullSnapshot records every entry under dir: type, permission bits and,
// for a regular file, a hash of its bytes (read without blocking: FIFOs
// are never opened). Mounts are walked into, so a bind mount's source is
// seen through both names.
func fullSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		v := info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			if b, err := os.ReadFile(p); err == nil {
				s := sha256.Sum256(b)
				v += " " + hex.EncodeToString(s[:8])
			} else {
				v += " unreadable"
			}
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		}
		out[p] = v
		return nil
	})
	return out
}

// compare: every entry is as it was unless an item covers it: lies
// inside the item, not beneath a mount the item left (Keep, Kept), and
// not a kept path. An entry under a bind mount has two names, its
// source's and the mount's: either may be covered, either kept.
func compare(t *testing.T, before, after map[string]string, items []Result, kept map[string]bool, bound map[string]string) {
	t.Helper()
	names := func(p string) []string {
		out := []string{p}
		for dst, src := range bound {
			if within(p, dst) {
				out = append(out, src+strings.TrimPrefix(p, dst))
			}
			if within(p, src) {
				out = append(out, dst+strings.TrimPrefix(p, src))
			}
		}
		return out
	}
	covered := func(p string) bool {
		for _, n := range names(p) {
			for k := range kept {
				if within(n, k) {
					return false
				}
			}
		}
		for _, n := range names(p) {
			for _, it := range items {
				if it.Path == "" || !within(n, it.Path) {
					continue
				}
				left := false
				for _, k := range append(append([]string{}, it.Keep...), it.Kept...) {
					left = left || within(n, k)
				}
				if !left {
					return true
				}
			}
		}
		return false
	}
	bad := 0
	for p, v := range before {
		if covered(p) {
			continue
		}
		if after[p] != v && bad < 10 {
			bad++
			t.Errorf("%s is outside the plan (or kept) and changed: %q -> %q", p, v, after[p])
		}
	}
}
