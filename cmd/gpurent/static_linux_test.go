package main

import (
	"debug/elf"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStaticBuild: `go build -tags nogpu` makes a gpurent that needs no
// dynamic loader: no interpreter and no shared library in its ELF headers,
// where the standard build names glibc's loader, the one thing Alpine's
// musl, NixOS, distroless/static and scratch images lack. As root it runs both in
// an empty directory made their root (chroot): the static one quotes and
// benches (saying why it checks no GPU), and the standard one does not
// start at all, which is what the static build is for.
func TestStaticBuild(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain on PATH: the static build cannot be made here")
	}
	dir := t.TempDir()
	build := func(name string, tags ...string) string {
		bin := filepath.Join(dir, name)
		args := append([]string{"build", "-o", bin}, tags...)
		cmd := exec.Command("go", append(args, ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", tags, err, b)
		}
		return bin
	}
	static, standard := build("static", "-tags", "nogpu"), build("standard")
	interp := func(bin string) (string, []string) {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		libs, _ := f.ImportedLibraries()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				b := make([]byte, p.Filesz)
				p.ReadAt(b, 0)
				return strings.TrimRight(string(b), "\x00"), libs
			}
		}
		return "", libs
	}
	if in, libs := interp(static); in != "" || len(libs) > 0 {
		t.Errorf("the nogpu build asks for interpreter %q and libraries %v; want neither", in, libs)
	}
	if in, _ := interp(standard); in == "" {
		t.Errorf("the standard build names no interpreter: purego's dlopen cannot work")
	}

	root := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(root, "data"), 0o755)
	jailed := os.Geteuid() == 0
	run := func(bin string, args ...string) (string, error) {
		var cmd *exec.Cmd
		if jailed {
			dst := filepath.Join(root, filepath.Base(bin))
			b, err := os.ReadFile(bin)
			if err == nil {
				err = os.WriteFile(dst, b, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
			cmd = exec.Command("/"+filepath.Base(bin), args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
			cmd.Dir = "/"
		} else {
			cmd = exec.Command(bin, args...)
		}
		cmd.Env = []string{"HOME=/data", "XDG_STATE_HOME=/data/state"}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if !jailed {
		t.Log("not root: the binaries run here, not in an empty chroot")
	}
	out, err := run(static, "quote", "--gpu", "RTX 4090", "--hours", "10")
	if err != nil || !strings.Contains(out, "10 h on RTX 4090 x1") || !strings.Contains(out, "autodl-4090") {
		t.Errorf("static quote: %v\n%s", err, out)
	}
	out, err = run(static, "bench", "--disk-mb", "0", "--duration", "1s", "--no-history", "--data-dir", "/data", "-o", "json")
	var rep struct {
		Verdict string `json:"verdict"`
		Checks  []struct{ ID, Status, Evidence string }
	}
	if jerr := json.Unmarshal([]byte(out), &rep); err != nil || jerr != nil {
		t.Fatalf("static bench: %v %v\n%s", err, jerr, out)
	}
	found := false
	for _, c := range rep.Checks {
		if c.ID == "gpu.present" {
			found = true
			if c.Status != "skip" || !strings.Contains(c.Evidence, "the static build (go build -tags nogpu), which cannot reach NVIDIA's driver") {
				t.Errorf("gpu.present %s: %s", c.Status, c.Evidence)
			}
		}
	}
	if !found || rep.Verdict != "pass" {
		t.Errorf("static bench: verdict %q, gpu.present found %v\n%s", rep.Verdict, found, out)
	}
	if jailed {
		if out, err := run(standard, "--version"); err == nil {
			t.Errorf("the standard build started without a dynamic loader: %s", out)
		} else if !strings.Contains(err.Error(), "no such file or directory") {
			t.Errorf("the standard build failed otherwise than for want of its loader: %v\n%s", err, out)
		}
	}
}

// TestNoGCSBuild: `go build -tags nogcs` leaves out Google's client (about
// 20 MB of the binary, docs/ckpt.md) and says so, exit 2, for a gs://
// store, naming the S3-compatible way to the same bucket.
func TestNoGCSBuild(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain on PATH: the nogcs build cannot be made here")
	}
	bin := filepath.Join(t.TempDir(), "gpurent")
	cmd := exec.Command("go", "build", "-tags", "nogcs", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nogcs: %v\n%s", err, b)
	}
	out, err := exec.Command(bin, "ckpt", "ls", "--store", "gs://bucket/runs").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "built with -tags nogcs, without gs:// support") ||
		!strings.Contains(string(out), "endpoint=https://storage.googleapis.com") {
		t.Errorf("%v: %s", err, out)
	}
}
