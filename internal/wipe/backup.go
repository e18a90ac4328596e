//go:build unix

package wipe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/supervise"
	"github.com/gpurent/gpurent/internal/userfile"
)

// Backups is what the backup check needs of a checkpoint store; a
// *store.Store is one.
type Backups interface {
	List(ctx context.Context, run string) ([]*store.Manifest, error)
	Files(m *store.Manifest) ([]store.Entry, error)
	Verify(ctx context.Context, run, id string, deep bool) ([]*store.Manifest, []store.Problem, error)
}

// Backed is the evidence that a checkpoint directory may go: its newest
// checkpoint is in the store, byte for byte, and reads back whole.
type Backed struct {
	Dir        string `json:"dir"`
	Checkpoint string `json:"checkpoint"`
	Run        string `json:"run"`
	ID         string `json:"id"`
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
}

// RunOf reads the run name gpurent run recorded in a checkpoint
// directory, or "".
//
// The file is read as a regular file only, capped: a directory being
// wiped may hold anything (a FIFO, a link to /dev/zero) under that name.
func RunOf(dir string) string {
	b, err := userfile.Read(filepath.Join(dir, supervise.StateFile), stateFileMax)
	if err != nil {
		return ""
	}
	var s struct{ Run string }
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	return s.Run
}

// CheckBackup finds the newest complete checkpoint in dir (as gpurent run
// decides it), hashes its files, finds a committed checkpoint of run with
// the same name and the same files (paths, sizes, SHA-256), and verifies
// that one deeply: every object read back, decrypted and hashed. Any
// shortfall is an error saying which.
func CheckBackup(ctx context.Context, b Backups, run, dir string) (Backed, error) {
	det := &supervise.Detector{Dir: dir, Quiet: 5 * time.Second}
	c, ok, err := det.Newest()
	if err != nil {
		return Backed{}, err
	}
	if !ok {
		return Backed{}, fmt.Errorf("no complete checkpoint in %s to check", dir)
	}
	local, paths, err := store.Scan(c.Path)
	if err != nil {
		return Backed{}, err
	}
	want := map[string]store.Entry{}
	var bytes int64
	for _, e := range local {
		if e.Type == "file" {
			sum, err := hashFile(paths[e.Object])
			if err != nil {
				return Backed{}, err
			}
			e.SHA256 = sum
			bytes += e.Size
		}
		want[e.Path] = e
	}
	ms, err := b.List(ctx, run)
	if err != nil {
		return Backed{}, fmt.Errorf("list run %s: %w", run, err)
	}
	sameName := 0
	for i := len(ms) - 1; i >= 0; i-- { // newest first
		m := ms[i]
		if m.Name != c.Name {
			continue
		}
		sameName++
		files, err := b.Files(m)
		if err != nil {
			return Backed{}, fmt.Errorf("checkpoint %s: %w", m.ID, err)
		}
		if !sameFiles(want, files) {
			continue
		}
		_, probs, err := b.Verify(ctx, run, m.ID, true)
		if err != nil {
			return Backed{}, fmt.Errorf("verify %s: %w", m.ID, err)
		}
		if len(probs) > 0 {
			return Backed{}, fmt.Errorf("checkpoint %s of run %s matches %s but fails verification: %s: %s", m.ID, run, c.Name, probs[0].Path, probs[0].Msg)
		}
		return Backed{Dir: dir, Checkpoint: c.Name, Run: run, ID: m.ID, Files: len(paths), Bytes: bytes}, nil
	}
	if sameName > 0 {
		return Backed{}, fmt.Errorf("the newest local checkpoint %s differs from all %d stored checkpoints of that name in run %s (changed since the upload?)", c.Name, sameName, run)
	}
	return Backed{}, fmt.Errorf("the newest local checkpoint %s is not committed in run %s of the store", c.Name, run)
}

func sameFiles(want map[string]store.Entry, got []store.Entry) bool {
	if len(got) != len(want) {
		return false
	}
	for _, g := range got {
		w, ok := want[g.Path]
		if !ok || w.Type != g.Type || w.Size != g.Size || w.SHA256 != g.SHA256 || w.Link != g.Link {
			return false
		}
	}
	return true
}

// stateFileMax caps gpurent run's state file: it holds a run name and
// the committed checkpoints' names and ids, kilobytes in practice.
const stateFileMax = 16 << 20

// hashFile hashes a checkpoint file, opened without blocking and only if
// it is a regular file (one swapped for a FIFO since the scan would hang
// the check).
func hashFile(path string) (string, error) {
	f, _, err := userfile.OpenNoFollow(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
