//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/store"
)

// outageTrainer saves a checkpoint every 300 ms, STEPS of them, then
// exits 0; it leaves a mark if it was stopped.
const outageTrainer = `trap 'echo stopped > "$MARK"; exit 143' TERM INT
i=0
while [ $i -lt $STEPS ]; do
  i=$((i+1))
  mkdir -p "$CK/.tmp-$i" && echo $i > "$CK/.tmp-$i/step" && mv "$CK/.tmp-$i" "$CK/step-$i"
  sleep 0.3
done
`

// lockedBuffer is a bytes.Buffer a test may read while a process writes
// it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunRidesOutStoreOutage: a directory store moved away for 5 s, then
// replaced by an empty directory or by a file (and moved away for 25 s),
// is an outage: the command
// is never stopped, nothing lands in the stand-in, the newest checkpoint
// is committed once the store is back, exit 0, and at --poll 200ms the
// outage costs a handful of lines, not one a scan. On the commit before,
// run stopped the command about 2 s in as "another session took the run
// over" and exited 1. It is given 120 s to end once the store is back:
// under a cold CI's load (2026-12-08) one took over 40 s, cause not found.
func TestRunRidesOutStoreOutage(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	for _, c := range []struct {
		standIn string
		outage  time.Duration
		steps   int
	}{{"nothing", 25 * time.Second, 110}, {"empty directory", 5 * time.Second, 40}, {"file", 5 * time.Second, 40}} {
		standIn := c.standIn
		t.Run(standIn, func(t *testing.T) {
			t.Parallel() // each outage waits in real time, on its own store
			ctx := context.Background()
			base := t.TempDir()
			ck, st, cfg := filepath.Join(base, "ck"), filepath.Join(base, "store"), filepath.Join(base, "cfg")
			if _, err := store.Keygen(filepath.Join(cfg, "gpurent", "identity.txt")); err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(ck, 0o755)
			mark := filepath.Join(base, "mark")
			script := filepath.Join(base, "trainer.sh")
			os.WriteFile(script, []byte(outageTrainer), 0o755)
			cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", ck, "--store", st, "--run", "r", "--keep", "2", "--glob", "step-*",
				"--preemption", "none", "--no-status", "--poll", "200ms", "--quiet", "100ms", "--", "sh", script)
			cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+t.TempDir(), "GPURENT_NOTIFY=", "CK="+ck, "MARK="+mark, "STEPS="+strconv.Itoa(c.steps))
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Wait for a first commit, then take the store away.
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(stderr.String(), "committed") && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			away := filepath.Join(base, "away")
			if err := os.Rename(st, away); err != nil {
				t.Fatal(err)
			}
			time.Sleep(c.outage / 2)
			switch standIn {
			case "empty directory":
				os.Mkdir(st, 0o700)
			case "file":
				os.WriteFile(st, nil, 0o600)
			}
			time.Sleep(c.outage / 2)
			if standIn == "empty directory" {
				if ents, _ := os.ReadDir(st); len(ents) != 0 {
					t.Errorf("run wrote into the stand-in: %v", ents)
				}
			}
			os.RemoveAll(st)
			if err := os.Rename(away, st); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(120 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("run still going 120 s after the store came back; stderr:\n%s", stderr.String())
			}
			out := stderr.String()
			if err != nil {
				t.Errorf("run: %v; want exit 0; stderr:\n%s", err, out)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("the command was stopped; stderr:\n%s", out)
			}
			if strings.Contains(out, "lost the run's lease") {
				t.Errorf("the outage was taken for a takeover:\n%s", out)
			}
			about := 0
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "store") && !strings.Contains(l, "committed") && !strings.Contains(l, "checkpoints from") {
					about++
				}
			}
			if about > 15 {
				t.Errorf("%d lines about the store in a %v outage, want at most 15:\n%s", about, c.outage, out)
			}
			opened, err := openFileStore(ctx, st, cfg)
			if err != nil {
				t.Fatal(err)
			}
			latest, _, err := opened.Latest(ctx, "r")
			if want := "step-" + strconv.Itoa(c.steps); err != nil || latest.Name != want {
				t.Errorf("newest in the store: %v (%v), want %s; stderr:\n%s", latest, err, want, out)
			}
		})
	}
}
