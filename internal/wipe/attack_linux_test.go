//go:build linux

package wipe

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// privateMounts runs the calling test again in a private mount namespace
// (unshare(1)), unless it already runs in one, and reports whether the
// caller is that run. Its bind mounts then die with the process: a bind of
// / left behind in the machine's namespace by a test killed half-way
// would make a later rm -r of the temp directory delete the system.
func privateMounts(t *testing.T) bool {
	t.Helper()
	if os.Getenv("GPURENT_WIPE_NS") == "1" {
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root: not run")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) for a private mount namespace: not run")
	}
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "GPURENT_WIPE_NS=1")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "unshare: ") {
		t.Skipf("no private mount namespace here: not run: %s", firstLine(out))
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in a private mount namespace: %v\n%s", err, out)
	}
	return false
}

// bind bind-mounts src on dst for the rest of the test (which runs in a
// private mount namespace: privateMounts).
func bind(t *testing.T, src, dst string) {
	t.Helper()
	if os.Getenv("GPURENT_WIPE_NS") != "1" {
		t.Fatal("bind outside a private mount namespace: call privateMounts first")
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mount %s on %s: %v", src, dst, err)
	}
	t.Cleanup(func() { syscall.Unmount(dst, syscall.MNT_DETACH) })
}

// A regular file bind-mounted into a wiped directory is a mount: it is
// kept, never overwritten through (7f49d07 wrote random bytes into its
// source, outside the plan).
func TestBindMountedFileIsNotWrittenThrough(t *testing.T) {
	if !privateMounts(t) {
		return
	}
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
	if !privateMounts(t) {
		return
	}
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
	if kept := strings.Join(texts(p.Kept), "\n"); !strings.Contains(kept, weights+" (in use by PID "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("kept:\n%s", kept)
	}
}

