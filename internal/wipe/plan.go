//go:build unix

// Package wipe plans and carries out the clean-up before a rented machine
// goes back: the data the user names, ML caches, credentials, shell
// histories, the user's temp files and, on request, Docker images. The plan
// is a list of roots; execution touches nothing outside them, removes
// symlinks without following them, and records every outcome in a report
// saved after each item, so a run that stops half-way says what it did.
package wipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpurent/gpurent/internal/audit"
	"github.com/gpurent/gpurent/internal/mounts"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/supervise"
)

// Kinds of plan items.
const (
	Data        = "data"
	Checkpoints = "checkpoints"
	Cache       = "cache"
	Credential  = "credential"
	History     = "history"
	Temp        = "temp"
	Docker      = "docker"
)

// Item is one thing the plan removes: a path (file, directory or symlink)
// or a Docker image.
type Item struct {
	Kind  string `json:"kind"`
	What  string `json:"what"`
	Path  string `json:"path,omitempty"`
	Image string `json:"image,omitempty"` // Docker image id
	Bytes int64  `json:"bytes"`
	Files int    `json:"files"`
	// Linked counts the regular files that have other hard links (a git
	// clone's objects, a package store). Overwriting one would destroy the
	// data under every other name, outside the plan, so these are only
	// unlinked: the data lives on under the other names.
	Linked int `json:"linked,omitempty"`
	// Symlink: the path itself is a symlink; only the link is removed.
	Symlink bool   `json:"symlink,omitempty"`
	Target  string `json:"target,omitempty"`
	// Overwrite: files are overwritten once before unlinking, because the
	// file system writes data in place (FSType).
	Overwrite bool   `json:"overwrite"`
	FSType    string `json:"fstype,omitempty"`
	// MountPoint: the directory is a mount point; its contents go, the
	// directory itself stays.
	MountPoint bool `json:"mount_point,omitempty"`
	// Keep are paths inside the item left as they are, with the
	// directories that lead to them: file systems mounted there (a network
	// volume, a bind mount of a data disk), which are not entered, as rm
	// --one-file-system does not, and the paths the user keeps (--keep).
	// The plan lists each in Kept with its reason.
	Keep []string `json:"keep,omitempty"`
	// Runs are the directories in the item (or the item itself) that hold
	// gpurent run's state: checkpoint directories, which --require-backup
	// guards wherever they are, not only when named.
	Runs []string `json:"runs,omitempty"`
	// Predates: a temp item in which nothing changed since the tenancy
	// began (Env.Since), by the change time (ctime), which copying or
	// unpacking cannot set back: the image's or an earlier tenant's
	// files under the same account, not this tenant's. It is removed
	// like the rest and said to be what it is.
	Predates bool `json:"predates_tenancy,omitempty"`

	changed time.Time // the newest change time inside, for Predates
}

// Plan is what a wipe will remove, and the warnings that go with it.
type Plan struct {
	Items    []Item   `json:"items"`
	Bytes    int64    `json:"bytes"`
	Warnings []string `json:"warnings"`
	Kept     []string `json:"kept"`
}

// Env is where the plan looks: Root prefixes the temp directories and the
// mount table; Home and Cwd are real paths. Docker runs the docker CLI.
type Env struct {
	Root   string
	Home   string
	Cwd    string
	Exe    string // gpurent's own binary, which a wipe leaves alone
	UID    int
	Lookup func(string) (string, bool)
	Docker func(ctx context.Context, args ...string) ([]byte, error)
	// Holders lists the paths running programs use (nil: read /proc,
	// leaving gpurent itself out).
	Holders func() []Holder
	// Since is when this tenancy began (zero: unknown); temp items older
	// than it are labelled as the image's or an earlier tenant's.
	Since time.Time
}

// Options choose what goes beyond the defaults.
type Options struct {
	Data        []string // directories or files the user names
	Checkpoints []string // checkpoint directories (gpurent run's), guarded by a backup check
	Docker      bool     // remove all Docker images
	Identity    string   // gpurent's age identity, removed only when set
	// KeptIdentity is where gpurent's age identity is when Identity is
	// not set: the plan says it is kept, if it exists.
	KeptIdentity string
	NoOverwrite  bool     // unlink only, even where overwriting would mean something
	Keep         []string // paths left alone, whatever item they are in or are (--keep)
}

