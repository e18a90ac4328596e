package supervise

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/gpurent/gpurent/internal/atomicfile"
	"github.com/gpurent/gpurent/internal/ckptdir"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/userfile"
)

// StateFile is the run's state in the checkpoint directory (ckptdir).
const StateFile = ckptdir.StateFile

type state struct {
	mu        sync.Mutex
	path      string
	Run       string               `json:"run"`
	Committed map[string]committed `json:"committed"` // by local name
}

type committed struct {
	Signature string `json:"signature"`
	ID        string `json:"id"`
	At        int64  `json:"at"` // unix seconds of the commit
}

// maxStateFile caps the run's state file: a few hundred bytes a
// checkpoint committed.
const maxStateFile = 64 << 20

func loadState(dir, run string) (*state, error) {
	s := &state{path: filepath.Join(dir, StateFile), Run: run, Committed: map[string]committed{}}
	b, err := userfile.Read(s.path, maxStateFile)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return nil, i18n.Errorf("run state: %w", err)
	}
	var disk state
	if json.Unmarshal(b, &disk) != nil || disk.Run != run {
		// Another run's state, or a damaged file: start afresh; the store
		// still has every committed checkpoint.
		return s, nil
	}
	if disk.Committed != nil {
		s.Committed = disk.Committed
	}
	return s, nil
}

func (s *state) isCommitted(c Candidate) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.Committed[c.Name]
	return ok && x.Signature == c.Signature()
}

// idOf is the id c was committed as, "" when it was not (or only
// locally, without a store).
func (s *state) idOf(c Candidate) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x, ok := s.Committed[c.Name]; ok && x.Signature == c.Signature() {
		return x.ID
	}
	return ""
}

// committedAs reports whether a checkpoint here was committed as id.
func (s *state) committedAs(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.Committed {
		if c.ID == id {
			return true
		}
	}
	return false
}

func (s *state) commit(c Candidate, id string, at int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Committed[c.Name] = committed{Signature: c.Signature(), ID: id, At: at}
	return s.saveLocked()
}

// saveLocked writes the state with a temporary file, fsync and rename.
func (s *state) saveLocked() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(s.path, b, 0o600); err != nil {
		return i18n.Errorf("run state: %w", err)
	}
	return nil
}
