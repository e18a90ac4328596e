// Package supervise runs a training command so that it survives crashes,
// preemption and a vanishing machine: it watches the checkpoint directory,
// uploads each complete checkpoint through package store while training
// goes on, restarts the command from the newest checkpoint after a failure,
// and reacts to the clouds' preemption notices.
package supervise

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
)

// Candidate is one checkpoint in the checkpoint directory: a file or a
// directory directly inside it.
type Candidate struct {
	Path string
	Name string
	// Kind says why it is complete: hf (checkpoint-N with trainer_state.json),
	// dcp (PyTorch distributed checkpoint with .metadata), deepspeed or
	// megatron (named by the tracker file), file (a file no process holds
	// open for writing and quiet for the quiet period), dir.
	Kind     string
	ModTime  time.Time // newest modification inside
	Size     int64
	Complete bool
	Why      string // why not complete
}

// Signature identifies a checkpoint's content cheaply: the same name,
// size and newest modification time is the same checkpoint.
func (c Candidate) Signature() string {
	return fmt.Sprintf("%s|%d|%d", c.Name, c.Size, c.ModTime.UnixNano())
}

// Detector decides which entries of the checkpoint directory are whole.
type Detector struct {
	Dir string
	// Quiet is how long a plain file or directory must go unmodified (and
	// not be open for writing) to count as complete.
	Quiet time.Duration
	// Glob, when set, limits candidates to names matching it.
	Glob string
	// Exclude names entries of Dir that are never checkpoints, whatever
	// Glob says: gpurent's own log file (--log) written there.
	Exclude []string
	// OpenForWrite reports whether a process holds path open for writing
	// (from /proc/*/fd); nil means procOpenForWrite.
	OpenForWrite func(path string) bool
	Now          func() time.Time

	short shortCache // files found cut short, by version
}

// internal names gpurent writes into the directory, never checkpoints.
func internalName(name string) bool {
	return strings.HasPrefix(name, ".gpurent") || strings.HasPrefix(name, ".") && strings.Contains(name, ".gpurent-pull-")
}

// Scan lists the candidates, newest first.
func (d *Detector) Scan() ([]Candidate, error) {
	entries, err := os.ReadDir(d.Dir)
	if err != nil {
		return nil, i18n.Errorf("checkpoint directory: %w", err)
	}
	now := wallNow // file times are the kernel's
	if d.Now != nil {
		now = d.Now
	}
	openW := d.OpenForWrite
	if openW == nil {
		openW = procOpenForWrite
	}
	// A directory a framework writes its checkpoints to holds more than
	// them: the Hugging Face Trainer's output directory has runs/
	// (TensorBoard events, quiet between logging steps) and the final
	// model's files. Once one entry shows a framework's files, only such
	// entries are candidates; otherwise a quiet runs/ would be uploaded as
	// the newest checkpoint, crowd real ones out of --keep, and be handed
	// to the command to resume from. --glob, when given, is the user's own
	// choice instead.
	// Each entry's framework is looked at once a scan (a few stats and a
	// glob per directory, every --poll).
	type fwInfo struct {
		kind      string
		whole, ok bool
	}
	fws := make([]fwInfo, len(entries))
	managed := false
	tr := readTrackers(d.Dir)
	for i, e := range entries {
		f := &fws[i]
		f.kind, f.whole, f.ok = framework(filepath.Join(d.Dir, e.Name()), e, tr)
		managed = managed || f.ok
	}
	var out []Candidate
	for i, e := range entries {
		name := e.Name()
		if internalName(name) || strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".partial") || slices.Contains(d.Exclude, name) {
			continue
		}
		kind, whole, fw := fws[i].kind, fws[i].whole, fws[i].ok
		if managed && d.Glob == "" && !fw {
			continue
		}
		if d.Glob == "" && notCheckpoint(name, e.IsDir()) {
			continue
		}
		if d.Glob != "" {
			if ok, _ := filepath.Match(d.Glob, name); !ok {
				continue
			}
		}
		c := Candidate{Path: filepath.Join(d.Dir, name), Name: name}
		var files []fileVersion
		if e.IsDir() {
			c.Kind = "dir"
			filepath.WalkDir(c.Path, func(p string, de fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if info, err := de.Info(); err == nil {
					if info.ModTime().After(c.ModTime) {
						c.ModTime = info.ModTime()
					}
					if info.Mode().IsRegular() {
						c.Size += info.Size()
						files = append(files, fileVersion{p, info.Size(), info.ModTime()})
					}
				}
				return nil
			})
			if fw {
				c.Kind = kind
			}
			if fw && !whole {
				// The framework's files without the one it writes
				// last: a save in progress, or one a crash cut short.
				// Never whole, however quiet.
				c.Why = map[string]string{"hf": "no trainer_state.json yet (the Trainer writes it last)",
					"dcp":       "no .metadata yet (torch.distributed.checkpoint writes it last)",
					"deepspeed": "not named by " + deepSpeedTracker + " yet (DeepSpeed writes it once every rank has saved)",
					"megatron":  "not covered by " + megatronTracker + " yet (written once every rank has saved)"}[kind]
				if kind == "hf" && exists(filepath.Join(c.Path, hfIncomplete)) {
					c.Why = hfIncomplete + " is there (the Trainer's just-in-time save has not finished)"
				}
				out = append(out, c)
				continue
			}
			if len(files) == 0 {
				// Made, not yet written (or a stray empty directory):
				// nothing to resume from.
				continue
			}
		} else if e.Type().IsRegular() {
			c.Kind = "file"
			if info, err := e.Info(); err == nil {
				c.ModTime, c.Size = info.ModTime(), info.Size()
			}
			files = []fileVersion{{c.Path, c.Size, c.ModTime}}
		} else {
			continue
		}
		c.Complete = true
		for _, f := range files {
			if openW(f.path) {
				c.Complete, c.Why = false, f.path+" is open for writing"
				break
			}
		}
		if c.Complete && (c.Kind == "file" || c.Kind == "dir") && now().Sub(c.ModTime) < d.Quiet {
			c.Complete, c.Why = false, whyRecent
		}
		if c.Complete && (c.Kind == "file" || c.Kind == "dir") {
			// Closed and quiet, which a file a crash cut short is too:
			// where its format can tell, it is asked (a framework's
			// directory has its last file for that).
			for _, f := range files {
				if why := d.short.check(f.path, f.size, f.mtime); why != "" {
					c.Complete, c.Why = false, f.path+" is "+why
					break
				}
			}
		}
		if c.Complete && c.Kind == "dir" && d.Glob == "" {
			// A plain directory is whole only by quietness; that is weaker,
			// so say so in Why even though it counts.
			c.Why = "quiet directory"
		}
		out = append(out, c)
	}
	d.short.roll()
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.ModTime.Equal(b.ModTime) {
			return a.ModTime.After(b.ModTime)
		}
		// File systems stamp times from a coarse clock, so two saves in a
		// row can share one: the higher step in the name is the newer.
		return lastNumber(a.Name) > lastNumber(b.Name)
	})
	return out, nil
}

