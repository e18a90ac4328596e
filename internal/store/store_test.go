package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/gpurent/gpurent/internal/store/backend"
)

// backends the suite runs against: the file store always, SeaweedFS's S3
// when the harness started one (weed_test.go).
// fileAndS3 is backends without the emulators of other clouds: for
// tests of the store's own clean-up and leases, which the file store and
// S3 decide alike.
func fileAndS3(t *testing.T) map[string]func(t *testing.T) Backend {
	all := backends(t)
	out := map[string]func(t *testing.T) Backend{}
	for _, name := range []string{"file", "s3"} {
		if open, ok := all[name]; ok {
			out[name] = open
		}
	}
	return out
}

func backends(t *testing.T) map[string]func(t *testing.T) Backend {
	// open opens a fresh store URL for one test, closed after it; remote
	// stores upload in 5 MiB parts, four at a time.
	open := func(t *testing.T, url string) Backend {
		b, _, err := Open(context.Background(), url, OpenOptions{PartSize: 5 << 20, Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	out := map[string]func(t *testing.T) Backend{
		"file": func(t *testing.T) Backend { return open(t, t.TempDir()) },
	}
	if s3 := weedURL(t); s3 != "" {
		out["s3"] = func(t *testing.T) Backend { return open(t, "s3://"+newBucket(t)+"/ckpt?"+s3) }
	}
	if addr := gcsAddr(t); addr != "" {
		out["gs"] = func(t *testing.T) Backend { return open(t, "gs://"+newGCSBucket(t, addr)+"/ckpt") }
	}
	if addr := azuriteAddr(t); addr != "" {
		out["azblob"] = func(t *testing.T) Backend {
			return open(t, "azblob://"+newContainer(t, addr)+"/ckpt?protocol=http&domain="+addr)
		}
	}
	return out
}

func newCrypto(t *testing.T) (*Crypto, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "identity.txt")
	rcpt, err := Keygen(path)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := LoadIdentities(path)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ParseRecipients([]string{rcpt})
	if err != nil {
		t.Fatal(err)
	}
	return &Crypto{Recipients: rs, Keys: []string{rcpt}, Identities: ids}, path
}

// tree builds a checkpoint-like directory: nested dirs, an empty file, a
// sparse file, an executable, a private file and symlinks (one pointing
// out of the tree, which must be stored as a link, never followed).
func tree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "ckpt")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "shards", "a"), 0o755))
	must(os.WriteFile(filepath.Join(root, "empty"), nil, 0o644))
	big := make([]byte, 3<<20+17)
	rand.Read(big)
	must(os.WriteFile(filepath.Join(root, "shards", "a", "model.pt"), big, 0o600))
	must(os.WriteFile(filepath.Join(root, "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	f, err := os.Create(filepath.Join(root, "sparse.bin"))
	must(err)
	must(f.Truncate(64 << 20))
	_, err = f.WriteAt([]byte("tail"), 64<<20-4)
	must(err)
	must(f.Close())
	must(os.Symlink("shards/a/model.pt", filepath.Join(root, "latest")))
	must(os.Symlink("../../etc/passwd", filepath.Join(root, "outside")))
	for i := range 20 {
		must(os.WriteFile(filepath.Join(root, "shards", fmt.Sprintf("s%02d.json", i)), []byte(strings.Repeat("x", i*100)), 0o644))
	}
	return root
}

// same compares two trees: types, modes, contents, link targets.
func same(t *testing.T, a, b string) {
	t.Helper()
	err := filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		q := filepath.Join(b, rel)
		ia, _ := os.Lstat(p)
		ib, err := os.Lstat(q)
		if err != nil {
			return fmt.Errorf("%s missing after pull: %w", rel, err)
		}
		if ia.Mode() != ib.Mode() {
			return fmt.Errorf("%s: mode %v, pulled %v", rel, ia.Mode(), ib.Mode())
		}
		switch {
		case ia.Mode()&fs.ModeSymlink != 0:
			la, _ := os.Readlink(p)
			lb, _ := os.Readlink(q)
			if la != lb {
				return fmt.Errorf("%s: link %q, pulled %q", rel, la, lb)
			}
		case ia.Mode().IsRegular():
			ca, _ := os.ReadFile(p)
			cb, _ := os.ReadFile(q)
			if !bytes.Equal(ca, cb) {
				return fmt.Errorf("%s: contents differ", rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cr, _ := newCrypto(t)
			s := New(open(t), Options{Crypto: cr, Host: "test", Version: "test"})
			src := tree(t)
			m, err := s.Push(ctx, src, "exp1")
			if err != nil {
				t.Fatal(err)
			}
			if !m.Encrypted || m.Files != 29 || m.Bytes != 3<<20+17+64<<20+18+100*190 {
				t.Errorf("manifest: encrypted %v files %d bytes %d", m.Encrypted, m.Files, m.Bytes)
			}
			dest := filepath.Join(t.TempDir(), "restored")
			if _, err := s.Pull(ctx, "exp1", "latest", dest); err != nil {
				t.Fatal(err)
			}
			same(t, src, dest)
			if n, ok := allocated(filepath.Join(dest, "sparse.bin")); ok && n > 8<<20 {
				t.Errorf("sparse file restored with %d bytes allocated", n)
			}
			// A single file, and a second checkpoint: latest is the newest.
			one := filepath.Join(src, "run.sh")
			m2, err := s.Push(ctx, one, "exp1")
			if err != nil {
				t.Fatal(err)
			}
			list, _ := s.List(ctx, "exp1")
			if len(list) != 2 || list[1].ID != m2.ID {
				t.Fatalf("list %v", list)
			}
			dest2 := filepath.Join(t.TempDir(), "run.sh")
			if _, err := s.Pull(ctx, "exp1", "", dest2); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(dest2); string(b) != "#!/bin/sh\necho hi\n" {
				t.Errorf("single file: %q", b)
			}
			if st, _ := os.Stat(dest2); st.Mode().Perm() != 0o755 {
				t.Errorf("mode %v", st.Mode())
			}
			if _, probs, err := s.Verify(ctx, "exp1", "", true); err != nil || len(probs) != 0 {
				t.Errorf("verify: %v %v", probs, err)
			}
			// Pull refuses an existing destination and leaves it alone.
			if _, err := s.Pull(ctx, "exp1", m.ID, dest); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("pull over existing: %v", err)
			}
		})
	}
}

// failing kills a push after n data objects were stored, as a SIGKILL
// would (its heartbeat, written first, does not count).
type failing struct {
	Backend
	left atomic.Int64
}

var errKilled = errors.New("killed")

func (f *failing) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if strings.Contains(key, "/data/") && f.left.Add(-1) < 0 {
		return 0, errKilled
	}
	return f.Backend.Put(ctx, key, fill)
}

