//go:build unix

package wipe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/store/cloud"
	"github.com/gpurent/gpurent/internal/testfs"
)

func put(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// box is a fake machine: a root with tmp, a home with caches, secrets and
// histories, a data directory with read-only files and symlinks pointing
// out of it, and "outside" files that no wipe may touch.
type box struct {
	base, root, home, cwd, data, outside string
	since                                time.Time // the tenancy began just before the box was made
}

func newBox(t *testing.T) *box {
	base := t.TempDir()
	b := &box{base: base, root: filepath.Join(base, "root"), since: time.Now().Add(-time.Second)}
	b.home = filepath.Join(b.root, "home/me")
	b.cwd = filepath.Join(b.root, "work")
	b.data = filepath.Join(b.root, "data/run1")
	b.outside = filepath.Join(base, "outside")
	put(t, b.root+"/proc/self/mounts", "/dev/vda1 / ext4 rw,relatime 0 0\n", 0o644)
	put(t, b.home+"/.bashrc", "# keep\n", 0o644)
	put(t, b.home+"/.ssh/authorized_keys", "ssh-ed25519 AAAA me\n", 0o600)
	put(t, b.home+"/.ssh/id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n", 0o600)
	put(t, b.home+"/.ssh/id_ed25519.pub", "ssh-ed25519 AAAA me\n", 0o644)
	put(t, b.home+"/.ssh/known_hosts", "github.com ssh-ed25519 AAAA\n", 0o644)
	put(t, b.home+"/.config/gpurent/identity.txt", "AGE-SECRET-KEY-1FAKE\n", 0o600)
	put(t, b.home+"/.cache/huggingface/hub/models--x/blob", strings.Repeat("w", 5000), 0o644)
	put(t, b.home+"/.cache/huggingface/token", "hf_secret", 0o600)
	put(t, b.home+"/.cache/pip/http/abc", "wheel", 0o644)
	put(t, b.home+"/.cache/torch/hub/checkpoints/resnet.pth", "weights", 0o644)
	put(t, b.home+"/.aws/credentials", "[default]\n", 0o600)
	put(t, b.home+"/.netrc", "machine api.wandb.ai\n", 0o600)
	put(t, b.home+"/.docker/config.json", `{"auths":{}}`, 0o600) // no "auth": not a credential
	put(t, b.home+"/.bash_history", "export HF_TOKEN=hf_secret\n", 0o600)
	put(t, b.home+"/.python_history", "import torch\n", 0o600)
	put(t, b.cwd+"/.env", "KEY=1\n", 0o600)
	put(t, b.cwd+"/train.py", "print(1)\n", 0o644)
	put(t, b.data+"/shard-0.bin", strings.Repeat("d", 9000), 0o444) // read-only file
	put(t, b.data+"/ro/inner.bin", "inner", 0o444)
	if err := os.Chmod(b.data+"/ro", 0o555); err != nil { // read-only directory
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(b.data+"/ro", 0o755) }) // so TempDir's cleanup can remove it
	put(t, b.outside+"/target.txt", "must survive", 0o644)
	put(t, b.outside+"/dir/precious.bin", "must survive too", 0o644)
	must(t, os.Symlink(b.outside+"/target.txt", b.data+"/link-to-file"))
	must(t, os.Symlink(b.outside+"/dir", b.data+"/link-to-dir"))
	must(t, os.Symlink(b.outside+"/dir", b.home+"/.cache/huggingface/escape"))
	// The temp directories: one file of mine, a session socket dir kept.
	put(t, b.root+"/tmp/mine.tmp", "scratch", 0o644)
	put(t, b.root+"/tmp/tmux-0/default", "", 0o600)
	put(t, b.root+"/var/tmp/.keep-dir/x", "", 0o644)
	put(t, b.root+"/tmp/session/gpurent", "binary", 0o755) // gpurent copied here and run
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (b *box) env() Env {
	return Env{Root: b.root, Home: b.home, Cwd: b.cwd, UID: os.Getuid(), Exe: b.root + "/tmp/session/gpurent",
		Lookup: func(string) (string, bool) { return "", false }, Since: b.since,
		// An hour on: nothing the test wrote is live work (RecentWindow).
		Now: func() time.Time { return time.Now().Add(time.Hour) }}
}

// snapshot maps every path under dir to its type and content hash.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		v := d.Type().String()
		if d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil {
				s := sha256.Sum256(b)
				v += hex.EncodeToString(s[:8])
			} else {
				v += "unreadable"
			}
		}
		if d.Type()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			v += "->" + l
		}
		out[p] = v
		return nil
	})
	return out
}

