package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ckpt ls marks a checkpoint no key here signs (issue #58: a planted one
// was listed as the newest, with no mark), in the table and the JSON;
// with no key here it says it cannot tell.
func TestCkptLsMarksPlanted(t *testing.T) {
	dir := t.TempDir()
	st := filepath.Join(dir, "store")
	data := filepath.Join(dir, "model.txt")
	os.WriteFile(data, []byte("weights"), 0o644)
	t.Setenv("GPURENT_RECIPIENT", "")
	t.Setenv("GPURENT_AUTH_KEY", "")
	push := func(identity string) string {
		t.Helper()
		t.Setenv("GPURENT_IDENTITY", identity)
		if code, _, errs := gpurent(t, "keygen"); code != 0 && !strings.Contains(errs, "exists") {
			t.Fatalf("keygen: %d %s", code, errs)
		}
		code, out, errs := gpurent(t, "ckpt", "push", data, "--store", st, "--run", "r", "-o", "json")
		if code != 0 {
			t.Fatalf("push: %d %s", code, errs)
		}
		var m struct{ ID string }
		json.Unmarshal([]byte(out), &m)
		return m.ID
	}
	owner, planted := filepath.Join(dir, "owner.txt"), filepath.Join(dir, "attacker.txt")
	mine := push(owner)
	theirs := push(planted) // someone else with write access to the store
	t.Setenv("GPURENT_IDENTITY", owner)
	_, out, errs := gpurent(t, "ckpt", "ls", "--store", st, "--run", "r")
	if !strings.Contains(out, theirs+" !") || strings.Contains(out, mine+" !") ||
		!strings.Contains(out, "!: 1 checkpoint not signed by a key here: planted by someone with write access") {
		t.Fatalf("ls:\n%s%s", out, errs)
	}
	_, out, _ = gpurent(t, "ckpt", "ls", "--store", st, "--run", "r", "-o", "json")
	var ls ckptLsJSON
	if err := json.Unmarshal([]byte(out), &ls); err != nil || !ls.AuthChecked || len(ls.Unauthenticated) != 1 || ls.Unauthenticated[0] != theirs {
		t.Fatalf("ls -o json: %v\n%s", err, out)
	}
	t.Setenv("GPURENT_IDENTITY", "")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "empty"))
	if _, out, _ = gpurent(t, "ckpt", "ls", "--store", st, "--run", "r"); strings.Contains(out, " !") || !strings.Contains(out, "whether each is the owner's (not planted) is not checked") {
		t.Fatalf("ls with no key:\n%s", out)
	}
}
