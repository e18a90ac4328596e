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

	"github.com/gpurent/gpurent/internal/ckptdir"
	"github.com/gpurent/gpurent/internal/homefiles"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/mounts"
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
	// --one-file-system does not, and the paths the user keeps (--exclude).
	// The plan lists each in Kept with its reason.
	Keep []string `json:"keep,omitempty"`
	// Runs are the directories in the item (or the item itself) that hold
	// gpurent run's state: checkpoint directories, which --require-backup
	// guards wherever they are, not only when named.
	Runs []string `json:"runs,omitempty"`

	// Why says why a temp entry is in the plan: made in this tenancy, when
	// it last changed, and that no program uses it.
	Why string `json:"why,omitempty"`

	// id and parent identify the item and its directory when the plan was
	// made; execution touches the item only if both are still the same.
	id, parent fileID
	// keepIDs are the kept files by identity, which execution leaves
	// wherever it meets them; held, the programs found using the item.
	keepIDs map[devIno]string
	held    []Holder
	// The newest change (ctime) and modification times inside a temp
	// item, which tell this tenancy's leftovers from older files and from
	// live work.
	changed, modified time.Time
}

// Plan is what a wipe will remove, and the warnings that go with it.
type Plan struct {
	Items    []Item      `json:"items"`
	Bytes    int64       `json:"bytes"`
	Warnings []i18n.Text `json:"warnings"`
	Kept     []i18n.Text `json:"kept"`
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
	// Since is when this tenancy began (zero: unknown, and then the temp
	// directories are not swept): temp entries unchanged since are the
	// image's or an earlier tenant's, and are left.
	Since time.Time
	// Recent: a temp entry with anything changed this recently is live
	// work and kept (0: RecentWindow; negative: none is).
	Recent time.Duration
	// Now is the clock (nil: time.Now), for Recent.
	Now func() time.Time
}