// killedPush pushes src to run through b and kills the push after n
// objects were stored.
func killedPush(t *testing.T, b Backend, cr *Crypto, src, run string, n int64) {
	t.Helper()
	f := &failing{Backend: b}
	f.left.Store(n)
	if _, err := New(f, Options{Crypto: cr, Workers: 1}).Push(context.Background(), src, run); !errors.Is(err, errKilled) {
		t.Fatalf("push: %v", err)
	}
}

func TestKilledPushLeavesNothingVisible(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			src := tree(t)
			good, err := New(b, Options{Crypto: cr}).Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			killedPush(t, b, cr, src, "r", 5)
			s := New(b, Options{Crypto: cr, Grace: -1})
			list, _ := s.List(ctx, "r")
			if len(list) != 1 || list[0].ID != good.ID {
				t.Fatalf("after a killed push ls shows %d checkpoints", len(list))
			}
			data, _ := b.List(ctx, "runs/r/data/")
			if len(data) != len(good.Objects)+5 {
				t.Fatalf("%d data objects, want %d committed + 5 leftovers", len(data), len(good.Objects))
			}
			// The next push removes the leftovers; the committed checkpoint stays whole.
			m3, err := s.Push(ctx, filepath.Join(src, "run.sh"), "r")
			if err != nil {
				t.Fatal(err)
			}
			data, _ = b.List(ctx, "runs/r/data/")
			if len(data) != len(good.Objects)+len(m3.Objects) {
				t.Errorf("%d data objects after clean-up, want %d", len(data), len(good.Objects)+len(m3.Objects))
			}
			if _, probs, err := s.Verify(ctx, "r", good.ID, true); err != nil || len(probs) != 0 {
				t.Errorf("committed checkpoint damaged: %v %v", probs, err)
			}
		})
	}
}

// Runs lists the runs with a committed checkpoint, on every backend: a run
// whose only push was killed has nothing committed and is not listed.
func TestRuns(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			src := tree(t)
			s := New(b, Options{Crypto: cr})
			var newest string
			stored := map[string]int64{} // what each push put: its objects and its manifest
			for _, run := range []string{"b-run", "a.run", "b-run"} {
				m, err := s.Push(ctx, src, run)
				if err != nil {
					t.Fatal(err)
				}
				newest = m.ID
				for _, o := range m.Objects {
					stored[run] += o.Size
				}
				n, err := b.Size(ctx, manifestKey(run, m.ID))
				if err != nil {
					t.Fatal(err)
				}
				stored[run] += n
			}
			killedPush(t, b, cr, src, "killed", 3)
			rs, err := s.Runs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 2 || rs[0].Run != "a.run" || rs[0].Checkpoints != 1 || rs[1].Run != "b-run" || rs[1].Checkpoints != 2 ||
				rs[1].Newest != newest || rs[1].NewestCreated.IsZero() || time.Since(rs[1].NewestCreated) > time.Hour {
				t.Errorf("runs: %+v", rs)
			}
			for _, r := range rs {
				if r.StoredBytes != stored[r.Run] {
					t.Errorf("run %s: %d bytes stored, want %d", r.Run, r.StoredBytes, stored[r.Run])
				}
			}
			if _, err := s.Find(ctx, "killed", "latest"); !errors.Is(err, ErrNoCheckpoint) || err.Error() != "run killed has no checkpoint yet" {
				t.Errorf("Find in a run with nothing committed: %v", err)
			}
			// The newest checkpoint's name, from its manifest; one that
			// cannot be read costs its run's name, not the others'.
			if err := s.NameNewest(ctx, rs); err != nil || rs[0].NewestName != filepath.Base(src) || rs[1].NewestName != filepath.Base(src) {
				t.Errorf("NameNewest: %v, %+v", err, rs)
			}
			corrupt(t, b, manifestKey("a.run", rs[0].Newest), func([]byte) []byte { return []byte("{") })
			rs, _ = s.Runs(ctx)
			if err := s.NameNewest(ctx, rs); err == nil || !strings.HasPrefix(err.Error(), "run a.run: ") || rs[0].NewestName != "" || rs[1].NewestName != filepath.Base(src) {
				t.Errorf("NameNewest with a broken manifest: %v, %+v", err, rs)
			}
		})
	}
}

