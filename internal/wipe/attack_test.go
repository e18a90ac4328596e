//go:build unix

package wipe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/store/cloud"
)

// The attacks of issue #35 on wipe, one test each: every one of them
// destroyed data outside the plan on 7f49d07.

// Paths from the environment pass the same refusal as named ones:
// HF_HOME=$HOME deleted the whole home there, identity and authorized_keys
// included, and HF_TOKEN_PATH=/etc/shadow was planned as a token.
func TestEnvironmentPathsAreRefused(t *testing.T) {
	b := newBox(t)
	for _, c := range []struct{ name, value, want string }{
		{"HF_HOME", b.home, "HF_HOME=" + b.home + ": the Hugging Face cache (models, datasets, token) it names is your home directory"},
		{"HF_HOME", b.root + "/home", "holds your home directory"},
		{"TORCH_HOME", "/etc", "TORCH_HOME=/etc: the PyTorch hub cache it names is a system directory"},
		{"PIP_CACHE_DIR", "/usr/lib", "lies inside the system directory /usr"},
		{"TORCH_HOME", "/var/lib", "lies inside the system directory /var"},
		{"HF_TOKEN_PATH", "/etc/passwd", "HF_TOKEN_PATH=/etc/passwd: the Hugging Face token it names lies inside the system directory /etc"},
		{"HF_HOME", "/", "is a system directory"},
	} {
		e := b.env()
		e.Lookup = func(k string) (string, bool) {
			if k == c.name {
				return c.value, true
			}
			return "", false
		}
		if c.name == "HF_TOKEN_PATH" {
			// The token file is planned only where it looks like one.
			if _, err := os.Stat(c.value); err != nil {
				t.Logf("case %s=%s not run: no %s on this system", c.name, c.value, c.value)
				continue
			}
		}
		p, err := Make(context.Background(), e, Options{})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
			var planned []string
			if p != nil {
				planned = paths(p, "")
			}
			t.Errorf("%s=%s: error %v, want refused saying %q; plan %v", c.name, c.value, err, c.want, planned)
		}
	}
	// --remove-identity with GPURENT_IDENTITY naming the home.
	_, err := Make(context.Background(), b.env(), Options{Identity: b.home, IdentityVars: []string{"GPURENT_IDENTITY"}})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "GPURENT_IDENTITY=") {
		t.Errorf("GPURENT_IDENTITY=$HOME: %v", err)
	}
}

// The refusal holds at any depth under the system directories and on the
// resolved path: a relative HOME, a HOME reached through a symlink, or a
// ".." through a link cannot name the home or a system directory.
func TestRefusalsAreDeepAndResolved(t *testing.T) {
	b := newBox(t)
	for _, bad := range []string{"/usr/lib", "/usr/bin", "/var/lib", "/etc/ssh", "/proc/self", "/usr/local/bin/../lib", "/sys/kernel", "/dev/null"} {
		if _, err := os.Lstat(bad); err != nil {
			continue
		}
		if _, err := Make(context.Background(), b.env(), Options{Data: []string{bad}}); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want refused", bad, err)
		}
	}
	// A home reached through a symlink, and named through it or directly.
	link := b.base + "/homelink"
	must(t, os.Symlink(b.home, link))
	e := b.env()
	e.Home = link
	for _, bad := range []string{b.home, link + "/", link + "/.", b.root + "/home", link + "/..", b.root + "/./home/me/.cache/.."} {
		if _, err := Make(context.Background(), e, Options{Data: []string{bad}}); !errors.Is(err, ErrRefused) {
			t.Errorf("symlinked HOME, %s: %v, want refused", bad, err)
		}
	}
	// A relative HOME is the directory it names from the working directory.
	e = b.env()
	e.Cwd = b.root
	e.Home = "home/me"
	if _, err := Make(context.Background(), e, Options{Data: []string{b.home}}); !errors.Is(err, ErrRefused) {
		t.Errorf("relative HOME, named absolutely: %v, want refused", err)
	}
	// A symlink to a system directory is only a link: removing it is fine.
	syslink := b.data + "/etc-link"
	must(t, os.Symlink("/etc", syslink))
	p, err := Make(context.Background(), b.env(), Options{Data: []string{syslink}})
	if err != nil || !itemAt(p, syslink).Symlink {
		t.Fatalf("a symlink to /etc: %v %+v", err, itemAt(p, syslink))
	}
	// ... but a path through it is /etc's.
	if _, err := Make(context.Background(), b.env(), Options{Data: []string{syslink + "/ssh"}}); !errors.Is(err, ErrRefused) {
		t.Errorf("a path through a link into /etc: %v, want refused", err)
	}
}

