//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/store/cloud"
)

// TestPlantedCheckpointNotResumed: someone with the store's write key and
// the public recipient commits a newer checkpoint; the owner's run on a
// new machine resumes from the owner's own, names the planted one, and
// ckpt pull --id latest does the same.
func TestPlantedCheckpointNotResumed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg")
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("GPURENT_IDENTITY", "")
	t.Setenv("GPURENT_RECIPIENT", "")
	st := filepath.Join(dir, "store")
	rcpt, err := store.Keygen(filepath.Join(cfg, "gpurent", "identity.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(dir, "ck")
	if err := os.MkdirAll(filepath.Join(ck, "checkpoint-100"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ck, "checkpoint-100", "model.pt"), []byte("the owner's weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := gpurent(t, "ckpt", "push", filepath.Join(ck, "checkpoint-100"), "--store", st, "--run", "r"); code != 0 {
		t.Fatalf("owner's push: exit %d: %s", code, stderr)
	}
	// The attacker: the recipient (printed in every manifest) and a store
	// client, no identity.
	evil := filepath.Join(dir, "evil", "checkpoint-900")
	if err := os.MkdirAll(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, "model.pt"), []byte("import os; os.system('...')"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _, err := cloud.Open(ctx, st, cloud.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rs, err := store.ParseRecipients([]string{rcpt})
	if err != nil {
		t.Fatal(err)
	}
	planted, err := store.New(b, store.Options{Crypto: &store.Crypto{Recipients: rs, Keys: []string{rcpt}}, Host: "attacker"}).Push(ctx, evil, "r")
	if err != nil {
		t.Fatal(err)
	}

	code, _, stderr := gpurent(t, "ckpt", "pull", filepath.Join(dir, "pulled"), "--store", st, "--run", "r")
	if code != 0 || !strings.Contains(stderr, "passed over checkpoint "+planted.ID) {
		t.Fatalf("pull --id latest: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "pulled", "model.pt")); string(got) != "the owner's weights" {
		t.Fatalf("pull --id latest restored %q", got)
	}
	if code, _, stderr := gpurent(t, "ckpt", "pull", filepath.Join(dir, "p2"), "--store", st, "--run", "r", "--id", planted.ID); code == 0 || !strings.Contains(stderr, "no proof of its writer") {
		t.Fatalf("pull of the planted id: exit %d: %s", code, stderr)
	}

	newBox := filepath.Join(dir, "new-box")
	seen := filepath.Join(dir, "resumed-from")
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", newBox, "--store", st, "--run", "r", "--preemption", "none", "--no-status",
		"--", "sh", "-c", `cat "$GPURENT_RESUME_FROM/model.pt" > "$0"`, seen)
	if code != 0 {
		t.Fatalf("run on a new machine: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(seen); string(got) != "the owner's weights" {
		t.Fatalf("the command resumed from %q; want the owner's checkpoint", got)
	}
	if !strings.Contains(stderr, planted.ID) || !strings.Contains(stderr, "not authenticated") {
		t.Fatalf("run did not name the planted checkpoint:\n%s", stderr)
	}
}

// syncBuffer is a bytes.Buffer a running process writes while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// saver is a training command that saves a checkpoint every 300 ms until
// it is stopped.
const saver = `i=0; while true; do i=$((i+1)); mkdir -p "$GPURENT_CKPT_DIR/step-$i" && echo $i > "$GPURENT_CKPT_DIR/step-$i/w"; sleep 0.3; done`

// TestSecondSessionOfARun: a second gpurent run of a run another session
// holds starts nothing and says who holds it; with --takeover it takes the
// run, and the first stops at its next commit without committing; a
// second run on the same --ckpt-dir is refused too.
func TestSecondSessionOfARun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg")
	if _, err := store.Keygen(filepath.Join(cfg, "gpurent", "identity.txt")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("GPURENT_IDENTITY", "")
	t.Setenv("GPURENT_RECIPIENT", "")
	st := filepath.Join(dir, "store")
	first := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "a"), "--store", st, "--run", "r", "--preemption", "none",
		"--no-status", "--poll", "50ms", "--quiet", "100ms", "--", "sh", "-c", saver)
	first.Env = append(os.Environ(), "GPURENT_AS_MAIN=1")
	var out syncBuffer
	first.Stdout, first.Stderr = &out, &out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- first.Wait() }()
	defer first.Process.Kill()
	opened, err := openFileStore(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if ms, _ := opened.List(ctx, "r"); len(ms) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first session committed nothing in 20 s:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	marker := filepath.Join(dir, "second-started")
	code, _, stderr := gpurent(t, "run", "--ckpt-dir", filepath.Join(dir, "b"), "--store", st, "--run", "r", "--preemption", "none", "--no-status",
		"--", "touch", marker)
	if code == 0 || !strings.Contains(stderr, "is held by another session: gpurent run on") || !strings.Contains(stderr, "--takeover") {
		t.Fatalf("second session: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the second session started its command")
	}
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", filepath.Join(dir, "a"), "--store", st, "--run", "other", "--preemption", "none", "--no-status",
		"--", "touch", marker)
	if code == 0 || !strings.Contains(stderr, "is in use by gpurent run of run r") {
		t.Fatalf("a second run on the same --ckpt-dir: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a second run on the same directory started its command")
	}

	// --takeover on the first's own directory is refused for the
	// directory before it takes the run: the first goes on.
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", filepath.Join(dir, "a"), "--store", st, "--run", "r", "--preemption", "none", "--no-status",
		"--takeover", "--", "touch", marker)
	if code == 0 || !strings.Contains(stderr, "is in use by gpurent run of run r") {
		t.Fatalf("--takeover on the same --ckpt-dir: exit %d: %s", code, stderr)
	}
	select {
	case <-waited:
		t.Fatalf("the first session stopped after a --takeover that was refused:\n%s", out.String())
	case <-time.After(2 * time.Second):
	}

	// The takeover: the new session holds the run while the first would
	// go on saving; the first must stop within a commit or two.
	takeover := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "b"), "--store", st, "--run", "r", "--preemption", "none",
		"--no-status", "--takeover", "--", "sleep", "8")
	takeover.Env = append(os.Environ(), "GPURENT_AS_MAIN=1")
	var tout syncBuffer
	takeover.Stdout, takeover.Stderr = &tout, &tout
	if err := takeover.Start(); err != nil {
		t.Fatal(err)
	}
	defer takeover.Process.Kill()
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the first session went on after the takeover:\n%s\n--- takeover:\n%s", out.String(), tout.String())
	}
	if first.ProcessState.ExitCode() != 1 || !strings.Contains(out.String(), "lost the run's lease") {
		t.Fatalf("first session: exit %d:\n%s", first.ProcessState.ExitCode(), out.String())
	}
	ms, err := opened.List(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	took := strings.Index(tout.String(), "took run r")
	if took < 0 {
		t.Fatalf("the takeover did not say it took the run:\n%s", tout.String())
	}
	// Fenced: no checkpoint was made after the takeover wrote its lease
	// (generation 2), and the first said nothing was committed after.
	gen2, _ := filepath.Glob(filepath.Join(st, "runs", "r", "lease", "000000000002-*.json"))
	if len(gen2) != 1 {
		t.Fatalf("the takeover's lease: %v", gen2)
	}
	fi, err := os.Stat(gen2[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Created.After(fi.ModTime()) {
			t.Errorf("checkpoint %s (%s) was made at %s, after the takeover at %s", m.ID, m.Name, m.Created, fi.ModTime())
		}
	}
	if lost := strings.Index(out.String(), "lost the run's lease"); strings.LastIndex(out.String(), "committed step-") > lost {
		t.Errorf("the first session committed after it lost the lease:\n%s", out.String())
	}
	if err := takeover.Wait(); err != nil {
		t.Fatalf("takeover session: %v\n%s", err, tout.String())
	}
}
