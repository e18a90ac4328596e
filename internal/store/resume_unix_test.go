//go:build unix

package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Pushes resume where files have inodes and locks: these tests run on
// Unix.

// withCopier is a backend that copies through another.
type withCopier struct {
	Backend
	copier
}

// configSize is the size of resumable's config.json.
const configSize = int64(len(`{"layers": 2}`))

// cutShort pushes src and kills the push once the config and two parts
// of the model are stored; it returns the unfinished checkpoint's id.
func cutShort(t *testing.T, b Backend, opt Options, src string) string {
	t.Helper()
	f := &failing{Backend: b}
	f.left.Store(3)
	opt.Workers = 1
	// Copies and names versions as the store does, so the journal
	// records the ETags a real push would.
	cut := withCopier{Backend: f, copier: b.(copier)}
	_, err := New(cut, opt).Push(context.Background(), src, "r")
	if !errors.Is(err, errKilled) || !strings.Contains(err.Error(), "the 2.0 MiB of it stored is kept: the same push again goes on from there") {
		t.Fatalf("push: %v", err)
	}
	objs, err := b.List(context.Background(), "runs/r/data/")
	if err != nil || len(objs) != 3 {
		t.Fatalf("the push cut short stored %d objects, want 3: %v", len(objs), err)
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(objs[0].Key, "runs/r/data/"), "/")
	return id
}

// An interrupted push of a large file resumes with the parts and the
// small file already stored: the second push commits the same checkpoint,
// uploads only the parts that were not there, and leaves nothing unnamed
// behind.
func TestInterruptedPushResumes(t *testing.T) {
	for name, open := range fileAndS3(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			opt := Options{Crypto: cr, Host: "gpu-1", Segment: 1 << 20, Journal: t.TempDir(), Where: "test"}
			src, model := resumable(t)
			id := cutShort(t, b, opt, src)
			p := &puts{Backend: b}
			m, err := New(p, opt).Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if m.ID != id {
				t.Errorf("committed %s, not the checkpoint cut short (%s)", m.ID, id)
			}
			if m.Resumed != 2<<20+configSize {
				t.Errorf("resumed %d bytes, want the config and the two parts stored (%d)", m.Resumed, 2<<20+configSize)
			}
			// The model's last two parts only: the config was stored.
			if len(p.keys) != 2 {
				t.Errorf("uploaded %v, want the two parts", p.keys)
			}
			for _, k := range p.keys {
				if name := path.Base(k); strings.HasPrefix(name, "000001.0") || strings.HasPrefix(name, "000001.1") {
					t.Errorf("uploaded %s again", k)
				}
			}
			objs, _ := b.List(ctx, "runs/r/data/")
			if len(objs) != len(m.Objects) {
				t.Errorf("%d objects in the store, the checkpoint names %d: the first push's config was not swept", len(objs), len(m.Objects))
			}
			dest := filepath.Join(t.TempDir(), "out")
			if _, err := New(b, opt).Pull(ctx, "r", "latest", dest); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(dest, "model.bin")); !bytes.Equal(got, model) {
				t.Error("the resumed checkpoint does not restore the model")
			}
			if left, _ := filepath.Glob(filepath.Join(opt.Journal, "*")); len(left) != 1 || !strings.HasSuffix(left[0], ".hashes.json") {
				t.Errorf("journal left after the commit, or no hash cache: %v", left)
			}
			// The next push is a checkpoint of its own.
			m2, err := New(b, opt).Push(ctx, src, "r")
			if err != nil || m2.ID == m.ID || m2.Resumed != 0 {
				t.Errorf("push after the commit: %v resumed %v, %v", m2.ID, m2.Resumed, err)
			}
		})
	}
}