func paths(p *Plan, base string) []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, strings.TrimPrefix(it.Path, base))
	}
	sort.Strings(out)
	return out
}

func TestPlanListsWhatItShould(t *testing.T) {
	b := newBox(t)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/root/data/run1",
		"/root/home/me/.aws/credentials",
		"/root/home/me/.bash_history",
		"/root/home/me/.cache/huggingface",
		"/root/home/me/.cache/pip",
		"/root/home/me/.cache/torch",
		"/root/home/me/.netrc",
		"/root/home/me/.python_history",
		"/root/home/me/.ssh/id_ed25519",
		"/root/tmp/mine.tmp",
		"/root/var/tmp/.keep-dir",
		"/root/work/.env",
	}
	if got := paths(p, b.base); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, it := range p.Items {
		if it.Path == b.data && (it.Bytes != 9005 || it.Files != 2 || !it.Overwrite || it.FSType != "ext4") {
			t.Errorf("data item %+v: want 9005 bytes in 2 files, overwritten on ext4", it)
		}
	}
	if kept := strings.Join(texts(p.Kept), "\n"); !strings.Contains(kept, "/tmp/session (holds gpurent itself)") {
		t.Errorf("gpurent's own directory not kept: %v", p.Kept)
	}
	if len(p.Kept) == 0 || !strings.Contains(strings.Join(texts(p.Warnings), " "), "crypto-erase") {
		t.Errorf("kept %v warnings %v", p.Kept, p.Warnings)
	}
	// Nor the temp directory wipe runs in.
	e := b.env()
	e.Cwd = b.root + "/tmp/mine.tmp"
	if p3, _ := Make(context.Background(), e, Options{}); strings.Contains(strings.Join(paths(p3, b.base), " "), "mine.tmp") {
		t.Error("the working directory is in the plan")
	}
	// The identity only on request.
	p2, _ := Make(context.Background(), b.env(), Options{Identity: b.home + "/.config/gpurent/identity.txt"})
	if !strings.Contains(strings.Join(paths(p2, b.base), " "), "identity.txt") {
		t.Error("--identity did not add the identity")
	}
}

func TestPlanRefusesHomeAndSystem(t *testing.T) {
	b := newBox(t)
	for _, bad := range []string{b.home, b.root + "/home", b.root + "/etc", b.root, b.base + "/nope"} {
		os.MkdirAll(b.root+"/etc", 0o755)
		if _, err := Make(context.Background(), b.env(), Options{Data: []string{bad}}); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want refused", bad, err)
		}
	}
}

func TestDryRunDeletesNothing(t *testing.T) {
	b := newBox(t)
	before := snapshot(t, b.base)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	r := DryRun(p, time.Now())
	if !r.DryRun || len(r.Items) != len(p.Items) || r.Items[0].Status != Planned {
		t.Fatalf("%+v", r)
	}
	after := snapshot(t, b.base)
	if len(before) != len(after) {
		t.Fatalf("dry run changed the tree: %d entries before, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("dry run changed %s", k)
		}
	}
}

func TestRunDeletesExactlyThePlan(t *testing.T) {
	b := newBox(t)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, b.base)
	var saves int
	var overwritten []string
	x := Exec{
		Save: func(*Report) error { saves++; return nil },
		BeforeRemove: func(path string) error {
			// The read-only shard was overwritten before its unlink.
			if strings.HasSuffix(path, "/shard-0.bin") {
				if c, _ := os.ReadFile(path); strings.Contains(string(c), "ddd") || len(c) != 9000 {
					t.Errorf("shard-0.bin not overwritten in place before unlink")
				}
				overwritten = append(overwritten, path)
			}
			return nil
		},
	}
	r, err := Run(context.Background(), p, x)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Complete || r.Failed != 0 || saves != len(p.Items)+2 {
		t.Fatalf("complete %v failed %d saves %d: %+v", r.Complete, r.Failed, saves, r.Items)
	}
	if len(overwritten) != 1 {
		t.Error("the overwrite was not observed")
	}
	var want int64
	for _, it := range p.Items {
		want += it.Bytes
	}
	if r.Freed != want {
		t.Errorf("freed %d, plan said %d", r.Freed, want)
	}
	after := snapshot(t, b.base)
	inPlan := func(path string) bool {
		for _, it := range p.Items {
			if path == it.Path || strings.HasPrefix(path, it.Path+"/") {
				return true
			}
		}
		return false
	}
	for k, v := range before {
		switch {
		case inPlan(k):
			if _, ok := after[k]; ok {
				t.Errorf("planned %s survived", k)
			}
		case after[k] != v:
			t.Errorf("%s is outside the plan and changed (%q -> %q)", k, v, after[k])
		}
	}
	for _, keep := range []string{b.outside + "/target.txt", b.outside + "/dir/precious.bin", b.home + "/.ssh/authorized_keys",
		b.home + "/.config/gpurent/identity.txt", b.home + "/.bashrc", b.root + "/tmp/tmux-0/default"} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s must survive: %v", keep, err)
		}
	}
}