// A directory on the way to an item swapped for a symlink after the plan
// is not followed: the item fails, the link's target is untouched.
func TestParentSwappedForSymlinkAfterPlan(t *testing.T) {
	b := newBox(t)
	item := b.data + "/sub/model.bin"
	put(t, item, "mine", 0o644)
	put(t, b.outside+"/sub/model.bin", "not mine", 0o644)
	p, err := Make(context.Background(), b.env(), Options{Data: []string{item}})
	if err != nil {
		t.Fatal(err)
	}
	it := itemAt(p, item)
	must(t, os.Rename(b.data+"/sub", b.data+"/sub.old"))
	must(t, os.Symlink(b.outside+"/sub", b.data+"/sub"))
	r, err := Run(context.Background(), &Plan{Items: []Item{it}}, Exec{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(b.outside + "/sub/model.bin"); err != nil || string(got) != "not mine" {
		t.Fatalf("the wipe followed a parent swapped for a symlink: %q %v", got, err)
	}
	if res := r.Items[0]; res.Status != Failed || !strings.Contains(res.Error, "symlink") {
		t.Errorf("result %+v: want failed, naming the symlink", res)
	}
	// The item itself swapped for another file is not touched either.
	must(t, os.Remove(b.data+"/sub"))
	must(t, os.Rename(b.data+"/sub.old", b.data+"/sub"))
	p, err = Make(context.Background(), b.env(), Options{Data: []string{item}})
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Rename(item, item+".old"))
	put(t, item, "another file put in its place", 0o644)
	r, _ = Run(context.Background(), p, Exec{})
	if got, _ := os.ReadFile(item); string(got) != "another file put in its place" || r.Items[0].Status != Failed {
		t.Errorf("a file swapped in after the plan: %q, %+v", got, r.Items[0])
	}
}

// --exclude given through a symlinked path keeps the file it leads to.
func TestKeepThroughASymlink(t *testing.T) {
	b := newBox(t)
	link := b.base + "/datalink"
	must(t, os.Symlink(b.data, link))
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}, Exclude: []string{link + "/shard-0.bin"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, Exec{}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(b.data + "/shard-0.bin"); err != nil || got[0] != 'd' {
		t.Errorf("the kept file was overwritten or removed: %v", err)
	}
	// A --exclude that keeps nothing the wipe touches is a mistake, said.
	if _, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}, Exclude: []string{b.outside + "/target.txt"}}); !errors.Is(err, ErrRefused) ||
		!strings.Contains(err.Error(), "nothing this wipe would remove") {
		t.Errorf("a --exclude outside the plan: %v", err)
	}
}

// The report inside an item is kept with the directories leading to it,
// even though it does not exist when the plan is made.
func TestReportInsideAnItemIsKept(t *testing.T) {
	b := newBox(t)
	rep := b.data + "/logs/wipe.json"
	must(t, os.MkdirAll(filepath.Dir(rep), 0o755))
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}, Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), p, Exec{Save: func(r *Report) error { return os.WriteFile(rep, []byte("report"), 0o600) }})
	if err != nil || r.Failed != 0 {
		t.Fatalf("%v %+v", err, r.Items)
	}
	if _, err := os.Stat(rep); err != nil {
		t.Errorf("the report is gone: %v", err)
	}
	if _, err := os.Lstat(b.data + "/shard-0.bin"); err == nil {
		t.Error("the rest of the item survived")
	}
}

