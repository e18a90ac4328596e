// Package scripts holds the tests of the shell scripts users run.
package scripts

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// install.sh installs the binary only when SHA256SUMS lists it with its
// hash: a binary changed on the way (one byte, as a bad copy or an
// attacker makes it) is refused, and what was installed before stays.
func TestInstallRefusesATamperedBinary(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("install.sh is for Linux and macOS")
	}
	name := "gpurent-" + runtime.GOOS + "-" + runtime.GOARCH
	// A stand-in for the binary: the script runs its --version and
	// completion, and nothing else.
	good := []byte("#!/bin/sh\necho gpurent stand-in \"$@\"\n")
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	setup := func(t *testing.T, bin []byte, sums string) (from, prefix string) {
		from, prefix = t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(from, name), bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if sums != "" {
			if err := os.WriteFile(filepath.Join(from, "SHA256SUMS"), []byte(sums), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return from, prefix
	}
	install := func(t *testing.T, from, prefix string) (string, error) {
		cmd := exec.Command("sh", "install.sh", from)
		cmd.Env = append(os.Environ(), "PREFIX="+prefix, "HOME="+t.TempDir(), "XDG_DATA_HOME=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Run("good", func(t *testing.T) {
		from, prefix := setup(t, good, sum(good)+"  "+name+"\n"+sum(nil)+"  gpurent-other\n")
		out, err := install(t, from, prefix)
		if err != nil || !strings.Contains(out, "checked against SHA256SUMS and installed") || !strings.Contains(out, "gpurent stand-in --version") {
			t.Fatalf("%v\n%s", err, out)
		}
		if b, err := os.ReadFile(filepath.Join(prefix, "bin", "gpurent")); err != nil || string(b) != string(good) {
			t.Errorf("installed %q, %v", b, err)
		}
	})
	tampered := append([]byte{}, good...)
	tampered[len(tampered)-2] = 'X'
	for _, c := range []struct{ what, sums, want string }{
		{"tampered", sum(good) + "  " + name + "\n", "does not match SHA256SUMS"},
		{"tampered, binary-mode line", sum(good) + " *" + name + "\n", "does not match SHA256SUMS"},
		{"not listed", sum(tampered) + "  gpurent-other\n", "SHA256SUMS lists no " + name},
		{"no SHA256SUMS", "", "nothing installed"},
	} {
		t.Run(c.what, func(t *testing.T) {
			from, prefix := setup(t, tampered, c.sums)
			// What was installed before stays as it was.
			if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
				t.Fatal(err)
			}
			old := filepath.Join(prefix, "bin", "gpurent")
			if err := os.WriteFile(old, []byte("old"), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := install(t, from, prefix)
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("%v, want a refusal saying %q:\n%s", err, c.want, out)
			}
			if b, _ := os.ReadFile(old); string(b) != "old" {
				t.Errorf("the installed gpurent was replaced by %q", b)
			}
			if es, _ := os.ReadDir(filepath.Join(prefix, "bin")); len(es) != 1 {
				t.Errorf("bin holds %d entries, want only the old gpurent", len(es))
			}
		})
	}
}
