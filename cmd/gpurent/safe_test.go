package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/exitcode"
)

// A name chosen by someone else reaches the terminal as text: a file named
// to erase the line that lists it ("\r\x1b[2K") is shown escaped in wipe's
// plan, audit's report and an error, never as the bytes a terminal obeys.
func TestNamesFromTheMachineAreEscaped(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"data", "home", "root"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	evil := filepath.Join(dir, "data", "evil\r\x1b[2Khidden.txt")
	if err := os.WriteFile(evil, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "cfg"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	escaped := `evil\r\x1b[2Khidden.txt`
	raw := func(name, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\r\x1b") {
			t.Errorf("%s wrote a raw control character: %q", name, out)
		}
	}

	_, out, errOut := gpurent(t, "wipe", evil, "--root", filepath.Join(dir, "root"))
	raw("wipe", out+errOut)
	if !strings.Contains(out, escaped) {
		t.Errorf("wipe's plan does not name %s:\n%s", escaped, out)
	}

	code, out, errOut := gpurent(t, "wipe", evil+"\x1b[31m-gone", "--root", filepath.Join(dir, "root"))
	raw("wipe's error", out+errOut)
	if code != exitcode.Usage || !strings.Contains(errOut, escaped+`\x1b[31m-gone`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}

	if os.Geteuid() != 0 {
		t.Log("audit's leftovers need a file of another owner: not root, not checked")
		return
	}
	if err := os.Lchown(evil, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	_, out, errOut = gpurent(t, "audit", "--data", filepath.Join(dir, "data"), "--root", filepath.Join(dir, "root"), "--home", filepath.Join(dir, "home"))
	raw("audit", out+errOut)
	if !strings.Contains(out, escaped+" (0 B, 1 file, owned by uid 12345)") {
		t.Errorf("audit does not name %s:\n%s", escaped, out)
	}
}

// run's messages are one event a line: a checkpoint whose name holds a
// newline (names are the trainer's, and any byte but / is allowed) is
// named escaped, and never starts a line that does not come from gpurent.
func TestRunNamesACheckpointOnOneLine(t *testing.T) {
	dir := t.TempDir()
	ck, st := filepath.Join(dir, "ck"), filepath.Join(dir, "store")
	if err := os.Mkdir(ck, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ck, "step-1\nforged: line"), []byte("w"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := gpurent(t, "run", "--ckpt-dir", ck, "--store", st, "--no-encrypt", "--allow-unauthenticated", "--preemption", "none", "--no-status",
		"--quiet", "100ms", "--poll", "50ms", "--", "sleep", "1")
	if code != 0 || !strings.Contains(stderr, `committed step-1\nforged: line as `) {
		t.Fatalf("exit %d; want the checkpoint committed and named escaped:\n%s", code, stderr)
	}
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if !strings.HasPrefix(l, "gpurent: ") {
			t.Errorf("a line not from gpurent: %q", l)
		}
	}
}