// corrupt overwrites an object with changed content, going around the
// store (as a faulty disk or a tamperer would).
func corrupt(t *testing.T, b Backend, key string, change func([]byte) []byte) {
	t.Helper()
	ctx := context.Background()
	r, err := b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(r)
	r.Close()
	data = change(data)
	if _, err := b.Put(ctx, key, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		t.Fatal(err)
	}
}

func TestCorruption(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			s := New(b, Options{Crypto: cr})
			src := tree(t)
			m, err := s.Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			es, _ := s.Files(m)
			obj := func(path string) string {
				for _, e := range es {
					if e.Path == path {
						return m.Objects[e.Object].Key
					}
				}
				t.Fatalf("no %s", path)
				return ""
			}
			// A flipped byte: the shallow check cannot see it, the deep one names the file.
			corrupt(t, b, obj("shards/a/model.pt"), func(d []byte) []byte { d[len(d)/2] ^= 1; return d })
			_, probs, err := s.Verify(ctx, "r", "", true)
			if err != nil || len(probs) != 1 || probs[0].Path != "shards/a/model.pt" {
				t.Errorf("deep verify after a flipped byte: %v %v", probs, err)
			}
			dest := filepath.Join(t.TempDir(), "out")
			if _, err := s.Pull(ctx, "r", "", dest); err == nil || !strings.Contains(err.Error(), "shards/a/model.pt, object") || !strings.Contains(err.Error(), "corrupt in the store") {
				t.Errorf("pull of a corrupt checkpoint: %v", err)
			}
			assertAbsent(t, dest)
			// A truncated object: even the shallow check names the file.
			corrupt(t, b, obj("shards/s05.json"), func(d []byte) []byte { return d[:len(d)-10] })
			_, probs, _ = s.Verify(ctx, "r", "", false)
			if len(probs) != 1 || probs[0].Path != "shards/s05.json" || !strings.Contains(probs[0].Msg.String(), "truncated") {
				t.Errorf("shallow verify after truncation: %v", probs)
			}
			// A missing object.
			if err := b.Delete(ctx, obj("run.sh")); err != nil {
				t.Fatal(err)
			}
			_, probs, _ = s.Verify(ctx, "r", "", false)
			found := false
			for _, p := range probs {
				found = found || (p.Path == "run.sh" && strings.Contains(p.Msg.String(), "missing"))
			}
			if !found {
				t.Errorf("missing object not reported: %v", probs)
			}
			if _, err := s.Pull(ctx, "r", "", dest); err == nil {
				t.Error("pull with a missing object succeeded")
			}
			assertAbsent(t, dest)
		})
	}
}

func assertAbsent(t *testing.T, dest string) {
	t.Helper()
	if _, err := os.Lstat(dest); err == nil {
		t.Errorf("%s exists after a failed pull", dest)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".*gpurent-pull-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
}

func TestWrongIdentityAndPlaintext(t *testing.T) {
	ctx := context.Background()
	b := backends(t)["file"](t)
	cr, _ := newCrypto(t)
	other, _ := newCrypto(t)
	m, err := New(b, Options{Crypto: cr}).Push(ctx, tree(t), "r")
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "out")
	_, err = New(b, Options{Crypto: &Crypto{Identities: other.Identities}}).Pull(ctx, "r", m.ID, dest)
	if !errors.Is(err, ErrWrongIdentity) || !strings.Contains(err.Error(), cr.Keys[0]) {
		t.Errorf("wrong identity: %v", err)
	}
	if strings.Contains(fmt.Sprint(err), "AGE-SECRET-KEY") {
		t.Error("the error shows a secret key")
	}
	assertAbsent(t, dest)
	_, err = New(b, Options{}).Pull(ctx, "r", m.ID, dest)
	if err == nil || !strings.Contains(err.Error(), "no identity was given") {
		t.Errorf("no identity: %v", err)
	}
	// Plaintext round trip, and the file list readable without a key.
	pm, err := New(b, Options{}).Push(ctx, tree(t), "plain")
	if err != nil || pm.Encrypted {
		t.Fatal(err)
	}
	if _, probs, err := New(b, Options{}).Verify(ctx, "plain", "", true); err != nil || len(probs) != 0 {
		t.Errorf("plaintext verify: %v %v", probs, err)
	}
	// The encrypted manifest names no file.
	r, _ := b.Get(ctx, manifestKey("r", m.ID))
	raw, _ := io.ReadAll(r)
	r.Close()
	if bytes.Contains(raw, []byte("model.pt")) || bytes.Contains(raw, []byte("shards")) {
		t.Error("the manifest of an encrypted checkpoint shows file names")
	}
}

