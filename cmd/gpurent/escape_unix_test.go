//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPushEscapesNames: a pushed name holding terminal controls reached
// the terminal raw on the commit before ("pushed ... %s"); ls escaped it.
func TestPushEscapesNames(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "ck\x1b[31mred\x07")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "w"), []byte("w"), 0o644)
	code, out, errOut := gpurent(t, "ckpt", "push", "--store", filepath.Join(base, "store"), "--run", "r", "--no-encrypt", "--allow-unauthenticated", src)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.ContainsAny(out+errOut, "\x1b\x07") {
		t.Errorf("terminal controls printed raw: %q %q", out, errOut)
	}
	if !strings.Contains(out, "pushed") {
		t.Errorf("no pushed line: %q", out)
	}
}

// TestLongPriceRefusedAtOnce: a 128 KB --price took 9 s on the commit
// before (every offer id compared with it for a suggestion); it is bad
// usage, said at once (gpurentProc fails a command still running at 5 s).
func TestLongPriceRefusedAtOnce(t *testing.T) {
	long := "a" + strings.Repeat("x", 100<<10) // an argument holds 128 KiB at most
	code, errOut := gpurentProc(t, "run", "--price", long, "--ckpt-dir", t.TempDir(), "--preemption", "none", "--no-status", "--", "true")
	if code != 2 || !strings.Contains(errOut, "--price") || len(errOut) > 1000 {
		t.Errorf("exit %d, stderr %d bytes: %.300q", code, len(errOut), errOut)
	}
}