func TestFailureMidwayIsReported(t *testing.T) {
	b := newBox(t)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	stuck := b.home + "/.cache/pip/http/abc"
	var last Report
	x := Exec{
		Save: func(r *Report) error { last = *r; last.Items = append([]Result(nil), r.Items...); return nil },
		BeforeRemove: func(path string) error {
			if path == stuck {
				return errors.New("injected: device busy")
			}
			return nil
		},
	}
	r, err := Run(context.Background(), p, x)
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed != 1 || !last.Complete || last.Failed != 1 {
		t.Fatalf("failed %d (saved %d, complete %v)", r.Failed, last.Failed, last.Complete)
	}
	for _, it := range last.Items {
		pip := it.Path == b.home+"/.cache/pip"
		if pip != (it.Status == Failed) {
			t.Errorf("%s: %s %s", it.Path, it.Status, it.Error)
		}
		if pip && (!strings.Contains(it.Error, "injected") || it.Left == 0) {
			t.Errorf("pip item: %+v", it)
		}
	}
	if _, err := os.Stat(stuck); err != nil {
		t.Error("the file whose removal failed is gone")
	}

	// Interrupted: the items after the cancel are reported not run.
	b2 := newBox(t)
	p2, _ := Make(context.Background(), b2.env(), Options{Data: []string{b2.data}})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	r2, err := Run(ctx, p2, Exec{BeforeRemove: func(string) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	}})
	if !errors.Is(err, context.Canceled) || r2.Complete {
		t.Fatalf("interrupted run: %v complete %v", err, r2.Complete)
	}
	notRun := 0
	for _, it := range r2.Items {
		if it.Status == NotRun {
			notRun++
			if _, err := os.Lstat(it.Path); err != nil {
				t.Errorf("%s reported not run but gone", it.Path)
			}
		}
	}
	if notRun == 0 {
		t.Error("no item reported not run after the cancel")
	}
}

func TestSymlinkItemRemovesOnlyTheLink(t *testing.T) {
	b := newBox(t)
	link := b.root + "/data/link"
	must(t, os.Symlink(b.outside+"/dir", link))
	p, err := Make(context.Background(), b.env(), Options{Data: []string{link}})
	if err != nil {
		t.Fatal(err)
	}
	var it Item
	for _, x := range p.Items {
		if x.Path == link {
			it = x
		}
	}
	if !it.Symlink || it.Target != b.outside+"/dir" || it.Bytes != 0 {
		t.Fatalf("%+v", it)
	}
	if _, err := Run(context.Background(), &Plan{Items: []Item{it}}, Exec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Error("link survived")
	}
	if _, err := os.Stat(b.outside + "/dir/precious.bin"); err != nil {
		t.Error("the link's target was touched")
	}
}

