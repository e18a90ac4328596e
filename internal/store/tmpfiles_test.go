package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// What a push killed while the directory store was writing leaves (the
// temporary files its objects and manifest are written to before their
// rename) is removed by the next clean-up once older than the grace, and
// never a file of a push still running.
func TestKilledPushTempFilesRemoved(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := mustOpen(t, dir)
	s := New(b, Options{})
	src, _ := resumable(t)
	m, err := s.Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	dead := "20261205T000000.000Z-0000abd5"
	var planted []string
	for _, rel := range []string{
		"runs/r/data/" + dead + "/000001.0.18a2b3c4d5e6f.tmp",
		"runs/r/data/" + m.ID + "/000001.18a2b3c4d5e6f.tmp", // beside a committed checkpoint's objects
		"runs/r/manifests/" + dead + ".json.18a2b3c4d5e6f.tmp",
		"runs/r/uploads/" + dead + ".json.18a2b3c4d5e6f.tmp",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
		planted = append(planted, p)
	}
	young := filepath.Join(dir, "runs/r/data/"+m.ID+"/000002.18a2b3c4d5e70.tmp")
	os.WriteFile(young, nil, 0o644)
	if _, err := s.Prune(ctx, "r", 5); err != nil {
		t.Fatal(err)
	}
	for _, p := range planted {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("left: %s", p)
		}
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a temporary file younger than the grace went: %v", err)
	}
	if _, probs, err := s.Verify(ctx, "r", m.ID, true); err != nil || len(probs) != 0 {
		t.Errorf("the committed checkpoint: %v %v", probs, err)
	}
}
