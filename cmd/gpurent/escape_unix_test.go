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