// What a resumed push takes from before is checked, never trusted: a file
// changed since (its content, with the same size and time), a part gone
// or replaced in the store, a journal that says otherwise, another host's
// journal: each such part is uploaded again, and what is committed
// restores what is on disk now.
func TestResumeChecksWhatItAdopts(t *testing.T) {
	for name, open := range fileAndS3(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cr, _ := newCrypto(t)
			type caseT struct {
				name    string
				resumed int64
				spoil   func(t *testing.T, b Backend, opt *Options, id, src string)
			}
			cases := []caseT{
				// The config, stored and unchanged, is adopted wherever
				// the checkpoint is.
				{"the model rewritten, its time set back", configSize, func(t *testing.T, b Backend, opt *Options, id, src string) {
					p := filepath.Join(src, "model.bin")
					st, _ := os.Stat(p)
					other := make([]byte, st.Size())
					rand.Read(other)
					os.WriteFile(p, other, 0o644)
					os.Chtimes(p, st.ModTime(), st.ModTime())
				}},
				{"the journal's hash of part 2 wrong", 1<<20 + configSize, func(t *testing.T, b Backend, opt *Options, id, src string) {
					editJournal(t, opt.Journal, func(st *journalState) { st.Files["model.bin"].Parts[1].Prefix = strings.Repeat("0", 64) })
				}},
				{"part 1 of another size in the store", configSize, func(t *testing.T, b Backend, opt *Options, id, src string) {
					corrupt(t, b, partKey("r", id, 1, 0, ""), func(d []byte) []byte { return d[:len(d)-1] })
				}},
				{"part 2 gone", 1<<20 + configSize, func(t *testing.T, b Backend, opt *Options, id, src string) {
					b.Delete(ctx, partKey("r", id, 1, 1, ""))
				}},
				{"another host's journal", 0, func(t *testing.T, b Backend, opt *Options, id, src string) {
					opt.Host = "gpu-2"
				}},
				{"the leftovers cleaned up", 0, func(t *testing.T, b Backend, opt *Options, id, src string) {
					if _, err := New(b, Options{Crypto: cr, Grace: -1}).Prune(ctx, "r", 10); err != nil {
						t.Fatal(err)
					}
				}},
			}
			if name == "s3" {
				// Where the store names versions, a same-size swap is
				// seen before anything is committed.
				cases = append(cases, caseT{"part 1 replaced at its size", configSize, func(t *testing.T, b Backend, opt *Options, id, src string) {
					corrupt(t, b, partKey("r", id, 1, 0, ""), func(d []byte) []byte { d = slices.Clone(d); d[len(d)-1] ^= 1; return d })
				}})
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					b := open(t)
					opt := Options{Crypto: cr, Host: "gpu-1", Segment: 1 << 20, Journal: t.TempDir(), Where: "test"}
					src, _ := resumable(t)
					id := cutShort(t, b, opt, src)
					c.spoil(t, b, &opt, id, src)
					m, err := New(b, opt).Push(ctx, src, "r")
					if err != nil {
						t.Fatal(err)
					}
					if m.Resumed != c.resumed {
						t.Errorf("resumed %d bytes, want %d", m.Resumed, c.resumed)
					}
					restoresAs(t, New(b, opt), m.ID, src)
				})
			}
		})
	}
}

// On a directory store, which names no versions, a part replaced at its
// size is adopted; the pull then names it instead of restoring it.
func TestPartReplacedAtItsSizeIsCaughtByThePull(t *testing.T) {
	ctx := context.Background()
	b := mustOpen(t, t.TempDir())
	cr, _ := newCrypto(t)
	opt := Options{Crypto: cr, Host: "gpu-1", Segment: 1 << 20, Journal: t.TempDir(), Where: "test"}
	src, _ := resumable(t)
	id := cutShort(t, b, opt, src)
	corrupt(t, b, partKey("r", id, 1, 0, ""), func(d []byte) []byte { d = slices.Clone(d); d[len(d)-1] ^= 1; return d })
	m, err := New(b, opt).Push(ctx, src, "r")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(b, opt).Pull(ctx, "r", m.ID, filepath.Join(t.TempDir(), "out"))
	if !errors.As(err, new(damaged)) || !strings.Contains(err.Error(), "model.bin") {
		t.Errorf("pull: %v", err)
	}
}