// A system directory or the home reached through a bind mount of it (a
// container started with -v /:/host) is still what it is: refused by
// identity, whatever the path says. Only planned here, never run.
func TestBindMountAliasesAreRefused(t *testing.T) {
	if !privateMounts(t) {
		return
	}
	b := newBox(t)
	host := b.base + "/host"
	must(t, os.Mkdir(host, 0o755))
	bind(t, "/", host)
	for _, bad := range []string{host, host + "/etc", host + "/usr/bin/env", host + "/var/lib"} {
		if _, err := os.Lstat(bad); err != nil {
			continue
		}
		p, err := Make(context.Background(), b.env(), Options{Data: []string{bad}})
		if !errors.Is(err, ErrRefused) {
			var planned []string
			if p != nil {
				planned = paths(p, "")
			}
			t.Errorf("%s (through a bind mount of /): %v, want refused; plan %v", bad, err, planned)
		}
	}
	alias := b.base + "/homealias"
	must(t, os.Mkdir(alias, 0o755))
	bind(t, b.home, alias)
	if _, err := Make(context.Background(), b.env(), Options{Data: []string{alias}}); !errors.Is(err, ErrRefused) {
		t.Errorf("the home through a bind mount: %v, want refused", err)
	}
	// Inside the aliased home, authorized_keys is kept by its identity.
	p, err := Make(context.Background(), b.env(), Options{Data: []string{alias + "/.ssh"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, Exec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b.home + "/.ssh/authorized_keys"); err != nil {
		t.Errorf("authorized_keys removed through the alias: %v", err)
	}
	if _, err := os.Stat(b.home + "/.ssh/id_ed25519"); err == nil {
		t.Error("the private key beside it survived")
	}
}

// A program that works in a temp entry through another name (a bind
// mount of it, a container's volume) uses it: the identity of its working
// directory tells, where the path does not.
func TestTempInUseThroughAnotherName(t *testing.T) {
	if !privateMounts(t) {
		return
	}
	b := newBox(t)
	ds := b.root + "/tmp/ds"
	put(t, ds+"/shard0", "being read", 0o644)
	alias := b.base + "/alias"
	must(t, os.Mkdir(alias, 0o755))
	bind(t, ds, alias)
	sleep := exec.Command("sleep", "60")
	sleep.Dir = alias
	if err := sleep.Start(); err != nil {
		t.Skipf("no sleep(1) to hold a directory: %v", err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	e := b.env()
	e.Holders = nil // the real /proc
	p, err := Make(context.Background(), e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if itemAt(p, ds).Path != "" {
		t.Fatalf("a temp directory in use through a bind mount is planned")
	}
	if kept := strings.Join(texts(p.Kept), "\n"); !strings.Contains(kept, ds+" (in use by PID "+strconv.Itoa(sleep.Process.Pid)) {
		t.Errorf("kept:\n%s", kept)
	}
}

// A loop device's backing file (a mounted disk image) and an active swap
// file are in use by the kernel: never swept.
func TestKernelHolders(t *testing.T) {
	b := newBox(t)
	img, swap := b.root+"/var/tmp/vault.img", b.root+"/tmp/swapfile"
	put(t, img, "an ext4 image, mounted", 0o600)
	put(t, swap, "swap", 0o600)
	fake := b.base + "/fake"
	put(t, fake+"/sys/block/loop3/loop/backing_file", img+"\n", 0o644)
	put(t, fake+"/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n"+swap+"  file  1024  0  -2\n", 0o644)
	e := b.env()
	e.Holders = func() []Holder { return procHolders(fake+"/proc", 0) }
	p, err := Make(context.Background(), e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept := strings.Join(texts(p.Kept), "\n")
	for path, by := range map[string]string{img: "loop3 (a loop device)", swap: "swap"} {
		if itemAt(p, path).Path != "" || !strings.Contains(kept, path+" (in use by "+by) {
			t.Errorf("%s: planned %v; kept:\n%s", path, itemAt(p, path).Path != "", kept)
		}
	}
}

// The open for an overwrite runs no device's open and wakes no FIFO's
// reader when the entry was swapped since it was looked at: it is
// checked through an O_PATH fd first.
func TestSwappedInFIFOIsNotOpened(t *testing.T) {
	dir := t.TempDir()
	f := dir + "/model.bin"
	put(t, f, "data", 0o644)
	e, err := identify(f)
	must(t, err)
	must(t, os.Remove(f))
	must(t, syscall.Mkfifo(f, 0o644))
	woken := make(chan struct{})
	go func() {
		if r, err := os.OpenFile(f, os.O_RDONLY, 0); err == nil { // blocks until a writer opens
			close(woken)
			r.Close()
		}
	}()
	time.Sleep(50 * time.Millisecond)
	dfd, err := openDirPath(dir)
	must(t, err)
	defer syscall.Close(dfd)
	if _, err := overwriteAt(dfd, "model.bin", e); err == nil {
		t.Fatal("a FIFO swapped in was overwritten")
	}
	select {
	case <-woken:
		t.Error("the FIFO's reader was woken: it was opened for writing")
	case <-time.After(200 * time.Millisecond):
	}
	if w, err := os.OpenFile(f, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil { // let a waiting reader go
		w.Close()
	}
}

// A directory that stays because something in it cannot be removed (an
// immutable file) keeps its mode: the chmod that tried to help is undone.
func TestDirectoryThatStaysKeepsItsMode(t *testing.T) {
	b := newBox(t)
	sub := b.data + "/sub"
	put(t, sub+"/imm", "immutable", 0o644)
	put(t, sub+"/junk", "junk", 0o644)
	must(t, os.Chmod(sub, 0o755|os.ModeSetgid))
	if out, err := exec.Command("chattr", "+i", sub+"/imm").CombinedOutput(); err != nil {
		t.Skipf("chattr +i (needs root and ext4): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", sub+"/imm").Run() })
	before, err := os.Stat(sub)
	must(t, err)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}, NoOverwrite: true})
	must(t, err)
	r, err := Run(context.Background(), p, Exec{})
	must(t, err)
	if r.Failed != 1 {
		t.Errorf("want the item failed on the immutable file: %+v", r.Items)
	}
	after, err := os.Stat(sub)
	must(t, err)
	if after.Mode() != before.Mode() {
		t.Errorf("the directory that stays changed mode: %v -> %v", before.Mode(), after.Mode())
	}
}

// A bind mount of a directory below a system directory (/etc/ssh,
// /usr/share/doc, /var/lib) is that directory under another name: the
// mount table says where it comes from, and the rule holds there (found
// by the second review). Only planned, never run.
func TestBindOfASystemSubdirectoryIsRefused(t *testing.T) {
	if !privateMounts(t) {
		return
	}
	b := newBox(t)
	for _, src := range []string{"/etc/ssh", "/usr/share", "/var/lib"} {
		if st, err := os.Stat(src); err != nil || !st.IsDir() {
			continue
		}
		dst := b.data + "/bound" + strings.ReplaceAll(src, "/", "-")
		must(t, os.Mkdir(dst, 0o755))
		bind(t, src, dst)
		for _, named := range []string{dst, dst + "/x-not-there-" + strconv.Itoa(os.Getpid())} {
			if _, err := os.Lstat(named); err != nil {
				continue
			}
			if _, err := Make(context.Background(), b.env(), Options{Data: []string{named}}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "under another name (a bind mount)") {
				t.Errorf("%s (a bind mount of %s): %v, want refused", named, src, err)
			}
		}
		// The directory holding the mount is still the user's: the mount
		// inside it is left, as any mount is.
		if _, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}}); err != nil {
			t.Errorf("the data directory holding a bind of %s: %v", src, err)
		}
	}
}