func TestTempSocketsKept(t *testing.T) {
	b := newBox(t)
	ln, err := net.Listen("unix", b.root+"/tmp/agent.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p, _ := Make(context.Background(), b.env(), Options{})
	for _, it := range p.Items {
		if strings.HasSuffix(it.Path, "agent.sock") {
			t.Error("a live socket is in the plan")
		}
	}
}

func TestBackupGuard(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	dir := filepath.Join(base, "ckpts")
	put(t, dir+"/checkpoint-100/model.bin", strings.Repeat("m", 4096), 0o644)
	put(t, dir+"/checkpoint-100/trainer_state.json", "{}", 0o644)
	put(t, dir+"/.gpurent-run.json", `{"run":"exp1","committed":{}}`, 0o644)
	if RunOf(dir) != "exp1" {
		t.Fatalf("run name: %q", RunOf(dir))
	}
	b, _, err := cloud.Open(ctx, filepath.Join(base, "store"), cloud.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st := store.New(b, store.Options{Grace: -1})

	if _, err := CheckBackup(ctx, st, "exp1", dir, nil); err == nil || !strings.Contains(err.Error(), "never uploaded") {
		t.Fatalf("no backup yet: %v", err)
	}
	m, err := st.Push(ctx, dir+"/checkpoint-100", "exp1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := CheckBackup(ctx, st, "exp1", dir, nil)
	if err != nil || got.ID != m.ID || got.Checkpoint != "checkpoint-100" || got.Bytes != 4098 {
		t.Fatalf("backed up: %+v %v", got, err)
	}
	// Changed locally after the upload: not the same checkpoint.
	put(t, dir+"/checkpoint-100/model.bin", strings.Repeat("n", 4096), 0o644)
	old := time.Now().Add(-time.Minute)
	os.Chtimes(dir+"/checkpoint-100/model.bin", old, old)
	if _, err := CheckBackup(ctx, st, "exp1", dir, nil); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("changed: %v", err)
	}
	put(t, dir+"/checkpoint-100/model.bin", strings.Repeat("m", 4096), 0o644)
	os.Chtimes(dir+"/checkpoint-100/model.bin", old, old)
	// Damaged in the store: found, but verification fails.
	damaged := false
	for _, o := range m.Objects {
		path := filepath.Join(base, "store", filepath.FromSlash(o.Key))
		if c, err := os.ReadFile(path); err == nil && len(c) > 100 && !damaged {
			c[len(c)/2] ^= 0xff
			must(t, os.WriteFile(path, c, 0o644))
			damaged = true
		}
	}
	if !damaged {
		t.Fatal("found no stored object to damage")
	}
	if _, err := CheckBackup(ctx, st, "exp1", dir, nil); err == nil || !strings.Contains(err.Error(), "fails verification") {
		t.Fatalf("damaged: %v", err)
	}
}

func TestMountPointKeepsItsDirectory(t *testing.T) {
	b := newBox(t)
	put(t, b.root+"/proc/self/mounts", "/dev/vda1 / ext4 rw 0 0\n/dev/vdb /data/run1 xfs rw 0 0\n", 0o644)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	it := p.Items[0]
	if it.Path != b.data || !it.MountPoint || it.Overwrite || it.FSType != "xfs" {
		t.Fatalf("%+v", it)
	}
	r, err := Run(context.Background(), &Plan{Items: []Item{it}}, Exec{})
	if err != nil || r.Items[0].Status != Removed {
		t.Fatalf("%v %+v", err, r.Items[0])
	}
	ents, err := os.ReadDir(b.data)
	if err != nil || len(ents) != 0 {
		t.Fatalf("mount point: %v %v", ents, err)
	}
}

func TestDockerImages(t *testing.T) {
	b := newBox(t)
	var calls []string
	e := b.env()
	e.Docker = func(_ context.Context, args ...string) ([]byte, error) {
		calls = append(calls, strings.Join(args, " "))
		switch args[1] {
		case "ls":
			return []byte(`{"ID":"sha256:aaa","Repository":"pytorch/pytorch","Tag":"2.5.1-cuda12.4","Size":"7.6GB"}` + "\n" +
				`{"ID":"sha256:bbb","Repository":"<none>","Tag":"<none>","Size":"512MB"}` + "\n"), nil
		case "rm":
			if args[3] == "sha256:bbb" {
				return []byte("Error: image is being used by running container 1234\n"), errors.New("exit status 1")
			}
			return nil, nil
		}
		return nil, errors.New("unexpected")
	}
	p, err := Make(context.Background(), e, Options{Docker: true})
	if err != nil {
		t.Fatal(err)
	}
	var imgs []Item
	for _, it := range p.Items {
		if it.Kind == Docker {
			imgs = append(imgs, it)
		}
	}
	if len(imgs) != 2 || imgs[0].Bytes != 7_600_000_000 || imgs[0].What != "pytorch/pytorch:2.5.1-cuda12.4" {
		t.Fatalf("%+v", imgs)
	}
	r, err := Run(context.Background(), &Plan{Items: imgs}, Exec{Docker: e.Docker})
	if err != nil {
		t.Fatal(err)
	}
	if r.Items[0].Status != Removed || r.Items[1].Status != Failed || !strings.Contains(r.Items[1].Error, "used by running container") {
		t.Fatalf("%+v", r.Items)
	}
	if calls[1] != "image rm --force sha256:aaa" {
		t.Errorf("calls %v", calls)
	}
	// Without docker the plan says so and goes on.
	e.Docker = nil
	p, err = Make(context.Background(), e, Options{Docker: true})
	if err != nil || !strings.Contains(strings.Join(texts(p.Warnings), " "), "Docker images not listed") {
		t.Fatalf("%v %v", err, p.Warnings)
	}
}

// A file with other hard links shares its data with names outside the
// plan: a local git clone in /tmp shares its objects with the repository
// it came from. Overwriting it would destroy that repository's objects, so
// it is unlinked only, and its mode is left alone.
func TestHardLinkedFilesAreNotOverwritten(t *testing.T) {
	b := newBox(t)
	repo := b.outside + "/repo/.git/objects/ab/cdef"
	put(t, repo, "object bytes", 0o444) // git writes objects read-only
	clone := b.root + "/tmp/clone/.git/objects/ab/cdef"
	must(t, os.MkdirAll(filepath.Dir(clone), 0o755))
	must(t, os.Link(repo, clone))
	must(t, os.Link(repo, b.data+"/linked.bin"))

	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]int{}
	for _, it := range p.Items {
		linked[strings.TrimPrefix(it.Path, b.root)] = it.Linked
	}
	if linked["/data/run1"] != 1 || linked["/tmp/clone"] != 1 {
		t.Fatalf("plan's hard-link counts: %v", linked)
	}
	r, err := Run(context.Background(), p, Exec{Save: func(*Report) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	notOver := 0
	for _, it := range r.Items {
		notOver += it.NotOverwritten
	}
	if r.Failed != 0 || notOver != 2 {
		t.Fatalf("failed %d, not overwritten %d (want 0, 2): %+v", r.Failed, notOver, r.Items)
	}
	for _, it := range r.Items {
		if it.Path == b.data && it.Freed != it.Bytes-int64(len("object bytes")) {
			t.Errorf("data item freed %d of %d bytes: a linked file's blocks stay in use and are not freed", it.Freed, it.Bytes)
		}
	}
	for _, gone := range []string{clone, b.data + "/linked.bin"} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("%s is in the plan and survived", gone)
		}
	}
	got, err := os.ReadFile(repo)
	if err != nil || string(got) != "object bytes" {
		t.Fatalf("the repository's object outside the plan was destroyed: %q, %v", got, err)
	}
	if st, err := os.Stat(repo); err != nil || st.Mode().Perm() != 0o444 {
		t.Errorf("the object's mode changed: %v, %v", st.Mode(), err)
	}
}

// itemAt is the plan's item for path (zero when there is none).
func itemAt(p *Plan, path string) Item {
	for _, it := range p.Items {
		if it.Path == path {
			return it
		}
	}
	return Item{}
}

// A file system mounted inside an item (a network volume, a bind mount of
// a data disk) is not entered, as rm --one-file-system does not: the plan
// lists it as kept, and the directories leading to it stay.
func TestMountsInsideAnItemAreKept(t *testing.T) {
	b := newBox(t)
	vol := b.data + "/a/b/vol"
	put(t, vol+"/results.bin", "the network volume's data", 0o644)
	put(t, b.data+"/a/mine.bin", "mine", 0o644)
	put(t, b.root+"/proc/self/mounts", "/dev/vda1 / ext4 rw 0 0\nserver:/export /data/run1/a/b/vol nfs4 rw 0 0\n", 0o644)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	it := itemAt(p, b.data)
	if len(it.Keep) != 1 || it.Keep[0] != vol || it.Bytes != 9005+4 {
		t.Fatalf("plan item %+v: want the volume listed in keep and not sized", it)
	}
	if !strings.Contains(strings.Join(texts(p.Kept), "\n"), vol+" (a file system mounted inside "+b.data) {
		t.Errorf("kept: %v", p.Kept)
	}
	r, err := Run(context.Background(), &Plan{Items: []Item{it}}, Exec{})
	if err != nil {
		t.Fatal(err)
	}
	res := r.Items[0]
	if res.Status != Removed || len(res.Kept) != 1 || res.Kept[0] != vol {
		t.Fatalf("result %+v", res)
	}
	if got, err := os.ReadFile(vol + "/results.bin"); err != nil || string(got) != "the network volume's data" {
		t.Fatalf("the mounted volume was entered: %q, %v", got, err)
	}
	for _, gone := range []string{b.data + "/a/mine.bin", b.data + "/shard-0.bin", b.data + "/ro"} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("%s survived", gone)
		}
	}
}