func editJournal(t *testing.T, dir string, edit func(*journalState)) {
	t.Helper()
	js, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(js) != 1 {
		t.Fatalf("journals: %v", js)
	}
	data, err := os.ReadFile(js[0])
	if err != nil {
		t.Fatal(err)
	}
	var st journalState
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	edit(&st)
	data, _ = json.Marshal(&st)
	if err := os.WriteFile(js[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Two pushes of one path at once never adopt one checkpoint: the second
// finds the journal locked and begins its own.
func TestOnePushPerJournal(t *testing.T) {
	s := New(mustOpen(t, t.TempDir()), Options{Journal: t.TempDir(), Where: "test"})
	src, _ := resumable(t)
	j1 := s.openJournal("r", src)
	if j1 == nil {
		t.Fatal("the journal could not be taken: pushes would not resume here")
	}
	if j2 := s.openJournal("r", src); j2 != nil {
		t.Fatal("a second push took the journal of a push still running")
	}
	if j := s.openJournal("other", src); j == nil {
		t.Error("a push of another run waits on this one's journal")
	} else {
		j.close(true)
	}
	j1.close(true)
	if j3 := s.openJournal("r", src); j3 == nil {
		t.Error("the journal stays locked after its push ended")
	} else {
		j3.close(false)
	}
	if st, err := os.Stat(s.opt.Journal); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("journal directory: %v %v", st.Mode(), err)
	}
}

// A checkpoint committed since the push cut short: adopting the old id
// would date the resumed checkpoint before it, so that neither run nor
// prune took it for the newest. It begins anew instead.
func TestResumeNotAdoptedPastANewerCheckpoint(t *testing.T) {
	ctx := context.Background()
	b := mustOpen(t, t.TempDir())
	opt := Options{Host: "gpu-1", Segment: 1 << 20, Journal: t.TempDir(), Where: "test"}
	src, _ := resumable(t)
	old := cutShort(t, b, opt, src)
	other := filepath.Join(t.TempDir(), "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "x"), []byte("x"), 0o644)
	if _, err := New(b, opt).Push(ctx, other, "r"); err != nil {
		t.Fatal(err)
	}
	m, err := New(b, opt).Push(ctx, src, "r")
	if err != nil || m.ID == old || m.Resumed != 0 {
		t.Fatalf("push: %v resumed %d (%v)", m.ID, m.Resumed, err)
	}
	if latest, _, err := New(b, opt).Latest(ctx, "r"); err != nil || latest.ID != m.ID {
		t.Errorf("latest is not the checkpoint just pushed: %v", err)
	}
}

// A journal that says what is not so (an entry of null, one part's key
// for another's, a FIFO in its place) costs the resumption, never the
// push, and never commits a part as another.
func TestJournalThatLies(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"a null file", func(t *testing.T, dir string) {
			editJournal(t, dir, func(st *journalState) { st.Files["model.bin"] = nil })
		}},
		{"parts' keys swapped", func(t *testing.T, dir string) {
			editJournal(t, dir, func(st *journalState) {
				p := st.Files["model.bin"].Parts
				p[0].Key, p[1].Key = p[1].Key, p[0].Key
				p[0].Stored, p[1].Stored = p[1].Stored, p[0].Stored
				p[0].ETag, p[1].ETag = p[1].ETag, p[0].ETag
			})
		}},
		{"a FIFO", func(t *testing.T, dir string) {
			js, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			os.Remove(js[0])
			if err := mkfifo(js[0]); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			b := mustOpen(t, t.TempDir())
			opt := Options{Host: "gpu-1", Segment: 1 << 20, Journal: t.TempDir(), Where: "test"}
			src, _ := resumable(t)
			cutShort(t, b, opt, src)
			c.spoil(t, opt.Journal)
			m, err := New(b, opt).Push(ctx, src, "r")
			if err != nil || m.Resumed != 0 {
				t.Fatalf("push: resumed %v, %v", m, err)
			}
			restoresAs(t, New(b, opt), m.ID, src)
		})
	}
}

// losing deletes a data object of the checkpoint it commits right after
// the commit, as a clean-up that judged the adopted checkpoint dead before
// it was announced again would.
type losing struct {
	Backend
	victim string
}

func (l *losing) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	n, err := l.Backend.Put(ctx, key, fill)
	if err == nil && strings.Contains(key, "/manifests/") && l.victim != "" {
		l.Backend.Delete(ctx, l.victim)
	}
	return n, err
}

