package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ckpt rm deletes the checkpoint named by its id, and only it.
func TestCkptRm(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	data := filepath.Join(dir, "model.txt")
	os.WriteFile(data, []byte("weights"), 0o644)
	var ids []string
	for range 2 {
		code, out, errs := gpurent(t, "ckpt", "push", data, "--store", store, "--run", "r", "--no-encrypt", "--allow-unauthenticated", "-o", "json")
		if code != 0 {
			t.Fatalf("push: %d %s", code, errs)
		}
		_, rest, _ := strings.Cut(out, `"id": "`)
		id, _, _ := strings.Cut(rest, `"`)
		ids = append(ids, id)
	}
	// A missing id among them: nothing is deleted.
	code, _, errs := gpurent(t, "ckpt", "rm", ids[0], "20261205T000000.000Z-00000000", "--store", store, "--run", "r")
	if code != 2 || !strings.Contains(errs, "nothing was deleted") {
		t.Fatalf("rm with a missing id: %d %s", code, errs)
	}
	_, out, _ := gpurent(t, "ckpt", "ls", "--store", store, "--run", "r")
	if !strings.Contains(out, "2 checkpoints in run r") {
		t.Fatalf("rm with a missing id deleted:\n%s", out)
	}
	code, out, errs = gpurent(t, "ckpt", "rm", ids[0], ids[0], "--store", store, "--run", "r")
	if code != 0 || !strings.Contains(out, "deleted checkpoint "+ids[0]) {
		t.Fatalf("rm: %d %q %s", code, out, errs)
	}
	_, out, _ = gpurent(t, "ckpt", "ls", "--store", store, "--run", "r")
	if strings.Contains(out, ids[0]) || !strings.Contains(out, ids[1]) || !strings.Contains(out, "1 checkpoint in run r") {
		t.Errorf("ls after rm:\n%s", out)
	}
}