// flaky fails the first n calls with a transient error.
type flaky struct {
	Backend
	fail  atomic.Int64
	calls atomic.Int64
	err   error
}

func (f *flaky) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	f.calls.Add(1)
	if f.fail.Add(-1) >= 0 {
		fill(io.Discard)
		return 0, f.err
	}
	return f.Backend.Put(ctx, key, fill)
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	b := backends(t)["file"](t)
	transient := &OpError{Op: "write", Code: 0, Err: fmt.Errorf("dial tcp 127.0.0.1:1: connect: %w", syscall.ECONNREFUSED)}
	f := &flaky{Backend: b, err: transient}
	f.fail.Store(2)
	var told []string
	r := &Retrying{Backend: f, Base: 1, Retried: func(err error, wait time.Duration, left int) {
		told = append(told, fmt.Sprintf("%s; %d left", Brief(err), left))
	}}
	if _, err := r.Put(ctx, "k", func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err != nil || f.calls.Load() != 3 {
		t.Errorf("transient: %v after %d calls", err, f.calls.Load())
	}
	// Each retry is told, briefly: the key and the cause, then the tries left.
	why := "write : nothing answers (connection refused): check the endpoint's host and port, and that its server runs"
	if want := []string{why + "; 4 left", why + "; 3 left"}; !slices.Equal(told, want) {
		t.Errorf("retries told %q, want %q", told, want)
	}
	perm := &flaky{Backend: b, err: &OpError{Op: "write", Code: 5 /* PermissionDenied */, Err: errors.New("AccessDenied")}}
	perm.fail.Store(10)
	r = &Retrying{Backend: perm, Base: 1}
	if _, err := r.Put(ctx, "k", func(w io.Writer) error { return nil }); err == nil || perm.calls.Load() != 1 {
		t.Errorf("permanent: %v after %d calls", err, perm.calls.Load())
	}
}

func TestFullDiskOnPull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a 2 MiB tmpfs as a full disk")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %s", out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	ctx := context.Background()
	cr, _ := newCrypto(t)
	b := backends(t)["file"](t)
	s := New(b, Options{Crypto: cr})
	if _, err := s.Push(ctx, tree(t), "r"); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(mnt, "out")
	// Told before any download, from statfs.
	_, err := s.Pull(ctx, "r", "", dest)
	if err == nil || !strings.Contains(err.Error(), "free: make room or pull elsewhere (nothing was written)") {
		t.Errorf("pull onto a small disk: %v", err)
	}
	assertAbsent(t, dest)
	// A disk that fills during the pull (another writer; here statfs is
	// told to say there is room): stopped by ENOSPC, nothing left.
	s = New(b, Options{Crypto: cr, Free: func(string) (uint64, bool) { return 1 << 40, true }})
	_, err = s.Pull(ctx, "r", "", dest)
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("pull onto a full disk: %v", err)
	}
	assertAbsent(t, dest)
	if entries, _ := os.ReadDir(mnt); len(entries) != 0 {
		t.Errorf("the full disk holds %d entries after the failed pull", len(entries))
	}
}