// A resumed checkpoint whose adopted part goes once it is committed is
// withdrawn, not left committed without it.
func TestAdoptedCheckpointWithdrawnWhenAPartGoes(t *testing.T) {
	ctx := context.Background()
	b := mustOpen(t, t.TempDir())
	opt := Options{Host: "gpu-1", Segment: 1 << 20, Journal: t.TempDir(), Where: "test"}
	src, _ := resumable(t)
	id := cutShort(t, b, opt, src)
	l := &losing{Backend: b, victim: partKey("r", id, 1, 0, "")}
	_, err := New(l, opt).Push(ctx, src, "r")
	if err == nil || !strings.Contains(err.Error(), "deleted during its upload") {
		t.Fatalf("push: %v", err)
	}
	if ms, err := New(b, opt).List(ctx, "r"); err != nil || len(ms) != 0 {
		t.Errorf("committed: %d, %v", len(ms), err)
	}
}

// A push of many small files cut short keeps the files it stored (issue
// #58: only files over a segment resumed, and a killed push of a
// checkpoint of small shards sent every one again): the same push again
// uploads only those it had not stored, and those changed or gone since.
func TestResumeAdoptsSmallFiles(t *testing.T) {
	for name, open := range fileAndS3(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			opt := Options{Crypto: cr, Host: "gpu-1", Journal: t.TempDir(), Where: "test", Workers: 1}
			src := filepath.Join(t.TempDir(), "ckpt")
			const n, size = 40, 64 << 10
			for i := range n {
				d := make([]byte, size)
				rand.Read(d)
				writeFile(t, filepath.Join(src, fmt.Sprintf("shard-%02d.pt", i)), string(d))
			}
			f := &failing{Backend: b}
			f.left.Store(25)
			if _, err := New(f, opt).Push(ctx, src, "r"); !errors.Is(err, errKilled) || !strings.Contains(err.Error(), "is kept: the same push again goes on from there") {
				t.Fatalf("push: %v", err)
			}
			// Since then: one stored shard rewritten (same size, time set
			// back), one stored shard's object deleted.
			objs, _ := b.List(ctx, "runs/r/data/")
			if len(objs) != 25 {
				t.Fatalf("the push cut short stored %d objects, want 25", len(objs))
			}
			changed := filepath.Join(src, "shard-00.pt")
			st, _ := os.Stat(changed)
			d := make([]byte, size)
			rand.Read(d)
			os.WriteFile(changed, d, 0o644)
			os.Chtimes(changed, st.ModTime(), st.ModTime())
			if err := b.Delete(ctx, objs[1].Key); err != nil {
				t.Fatal(err)
			}
			p := &puts{Backend: b}
			m, err := New(p, opt).Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if want := n - 25 + 2; len(p.keys) != want {
				t.Errorf("uploaded %d files, want %d (15 never stored, one changed, one gone)", len(p.keys), want)
			}
			if m.Resumed != 23*size {
				t.Errorf("resumed %d bytes, want 23 shards (%d)", m.Resumed, 23*size)
			}
			restoresAs(t, New(b, opt), m.ID, src)
			if objs, _ := b.List(ctx, "runs/r/data/"); len(objs) != len(m.Objects) {
				t.Errorf("%d objects in the store, the checkpoint names %d", len(objs), len(m.Objects))
			}
		})
	}
}

// reannouncing writes, at its third listing of the heartbeats (a
// clean-up's: judge lists them twice, then the deletes once more), the
// heartbeat of id: a resumed push announcing the unfinished checkpoint
// it takes up just after the clean-up judged it dead.
type reannouncing struct {
	Backend
	id    string
	lists atomic.Int64
}

func (r *reannouncing) List(ctx context.Context, prefix string) ([]Object, error) {
	if prefix == "runs/r/uploads/" && r.lists.Add(1) == 3 {
		r.Put(ctx, heartbeatKey("r", r.id), func(w io.Writer) error { _, err := w.Write([]byte("{}")); return err })
	}
	return r.Backend.List(ctx, prefix)
}