// CheckpointDirs are the checkpoint directories the plan deletes: the
// checkpoint items and every directory of gpurent run's found inside an
// item (a run's output left in /tmp, or under a data directory).
func (p *Plan) CheckpointDirs() []string {
	var out []string
	for _, it := range p.Items {
		if it.Kind == Checkpoints && !slices.Contains(out, it.Path) {
			out = append(out, it.Path)
		}
		for _, r := range it.Runs {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// ErrRefused is bad input: a path the wipe will not take.
var ErrRefused = errors.New("refused")

// caches are what ML work fills: huggingface_hub (HF_HOME), torch hub
// (TORCH_HOME, default $XDG_CACHE_HOME/torch), pip, W&B, Triton's compiled
// kernels and CUDA's JIT cache.
func caches(home string, lookup func(string) (string, bool)) [][2]string {
	xdg := filepath.Join(home, ".cache")
	if v, ok := lookup("XDG_CACHE_HOME"); ok && v != "" {
		xdg = v
	}
	torch := filepath.Join(xdg, "torch")
	if v, ok := lookup("TORCH_HOME"); ok && v != "" {
		torch = v
	}
	pip := filepath.Join(xdg, "pip")
	if v, ok := lookup("PIP_CACHE_DIR"); ok && v != "" {
		pip = v
	}
	return [][2]string{
		{audit.HFHome(home, lookup), "Hugging Face cache (models, datasets, token)"},
		{torch, "PyTorch hub cache"},
		{pip, "pip cache"},
		{filepath.Join(xdg, "wandb"), "W&B cache"},
		{filepath.Join(home, ".config", "wandb"), "W&B settings"},
		{filepath.Join(home, ".triton", "cache"), "Triton kernel cache"},
		{filepath.Join(home, ".nv", "ComputeCache"), "CUDA JIT cache"},
	}
}

// histories are the shells' and REPLs' history files: what you typed,
// tokens pasted on command lines included.
func histories(home string) [][2]string {
	var out [][2]string
	for _, p := range audit.HistoryFiles(home) {
		rel, _ := filepath.Rel(home, p)
		out = append(out, [2]string{p, "history " + rel})
	}
	return out
}

// protected are paths no plan may name: the system and the home itself.
func protected(root, home string) []string {
	p := []string{home}
	for _, d := range []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root",
		"/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/var/tmp", "/mnt", "/media", "/data", "/workspace"} {
		p = append(p, filepath.Join(root, d))
	}
	return p
}

// Make builds the plan. It reads sizes but changes nothing.
func Make(ctx context.Context, e Env, o Options) (*Plan, error) {
	if e.Lookup == nil {
		e.Lookup = func(string) (string, bool) { return "", false }
	}
	p := &Plan{Items: []Item{}, Warnings: []string{}, Kept: []string{}}
	tab := mounts.Read(e.Root)
	keep := map[string]bool{}
	for _, k := range o.Keep {
		abs, err := filepath.Abs(k)
		if err != nil {
			return nil, fmt.Errorf("%w: --keep %s: %v", ErrRefused, k, err)
		}
		if _, err := os.Lstat(abs); err != nil {
			return nil, fmt.Errorf("%w: --keep %s: %v", ErrRefused, k, err)
		}
		keep[abs] = true
	}
	keptBy := func(path string) string {
		for _, k := range slices.Sorted(maps.Keys(keep)) {
			if within(path, k) {
				return k
			}
		}
		return ""
	}
	var cands []Item
	named := func(paths []string, kind, what string) error {
		for _, d := range paths {
			abs, err := filepath.Abs(d)
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrRefused, d, err)
			}
			if _, err := os.Lstat(abs); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrRefused, d, err)
			}
			for _, q := range protected(e.Root, e.Home) {
				if abs == filepath.Clean(q) || strings.HasPrefix(e.Home+"/", abs+"/") {
					return fmt.Errorf("%w: %s is the home or a system directory; name the directories inside it to remove", ErrRefused, d)
				}
			}
			cands = append(cands, Item{Kind: kind, What: what, Path: abs})
		}
		return nil
	}
	if err := named(o.Checkpoints, Checkpoints, "checkpoints"); err != nil {
		return nil, err
	}
	if err := named(o.Data, Data, "data you named"); err != nil {
		return nil, err
	}
	for _, c := range caches(e.Home, e.Lookup) {
		cands = append(cands, Item{Kind: Cache, What: c[1], Path: c[0]})
	}
	for _, s := range audit.SecretFiles(e.Home, e.Lookup) {
		if s.Present() {
			cands = append(cands, Item{Kind: Credential, What: s.Kind, Path: s.Path})
		}
	}
	for _, k := range audit.PrivateKeys(e.Home) {
		cands = append(cands, Item{Kind: Credential, What: "SSH private key", Path: k})
	}
	for _, f := range audit.EnvFiles(e.Cwd) {
		cands = append(cands, Item{Kind: Credential, What: "dotenv file", Path: f})
	}
	if o.Identity != "" {
		cands = append(cands, Item{Kind: Credential, What: "gpurent age identity (checkpoint key)", Path: o.Identity})
	}
	for _, h := range histories(e.Home) {
		cands = append(cands, Item{Kind: History, What: h[1], Path: h[0]})
	}
	if e.Holders == nil {
		e.Holders = func() []Holder { return procHolders("/proc", os.Getpid()) }
	}
	holders := e.Holders()
	for _, it := range tempItems(e) {
		named := slices.ContainsFunc(cands, func(c Item) bool { return c.Path == it.Path })
		inUse := usedBy(it.Path, holders)
		switch {
		case within(e.Cwd, it.Path):
			p.Kept = append(p.Kept, it.Path+" (holds the working directory)")
		case e.Exe != "" && within(e.Exe, it.Path):
			p.Kept = append(p.Kept, it.Path+" (holds gpurent itself)")
		case tab.IsMountPoint(it.Path) && !named:
			// Someone mounted a file system here (a data disk, a network
			// volume): that is not a temp file.
			p.Kept = append(p.Kept, it.Path+" (a file system mounted in a temp directory, not a temp file; name it to wipe it)")
		case len(inUse) > 0 && !named:
			// A running program's socket, session or working files (an
			// editor's server, a notebook kernel, the shell the user
			// works in): removing them breaks it mid-session.
			p.Kept = append(p.Kept, it.Path+" (in use by "+describeHolders(inUse)+"; name it to wipe it anyway)")
		default:
			cands = append(cands, it)
		}
	}

	// Keep what exists, drop what lies inside another item, size the rest.
	var exist []Item
	for _, it := range cands {
		if _, err := os.Lstat(it.Path); err == nil {
			exist = append(exist, it)
		}
	}
	seen := map[string]bool{}
	predates, predatesBytes := 0, int64(0)
	for _, it := range exist {
		if seen[it.Path] || insideAnother(it.Path, exist) {
			continue
		}
		seen[it.Path] = true
		if k := keptBy(it.Path); k != "" {
			p.Kept = append(p.Kept, it.Path+" (--keep "+k+")")
			continue
		}
		if err := size(&it, tab, o.NoOverwrite, keep); err != nil {
			return nil, err
		}
		for _, k := range it.Keep {
			if keep[k] {
				p.Kept = append(p.Kept, k+" (--keep, inside "+it.Path+")")
			} else {
				p.Kept = append(p.Kept, k+" (a file system mounted inside "+it.Path+": not entered; name it to wipe it)")
			}
		}
		if it.Kind == Temp && !e.Since.IsZero() && !it.changed.IsZero() && it.changed.Before(e.Since) {
			it.Predates = true
			it.What = "temp file from before this tenancy"
			predates++
			predatesBytes += it.Bytes
		}
		if hs := usedBy(it.Path, holders); len(hs) > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s is in use by %s: what it writes after the wipe stays; stop it first", it.Path, describeHolders(hs)))
		}
		p.Items = append(p.Items, it)
		p.Bytes += it.Bytes
	}
	if predates > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s (%s) last changed before this tenancy began (%s; --since sets it): the image's or an earlier tenant's under your account, not yours; they go too (--keep PATH leaves one)",
			report.Count(predates, "temp item"), report.Bytes(predatesBytes), e.Since.UTC().Format("2006-01-02 15:04 MST")))
	}
	if o.Docker {
		imgs, err := dockerImages(ctx, e)
		if err != nil {
			p.Warnings = append(p.Warnings, "Docker images not listed: "+err.Error())
		}
		for _, it := range imgs {
			p.Items = append(p.Items, it)
			p.Bytes += it.Bytes
		}
	}
	// What is kept on purpose is named only where it exists: a plan that
	// says it keeps a key the machine does not hold misleads.
	if o.Identity == "" && o.KeptIdentity != "" && exists(o.KeptIdentity) {
		p.Kept = append(p.Kept, "gpurent's age identity "+o.KeptIdentity+" (gpurent wipe --remove-identity removes it; keep a copy elsewhere first)")
	}
	if exists(filepath.Join(e.Home, ".ssh", "authorized_keys")) {
		p.Kept = append(p.Kept, "~/.ssh/authorized_keys (removing it would lock you out before you finish)")
	}
	p.Warnings = append(p.Warnings, warnings(p, tab)...)
	return p, nil
}