// lastNumber is the last run of digits in name ("checkpoint-1500" 1500,
// "epoch=3-step=1500.ckpt" 1500, "ckpt-000020.bin" 20), -1 for none.
func lastNumber(name string) int64 {
	end := strings.LastIndexAny(name, "0123456789")
	if end < 0 {
		return -1
	}
	start := end
	for start > 0 && name[start-1] >= '0' && name[start-1] <= '9' {
		start--
	}
	n, err := strconv.ParseInt(name[start:end+1], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// fileVersion is one file of a candidate as the scan saw it.
type fileVersion struct {
	path  string
	size  int64
	mtime time.Time
}

// notCheckpoint: without --glob, hidden entries (.git, .ipynb_checkpoints,
// .env) and files plainly of another kind (source, notebooks, logs,
// configs) are never checkpoints. A --ckpt-dir that is also the project
// directory, or where the script writes its log, would otherwise hand
// train.py to the command as the checkpoint to resume from.
func notCheckpoint(name string, dir bool) bool {
	if strings.HasPrefix(name, ".") {
		return true
	}
	if dir {
		// lightning_logs holds TensorBoard events and, in
		// version_N/checkpoints/, Lightning's own checkpoints: handed to
		// the command whole, it is not a checkpoint Lightning can load
		// (Deeper tells the user where its checkpoints are).
		return name == "__pycache__" || name == "wandb" || name == "lightning_logs"
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".py", ".pyc", ".sh", ".bash", ".ipynb", ".md", ".rst", ".txt", ".log", ".out", ".err",
		".yaml", ".yml", ".toml", ".cfg", ".ini", ".lock", ".csv", ".html":
		return true
	}
	return false
}

// Deeper finds a checkpoint the command wrote below the entries of Dir,
// where Scan never looks: a name matching Glob or, without one, a file
// with a checkpoint's extension (.ckpt, .pt, .safetensors, ...), at least
// two levels down. PyTorch Lightning saves to
// lightning_logs/version_N/checkpoints/ under its root directory unless
// told otherwise, and a --ckpt-dir set to that root would otherwise
// protect nothing, without a word, for the whole run. Only files modified
// after since count: those the command wrote, not the pretrained weights
// a project keeps beside its checkpoints. It returns the first such path,
// or "". At most limit entries are looked at, so a huge dataset beside the
// checkpoints costs a bounded walk.
func (d *Detector) Deeper(limit int, since time.Time) string {
	found, seen := "", 0
	filepath.WalkDir(d.Dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return filepath.SkipDir
		}
		if seen++; seen > limit {
			return filepath.SkipAll
		}
		if p == d.Dir {
			return nil
		}
		rel, _ := filepath.Rel(d.Dir, p)
		name := e.Name()
		if strings.HasPrefix(name, ".") || internalName(name) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.Contains(rel, string(filepath.Separator)) {
			return nil // Scan's own level
		}
		match := !e.IsDir() && checkpointExt(name)
		if d.Glob != "" {
			match, _ = filepath.Match(d.Glob, name)
		}
		if !match {
			return nil
		}
		// Only a match is stat'ed: the walk may pass thousands of files.
		if info, err := e.Info(); err == nil && info.ModTime().After(since) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// checkpointExt: the extensions frameworks save checkpoints and weights
// under.
func checkpointExt(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".ckpt", ".pt", ".pth", ".safetensors", ".bin", ".distcp", ".pkl", ".h5", ".msgpack", ".nemo":
		return true
	}
	return false
}

// whyRecent is the Why of a candidate complete but for its quiet period.
const whyRecent = "modified within the quiet period"

// Newest is the newest complete candidate, or false.
func (d *Detector) Newest() (Candidate, bool, error) {
	cs, err := d.Scan()
	if err != nil {
		return Candidate{}, false, err
	}
	for _, c := range cs {
		if c.Complete {
			return c, true, nil
		}
	}
	return Candidate{}, false, nil
}

// framework recognises a checkpoint directory by the files its framework
// writes, and whether the one written last is there: DeepSpeed's and
// Megatron-LM's (or verl's) directories once the tracker file, written
// after every rank saved, names them or a later step (tracker.go);
// torch.distributed.checkpoint's shards (*.distcp) and its .metadata,
// renamed into place last; the Hugging Face Trainer's checkpoint-<step>/
// with training_args.bin (written with the model, first) and
// trainer_state.json (last).
//
// Each directory is read once a scan, every --poll: one ReadDir, however
// many frameworks are tried.
func framework(path string, e fs.DirEntry, tr trackers) (kind string, whole, ok bool) {
	if !e.IsDir() {
		return "", false, false
	}
	in := readContents(path)
	name := e.Name()
	switch {
	case in.deepSpeed():
		return "deepspeed", tr.deepspeed.covers(name), true
	case in.megatron(name, tr):
		return "megatron", tr.megatron.covers(name), true
	case in[".metadata"]:
		return "dcp", true, true
	case in.any(func(n string) bool { return strings.HasSuffix(n, ".distcp") }):
		return "dcp", false, true
	case hfName(name) && in[hfIncomplete]:
		return "hf", false, true
	case hfName(name) && in["trainer_state.json"]:
		return "hf", true, true
	case hfName(name) && in["training_args.bin"]:
		return "hf", false, true
	}
	return "", false, false
}

// contents are the names a directory holds directly.
type contents map[string]bool

func readContents(path string) contents {
	es, _ := os.ReadDir(path)
	in := make(contents, len(es))
	for _, e := range es {
		in[e.Name()] = true
	}
	return in
}

func (in contents) any(pred func(string) bool) bool {
	for n := range in {
		if pred(n) {
			return true
		}
	}
	return false
}

// hfIncomplete is the sentinel the Trainer's just-in-time checkpoint
// (enable_jit_checkpoint, on SIGTERM) writes into checkpoint-<step>/ before
// saving and removes once the save succeeded: while it is there the
// checkpoint is not whole, trainer_state.json or not.
const hfIncomplete = "checkpoint-is-incomplete.txt"

// hfName: the Trainer names its checkpoints checkpoint-<step>.
func hfName(name string) bool {
	n, ok := strings.CutPrefix(name, "checkpoint-")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 64)
	return err == nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// procOpenForWrite scans /proc/*/fd for a descriptor on path opened for
// writing (fdinfo flags with O_WRONLY or O_RDWR). A process gpurent cannot
// inspect is skipped.
func procOpenForWrite(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || target != abs {
				continue
			}
			info, err := os.ReadFile(filepath.Join("/proc", p.Name(), "fdinfo", fd.Name()))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(info), "\n") {
				if v, ok := strings.CutPrefix(line, "flags:"); ok {
					flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
					if err == nil && flags&3 != 0 { // O_WRONLY=1, O_RDWR=2
						return true
					}
				}
			}
		}
	}
	return false
}
