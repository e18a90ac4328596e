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
		t.Skipf("no POSIX sh installer here: install.sh is for Linux and macOS, this is %s", runtime.GOOS)
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
		{"a line naming another file too", sum(tampered) + "  " + name + " other\n", "SHA256SUMS lists no " + name},
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

// What the review of install.sh found (helper, 2026-12-07): a binary that
// matches but does not run here never replaces the one installed; a
// directory where gpurent goes is refused, not filled; a source
// directory named like an option is a directory; the temporary copy is
// never a name planted beforehand, and none is left behind.
func TestInstallRefusesWhatItCannotInstall(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("no POSIX sh installer here: install.sh is for Linux and macOS, this is %s", runtime.GOOS)
	}
	name := "gpurent-" + runtime.GOOS + "-" + runtime.GOARCH
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	run := func(t *testing.T, dir, from, prefix string) (string, error) {
		cmd := exec.Command("sh", filepath.Join(dir, "install.sh"), from)
		cmd.Dir = filepath.Dir(prefix)
		cmd.Env = append(os.Environ(), "PREFIX="+prefix, "HOME="+t.TempDir(), "XDG_DATA_HOME=")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	setup := func(t *testing.T, bin []byte) (base, from, prefix string) {
		base = t.TempDir()
		from, prefix = filepath.Join(base, "-from"), filepath.Join(base, "prefix")
		for _, d := range []string{from, filepath.Join(prefix, "bin")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(from, name), bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(from, "SHA256SUMS"), []byte(sum(bin)+"  "+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return base, from, prefix
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("does not run here", func(t *testing.T) {
		_, _, prefix := setup(t, []byte("#!/bin/sh\nexit 126\n"))
		old := filepath.Join(prefix, "bin", "gpurent")
		os.WriteFile(old, []byte("old"), 0o755)
		out, err := run(t, here, "-from", prefix)
		if err == nil || !strings.Contains(out, "does not run here") {
			t.Errorf("%v\n%s", err, out)
		}
		if b, _ := os.ReadFile(old); string(b) != "old" {
			t.Errorf("the installed gpurent became %q", b)
		}
		if es, _ := os.ReadDir(filepath.Join(prefix, "bin")); len(es) != 1 {
			t.Errorf("bin holds %d entries: a temporary copy stayed", len(es))
		}
	})
	t.Run("a directory in its place", func(t *testing.T) {
		_, _, prefix := setup(t, []byte("#!/bin/sh\necho stand-in\n"))
		if err := os.Mkdir(filepath.Join(prefix, "bin", "gpurent"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := run(t, here, "-from", prefix)
		if err == nil || !strings.Contains(out, "is a directory: nothing installed") {
			t.Errorf("%v\n%s", err, out)
		}
		if es, _ := os.ReadDir(filepath.Join(prefix, "bin", "gpurent")); len(es) != 0 {
			t.Errorf("the binary went into the directory: %v", es)
		}
	})
	t.Run("source named like an option", func(t *testing.T) {
		_, _, prefix := setup(t, []byte("#!/bin/sh\necho stand-in\n"))
		if out, err := run(t, here, "-from", prefix); err != nil || !strings.Contains(out, "installed as") {
			t.Errorf("%v\n%s", err, out)
		}
	})
}
