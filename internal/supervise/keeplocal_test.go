//go:build unix

package supervise

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ls is the names in dir but gpurent's own.
func ls(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if !internalName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestKeepLocal: with --keep-local, the Trainer checkpoints older than the
// newest N go once a newer one is committed, but for the one its state
// calls best; nothing goes before a commit, nor what the Trainer is still
// writing, nor anything that is not a checkpoint.
func TestKeepLocal(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	cfg := h.config(dir, h.b)
	cfg.Glob, cfg.KeepLocal = "", 1
	logged := captureLog(&cfg)
	now := time.Now()
	write := func(p, body string, ago time.Duration) {
		path := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(body), 0o644)
		os.Chtimes(path, now.Add(-ago), now.Add(-ago))
		os.Chtimes(filepath.Dir(path), now.Add(-ago), now.Add(-ago))
	}
	hf := func(step int, ago time.Duration, best string) {
		name := "checkpoint-" + strconv.Itoa(step)
		write(name+"/model.safetensors", "weights", ago)
		write(name+"/training_args.bin", "args", ago)
		write(name+"/trainer_state.json", `{"global_step": `+strconv.Itoa(step)+`, "best_model_checkpoint": `+best+`}`, ago)
	}
	hf(100, 50*time.Minute, "null")
	hf(200, 40*time.Minute, `"out/checkpoint-200"`)
	hf(300, 30*time.Minute, `"out/checkpoint-200"`)
	hf(400, 20*time.Minute, `"out/checkpoint-200"`)
	write("train.jsonl", "data", time.Hour) // not the Trainer's
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing committed yet: nothing goes.
	c, _, _ := sup.det.Newest()
	sup.trimLocal(c)
	if got := ls(t, dir); len(got) != 5 {
		t.Fatalf("before any commit: %v", got)
	}
	// A save in progress, newer than all: not whole, so never deleted nor counted.
	write("checkpoint-500/model.safetensors", "weights", 0)
	if !sup.uploadNewest(context.Background()) {
		t.Fatalf("upload failed:\n%s", logged())
	}
	want := []string{"checkpoint-200", "checkpoint-400", "checkpoint-500", "train.jsonl"}
	if got := ls(t, dir); !slices.Equal(got, want) {
		t.Errorf("after committing checkpoint-400 with --keep-local 1: %v, want %v\n%s", got, want, logged())
	}
	if !strings.Contains(logged(), "deleted checkpoint-300 from "+dir+" (--keep-local 1: checkpoint-400, newer, is in the store)") {
		t.Errorf("log:\n%s", logged())
	}
	// Saves faster than uploads: checkpoint-500 and -600 whole, neither in
	// the store yet. Only what the store's checkpoint-400 covers may go:
	// itself (500 and 600 are newer, here), not 500, though it is past
	// the newest one.
	hf(500, 10*time.Minute, `"out/checkpoint-200"`)
	hf(600, 5*time.Minute, `"out/checkpoint-200"`)
	newest, _, _ := sup.det.Newest()
	sup.trimLocal(newest)
	want = []string{"checkpoint-200", "checkpoint-500", "checkpoint-600", "train.jsonl"}
	if got := ls(t, dir); !slices.Equal(got, want) {
		t.Errorf("with uploads behind: %v, want %v\n%s", got, want, logged())
	}
}

// TestKeepLocalPlainFiles: quiet plain files are deleted only where --glob
// names them as checkpoints, and what is kept for want of it is said once.
func TestKeepLocalPlainFiles(t *testing.T) {
	for _, glob := range []string{"", "step-*.pt"} {
		h := newHarness(t)
		dir := t.TempDir()
		cfg := h.config(dir, h.b)
		cfg.Glob, cfg.KeepLocal, cfg.Quiet = glob, 2, time.Millisecond
		logged := captureLog(&cfg)
		for i, name := range []string{"step-1.pt", "step-2.pt", "step-3.pt", "step-4.pt"} {
			p := filepath.Join(dir, name)
			os.WriteFile(p, []byte(name), 0o644)
			at := time.Now().Add(time.Duration(i-10) * time.Minute)
			os.Chtimes(p, at, at)
		}
		sup, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !sup.uploadNewest(context.Background()) {
			t.Fatalf("upload failed:\n%s", logged())
		}
		sup.uploadNewest(context.Background()) // committed already: said once only
		got := ls(t, dir)
		if glob == "" {
			if len(got) != 4 || strings.Count(logged(), "--keep-local: step-2.pt is kept, and so is every entry without a framework's files") != 1 {
				t.Errorf("without --glob: %v\n%s", got, logged())
			}
		} else if !slices.Equal(got, []string{"step-3.pt", "step-4.pt"}) {
			t.Errorf("with --glob: %v\n%s", got, logged())
		}
	}
}