// exists: something (a symlink too) is at path.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// within: path is dir or lies inside it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// insideAnother: path lies strictly inside another candidate that is a
// directory (not a symlink), which removes it anyway.
func insideAnother(path string, items []Item) bool {
	for _, o := range items {
		if o.Path != path && strings.HasPrefix(path, o.Path+"/") {
			if st, err := os.Lstat(o.Path); err == nil && st.IsDir() {
				return true
			}
		}
	}
	return false
}

// tempItems are this user's own top-level entries in the temp directories,
// except the sockets and session directories of running programs (X11,
// tmux, systemd's private temp dirs): removing those breaks the session
// the wipe runs in and they hold no data.
func tempItems(e Env) []Item {
	var out []Item
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		dir := filepath.Join(e.Root, d)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, ent := range ents {
			n := ent.Name()
			if strings.HasSuffix(n, "-unix") || strings.HasPrefix(n, "systemd-private-") || strings.HasPrefix(n, "tmux-") ||
				strings.HasPrefix(n, "snap-private-tmp") || strings.HasPrefix(n, "ssh-") || ent.Type()&fs.ModeSocket != 0 {
				continue
			}
			info, err := ent.Info()
			if err != nil {
				continue
			}
			if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != e.UID {
				continue
			}
			out = append(out, Item{Kind: Temp, What: "your temp file", Path: filepath.Join(dir, n)})
		}
	}
	return out
}