func TestKeygen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k", "id.txt")
	r, err := Keygen(p)
	if err != nil || !strings.HasPrefix(r, "age1") {
		t.Fatal(r, err)
	}
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode())
	}
	if _, err := Keygen(p); err == nil || !strings.Contains(err.Error(), "not overwritten") {
		t.Errorf("second keygen: %v", err)
	}
	os.Chmod(p, 0o644)
	if _, err := LoadIdentities(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("loose identity: %v", err)
	}
	var _ age.Identity // the package's identity type
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"version":1,"id":"20261130T020612.123Z-0a1b2c3d","run":"r","created":"2026-11-30T02:06:12Z","host":"h","gpurent":"v","encrypted":false,"files":1,"bytes":1,"objects":[{"key":"runs/r/data/20261130T020612.123Z-0a1b2c3d/000000","size":1}],"file_list":"W3sicGF0aCI6Ii4iLCJ0eXBlIjoiZmlsZSIsIm1vZGUiOjQyMCwic2l6ZSI6MSwic2hhMjU2IjoiY2EzNTkzZjliYzhjZGY1NzEyMmQ1YmVjMjBmOGFjMmUyN2U2NzIyMTg3NWNlN2Q2NzhiMDJmMDJlOWIxMWE3MiIsIm9iamVjdCI6MCwibXRpbWUiOiIwMDAxLTAxLTAxVDAwOjAwOjAwWiJ9XQ=="}`))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		for _, o := range m.Objects {
			if !strings.HasPrefix(o.Key, dataPrefix(m.Run, m.ID)) {
				t.Fatalf("accepted object %q outside the checkpoint", o.Key)
			}
		}
		if m.Encrypted {
			return
		}
		es, err := ParseFileList(m, m.FileList)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Path != "." && (strings.HasPrefix(e.Path, "/") || strings.Contains("/"+e.Path+"/", "/../")) {
				t.Fatalf("accepted path %q", e.Path)
			}
		}
	})
}

func TestFileListRejectsEscapes(t *testing.T) {
	m := &Manifest{ID: "20261130T020612.123Z-0a1b2c3d", Files: 2}
	for _, list := range []string{
		`[{"path":"../x","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"},{"path":"y","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"}]`,
		`[{"path":"/etc","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"},{"path":"y","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"}]`,
		`[{"path":"l","type":"symlink","link":"/etc","mode":511,"object":-1,"mtime":"0001-01-01T00:00:00Z"},{"path":"l/passwd","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"}]`,
		`[{"path":"a","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"},{"path":"a","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"}]`,
		// A name this system cannot hold: a NUL byte anywhere; on Windows
		// also a backslash, a separator there (a Linux file `a\..\..\x`
		// would lead out of the pull's directory).
		`[{"path":"a","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"},{"path":"a/b\u0000c","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"}]`,
	} {
		if _, err := ParseFileList(m, []byte(list)); err == nil {
			t.Errorf("accepted %s", list)
		}
	}
	if runtime.GOOS == "windows" {
		list := `[{"path":"a","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"},{"path":"a\\..\\..\\x","type":"dir","mode":493,"object":-1,"mtime":"0001-01-01T00:00:00Z"}]`
		if _, err := ParseFileList(m, []byte(list)); err == nil {
			t.Errorf("accepted %s", list)
		}
	}
}

// TestUploadLimit: a 4 MiB/s cap holds a 2 MiB push to at least the time
// the cap allows beyond its first burst. A lower bound only: a slow machine
// can only make it slower.
func TestUploadLimit(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(src, bytes.Repeat([]byte("x"), 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _, err := Open(ctx, t.TempDir(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lim := NewUploadLimit(4 << 20)
	start := time.Now()
	if _, err := New(b, Options{Upload: lim}).Push(ctx, src, "r"); err != nil {
		t.Fatal(err)
	}
	floor := time.Duration(float64((2<<20)-lim.Burst()) / (4 << 20) * float64(time.Second))
	if el := time.Since(start); el < floor {
		t.Fatalf("2 MiB at 4 MiB/s took %v, less than the %v the cap allows", el, floor)
	}
	// And downloads, as pull --bwlimit asks.
	down := NewUploadLimit(4 << 20)
	start = time.Now()
	if _, err := New(b, Options{Download: down}).Pull(ctx, "r", "latest", filepath.Join(t.TempDir(), "out")); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < floor {
		t.Fatalf("a pull of 2 MiB at 4 MiB/s took %v, less than the %v the cap allows", el, floor)
	}
}

// Pushing "." names the checkpoint after the directory: "." itself is not
// a name, and a manifest that says it would make ls refuse the whole run.
func TestPushDotKeepsTheRunReadable(t *testing.T) {
	ctx := context.Background()
	b := backends(t)["file"](t)
	src := tree(t)
	t.Chdir(src)
	st := New(b, Options{})
	m, err := st.Push(ctx, ".", "r")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != filepath.Base(src) {
		t.Errorf("name %q, want %q", m.Name, filepath.Base(src))
	}
	if ms, err := st.List(ctx, "r"); err != nil || len(ms) != 1 {
		t.Fatalf("ls after pushing .: %v, %v", ms, err)
	}
	// A manifest an older gpurent wrote with the name "." reads as unnamed.
	corrupt(t, b, manifestKey("r", m.ID), func(d []byte) []byte {
		return bytes.Replace(d, []byte(`"name": "`+m.Name+`"`), []byte(`"name": "."`), 1)
	})
	if ms, err := New(b, Options{}).List(ctx, "r"); err != nil || len(ms) != 1 || ms[0].Name != "" {
		t.Fatalf("ls of a manifest named \".\": %v, %v", ms, err)
	}
}

// pull makes the destination's missing parents.
func TestPullMakesParents(t *testing.T) {
	ctx := context.Background()
	b := backends(t)["file"](t)
	src := tree(t)
	st := New(b, Options{})
	if _, err := st.Push(ctx, src, "r"); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "a", "b", "out")
	if _, err := st.Pull(ctx, "r", "", dest); err != nil {
		t.Fatal(err)
	}
	same(t, src, dest)
}

func TestStoreWithin(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		store, path string
		want        bool
	}{
		{dir + "/src/store", dir + "/src", true},
		{dir + "/src", dir + "/src", true},
		{dir + "/store", dir + "/src", false},
		{dir + "/srcstore", dir + "/src", false},
		{"s3://b/x", dir, false},
	} {
		if got := Within(LocalDir(tc.store), tc.path); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.store, tc.path, got, tc.want)
		}
	}
}

// A prune plan names the oldest checkpoints beyond keep and the leftovers of
// a killed push and deletes nothing; Prune then deletes exactly those, on
// every backend.
// countingGets counts the objects read whole.
type countingGets struct {
	Backend
	gets atomic.Int64
}

func (c *countingGets) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.gets.Add(1)
	return c.Backend.Get(ctx, key)
}

// Find's latest reads one manifest however many the run has (gpurent run
// asks at every start), and is the newest pushed; a stray object among
// the manifests is passed over.
func TestFindLatestReadsOneManifest(t *testing.T) {
	ctx := context.Background()
	b := &countingGets{Backend: backends(t)["file"](t)}
	s := New(b, Options{Grace: -1})
	src := filepath.Join(t.TempDir(), "w.pt")
	if err := os.WriteFile(src, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	var newest string
	for range 5 {
		m, err := s.Push(ctx, src, "r")
		if err != nil {
			t.Fatal(err)
		}
		newest = m.ID
	}
	if _, err := b.Put(ctx, "runs/r/manifests/notes.json", func(w io.Writer) error { _, err := w.Write([]byte("{}")); return err }); err != nil {
		t.Fatal(err)
	}
	b.gets.Store(0)
	m, err := s.Find(ctx, "r", "latest")
	if err != nil || m.ID != newest {
		t.Fatalf("latest %v %v, want %s", m, err, newest)
	}
	if n := b.gets.Load(); n != 1 {
		t.Errorf("Find read %d objects, want 1", n)
	}
}

func TestPrune(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			src := t.TempDir()
			for i := range 8 {
				if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%d", i)), bytes.Repeat([]byte{byte(i)}, 1000+i), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := New(b, Options{Crypto: cr, Grace: -1})
			var ids []string
			for range 3 {
				m, err := s.Push(ctx, src, "r")
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, m.ID)
			}
			killedPush(t, b, cr, src, "r", 2)
			before, _ := b.List(ctx, "runs/r/")

			p, err := s.PlanPrune(ctx, "r", 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Checkpoints) != 2 || p.Checkpoints[0].ID != ids[0] || p.Checkpoints[1].ID != ids[1] {
				t.Fatalf("plan deletes %v, want the two oldest of %v", p.Checkpoints, ids)
			}
			if len(p.Leftovers) != 2 {
				t.Errorf("plan removes %d leftovers, want the killed push's 2", len(p.Leftovers))
			}
			if after, _ := b.List(ctx, "runs/r/"); len(after) != len(before) {
				t.Fatalf("planning deleted objects: %d before, %d after", len(before), len(after))
			}

			r, err := s.Prune(ctx, "r", 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Checkpoints) != 2 || r.Checkpoints[0] != ids[0] || r.Checkpoints[1] != ids[1] || r.Leftovers != 2 || r.Uploads != 0 {
				t.Errorf("prune deleted %+v, want %v, 2 leftovers and no uploads", r, ids[:2])
			}
			list, _ := s.List(ctx, "r")
			if len(list) != 1 || list[0].ID != ids[2] {
				t.Fatalf("after prune the run holds %v, want only %s", list, ids[2])
			}
			data, _ := b.List(ctx, "runs/r/data/")
			if len(data) != len(list[0].Objects) {
				t.Errorf("%d data objects left, want the kept checkpoint's %d", len(data), len(list[0].Objects))
			}
			if _, probs, err := s.Verify(ctx, "r", ids[2], true); err != nil || len(probs) != 0 {
				t.Errorf("kept checkpoint damaged: %v %v", probs, err)
			}
			if _, err := s.PlanPrune(ctx, "r", -1); err == nil {
				t.Error("a negative keep was accepted")
			}
		})
	}
}

// refusing is a backend whose credentials may not write, or not delete.
type refusing struct {
	Backend
	put, del bool
}

func (r refusing) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if r.put {
		return 0, &OpError{Op: "put", Key: key, Store: "s3://b", Code: backend.PermissionDenied, Err: errors.New("AccessDenied")}
	}
	return r.Backend.Put(ctx, key, fill)
}

func (r refusing) Delete(ctx context.Context, key string) error {
	if r.del {
		return &OpError{Op: "delete", Key: key, Store: "s3://b", Code: backend.PermissionDenied, Err: errors.New("AccessDenied")}
	}
	return r.Backend.Delete(ctx, key)
}

// CheckWrite: a store that takes writes is left as it was, on every
// backend; one that refuses them says so as a permission error; one that
// refuses only the delete is usable, and says the object stayed.
func TestCheckWrite(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			b := open(t)
			s := New(b, Options{})
			if deleted, err := s.CheckWrite(ctx, "r"); err != nil || !deleted {
				t.Fatalf("deleted %v, %v", deleted, err)
			}
			if objs, err := b.List(ctx, "runs/"); err != nil || len(objs) != 0 {
				t.Errorf("left in the store: %v %v", objs, err)
			}
		})
	}
	b := backends(t)["file"](t)
	_, err := New(refusing{Backend: b, put: true}, Options{}).CheckWrite(ctx, "r")
	if !IsPermissionDenied(err) || !strings.HasPrefix(err.Error(), "the store does not take writes: put runs/r/write-check in s3://b: access denied") {
		t.Errorf("refused write: %v", err)
	}
	deleted, err := New(refusing{Backend: b, del: true}, Options{}).CheckWrite(ctx, "r")
	if err != nil || deleted {
		t.Errorf("refused delete: deleted %v, %v", deleted, err)
	}
}

// Pull says at once when the destination's file system cannot hold the
// checkpoint, before any download, and leaves nothing behind.
func TestPullChecksFreeSpace(t *testing.T) {
	ctx := context.Background()
	b := backends(t)["file"](t)
	m, err := New(b, Options{}).Push(ctx, tree(t), "r")
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	var asked string
	small := New(b, Options{Free: func(dir string) (uint64, bool) { asked = dir; return uint64(m.Bytes) - 1, true }})
	_, err = small.Pull(ctx, "r", "", filepath.Join(parent, "ckpt"))
	if err == nil || !strings.Contains(err.Error(), "free: make room or pull elsewhere (nothing was written)") || asked != parent {
		t.Fatalf("pull onto a disk one byte short: %v (asked about %q)", err, asked)
	}
	if left, _ := os.ReadDir(parent); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	roomy := New(b, Options{Free: func(string) (uint64, bool) { return uint64(m.Bytes), true }})
	if _, err := roomy.Pull(ctx, "r", "", filepath.Join(parent, "ckpt")); err != nil {
		t.Errorf("pull onto a disk just large enough: %v", err)
	}
	if free, ok := freeSpace(parent); !ok || free == 0 {
		t.Errorf("freeSpace(%s) = %d, %v", parent, free, ok)
	}
}

// reads counts the data objects read, and fails the reads of those in
// broken, as a store that went away in the middle of a pull.
type reads struct {
	Backend
	mu     sync.Mutex
	n      map[string]int
	broken map[string]bool
}

func (r *reads) read(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Contains(key, "/data/") {
		r.n[key]++
	}
	if r.broken[key] {
		return &OpError{Op: "read", Key: key, Store: "s3://b", Err: errors.New("connection reset by peer")}
	}
	return nil
}

func (r *reads) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := r.read(key); err != nil {
		return nil, err
	}
	return r.Backend.Get(ctx, key)
}

func (r *reads) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := r.read(key); err != nil {
		return nil, err
	}
	return r.Backend.GetRange(ctx, key, off, n)
}

// A pull cut short keeps what it finished, and pulling the same
// checkpoint again fetches only the rest; another checkpoint's leftovers
// at the same place are removed.
func TestPullResumes(t *testing.T) {
	ctx := context.Background()
	cr, _ := newCrypto(t)
	b := backends(t)["file"](t)
	src := tree(t)
	m, err := New(b, Options{Crypto: cr}).Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := New(b, Options{Crypto: cr}).Files(m)
	if err != nil {
		t.Fatal(err)
	}
	var sparseKey string
	files := 0
	for _, e := range entries {
		if e.Type == "file" {
			files++
		}
		if e.Path == "sparse.bin" {
			sparseKey = m.Objects[e.Object].Key
		}
	}
	parent := t.TempDir()
	dest := filepath.Join(parent, "ckpt")
	os.MkdirAll(filepath.Join(parent, ".ckpt.gpurent-pull-20200101T000000.000Z-00000000", "x"), 0o700) // another checkpoint's
	cut := &reads{Backend: b, n: map[string]int{}, broken: map[string]bool{sparseKey: true}}
	st := New(cut, Options{Crypto: cr, Workers: 1})
	st.opt.PullWait = time.Millisecond
	_, err = st.Pull(ctx, "r", m.ID, dest)
	tmp := filepath.Join(parent, ".ckpt.gpurent-pull-"+m.ID)
	want := fmt.Sprintf("; what was pulled (%d of %d files whole, ", files-1, files)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "is kept in "+tmp+": pulling checkpoint "+m.ID+" to "+dest+" again checks it and fetches only the rest") {
		t.Fatalf("pull cut short: %v", err)
	}
	if _, err := os.Lstat(dest); err == nil {
		t.Errorf("%s exists after a pull cut short", dest)
	}
	if _, err := os.Stat(filepath.Join(parent, ".ckpt.gpurent-pull-20200101T000000.000Z-00000000")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("another checkpoint's leftovers stayed: %v", err)
	}
	again := &reads{Backend: b, n: map[string]int{}}
	if _, err := New(again, Options{Crypto: cr, Workers: 1}).Pull(ctx, "r", m.ID, dest); err != nil {
		t.Fatal(err)
	}
	if cut.n[sparseKey] < pullTries {
		t.Errorf("the object whose reads broke off was read %d times, want it tried %d times", cut.n[sparseKey], pullTries)
	}
	if len(again.n) != 1 || again.n[sparseKey] == 0 {
		t.Errorf("the second pull read %v, want only %s", again.n, sparseKey)
	}
	same(t, src, dest)
	if left, _ := filepath.Glob(filepath.Join(parent, ".ckpt.gpurent-pull-*")); len(left) != 0 {
		t.Errorf("left beside the checkpoint: %v", left)
	}
}

// A push from Windows records Unix permissions a shared Linux machine can
// take: Go reports every Windows file as 0666 and directory as 0777, which a
// pull would apply as world-writable.
func TestRecordedModeFromWindows(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "model.bin")
	ro := filepath.Join(dir, "frozen.bin")
	for _, p := range []string{file, ro} {
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	// Windows' Go gives 0666 and 0444 and 0777: made so here by chmod.
	os.Chmod(file, 0o666)
	os.Chmod(ro, 0o444)
	os.Chmod(dir, 0o777)
	for _, c := range []struct {
		path       string
		linux, win fs.FileMode
	}{{file, 0o666, 0o644}, {ro, 0o444, 0o444}, {dir, 0o777, 0o755}} {
		info, err := os.Lstat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := recordedMode(info, "linux"); got != c.linux {
			t.Errorf("%s on linux: %v, want %v", c.path, got, c.linux)
		}
		if got := recordedMode(info, "windows"); got != c.win {
			t.Errorf("%s from windows: %v, want %v", c.path, got, c.win)
		}
	}
}

// Scan refuses what push cannot copy, naming the file and what it is in
// words (a FIFO's mode prints as "p---------").
func TestScanRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "loader.pipe")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	_, _, err := Scan(dir)
	if err == nil || err.Error() != "push: "+fifo+" is a named pipe (FIFO), not a file, directory or symlink: move it out of the checkpoint" {
		t.Errorf("got %v", err)
	}
}

// A cloud URL typed with one slash, or none, is refused rather than taken
// as a local directory named "s3:" (where the checkpoints would stay on the
// machine that can vanish); ./ makes such a directory on purpose.
func TestOpenMistypedURL(t *testing.T) {
	t.Chdir(t.TempDir())
	for raw, want := range map[string]string{
		"s3:/bucket/runs": `store "s3:/bucket/runs": a URL needs "://" (s3://bucket/runs); for a local directory whose name begins "s3:", write ./s3:/bucket/runs`,
		"gs:bucket":       `(gs://bucket)`,
		"AZBLOB:/c":       `(azblob://c)`,
		"file:/srv/ckpt":  `(file:///srv/ckpt)`,
	} {
		_, _, err := Open(context.Background(), raw, OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %v, want %q", raw, err, want)
		}
	}
	if es, _ := os.ReadDir("."); len(es) != 0 {
		t.Errorf("refused URLs made %v", es)
	}
	b, _, err := Open(context.Background(), "./s3:/x", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if st, err := os.Stat("s3:/x"); err != nil || !st.IsDir() {
		t.Errorf("./s3:/x: %v", err)
	}
}