// Options choose what goes beyond the defaults.
type Options struct {
	Data        []string // directories or files the user names
	Checkpoints []string // checkpoint directories (gpurent run's), guarded by a backup check
	Docker      bool     // remove all Docker images
	Identity    string   // gpurent's age identity, removed only when set
	// IdentityVars names the variable that chose Identity
	// (GPURENT_IDENTITY), for the error that refuses it.
	IdentityVars []string
	// KeptIdentity is where gpurent's age identity is when Identity is
	// not set: the plan says it is kept, if it exists.
	KeptIdentity string
	NoOverwrite  bool     // unlink only, even where overwriting would mean something
	Exclude      []string // paths left alone, whatever item they are in or are (--exclude)
	// Report is where the wipe's report is saved: kept, with the
	// directories leading to it, whatever item it lies in.
	Report string
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

// Removes reports whether the plan removes path: it lies in a path item
// and not under what that item leaves (a mount, a kept path).
func (p *Plan) Removes(path string) bool {
	for _, it := range p.Items {
		if it.Path == "" || !within(path, it.Path) {
			continue
		}
		if !slices.ContainsFunc(it.Keep, func(k string) bool { return within(path, k) }) {
			return true
		}
	}
	return false
}

// ErrRefused is bad input: a path the wipe will not take.
var ErrRefused = i18n.Errorf("refused")

// source is where a candidate came from: the variables that placed it,
// for the sentence that refuses it, and whether the user chose it (named,
// an environment variable, --remove-identity), which makes a refusal an
// error, or wipe's own default, which a refusal only leaves out.
type source struct {
	vars   []string // the environment variables that chose the path
	chosen bool
	file   bool // must not be a directory (an identity)
}

// caches are what ML work fills: huggingface_hub (HF_HOME), torch hub
// (TORCH_HOME, default $XDG_CACHE_HOME/torch), pip, W&B, Triton's compiled
// kernels and CUDA's JIT cache.
func caches(home string, lookup func(string) (string, bool)) []cand {
	set := func(name string) bool { v, ok := lookup(name); return ok && v != "" }
	xdg := filepath.Join(home, ".cache")
	var xdgVars []string
	if v, ok := lookup("XDG_CACHE_HOME"); ok && v != "" {
		xdg, xdgVars = v, []string{"XDG_CACHE_HOME"}
	}
	torch, torchVars := filepath.Join(xdg, "torch"), xdgVars
	if v, ok := lookup("TORCH_HOME"); ok && v != "" {
		torch, torchVars = v, []string{"TORCH_HOME"}
	}
	pip, pipVars := filepath.Join(xdg, "pip"), xdgVars
	if v, ok := lookup("PIP_CACHE_DIR"); ok && v != "" {
		pip, pipVars = v, []string{"PIP_CACHE_DIR"}
	}
	hfVars := xdgVars
	if set("HF_HOME") {
		hfVars = []string{"HF_HOME"}
	}
	c := func(path, what string, vars []string) cand {
		return cand{Item{Kind: Cache, What: what, Path: path}, source{vars: vars, chosen: len(vars) > 0}}
	}
	return []cand{
		c(homefiles.HFHome(home, lookup), i18n.Key("Hugging Face cache (models, datasets, token)"), hfVars),
		c(torch, i18n.Key("PyTorch hub cache"), torchVars),
		c(pip, i18n.Key("pip cache"), pipVars),
		c(filepath.Join(xdg, "wandb"), i18n.Key("W&B cache"), xdgVars),
		c(filepath.Join(home, ".config", "wandb"), i18n.Key("W&B settings"), nil),
		c(filepath.Join(home, ".triton", "cache"), i18n.Key("Triton kernel cache"), nil),
		c(filepath.Join(home, ".nv", "ComputeCache"), i18n.Key("CUDA JIT cache"), nil),
	}
}

// hfTokenVars are the variables that place the Hugging Face token.
func hfTokenVars(lookup func(string) (string, bool)) []string {
	for _, n := range []string{"HF_TOKEN_PATH", "HF_HOME", "XDG_CACHE_HOME"} {
		if v, ok := lookup(n); ok && v != "" {
			return []string{n}
		}
	}
	return nil
}

// histories are the shells' and REPLs' history files: what you typed,
// tokens pasted on command lines included.
func histories(home string) [][2]string {
	var out [][2]string
	for _, p := range homefiles.HistoryFiles(home) {
		rel, _ := filepath.Rel(home, p)
		out = append(out, [2]string{p, "history " + rel})
	}
	return out
}

// cand is an item the plan considers, before the refusals and the sizes.
type cand struct {
	Item
	src source
}

// RecentWindow: a temp entry in which anything changed more recently than
// this is live work (a job's output being written, a download), not a
// leftover, and the sweep leaves it.
const RecentWindow = 10 * time.Minute

// Make builds the plan. It reads sizes but changes nothing.
//
// Every item, whatever its origin, is resolved (resolveItem) and then
// judged by one rule: never the home, an ancestor of it, "/", or a system
// directory at any depth (refusal); never an item that is or lies inside
// something kept (the identity, authorized_keys, the report, --exclude);
// what is kept inside an item stays with the directories leading to it.
// A path the user chose that breaks the rule is an error (ErrRefused); one
// of wipe's defaults is left out and said so.
func Make(ctx context.Context, e Env, o Options) (*Plan, error) {
	pl, err := newPlanner(e, o)
	if err != nil {
		return nil, err
	}
	p := pl.p
	if err := pl.keepSet(); err != nil {
		return nil, err
	}
	cands, err := pl.candidates()
	if err != nil {
		return nil, err
	}
	if cands, err = pl.judge(cands); err != nil {
		return nil, err
	}
	cands = pl.temps(cands)
	planned, err := pl.admit(cands)
	if err != nil {
		return nil, err
	}
	pl.add(planned)
	if pl.sinceUnknown > 0 {
		p.Warnings = append(p.Warnings, i18n.Textf("%s in the temp directories not swept: when this tenancy began is unknown, so they may be the image's or another's (--since sets it; naming one wipes it)", i18n.Plural(pl.sinceUnknown, "%d entry", "%d entries")))
	}
	if err := pl.keepsUsed(); err != nil {
		return nil, err
	}
	if o.Docker {
		imgs, err := dockerImages(ctx, pl.e)
		if err != nil {
			p.Warnings = append(p.Warnings, i18n.Textf("Docker images not listed: %v", err))
		}
		for _, it := range imgs {
			p.Items = append(p.Items, it)
			p.Bytes += it.Bytes
		}
	}
	// What is kept on purpose is named only where it exists: a plan that
	// says it keeps a key the machine does not hold misleads.
	if o.Identity == "" && o.KeptIdentity != "" && exists(o.KeptIdentity) {
		p.Kept = append(p.Kept, i18n.Textf("gpurent's age identity %s (gpurent wipe --remove-identity removes it; keep a copy elsewhere first)", o.KeptIdentity))
	}
	if exists(filepath.Join(pl.home, ".ssh", "authorized_keys")) {
		p.Kept = append(p.Kept, i18n.Textf("~/.ssh/authorized_keys (removing it would lock you out before you finish)"))
	}
	p.Warnings = append(p.Warnings, warnings(p, pl.tab)...)
	return p, nil
}

// planner is one Make: the environment resolved, what is kept, and the
// plan as it grows, shared by the stages Make runs in order.
type planner struct {
	e         Env
	o         Options
	p         *Plan
	now       time.Time
	cwd, home string
	tab       mounts.Table

	keeps     map[string]string // resolved path -> why it is kept
	userKeep  map[string]string // --exclude as typed -> resolved
	keepIDs   map[devIno]string
	keepOrder []string
	guard     *protection

	holders      []Holder
	used         holderIndex
	considered   []string // every path the plan looked at, for --exclude's check
	sinceUnknown int
}

// newPlanner fills e's defaults and resolves the working directory, the
// home and gpurent's own path.
func newPlanner(e Env, o Options) (*planner, error) {
	if e.Lookup == nil {
		e.Lookup = func(string) (string, bool) { return "", false }
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	now := e.Now()
	if e.Recent == 0 {
		e.Recent = RecentWindow
	}
	if e.Cwd == "" {
		return nil, i18n.Errorf("wipe: no working directory")
	}
	cwd, err := resolveFull(e.Cwd, "/")
	if err != nil {
		return nil, i18n.Errorf("wipe: working directory: %w", err)
	}
	e.Cwd = cwd
	home, err := resolveFull(e.Home, cwd)
	if err != nil {
		return nil, i18n.Errorf("%w: HOME=%s: %v", ErrRefused, e.Home, err)
	}
	e.Home = home
	if e.Exe != "" {
		if r, err := resolveFull(e.Exe, cwd); err == nil {
			e.Exe = r
		}
	}
	return &planner{e: e, o: o, now: now, cwd: cwd, home: home, tab: mounts.Read(e.Root),
		p:     &Plan{Items: []Item{}, Warnings: []i18n.Text{}, Kept: []i18n.Text{}},
		keeps: map[string]string{}, userKeep: map[string]string{}, considered: []string{}}, nil
}

// keepSet gathers what the plan keeps, each path both as named (a symlink
// is kept as a link) and as resolved (the file it leads to is kept too).
func (pl *planner) keepSet() error {
	cwd, home, o := pl.cwd, pl.home, pl.o
	addKeep := func(path, why string) {
		if r, err := resolveItem(path, cwd); err == nil {
			pl.keeps[r] = why
		}
		if r, err := resolveFull(path, cwd); err == nil {
			pl.keeps[r] = why
		}
	}
	for _, k := range o.Exclude {
		if _, err := os.Lstat(k); err != nil {
			return i18n.Errorf("%w: --exclude %s: %v", ErrRefused, k, err)
		}
		addKeep(k, "--exclude "+k)
		if r, err := resolveItem(k, cwd); err == nil {
			pl.userKeep[k] = r
		}
		// The links on the way to a kept path stay too: the path as typed
		// still leads to it after the wipe.
		for _, l := range linksOnTheWay(k, cwd) {
			pl.keeps[l] = "--exclude " + k
		}
	}
	if o.Identity == "" && o.KeptIdentity != "" && exists(o.KeptIdentity) {
		addKeep(o.KeptIdentity, i18n.Key("gpurent's age identity"))
	}
	for _, n := range []string{"authorized_keys", "authorized_keys2"} {
		if k := filepath.Join(home, ".ssh", n); exists(k) {
			addKeep(k, "~/.ssh/"+n)
		}
	}
	if o.Report != "" {
		pl.keeps[resolveMaybe(o.Report, cwd)] = i18n.Key("this wipe's report")
	}
	// Kept paths are also known by identity: the same file reached
	// through another name (a bind mount of the home, a hard link) is
	// kept as well.
	pl.keepIDs = map[devIno]string{}
	for k, why := range pl.keeps {
		if info, err := os.Lstat(k); err == nil {
			pl.keepIDs[idOf(info)] = why
		}
	}
	pl.guard = newProtection(home, pl.e.Root)
	pl.keepOrder = slices.Sorted(maps.Keys(pl.keeps)) // keeps is complete here
	return nil
}

// keptBy names the kept path that path is or lies inside, and why.
func (pl *planner) keptBy(path string) (string, string) {
	for _, k := range pl.keepOrder {
		if within(path, k) {
			return k, pl.keeps[k]
		}
	}
	return "", ""
}

// candidates lists what the plan considers: the paths named, then the
// caches, credentials, keys, dotenv files and histories wipe knows.
func (pl *planner) candidates() ([]cand, error) {
	home, o, lookup := pl.home, pl.o, pl.e.Lookup
	var cands []cand
	named := func(paths []string, kind, what string) error {
		for _, d := range paths {
			if _, err := os.Lstat(d); err != nil {
				return i18n.Errorf("%w: %s: %v", ErrRefused, d, err)
			}
			cands = append(cands, cand{Item{Kind: kind, What: what, Path: d}, source{chosen: true}})
		}
		return nil
	}
	if err := named(o.Checkpoints, Checkpoints, i18n.Key("checkpoints")); err != nil {
		return nil, err
	}
	if err := named(o.Data, Data, i18n.Key("data you named")); err != nil {
		return nil, err
	}
	cands = append(cands, caches(home, lookup)...)
	hfToken := homefiles.HFTokenPath(home, lookup)
	for _, s := range homefiles.SecretFiles(home, lookup) {
		if s.Present() {
			src := source{}
			if s.Path == hfToken {
				src.vars = hfTokenVars(lookup)
				src.chosen = len(src.vars) > 0
			}
			cands = append(cands, cand{Item{Kind: Credential, What: s.Kind, Path: s.Path}, src})
		}
	}
	for _, k := range homefiles.PrivateKeys(home) {
		cands = append(cands, cand{Item{Kind: Credential, What: i18n.Key("SSH private key"), Path: k}, source{}})
	}
	for _, f := range homefiles.EnvFiles(pl.cwd) {
		cands = append(cands, cand{Item{Kind: Credential, What: i18n.Key("dotenv file"), Path: f}, source{}})
	}
	if o.Identity != "" {
		cands = append(cands, cand{Item{Kind: Credential, What: i18n.Key("gpurent age identity (checkpoint key)"), Path: o.Identity}, source{chosen: true, vars: o.IdentityVars, file: true}})
	}
	for _, h := range histories(home) {
		cands = append(cands, cand{Item{Kind: History, What: h[1], Path: h[0]}, source{}})
	}
	return cands, nil
}

// judge resolves every candidate and judges it by the one rule: a path
// the user chose that breaks it is an error, a default is left out.
func (pl *planner) judge(cands []cand) ([]cand, error) {
	var resolved []cand
	for _, c := range cands {
		st, err := os.Lstat(c.Path)
		if err != nil {
			continue // not there: nothing to remove
		}
		if c.src.file && st.IsDir() {
			// An identity is a file: a variable naming a directory is a
			// mistake, not a directory to wipe.
			name := c.Path
			if len(c.src.vars) > 0 {
				name = c.src.vars[0] + "=" + c.Path
			}
			return nil, i18n.Errorf("%w: %s is a directory, not the %s file", ErrRefused, name, c.What)
		}
		r, err := resolveItem(c.Path, pl.cwd)
		if err != nil {
			if c.src.chosen {
				return nil, i18n.Errorf("%w: %s: %v", ErrRefused, c.Path, err)
			}
			continue
		}
		if why := pl.guard.why(r); !why.IsZero() {
			if c.src.chosen {
				return nil, refuseError(c, r, why)
			}
			pl.p.Kept = append(pl.p.Kept, i18n.Textf("%s (%s; it %s: never wiped)", c.Path, i18n.Data(c.What), why))
			continue
		}
		c.Path = r
		pl.considered = append(pl.considered, r)
		resolved = append(resolved, c)
	}
	return resolved, nil
}

// temps adds the temp directories' entries that are nobody's: not named
// already, not protected, not holding the working directory or gpurent,
// not a mount, not in use.
func (pl *planner) temps(cands []cand) []cand {
	if pl.e.Holders == nil {
		pl.e.Holders = func() []Holder { return procHolders("/proc", os.Getpid()) }
	}
	e, p := pl.e, pl.p
	pl.holders = e.Holders()
	pl.used = indexHolders(pl.holders)
	for _, it := range tempItems(e) {
		pl.considered = append(pl.considered, it.Path)
		isNamed := slices.ContainsFunc(cands, func(c cand) bool { return c.Path == it.Path })
		if isNamed {
			continue
		}
		inUse := pl.used.by(it.Path)
		refused := pl.guard.why(it.Path)
		switch {
		case !refused.IsZero():
			p.Kept = append(p.Kept, i18n.Textf("%s (%s)", it.Path, refused))
		case within(pl.cwd, it.Path):
			p.Kept = append(p.Kept, i18n.Textf("%s (holds the working directory)", it.Path))
		case e.Exe != "" && within(e.Exe, it.Path):
			p.Kept = append(p.Kept, i18n.Textf("%s (holds gpurent itself)", it.Path))
		case pl.tab.IsMountPoint(it.Path) || mountedHere(it.Path):
			// Someone mounted a file system here (a data disk, a network
			// volume): that is not a temp file.
			p.Kept = append(p.Kept, i18n.Textf("%s (a file system mounted in a temp directory, not a temp file; name it to wipe it)", it.Path))
		case len(inUse) > 0:
			// A running program's socket, session or working files (an
			// editor's server, a notebook kernel, the shell the user
			// works in): removing them breaks it mid-session.
			p.Kept = append(p.Kept, i18n.Textf("%s (in use by %s; name it to wipe it anyway)", it.Path, describeHolders(inUse)))
		default:
			cands = append(cands, cand{it, source{}})
		}
	}
	return cands
}

// admit keeps what is kept, and sizes and identifies the rest.
func (pl *planner) admit(cands []cand) ([]Item, error) {
	e, p := pl.e, pl.p
	ids := walkIDs{keep: pl.keepIDs, held: map[devIno]Holder{}}
	for _, h := range pl.holders {
		if h.ID.known() {
			ids.held[h.ID] = h
		}
	}
	seen := map[string]bool{}
	var planned []Item
	for _, c := range cands {
		it := c.Item
		if seen[it.Path] {
			continue
		}
		seen[it.Path] = true
		if k, why := pl.keptBy(it.Path); k != "" {
			if strings.HasPrefix(why, "--exclude ") {
				p.Kept = append(p.Kept, i18n.Textf("%s (%s)", it.Path, why))
			} else {
				p.Kept = append(p.Kept, i18n.Textf("%s (holds %s %s, which is kept)", it.Path, i18n.Data(why), k))
			}
			continue
		}
		var inside []string
		for k := range pl.keeps {
			if k != it.Path && within(k, it.Path) {
				inside = append(inside, k)
			}
		}
		slices.Sort(inside)
		if err := size(&it, pl.tab, pl.o.NoOverwrite, inside, ids); err != nil {
			if c.src.chosen {
				return nil, i18n.Errorf("%w: %s: %v", ErrRefused, it.Path, err)
			}
			continue
		}
		if why := keptUnderAnotherName(it.Path, pl.keepIDs, pl.guard.mounts, pl.keptBy); !why.IsZero() {
			p.Kept = append(p.Kept, i18n.Textf("%s (%s, which is kept)", it.Path, why))
			continue
		}
		if !it.id.isDir() && (it.id.otherMount(it.parent) || pl.tab.IsMountPoint(it.Path)) {
			// A file bind-mounted here: its data is the source's, outside
			// the plan; overwriting it would write there.
			p.Kept = append(p.Kept, i18n.Textf("%s (a file mounted here from elsewhere: neither overwritten nor removed; unmount it to wipe it)", it.Path))
			continue
		}
		if it.Kind == Temp {
			if len(it.held) > 0 {
				p.Kept = append(p.Kept, i18n.Textf("%s (in use by %s, through another name; name it to wipe it anyway)", it.Path, describeHolders(it.held)))
				continue
			}
			why, ok := tempVerdict(it, e.Since, pl.now, max(e.Recent, 0))
			if !ok {
				if e.Since.IsZero() {
					pl.sinceUnknown++
				}
				p.Kept = append(p.Kept, i18n.Textf("%s (%s)", it.Path, why))
				continue
			}
			it.What, it.Why = i18n.Key("your temp file (this tenancy's, unused)"), why.String()
		}
		planned = append(planned, it)
	}
	return planned, nil
}

// add puts into the plan what no other planned item holds (removing that
// removes it anyway), with what is kept inside each and the warnings.
func (pl *planner) add(planned []Item) {
	p := pl.p
	for _, it := range planned {
		if insidePlanned(it, planned) {
			continue
		}
		for _, k := range it.Keep {
			switch why := pl.keeps[k]; {
			case strings.HasPrefix(why, "--exclude "):
				p.Kept = append(p.Kept, i18n.Textf("%s (--exclude, inside %s)", k, it.Path))
			case why != "":
				p.Kept = append(p.Kept, i18n.Textf("%s (%s, inside %s)", k, i18n.Data(why), it.Path))
			default:
				if info, err := os.Lstat(k); err == nil && pl.keepIDs[idOf(info)] != "" {
					p.Kept = append(p.Kept, i18n.Textf("%s (%s under another name, inside %s)", k, i18n.Data(pl.keepIDs[idOf(info)]), it.Path))
				} else {
					p.Kept = append(p.Kept, i18n.Textf("%s (a file system mounted inside %s: not entered; name it to wipe it)", k, it.Path))
				}
			}
		}
		if hs := append(pl.used.by(it.Path), it.held...); len(hs) > 0 {
			if i := slices.IndexFunc(hs, func(h Holder) bool { return h.PID == 0 }); i >= 0 && it.Overwrite {
				// Overwriting a mounted disk image corrupts what is
				// mounted from it; unlinking leaves the kernel its copy.
				it.Overwrite = false
				p.Warnings = append(p.Warnings, i18n.Textf("%s holds %s, which the kernel uses (%s): overwriting it would corrupt what is mounted from it or swapped to it, so this item is only unlinked; detach it first (umount and losetup -d, or swapoff) to have it overwritten", it.Path, hs[i].Path, hs[i]))
			} else {
				p.Warnings = append(p.Warnings, i18n.Textf("%s is in use by %s: what it writes after the wipe stays; stop it first", it.Path, describeHolders(hs)))
			}
		}
		if it.Kind == Credential && it.Symlink {
			p.Warnings = append(p.Warnings, i18n.Textf("%s is a symlink to %s: only the link is removed, the credential it leads to stays there (name that file to wipe it)", it.Path, it.Target))
		}
		p.Items = append(p.Items, it)
		p.Bytes += it.Bytes
	}
}

// keepsUsed refuses a --exclude that keeps nothing the wipe would touch: a
// typo, or a path through a link to elsewhere, said rather than ignored.
func (pl *planner) keepsUsed() error {
	for _, k := range pl.o.Exclude {
		names := []string{pl.userKeep[k]}
		if full, err := resolveFull(k, pl.cwd); err == nil {
			names = append(append(names, full), aliases(full, pl.guard.mounts)...)
		}
		if !slices.ContainsFunc(pl.considered, func(c string) bool {
			return slices.ContainsFunc(names, func(n string) bool { return n != "" && (within(c, n) || within(n, c)) })
		}) {
			return i18n.Errorf("%w: --exclude %s: nothing this wipe would remove is at, inside or around it; check the path", ErrRefused, k)
		}
	}
	return nil
}

// refuseError says which path, from where, and why it is never wiped.
func refuseError(c cand, resolved string, why i18n.Text) error {
	if resolved != c.Path {
		why = i18n.Textf("resolves to %s, which %s", resolved, why)
	}
	never := i18n.Textf("wipe never removes the home, what holds it, or a system directory")
	if len(c.src.vars) > 0 {
		v := c.src.vars[0]
		return i18n.Errorf("%w: %s=%s: the %s it names %s; %s: point %s at the directory itself, or unset it for the wipe",
			ErrRefused, v, c.Path, i18n.Data(c.What), why, never, v)
	}
	return i18n.Errorf("%w: %s %s; %s: name the directories inside it to remove", ErrRefused, c.Path, why, never)
}

// tempVerdict decides whether a temp entry is this tenancy's leftover,
// which the sweep takes, and says why either way. An entry is taken only
// when something in it changed after the tenancy began (by the change
// time, which copying or unpacking cannot set back), nothing in it
// changed within recent (live work), and no program uses it (judged
// before). Where the start of the tenancy is unknown, nothing is taken.
func tempVerdict(it Item, since, now time.Time, recent time.Duration) (i18n.Text, bool) {
	switch {
	case since.IsZero():
		return i18n.Textf("when this tenancy began is unknown, so this may not be yours: name it to wipe it"), false
	case it.changed.IsZero() || it.changed.Before(since):
		return i18n.Textf("unchanged since before this tenancy began (%s): the image's or an earlier tenant's, not this tenancy's; name it to wipe it", since.UTC().Format("2006-01-02 15:04 MST")), false
	case recent > 0 && (!it.modified.Before(now.Add(-recent)) || !it.changed.Before(now.Add(-recent))):
		last := it.modified
		if it.changed.After(last) {
			last = it.changed
		}
		return i18n.Textf("changed %s ago: may be live work; name it to wipe it", now.Sub(last).Round(time.Second)), false
	}
	return i18n.Textf("made in this tenancy (it began %s), last changed %s, no program uses it", since.UTC().Format("2006-01-02 15:04 MST"), it.changed.UTC().Format("2006-01-02 15:04 MST")), true
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

// mountedHere: path is on another mount than its directory (a file
// system, or a bind mount of a file or directory), by device or mount id:
// what the mount table under a fake root does not show.
func mountedHere(path string) bool {
	e, err := identify(path)
	if err != nil {
		return false
	}
	d, err := identify(filepath.Dir(path))
	return err == nil && e.id.otherMount(d.id)
}

// keptUnderAnotherName says why path is kept though its own name is not:
// it, or a directory above it, is a kept file or directory by identity (a
// hard link, the same directory through a bind mount), or a name the
// mount table gives it lies in a kept path. "" when it is not.
func keptUnderAnotherName(path string, keepIDs map[devIno]string, tab []mountLine, keptBy func(string) (string, string)) i18n.Text {
	for a := path; ; a = filepath.Dir(a) {
		if info, err := os.Lstat(a); err == nil {
			if why, ok := keepIDs[idOf(info)]; ok {
				if a == path {
					return i18n.Textf("is %s under another name", i18n.Data(why))
				}
				return i18n.Textf("lies in %s, reached as %s", i18n.Data(why), a)
			}
		}
		if a == "/" || a == "." {
			break
		}
	}
	for _, a := range aliases(path, tab) {
		if k, why := keptBy(a); k != "" {
			return i18n.Textf("is %s under another name (a bind mount), in %s", a, i18n.Data(why))
		}
	}
	return i18n.Text{}
}

// insidePlanned: it lies strictly inside another planned item that is a
// directory, which removes it anyway; not when it lies under what that
// item leaves (a mount, a kept path), where it must go on its own.
func insidePlanned(it Item, planned []Item) bool {
	for _, o := range planned {
		if o.Path == it.Path || o.Symlink || !o.id.isDir() || !strings.HasPrefix(it.Path, o.Path+"/") {
			continue
		}
		if !slices.ContainsFunc(o.Keep, func(k string) bool { return within(it.Path, k) }) {
			return true
		}
	}
	return false
}

// tempItems are this user's own top-level entries in the temp directories,
// except the sockets and session directories of running programs (X11,
// tmux, systemd's private temp dirs): removing those breaks the session
// the wipe runs in and they hold no data. Make then keeps those that are
// not this tenancy's or that a program uses (tempVerdict, Holders).
func tempItems(e Env) []Item {
	var out []Item
	for _, d := range tempDirs {
		dir, err := filepath.EvalSymlinks(filepath.Join(e.Root, d))
		if err != nil {
			continue
		}
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
			out = append(out, Item{Kind: Temp, What: i18n.Key("your temp file"), Path: filepath.Join(dir, n)})
		}
	}
	return out
}

// walkIDs are the identities a plan's walk looks for: kept files and
// directories (under any name) and files running programs use.
type walkIDs struct {
	keep map[devIno]string
	held map[devIno]Holder
}

// size fills bytes, files, symlink and overwrite for a path item, its
// identity and its directory's, and Keep with what inside it stays: the
// kept paths inside (given, existing or not: the report is written later)
// and every mount inside it, of a directory or a file, found in the mount
// table or by its mount id (a bind mount of the same file system).
func size(it *Item, tab mounts.Table, noOverwrite bool, inside []string, ids walkIDs) error {
	self, err := identify(it.Path)
	if err != nil {
		return err
	}
	parent, err := identify(filepath.Dir(it.Path))
	if err != nil {
		return err
	}
	it.id, it.parent = self.id, parent.id
	it.keepIDs = ids.keep
	if self.id.isSymlink() {
		it.Symlink = true
		it.Target, _ = os.Readlink(it.Path)
		return nil
	}
	if m, ok := tab.Find(it.Path); ok {
		it.FSType = m.FSType
		it.Overwrite = !noOverwrite && m.OverwriteMeaningful()
	}
	it.MountPoint = self.id.isDir() && (tab.IsMountPoint(it.Path) || self.id.otherMount(parent.id))
	keep := map[string]bool{}
	for _, k := range inside {
		keep[k] = true
	}
	err = filepath.WalkDir(it.Path, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if path != it.Path && (keep[path] || tab.IsMountPoint(path)) {
			it.Keep = append(it.Keep, path)
			delete(keep, path)
			return skip(d)
		}
		e, err := identify(path) // one statx for the mount, identity, size and times
		if err != nil {
			return nil
		}
		id := devIno{e.id.Dev, e.id.Ino}
		if path != it.Path {
			if _, kept := ids.keep[id]; kept || e.id.otherMount(self.id) {
				it.Keep = append(it.Keep, path) // a mount, or a kept file under another name
				return skip(d)
			}
		}
		if h, ok := ids.held[id]; ok {
			it.held = append(it.held, h)
		}
		regular := e.id.isRegular()
		if regular && d.Name() == ckptdir.StateFile {
			it.Runs = append(it.Runs, filepath.Dir(path))
		}
		if it.Kind == Temp {
			if e.ctime.After(it.changed) {
				it.changed = e.ctime
			}
			if e.mtime.After(it.modified) {
				it.modified = e.mtime
			}
		}
		if regular {
			it.Bytes += e.size
			it.Files++
			if e.nlink > 1 {
				it.Linked++
			}
		}
		return nil
	})
	// Kept paths not there yet (the report) stay kept when they appear.
	for _, k := range slices.Sorted(maps.Keys(keep)) {
		if !exists(k) {
			it.Keep = append(it.Keep, k)
		}
	}
	return err
}

func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// warnings say what a wipe cannot do, plainly.
func warnings(p *Plan, tab mounts.Table) []i18n.Text {
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
	var out []i18n.Text
	if len(names) > 0 {
		out = append(out, i18n.Textf("some of this lives on %s storage: deleting there does not erase the old blocks, and overwriting is skipped", strings.Join(names, ", ")))
	}
	out = append(out, i18n.Textf("on SSDs, overlay and copy-on-write storage only a crypto-erase is reliable: keep data on a volume encrypted with a key you hold "+
		"(cryptsetup luksFormat /dev/DISK; cryptsetup open /dev/DISK data --key-file KEY; mkfs.ext4 /dev/mapper/data) and destroy the key when you leave"))
	return out
}

// dockerImages lists every image through the docker CLI.
func dockerImages(ctx context.Context, e Env) ([]Item, error) {
	if e.Docker == nil {
		return nil, i18n.Errorf("no docker command")
	}
	out, err := e.Docker(ctx, "image", "ls", "--no-trunc", "--format", "{{json .}}")
	if err != nil {
		return nil, i18n.Errorf("docker image ls: %w", err)
	}
	var items []Item
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var img struct{ ID, Repository, Tag, Size string }
		if err := json.Unmarshal([]byte(line), &img); err != nil {
			return nil, i18n.Errorf("docker image ls: %w", err)
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