// The temp sweep takes only what this tenancy made and no live program
// uses: not what predates the tenancy, not what changed a moment ago, and
// nothing at all when the tenancy's start is unknown.
func TestTempSweepTakesOnlyIdleLeftovers(t *testing.T) {
	b := newBox(t)
	old := b.root + "/tmp/image-build.log"
	put(t, old, "the image's", 0o644)
	time.Sleep(20 * time.Millisecond)
	since := time.Now()
	time.Sleep(20 * time.Millisecond)
	live := b.root + "/tmp/job-output"
	put(t, live+"/step-100.pt", "being written", 0o644)

	e := b.env()
	e.Since = since
	e.Now = time.Now // live-output was written just now
	p, err := Make(context.Background(), e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept := strings.Join(texts(p.Kept), "\n")
	for path, why := range map[string]string{old: "unchanged since before this tenancy began", live: "ago: may be live work"} {
		if itemAt(p, path).Path != "" || !strings.Contains(kept, path+" (") || !strings.Contains(kept, why) {
			t.Errorf("%s: planned %v; kept:\n%s", path, itemAt(p, path).Path != "", kept)
		}
	}
	// An hour on, the job's output is an idle leftover of this tenancy.
	e.Now = func() time.Time { return time.Now().Add(time.Hour) }
	p, _ = Make(context.Background(), e, Options{})
	if it := itemAt(p, live); it.Path == "" || !strings.Contains(it.Why, "made in this tenancy") {
		t.Errorf("idle output not planned, or not said why: %+v", it)
	}
	// Unknown start: nothing swept, and a note says so.
	e.Since = time.Time{}
	p, _ = Make(context.Background(), e, Options{})
	for _, it := range p.Items {
		if it.Kind == Temp {
			t.Errorf("temp item %s planned with the tenancy's start unknown", it.Path)
		}
	}
	if !strings.Contains(strings.Join(texts(p.Warnings), "\n"), "when this tenancy began is unknown") {
		t.Errorf("warnings: %v", p.Warnings)
	}
}

// A sparse file is overwritten where it holds data only: 256 MiB of holes
// cost neither time nor disk, and what is freed is what was allocated.
func TestSparseFileOverwritesItsDataOnly(t *testing.T) {
	b := newBox(t)
	sparse := b.data + "/sparse.bin"
	f, err := os.Create(sparse)
	must(t, err)
	must(t, f.Truncate(256<<20))
	_, err = f.WriteAt([]byte(strings.Repeat("x", 4096)), 0)
	must(t, err)
	_, err = f.WriteAt([]byte(strings.Repeat("y", 4096)), 128<<20)
	must(t, err)
	must(t, f.Close())
	var st syscall.Stat_t
	must(t, syscall.Stat(sparse, &st))
	if st.Blocks*512 >= 1<<20 {
		t.Skipf("this file system does not keep holes (%d bytes allocated)", st.Blocks*512)
	}
	allocated := st.Blocks * 512
	p, err := Make(context.Background(), b.env(), Options{Data: []string{sparse}})
	if err != nil {
		t.Fatal(err)
	}
	var grew int64
	x := Exec{BeforeRemove: func(path string) error {
		var now syscall.Stat_t
		if syscall.Stat(path, &now) == nil {
			grew = now.Blocks*512 - allocated
		}
		return nil
	}}
	r, err := Run(context.Background(), p, x)
	if err != nil || r.Failed != 0 {
		t.Fatalf("%v %+v", err, r.Items)
	}
	res := r.Items[0]
	if res.Overwritten <= 0 || res.Overwritten > allocated {
		t.Errorf("overwrote %d bytes of a file with %d allocated (%d apparent)", res.Overwritten, allocated, int64(256<<20))
	}
	if grew > 0 {
		t.Errorf("the overwrite filled holes: %d more bytes allocated", grew)
	}
	if res.Freed != allocated {
		t.Errorf("freed %d, want the %d allocated", res.Freed, allocated)
	}
}

// A credential file that is a symlink (~/.netrc -> elsewhere) is planned:
// the link goes, never followed, and the plan says the credential stays
// where it leads.
func TestSymlinkedCredentialIsPlanned(t *testing.T) {
	b := newBox(t)
	target := b.outside + "/netrc"
	put(t, target, "machine api.wandb.ai password x\n", 0o644)
	must(t, os.Remove(b.home+"/.netrc"))
	must(t, os.Symlink(target, b.home+"/.netrc"))
	p, err := Make(context.Background(), b.env(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	it := itemAt(p, b.home+"/.netrc")
	if !it.Symlink || it.Target != target {
		t.Fatalf("the symlinked credential is not planned as a link: %+v", it)
	}
	if !strings.Contains(strings.Join(texts(p.Warnings), "\n"), b.home+"/.netrc is a symlink to "+target+": only the link is removed") {
		t.Errorf("warnings: %v", p.Warnings)
	}
	if _, err := Run(context.Background(), &Plan{Items: []Item{it}}, Exec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(b.home + "/.netrc"); err == nil {
		t.Error("the link survived")
	}
	if got, _ := os.ReadFile(target); !strings.Contains(string(got), "password") {
		t.Error("the link's target was touched")
	}
}

// A path you name inside a temp entry the sweep leaves (live work, from
// before the tenancy) is still wiped: it was dropped as "inside another
// item" while that item was not planned (found by review).
func TestNamedInsideAKeptTempEntry(t *testing.T) {
	b := newBox(t)
	secret := b.root + "/tmp/job/secret.txt"
	put(t, secret, "SECRET", 0o600)
	e := b.env()
	e.Now = time.Now // job/ changed just now: live work, kept
	p, err := Make(context.Background(), e, Options{Data: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	if itemAt(p, secret).Path == "" || itemAt(p, b.root+"/tmp/job").Path != "" {
		t.Fatalf("plan %v: want the named file, not its kept directory", paths(p, b.base))
	}
	if _, err := Run(context.Background(), p, Exec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(secret); err == nil {
		t.Error("the named file survived")
	}
}

// gpurent run's state file in a directory being planned is read as a
// regular file, capped: a FIFO or a link to /dev/zero there neither
// hangs nor fills memory (found by review).
func TestRunOfReadsOnlyARegularFile(t *testing.T) {
	dir := t.TempDir()
	must(t, syscall.Mkfifo(filepath.Join(dir, ".gpurent-run.json"), 0o644))
	done := make(chan string, 1)
	go func() { done <- RunOf(dir) }()
	select {
	case r := <-done:
		if r != "" {
			t.Errorf("a FIFO gave run %q", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RunOf blocked on a FIFO")
	}
	zero := t.TempDir()
	must(t, os.Symlink("/dev/zero", filepath.Join(zero, ".gpurent-run.json")))
	if r := RunOf(zero); r != "" {
		t.Errorf("/dev/zero gave run %q", r)
	}
}

// An identity to remove that is a directory is a mistaken variable, not
// a directory to wipe (found by review).
func TestIdentityThatIsADirectoryIsRefused(t *testing.T) {
	b := newBox(t)
	_, err := Make(context.Background(), b.env(), Options{Identity: b.data, IdentityVars: []string{"GPURENT_IDENTITY"}})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "GPURENT_IDENTITY="+b.data+" is a directory") {
		t.Errorf("GPURENT_IDENTITY naming a directory: %v", err)
	}
}

// --exclude through a link keeps the link on the way too, and a --report
// given with ".." after a link is kept where it is really written (found
// by review).
func TestKeepKeepsTheWayToIt(t *testing.T) {
	b := newBox(t)
	must(t, os.MkdirAll(b.data+"/real/logs", 0o755))
	put(t, b.data+"/real/f", "keep me", 0o644)
	must(t, os.Symlink("real", b.data+"/lnk"))
	rep := b.data + "/lnk/logs/../wipe.json" // really data/real/wipe.json
	p, err := Make(context.Background(), b.env(), Options{Data: []string{b.data}, Exclude: []string{b.data + "/lnk/f"}, Report: rep})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), p, Exec{Save: func(*Report) error { return os.WriteFile(b.data+"/real/wipe.json", []byte("{}"), 0o600) }})
	if err != nil || r.Failed != 0 {
		t.Fatalf("%v %+v", err, r.Items)
	}
	if got, err := os.ReadFile(b.data + "/lnk/f"); err != nil || string(got) != "keep me" {
		t.Errorf("the kept path as typed: %q %v", got, err)
	}
	if _, err := os.Stat(b.data + "/real/wipe.json"); err != nil {
		t.Errorf("the report: %v", err)
	}
}

// --require-backup judges every file under a checkpoint directory, not
// only the newest complete checkpoint: a newer one still inside its quiet
// period, one copied in with older times (cp -a), or a file beside the
// checkpoints was deleted on 7f49d07 though never uploaded.
func TestBackupCoversEveryFile(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	dir := filepath.Join(base, "ckpts")
	put(t, dir+"/checkpoint-100/model.bin", strings.Repeat("m", 4096), 0o644)
	put(t, dir+"/.gpurent-run.json", `{"run":"exp1","committed":{}}`, 0o644)
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(dir+"/checkpoint-100/model.bin", old, old))
	must(t, os.Chtimes(dir+"/checkpoint-100", old, old))
	b, _, err := cloud.Open(ctx, filepath.Join(base, "store"), cloud.OpenOptions{})
	must(t, err)
	defer b.Close()
	st := store.New(b, store.Options{Grace: -1})
	if _, err := st.Push(ctx, dir+"/checkpoint-100", "exp1"); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckBackup(ctx, st, "exp1", dir, nil); err != nil {
		t.Fatalf("all committed: %v", err)
	}
	for _, c := range []struct{ name, path, content string }{
		{"a newer checkpoint, still being written", "checkpoint-200/model.bin", "step 200"},
		{"an older one copied in with its old times", "checkpoint-050/model.bin", "step 50"},
		{"a file beside the checkpoints", "train.log", "loss 0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.path)
			put(t, p, c.content, 0o644)
			if strings.Contains(c.path, "050") {
				past := old.Add(-time.Hour)
				must(t, os.Chtimes(p, past, past))
				must(t, os.Chtimes(filepath.Dir(p), past, past))
			}
			defer os.RemoveAll(filepath.Join(dir, strings.Split(c.path, "/")[0]))
			_, err := CheckBackup(ctx, st, "exp1", dir, nil)
			var nc *NotCovered
			if !errors.As(err, &nc) || !strings.Contains(err.Error(), c.path+" (never uploaded)") {
				t.Fatalf("want refused naming %s: %v", c.path, err)
			}
			// What the wipe keeps is not judged.
			if _, err := CheckBackup(ctx, st, "exp1", dir, func(q string) bool { return q == filepath.Dir(p) || q == p }); err != nil {
				t.Errorf("kept, yet judged: %v", err)
			}
		})
	}
}

// Where /dev/shm is a link to /run/shm (older Debian and Ubuntu), its
// entries are still temp entries, not the system's /run (found by review).
func TestDevShmThroughALink(t *testing.T) {
	b := newBox(t)
	put(t, b.root+"/run/shm/seg", "a shared-memory segment left behind", 0o600)
	must(t, os.MkdirAll(b.root+"/dev", 0o755))
	must(t, os.Symlink("../run/shm", b.root+"/dev/shm"))
	p, err := Make(context.Background(), b.env(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if itemAt(p, b.root+"/run/shm/seg").Path == "" {
		t.Errorf("the segment is not swept: kept %v", p.Kept)
	}
	if _, err := Make(context.Background(), b.env(), Options{Data: []string{b.root + "/dev/shm/seg"}}); err != nil {
		t.Errorf("naming it: %v", err)
	}
}

// TestPlantedCheckpointVouchesForNothing: someone with the store's write
// key commits an unsigned checkpoint holding a file the owner never
// uploaded (content they can guess: a config, a file from the image); the
// backup check of the owner, who checks signatures, does not count it.
func TestPlantedCheckpointVouchesForNothing(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	dir := filepath.Join(base, "ckpts")
	put(t, dir+"/checkpoint-300/config.json", `{"lr": 0.0001}`, 0o644)
	put(t, dir+"/.gpurent-run.json", `{"run":"exp1","committed":{}}`, 0o644)
	b, _, err := cloud.Open(ctx, filepath.Join(base, "store"), cloud.OpenOptions{})
	must(t, err)
	defer b.Close()
	idPath := filepath.Join(base, "identity.txt")
	rcpt, err := store.Keygen(idPath)
	must(t, err)
	ids, err := store.LoadIdentities(idPath)
	must(t, err)
	rs, err := store.ParseRecipients([]string{rcpt})
	must(t, err)
	planter := store.New(b, store.Options{Crypto: &store.Crypto{Recipients: rs, Keys: []string{rcpt}}, Grace: -1})
	if _, err := planter.Push(ctx, dir+"/checkpoint-300", "exp1"); err != nil {
		t.Fatal(err)
	}
	owner := store.New(b, store.Options{Crypto: &store.Crypto{Identities: ids, Auth: store.AuthKeysOf(ids), CheckAuth: true}, Grace: -1})
	_, err = CheckBackup(ctx, owner, "exp1", dir, nil)
	var nc *NotCovered
	if !errors.As(err, &nc) || !strings.Contains(err.Error(), "checkpoint-300/config.json (never uploaded)") {
		t.Fatalf("a planted checkpoint vouched for a file: %v", err)
	}
}