// A file system mounted after the plan was made is found by its device.
func TestMountMadeAfterThePlanIsKept(t *testing.T) {
	b := newBox(t)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	vol := b.data + "/late"
	must(t, os.Mkdir(vol, 0o755))
	testfs.Tmpfs(t, vol, "1m")
	put(t, vol+"/x", "on another file system", 0o644)
	it := itemAt(p, b.data)
	r, err := Run(context.Background(), &Plan{Items: []Item{it}}, Exec{})
	if err != nil {
		t.Fatal(err)
	}
	if res := r.Items[0]; res.Status != Removed || len(res.Kept) != 1 || res.Kept[0] != vol {
		t.Fatalf("result %+v", res)
	}
	if got, err := os.ReadFile(vol + "/x"); err != nil || string(got) != "on another file system" {
		t.Fatalf("the late mount was entered: %q, %v", got, err)
	}
}

// A file system mounted in a temp directory is not one of the user's temp
// files: it is kept unless named.
func TestMountInTempIsNotATempFile(t *testing.T) {
	b := newBox(t)
	put(t, b.root+"/tmp/nfs/results.bin", "on a network volume", 0o644)
	put(t, b.root+"/proc/self/mounts", "/dev/vda1 / ext4 rw 0 0\nserver:/export /tmp/nfs nfs4 rw 0 0\n", 0o644)
	p, err := Make(context.Background(), b.env(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(paths(p, b.base), " "); strings.Contains(got, "/tmp/nfs") {
		t.Fatalf("the mounted volume is in the plan: %s", got)
	}
	if !strings.Contains(strings.Join(texts(p.Kept), "\n"), b.root+"/tmp/nfs (a file system mounted in a temp directory") {
		t.Errorf("kept: %v", p.Kept)
	}
	// Named, it is wiped like any mount point: its contents go.
	p, err = Make(context.Background(), b.env(), Options{Data: []string{b.root + "/tmp/nfs"}})
	if err != nil || !strings.Contains(strings.Join(paths(p, b.base), " "), "/tmp/nfs") {
		t.Fatalf("named mount not planned: %v %v", err, paths(p, b.base))
	}
	if strings.Contains(strings.Join(texts(p.Kept), "\n"), "/tmp/nfs") {
		t.Errorf("a named mount is also said to be kept: %v", p.Kept)
	}
}

// --exclude leaves a path alone: an item the plan would list, or a file or
// directory inside one (with the directories leading to it).
func TestKeepPaths(t *testing.T) {
	b := newBox(t)
	inner := b.data + "/ro/inner.bin"
	pip := b.home + "/.cache/pip"
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}, Exclude: []string{inner, pip}})
	if err != nil {
		t.Fatal(err)
	}
	if it := itemAt(p, pip); it.Path != "" {
		t.Fatalf("the kept pip cache is an item: %+v", it)
	}
	it := itemAt(p, b.data)
	if len(it.Keep) != 1 || it.Keep[0] != inner || it.Bytes != 9000 {
		t.Fatalf("data item %+v: want inner.bin kept and not sized", it)
	}
	kept := strings.Join(texts(p.Kept), "\n")
	if !strings.Contains(kept, pip+" (--exclude "+pip+")") || !strings.Contains(kept, inner+" (--exclude, inside "+b.data+")") {
		t.Errorf("kept: %v", p.Kept)
	}
	r, err := Run(context.Background(), p, Exec{})
	if err != nil || r.Failed != 0 {
		t.Fatalf("%v %+v", err, r.Items)
	}
	if got, err := os.ReadFile(inner); err != nil || string(got) != "inner" {
		t.Errorf("kept file: %q %v", got, err)
	}
	if _, err := os.Stat(pip + "/http/abc"); err != nil {
		t.Errorf("kept cache: %v", err)
	}
	if _, err := os.Lstat(b.data + "/shard-0.bin"); err == nil {
		t.Error("shard-0.bin survived")
	}
	// A path to keep that does not exist is a typo, refused.
	if _, err := Make(context.Background(), b.env(), Options{Exclude: []string{b.data + "/nope"}}); !errors.Is(err, ErrRefused) {
		t.Errorf("--exclude of a missing path: %v", err)
	}
}

