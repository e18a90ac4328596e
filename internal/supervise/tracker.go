package supervise

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpurent/gpurent/internal/atomicfile"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// Tracker files: DeepSpeed, Megatron-LM and verl write one into the save
// directory after every rank has saved, naming the newest whole
// checkpoint, and read it on load to find what to resume from. It is the
// sign a checkpoint directory is whole (the files of one rank say nothing
// of the others), and on a new machine it has to be there again, or the
// framework starts from scratch with a mere warning.
const (
	// deepSpeedTracker holds the tag of the newest checkpoint,
	// global_step<N> unless the script names its own.
	deepSpeedTracker = "latest"
	// megatronTracker holds the iteration of the newest checkpoint
	// (Megatron-LM's iter_%07d/, verl's global_step_<N>/), or "release".
	megatronTracker = "latest_checkpointed_iteration.txt"
)

// tracked is what one tracker file says.
type tracked struct {
	ok     bool
	target string // its content, trimmed
	step   int64  // the content's trailing number, -1 when it has none
}

// trackers are the tracker files of one checkpoint directory, read once a
// scan.
type trackers struct{ deepspeed, megatron tracked }

func readTrackers(dir string) trackers {
	return trackers{deepspeed: readTracked(filepath.Join(dir, deepSpeedTracker)), megatron: readTracked(filepath.Join(dir, megatronTracker))}
}

func readTracked(p string) tracked {
	f, _, err := userfile.Open(p) // a FIFO must not block the scan
	if err != nil {
		return tracked{}
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096)) // a tag or a number
	t := strings.TrimSpace(string(b))
	if t == "" {
		return tracked{} // being written
	}
	return tracked{ok: true, target: t, step: trailingNumber(t)}
}

// covers reports whether the tracker vouches for the checkpoint directory
// name: it names it, or a later step (it is rewritten after each whole
// save, so every earlier step was whole too).
func (t tracked) covers(name string) bool {
	if !t.ok {
		return false
	}
	if name == t.target {
		return true
	}
	n := trailingNumber(name)
	return n >= 0 && t.step >= 0 && n <= t.step
}

// trailingNumber is the number a name ends with ("global_step200",
// "iter_0000200", "200"), -1 when none.
func trailingNumber(s string) int64 {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, err := strconv.ParseInt(s[i:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// deepSpeed: a DeepSpeed checkpoint holds mp_rank_XX_model_states.pt
// and, with ZeRO, *_optim_states.pt per rank.
func (in contents) deepSpeed() bool {
	return in.any(func(n string) bool {
		return strings.HasSuffix(n, "_model_states.pt") || strings.HasSuffix(n, "_optim_states.pt")
	})
}

// megatron: Megatron-LM names its checkpoints iter_%07d (7 digits or
// more) and saves mp_rank_XX/ subdirectories in them (or
// torch.distributed.checkpoint shards); verl names them global_step_<N>,
// with actor/ inside. Both write latest_checkpointed_iteration.txt last;
// where it exists, a directory with such a name is theirs.
func (in contents) megatron(name string, tr trackers) bool {
	if n, ok := strings.CutPrefix(name, "iter_"); ok && digits(n) && len(n) >= 7 {
		return tr.megatron.ok || in[".metadata"] || in.any(func(n string) bool { return strings.HasPrefix(n, "mp_rank_") })
	}
	if n, ok := strings.CutPrefix(name, "global_step_"); ok && digits(n) {
		return tr.megatron.ok || in["actor"]
	}
	return false
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// RestoreTracker writes the tracker file of the framework whose checkpoint
// was just pulled into dest, into dest's parent, unless one there already
// names a checkpoint that exists and is as new (by its step, or one of the
// script's own naming): on a new machine global_step<N>/ alone would leave
// DeepSpeed's load_checkpoint(dir) (or Megatron's --load dir) starting
// from scratch while gpurent said it resumed, and beside an older one it
// would load the older. It returns what it
// wrote ("" for nothing); the file is written to a temporary name and
// renamed, as the frameworks' own loaders may read it at any time.
func RestoreTracker(dest string) (string, error) {
	dir, name := filepath.Dir(dest), filepath.Base(dest)
	tr := readTrackers(dir)
	in := readContents(dest)
	var file, content string
	switch {
	case in.deepSpeed():
		if tr.deepspeed.ok && exists(filepath.Join(dir, tr.deepspeed.target)) {
			if t, n := lastNumber(tr.deepspeed.target), lastNumber(name); t < 0 || n < 0 || t >= n {
				return "", nil
			}
		}
		file, content = deepSpeedTracker, name
	case in.megatron(name, trackers{}):
		n := trailingNumber(name)
		if n < 0 || (name != fmt.Sprintf("iter_%07d", n) && name != fmt.Sprintf("global_step_%d", n)) {
			return "", nil // a name the framework would not derive from a number
		}
		if tr.megatron.ok && tr.megatron.step >= n &&
			(exists(filepath.Join(dir, fmt.Sprintf("iter_%07d", tr.megatron.step))) || exists(filepath.Join(dir, fmt.Sprintf("global_step_%d", tr.megatron.step)))) {
			return "", nil
		}
		file, content = megatronTracker, strconv.FormatInt(n, 10)
	default:
		return "", nil
	}
	if err := atomicfile.Write(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		return "", i18n.Errorf("write %s: %w", file, err)
	}
	return fmt.Sprintf("%s (%s)", filepath.Join(dir, file), content), nil
}
