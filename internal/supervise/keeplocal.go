package supervise

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gpurent/gpurent/internal/userfile"
)

// trimLocal deletes, with Config.KeepLocal N, the complete checkpoints in
// CkptDir older than the newest N, once the store holds one at least as
// new as each: a rented machine's data disk (AutoDL gives 50 GB) fills
// with DeepSpeed's or Megatron-LM's checkpoints, which those frameworks
// never delete, and the next save dies with "No space left on device".
// What it deletes is what resuming does not need: the store has a newer
// checkpoint, and the newest N stay here.
//
// It deletes only what it knows to be a checkpoint: a framework's
// (Hugging Face Trainer, DeepSpeed, Megatron-LM, torch.distributed.checkpoint)
// or an entry --glob names. A plain quiet file without --glob may be a
// dataset or a final model in the same directory. The Trainer's best
// checkpoint (trainer_state.json's best_model_checkpoint), which
// load_best_model_at_end reads at the end, is kept too.
//
// Called under uploading, after a commit; trimmedFor keeps it to once per
// newest committed checkpoint.
func (s *Supervisor) trimLocal(newest Candidate) {
	if s.cfg.KeepLocal <= 0 || s.cfg.Store == nil || s.trimmedFor == newest.Signature() {
		return
	}
	cs, err := s.det.Scan()
	if err != nil {
		return
	}
	var complete []Candidate
	for _, c := range cs {
		if c.Complete {
			complete = append(complete, c)
		}
	}
	safe := -1 // the newest committed, by the scan's newest-first order
	for i, c := range complete {
		if s.st.isCommitted(c) {
			safe = i
			break
		}
	}
	if safe < 0 {
		return
	}
	s.trimmedFor = newest.Signature()
	best := hfBest(complete)
	var unsure []string
	for i, c := range complete {
		if i < s.cfg.KeepLocal || i < safe || c.Name == best {
			continue
		}
		if !knownCheckpoint(c) && s.cfg.Glob == "" {
			unsure = append(unsure, c.Name)
			continue
		}
		if err := os.RemoveAll(c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.cfg.Log("--keep-local: deleting %s: %v", c.Name, err)
			continue
		}
		s.cfg.Log("deleted %s from %s (--keep-local %d: %s, newer, is in the store)", c.Name, s.cfg.CkptDir, s.cfg.KeepLocal, complete[safe].Name)
	}
	if len(unsure) > 0 && !s.unsureSaid {
		s.unsureSaid = true
		s.cfg.Log("--keep-local: %s is kept, and so is every entry without a framework's files (it may be data, not a checkpoint): name the checkpoints with --glob for gpurent to delete old ones", unsure[0])
	}
}

// knownCheckpoint says c is a checkpoint by its framework's files, not
// only by being a quiet entry of the directory.
func knownCheckpoint(c Candidate) bool {
	switch c.Kind {
	case "hf", "dcp", "deepspeed", "megatron":
		return true
	}
	return false
}

// hfBest is the name of the checkpoint the newest Trainer checkpoint's
// state calls best ("" when none): the Trainer loads it at the end with
// load_best_model_at_end, and its own rotation keeps it for that reason.
func hfBest(complete []Candidate) string {
	for _, c := range complete {
		if c.Kind != "hf" {
			continue
		}
		b, err := userfile.Read(filepath.Join(c.Path, "trainer_state.json"), 256<<20)
		if err != nil {
			return ""
		}
		var st struct {
			Best *string `json:"best_model_checkpoint"`
		}
		if json.Unmarshal(b, &st) != nil || st.Best == nil {
			return ""
		}
		return filepath.Base(filepath.FromSlash(*st.Best))
	}
	return ""
}