// A directory of gpurent run's (it holds the run's state file) inside a
// temp or data item is checkpoint data wherever it lies.
func TestCheckpointDirsFoundInsideItems(t *testing.T) {
	b := newBox(t)
	put(t, b.root+"/tmp/job/out/.gpurent-run.json", `{"run":"exp2"}`, 0o600)
	put(t, b.data+"/ft/.gpurent-run.json", `{"run":"exp3"}`, 0o600)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}})
	if err != nil {
		t.Fatal(err)
	}
	got := p.CheckpointDirs()
	want := []string{b.data + "/ft", b.root + "/tmp/job/out"}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("checkpoint directories %v, want %v", got, want)
	}
}

// procHolders reads cwd, exe and fd links, names socket fds by their path,
// and leaves out itself and deleted files.
func TestProcHolders(t *testing.T) {
	proc := t.TempDir()
	link := func(target, name string) {
		t.Helper()
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(proc, name)), 0o755))
		must(t, os.Symlink(target, filepath.Join(proc, name)))
	}
	put(t, proc+"/100/comm", "jupyter-lab\n", 0o644)
	link("/tmp/nb", "100/cwd")
	link("/usr/bin/python3", "100/exe")
	link("/tmp/data/x.bin", "100/fd/3")
	link("socket:[555]", "100/fd/4")
	link("socket:[556]", "100/fd/5") // unbound: no path
	link("/tmp/gone (deleted)", "100/fd/6")
	link("pipe:[7]", "100/fd/7")
	put(t, proc+"/200/comm", "gpurent\n", 0o644)
	link("/tmp/self", "200/cwd")
	put(t, proc+"/net/unix", "Num       RefCount Protocol Flags    Type St Inode Path\n"+
		"0000000000000000: 00000002 00000000 00010000 0001 01 555 /tmp/vscode-ipc/sock\n"+
		"0000000000000000: 00000002 00000000 00010000 0001 01 556\n", 0o644)
	var got []string
	for _, h := range procHolders(proc, 200) {
		got = append(got, h.String()+" "+h.Path)
	}
	sort.Strings(got)
	want := []string{"PID 100 (jupyter-lab) /tmp/data/x.bin", "PID 100 (jupyter-lab) /tmp/nb", "PID 100 (jupyter-lab) /tmp/vscode-ipc/sock", "PID 100 (jupyter-lab) /usr/bin/python3"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("holders:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if procHolders(filepath.Join(proc, "none"), 0) != nil {
		t.Error("no /proc gave holders")
	}
}