// size fills bytes, files, symlink and overwrite for a path item, and
// Keep with what inside it stays: mounted file systems and kept paths.
func size(it *Item, tab mounts.Table, noOverwrite bool, keep map[string]bool) error {
	st, err := os.Lstat(it.Path)
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		it.Symlink = true
		it.Target, _ = os.Readlink(it.Path)
		return nil
	}
	if m, ok := tab.Find(it.Path); ok {
		it.FSType = m.FSType
		it.Overwrite = !noOverwrite && m.OverwriteMeaningful()
		it.MountPoint = st.IsDir() && tab.IsMountPoint(it.Path)
	}
	return filepath.WalkDir(it.Path, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if path != it.Path && (keep[path] || d.IsDir() && tab.IsMountPoint(path)) {
			it.Keep = append(it.Keep, path)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		regular := d.Type().IsRegular()
		if regular && d.Name() == supervise.StateFile {
			it.Runs = append(it.Runs, filepath.Dir(path))
		}
		if !regular && it.Kind != Temp {
			return nil
		}
		info, err := d.Info() // one lstat for the size and the change time
		if err != nil {
			return nil
		}
		if it.Kind == Temp {
			if c := audit.ChangeTime(info); c.After(it.changed) {
				it.changed = c
			}
		}
		if regular {
			it.Bytes += info.Size()
			it.Files++
			if links(info) > 1 {
				it.Linked++
			}
		}
		return nil
	})
}

// links is a file's hard-link count, 1 where the system does not say.
func links(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// warnings say what a wipe cannot do, plainly.
func warnings(p *Plan, tab mounts.Table) []string {
	types := map[string]bool{}
	for _, it := range p.Items {
		if it.Path == "" || it.Symlink {
			continue
		}
		m, _ := tab.Find(it.Path)
		switch {
		case m.Overlay():
			types["overlay"] = true
		case m.CopyOnWrite():
			types["copy-on-write ("+m.FSType+")"] = true
		case m.Network():
			types["network ("+m.FSType+")"] = true
		}
	}
	var names []string
	for k := range types {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []string
	if len(names) > 0 {
		out = append(out, "some of this lives on "+strings.Join(names, ", ")+" storage: deleting there does not erase the old blocks, and overwriting is skipped")
	}
	out = append(out, "on SSDs, overlay and copy-on-write storage only a crypto-erase is reliable: keep data on a volume encrypted with a key you hold "+
		"(cryptsetup luksFormat /dev/DISK; cryptsetup open /dev/DISK data --key-file KEY; mkfs.ext4 /dev/mapper/data) and destroy the key when you leave")
	return out
}

// dockerImages lists every image through the docker CLI.
func dockerImages(ctx context.Context, e Env) ([]Item, error) {
	if e.Docker == nil {
		return nil, errors.New("no docker command")
	}
	out, err := e.Docker(ctx, "image", "ls", "--no-trunc", "--format", "{{json .}}")
	if err != nil {
		return nil, fmt.Errorf("docker image ls: %w", err)
	}
	var items []Item
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var img struct{ ID, Repository, Tag, Size string }
		if err := json.Unmarshal([]byte(line), &img); err != nil {
			return nil, fmt.Errorf("docker image ls: %w", err)
		}
		items = append(items, Item{Kind: Docker, What: img.Repository + ":" + img.Tag, Image: img.ID, Bytes: dockerSize(img.Size)})
	}
	return items, nil
}

// dockerSize reads docker's human sizes ("1.2GB", "512MB", "94.3kB"),
// which use powers of 1000.
func dockerSize(s string) int64 {
	mult := map[string]float64{"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
	for _, u := range []string{"kB", "KB", "MB", "GB", "TB", "B"} {
		if v, ok := strings.CutSuffix(s, u); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0
			}
			return int64(f * mult[u])
		}
	}
	return 0
}

// sameDevice: a and b are on one file system (true where the system does
// not say).
func sameDevice(a, b fs.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || uint64(sa.Dev) == uint64(sb.Dev)
}