// A person knows a checkpoint by the name it was pushed under, not its id:
// Resolve gives the newest checkpoint of that name, passes ids and latest
// through, and names what there is when the name is not among them.
func TestResolveName(t *testing.T) {
	ctx := context.Background()
	s := New(backends(t)["file"](t), Options{Grace: -1})
	dir := t.TempDir()
	var ids []string
	for i, name := range []string{"checkpoint-1", "checkpoint-2", "checkpoint-1"} {
		src := filepath.Join(dir, fmt.Sprint(i), name)
		if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(src, []byte(fmt.Sprint("weights ", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := s.Push(ctx, src, "r")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
		time.Sleep(2 * time.Millisecond) // ids order by their millisecond
	}
	for _, tc := range []struct{ ref, want string }{
		{"checkpoint-1", ids[2]}, // the newest of two
		{"checkpoint-2", ids[1]},
		{ids[0], ids[0]},
		{"latest", "latest"},
	} {
		if got, err := s.Resolve(ctx, "r", tc.ref); err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
	}
	_, err := s.Resolve(ctx, "r", "checkpoint-3")
	if !errors.Is(err, ErrNoCheckpoint) || !strings.HasSuffix(err.Error(), "its names, newest first: checkpoint-1, checkpoint-2") {
		t.Errorf("an unknown name: %v", err)
	}
	if _, err := s.Resolve(ctx, "r", "../checkpoint-1"); err == nil || errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("a path for a name: %v", err)
	}
}

// A user name or password in the store URL or its endpoint is refused,
// and never echoed: on 7f49d07 endpoint=http://user:PASSWORD@host was
// accepted and the password shown, URL-encoded, in errors.
func TestOpenRefusesUserinfo(t *testing.T) {
	for _, raw := range []string{
		"s3://bucket/p?endpoint=http://admin:S3cretPassw0rd@127.0.0.1:1&region=us-east-1",
		"s3://bucket/p?endpoint=https://admin:S3cretPassw0rd@s3.example.com&region=us-east-1",
		"s3://admin:S3cretPassw0rd@bucket/p?region=us-east-1",
	} {
		_, _, err := Open(context.Background(), raw, OpenOptions{})
		if err == nil {
			t.Errorf("%s: accepted", raw)
			continue
		}
		if strings.Contains(err.Error(), "S3cretPassw0rd") || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// TestCheckpointIDsSortAsMade: ids made in the same millisecond, or with a
// clock that steps back, still sort in the order they were made.
func TestCheckpointIDsSortAsMade(t *testing.T) {
	s := New(nil, Options{})
	at := time.Date(2026, 12, 6, 16, 0, 0, 0, time.UTC)
	var ids []string
	for _, d := range []time.Duration{0, 0, 100 * time.Microsecond, -time.Second, 5 * time.Millisecond} {
		ids = append(ids, s.checkpointID(at.Add(d), ""))
	}
	if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
		t.Errorf("ids %q do not sort as made", ids)
	}
}