// A clean-up that judged an unfinished checkpoint dead spares it when its
// push announces it again before the deletes (helper-22's finding on
// small-file resume: a clean-up deleting 100,000 small objects one by one
// ran on for minutes after the resumed push's last check), and deletes
// it when nothing did.
func TestCleanupSparesAReannouncedCheckpoint(t *testing.T) {
	b := fileAndS3(t)["file"](t)
	ctx := context.Background()
	cr, _ := newCrypto(t)
	src := tree(t)
	killedPush(t, b, cr, src, "r", 5)
	objs, _ := b.List(ctx, "runs/r/data/")
	if len(objs) != 5 {
		t.Fatalf("%d leftovers, want 5", len(objs))
	}
	id, _, _ := strings.Cut(strings.TrimPrefix(objs[0].Key, "runs/r/data/"), "/")
	time.Sleep(5 * time.Millisecond) // older than the grace below
	r := &reannouncing{Backend: b, id: id}
	p, err := New(r, Options{Crypto: cr, Grace: time.Millisecond}).Prune(ctx, "r", 10)
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := b.List(ctx, "runs/r/data/"); p.Leftovers != 0 || len(left) != 5 {
		t.Errorf("deleted %d leftovers of a checkpoint announced again, %d objects left of 5", p.Leftovers, len(left))
	}
	b.Delete(ctx, heartbeatKey("r", id))
	if p, err := New(b, Options{Crypto: cr, Grace: time.Millisecond}).Prune(ctx, "r", 10); err != nil || p.Leftovers != 5 {
		t.Errorf("the dead checkpoint: %d leftovers deleted, %v", p.Leftovers, err)
	}
}

// A push that encrypts otherwise than the push cut short (to other
// recipients, or at all) takes up none of its objects (helper-22: the
// resumed checkpoint named objects its readers could not open, or
// plaintext under a manifest that said encrypted), and what it commits
// restores.
func TestResumeOnlyUnderTheSameEncryption(t *testing.T) {
	ctx := context.Background()
	a, _ := newCrypto(t)
	bb, _ := newCrypto(t)
	for name, c := range map[string][2]*Crypto{"other recipients": {a, bb}, "encrypted now": {nil, bb}, "not encrypted now": {a, nil}} {
		t.Run(name, func(t *testing.T) {
			b := fileAndS3(t)["file"](t)
			opt := Options{Crypto: c[0], Host: "gpu-1", Journal: t.TempDir(), Where: "test", Workers: 1}
			src := filepath.Join(t.TempDir(), "ckpt")
			for i := range 6 {
				writeFile(t, filepath.Join(src, fmt.Sprintf("shard-%d", i)), strings.Repeat("x", 1000+i))
			}
			f := &failing{Backend: b}
			f.left.Store(3)
			if _, err := New(f, opt).Push(ctx, src, "r"); !errors.Is(err, errKilled) {
				t.Fatalf("push: %v", err)
			}
			opt.Crypto = c[1]
			m, err := New(b, opt).Push(ctx, src, "r")
			if err != nil {
				t.Fatal(err)
			}
			if m.Resumed != 0 {
				t.Errorf("took up %d bytes stored under another encryption", m.Resumed)
			}
			restoresAs(t, New(b, opt), m.ID, src)
		})
	}
}

// adoptWhole reads the file the walk found, and only that: a FIFO or a
// link planted at its path since (the walk may be hours before its turn)
// is neither waited on nor followed (helper-22: the push hung on a FIFO,
// and read /dev/zero forever through a link).
func TestAdoptWholeReadsOnlyTheFileWalked(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "shard")
	writeFile(t, p, "0123456789")
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	part := journalPart{Key: "runs/r/data/x/000000", Stored: 100, Size: 10, Prefix: strings.Repeat("0", 64)}
	jr := &journal{listed: map[string]int64{part.Key: 100}}
	jf := &journalFile{Parts: []journalPart{part}}
	s := New(fileAndS3(t)["file"](t), Options{})
	for name, plant := range map[string]func() error{
		"a FIFO":             func() error { return syscall.Mkfifo(p, 0o600) },
		"a link to a device": func() error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(p)
			if err := plant(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan bool, 1)
			go func() { _, ok := s.adoptWhole(ctx, jr, jf, p, info); done <- ok }()
			select {
			case ok := <-done:
				if ok {
					t.Error("adopted")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("adoptWhole still reading after 5 s")
			}
		})
	}
}
