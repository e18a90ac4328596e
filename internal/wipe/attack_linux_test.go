//go:build linux

package wipe

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bind bind-mounts src on dst for the rest of the test, or skips it,
// saying why: bind mounts need root (CAP_SYS_ADMIN) on Linux.
func bind(t *testing.T, src, dst string) {
	t.Helper()
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount %s on %s (needs root): %v", src, dst, err)
	}
	t.Cleanup(func() { syscall.Unmount(dst, syscall.MNT_DETACH) })
}

// A regular file bind-mounted into a wiped directory is a mount: it is
// kept, never overwritten through (7f49d07 wrote random bytes into its
// source, outside the plan).
func TestBindMountedFileIsNotWrittenThrough(t *testing.T) {
	b := newBox(t)
	src := b.outside + "/dataset.bin"
	put(t, src, "the source, outside the plan", 0o644)
	dst := b.data + "/dataset.bin"
	put(t, dst, "", 0o644)
	bind(t, src, dst)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	it := itemAt(p, b.data)
	if !strings.Contains(strings.Join(it.Keep, " "), dst) {
		t.Errorf("the mounted file is not in the plan's keep: %v", it.Keep)
	}
	r, err := Run(context.Background(), p, Exec{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(src); err != nil || string(got) != "the source, outside the plan" {
		t.Fatalf("the bind mount's source was written through: %q %v", got, err)
	}
	if res := resultAt(r, b.data); res.Status != Removed || !strings.Contains(strings.Join(res.Kept, " "), dst) {
		t.Errorf("result %+v: want removed, the mounted file kept", res)
	}
}

// A bind mount of the same file system made between the plan and the
// run has the same device number; its mount id tells it, and it is not
// entered (7f49d07 emptied it).
func TestBindMountAfterThePlanIsNotEntered(t *testing.T) {
	b := newBox(t)
	put(t, b.data+"/late/placeholder", "", 0o644)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	bind(t, b.outside+"/dir", b.data+"/late")
	r, err := Run(context.Background(), p, Exec{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(b.outside + "/dir/precious.bin"); err != nil || string(got) != "must survive too" {
		t.Fatalf("the bind mount made after the plan was entered: %q %v", got, err)
	}
	if res := resultAt(r, b.data); !strings.Contains(strings.Join(res.Kept, " "), b.data+"/late") {
		t.Errorf("result %+v: the late mount not reported kept", res)
	}
	// The item itself bind-mounted over after the plan is another entry.
	must(t, syscall.Unmount(b.data+"/late", syscall.MNT_DETACH))
	p, err = Make(context.Background(), b.env(), Options{Data: []string{b.data + "/late"}})
	if err != nil {
		t.Fatal(err)
	}
	bind(t, b.outside+"/dir", b.data+"/late")
	r, _ = Run(context.Background(), p, Exec{})
	if _, err := os.Stat(b.outside + "/dir/precious.bin"); err != nil || r.Items[0].Status != Failed {
		t.Errorf("an item mounted over after the plan was emptied: %+v", r.Items)
	}
}

func resultAt(r *Report, path string) Result {
	for _, it := range r.Items {
		if it.Path == path {
			return it
		}
	}
	return Result{}
}

// A temp file another program has mapped (a model loaded with mmap, a
// shared-memory segment) is in use, though no fd holds it.
func TestMappedTempFileIsInUse(t *testing.T) {
	if path := os.Getenv("WIPE_TEST_MMAP"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			os.Exit(3)
		}
		if _, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
			os.Exit(4)
		}
		f.Close()
		os.Stdout.WriteString("mapped\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	b := newBox(t)
	weights := b.root + "/tmp/weights.bin"
	put(t, weights, strings.Repeat("w", 4096), 0o644)
	cmd := exec.Command(os.Args[0], "-test.run=^TestMappedTempFileIsInUse$")
	cmd.Env = append(os.Environ(), "WIPE_TEST_MMAP="+weights)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf[:6]) != "mapped" {
		t.Fatalf("the helper did not map the file: %q %v", buf, err)
	}
	p, err := Make(context.Background(), b.env(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if itemAt(p, weights).Path != "" {
		t.Fatalf("a mapped temp file is in the plan")
	}
	if kept := strings.Join(p.Kept, "\n"); !strings.Contains(kept, weights+" (in use by PID "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("kept:\n%s", kept)
	}
}
