//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFIFOsAnswered: a FIFO in the store (lease, manifests, logs, spend)
// or in --ckpt-dir (the run's state, lock and budget files) makes no
// command hang: each answers, whatever it says, within gpurentProc's 5 s.
// On the commit before, run, ckpt ls, runs, prune, log --list and run
// --budget blocked in open, and SIGTERM did not end them.
func TestFIFOsAnswered(t *testing.T) {
	const id = "20261207T120000.000Z-0123abcd"
	for _, where := range []string{
		"store/runs/r/lease/000000000009-" + id + ".json",
		"store/runs/r/manifests/" + id + ".json",
		"store/runs/r/logs/" + id + "/info.json",
		"store/runs/r/spend/" + id + ".json",
		"ck/.gpurent-run.json",
		"ck/.gpurent-run.lock",
		"ck/.gpurent-budget.json",
	} {
		t.Run(where, func(t *testing.T) {
			base := t.TempDir()
			st, ck := filepath.Join(base, "store"), filepath.Join(base, "ck")
			p := filepath.Join(base, filepath.FromSlash(where))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.MkdirAll(ck, 0o755)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{
				{"run", "--store", st, "--no-encrypt", "--allow-unauthenticated", "--run", "r", "--ckpt-dir", ck, "--preemption", "none", "--no-status", "--", "true"},
				{"run", "--store", st, "--no-encrypt", "--allow-unauthenticated", "--run", "r", "--ckpt-dir", ck, "--preemption", "none", "--no-status", "--price", "1USD", "--budget", "10", "--", "true"},
				{"ckpt", "ls", "--store", st, "--run", "r", "--allow-unauthenticated", "--no-encrypt"},
				{"ckpt", "runs", "--store", st, "--allow-unauthenticated", "--no-encrypt"},
				{"ckpt", "prune", "--store", st, "--run", "r", "--keep", "1", "--allow-unauthenticated", "--no-encrypt"},
				{"ckpt", "log", "--list", "--store", st, "--run", "r", "--allow-unauthenticated", "--no-encrypt"},
			} {
				code, stderr := gpurentProc(t, args...)
				t.Logf("%v: exit %d: %s", args[:2], code, stderr)
				// The run's own state file is no bad usage: the machine's
				// fault, exit 1 (it was 2 on the commit before).
				if strings.HasSuffix(where, ".gpurent-run.json") && args[0] == "run" && code != 1 {
					t.Errorf("%v with a FIFO as the run's state: exit %d, want 1", args[:2], code)
				}
			}
		})
	}
}