// The same directory under another name lies in what is kept: a path
// through a bind mount of a kept directory is kept (found by review).
func TestKeptDirectoryUnderAnotherName(t *testing.T) {
	if !privateMounts(t) {
		return
	}
	b := newBox(t)
	put(t, b.data+"/proj/models/sub/w.bin", "weights", 0o644)
	alias := b.base + "/alias"
	must(t, os.Mkdir(alias, 0o755))
	bind(t, b.data+"/proj", alias)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{alias + "/models/sub"}, Exclude: []string{b.data + "/proj/models"}})
	if err != nil {
		t.Fatal(err)
	}
	if it := itemAt(p, alias+"/models/sub"); it.Path != "" {
		t.Fatalf("a path inside a kept directory, through a bind mount, is planned")
	}
	if !strings.Contains(strings.Join(texts(p.Kept), "\n"), alias+"/models/sub (") {
		t.Errorf("kept: %v", p.Kept)
	}
}

// gpurent run's state file is read without opening anything but a
// regular file: a link planted there to a FIFO (or a device) is not
// opened, so a writer waiting on the FIFO is not woken (found by review).
func TestRunOfOpensNothingElse(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	must(t, os.Mkdir(dir+"/ckpt", 0o755))
	must(t, os.Symlink(fifo, dir+"/ckpt/.gpurent-run.json"))
	woken := make(chan struct{})
	go func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // blocks until a reader opens
			close(woken)
			w.Close()
		}
	}()
	time.Sleep(50 * time.Millisecond)
	if r := RunOf(dir + "/ckpt"); r != "" {
		t.Errorf("run %q", r)
	}
	select {
	case <-woken:
		t.Error("the FIFO behind the link was opened")
	case <-time.After(200 * time.Millisecond):
	}
	if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil { // let the writer go
		time.Sleep(10 * time.Millisecond)
		r.Close()
	}
}

// A named item holding a loop device's backing file is unlinked, never
// overwritten: overwriting would corrupt the file system mounted from it.
func TestKernelHeldFileIsNotOverwritten(t *testing.T) {
	b := newBox(t)
	img := b.data + "/vault.img"
	put(t, img, "an ext4 image, mounted", 0o600)
	fake := b.base + "/fake"
	put(t, fake+"/sys/block/loop7/loop/backing_file", img+"\n", 0o644)
	must(t, os.MkdirAll(fake+"/proc", 0o755))
	e := b.env()
	e.Holders = func() []Holder { return procHolders(fake+"/proc", 0) }
	p, err := Make(context.Background(), e, Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	if it := itemAt(p, b.data); it.Overwrite {
		t.Errorf("an item holding a loop device's backing file is overwritten")
	}
	if !strings.Contains(strings.Join(texts(p.Warnings), "\n"), "loop7 (a loop device)): overwriting it would corrupt") {
		t.Errorf("warnings: %v", p.Warnings)
	}
}