// A temp entry a running program uses (its working directory, an open
// file) is kept and said to be in use; named, it is planned with a warning.
func TestTempInUseIsKept(t *testing.T) {
	b := newBox(t)
	busy := b.root + "/tmp/busy"
	put(t, busy+"/state", "a session's state", 0o644)
	sleep := exec.Command("sleep", "60")
	sleep.Dir = busy
	if err := sleep.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	free := b.root + "/tmp/free.log"
	put(t, free, "nobody holds this", 0o644)

	p, err := Make(context.Background(), b.env(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept := strings.Join(texts(p.Kept), "\n")
	if !strings.Contains(kept, busy+" (in use by PID "+strconv.Itoa(sleep.Process.Pid)+" (sleep); name it to wipe it anyway)") {
		t.Errorf("kept:\n%s", kept)
	}
	if itemAt(p, busy).Path != "" {
		t.Error("a temp directory in use is in the plan")
	}
	if itemAt(p, free).Path == "" || itemAt(p, b.root+"/tmp/mine.tmp").Path == "" {
		t.Errorf("temp files nobody else holds are missing: %v", paths(p, b.base))
	}

	// Named, it is the user's call: planned, with a warning.
	p, err = Make(context.Background(), b.env(), Options{Data: []string{busy}})
	if err != nil {
		t.Fatal(err)
	}
	if itemAt(p, busy).Path == "" || !strings.Contains(strings.Join(texts(p.Warnings), "\n"), busy+" is in use by PID "+strconv.Itoa(sleep.Process.Pid)+" (sleep): what it writes after the wipe stays") {
		t.Errorf("named busy dir: items %v, warnings %v", paths(p, b.base), p.Warnings)
	}
}

// texts are ts in English, for matching.
func texts(ts []i18n.Text) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.String()
	}
	return out
}
