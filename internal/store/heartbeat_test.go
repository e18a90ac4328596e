package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// holding stores a push's data objects until the one at index hold, whose
// Put waits until release is closed: a push on a slow link, in the middle
// of its upload. reached is closed when the push gets there.
type holding struct {
	Backend
	hold    string // key suffix of the object held: "/000003"
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHolding(b Backend, hold int) *holding {
	return &holding{Backend: b, hold: fmt.Sprintf("/%06d", hold), reached: make(chan struct{}), release: make(chan struct{})}
}

func (h *holding) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if strings.Contains(key, "/data/") && strings.HasSuffix(key, h.hold) {
		h.once.Do(func() { close(h.reached) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return h.Backend.Put(ctx, key, fill)
}

// fourFiles is a checkpoint of four files, f1 to f4 (objects 0 to 3).
func fourFiles(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	for i := 1; i <= 4; i++ {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%d", i)), bytes.Repeat([]byte{byte(i)}, 1000*i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// slowPush starts a push of src to run "r" through h and returns once it
// has stored three of its four objects and waits on the fourth; the
// channel gives its result once h is released.
func slowPush(t *testing.T, s *Store, h *holding, src string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := s.Push(context.Background(), src, "r")
		done <- err
	}()
	select {
	case <-h.reached:
	case err := <-done:
		t.Fatalf("the push ended before its last object: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the push never reached its last object")
	}
	return done
}

// A push that runs longer than the grace period, or was begun on a
// machine whose clock is behind the one that cleans up, keeps its objects:
// a prune elsewhere leaves them alone while the push's heartbeat is fresh,
// and the checkpoint the push commits is whole. Before heartbeats, the
// prune judged the upload by the time in its id and deleted f1..f3 under
// it; the push then committed a checkpoint whose objects were missing,
// which only verify --deep noticed.
func TestLongPushKeepsItsObjects(t *testing.T) {
	for name, open := range fileAndS3(t) {
		for _, tc := range []struct {
			name string
			// cleaner is the store of the machine that prunes.
			cleaner func(b Backend) *Store
			// wait is how long the push has run when the prune starts.
			wait time.Duration
		}{
			{"clock ahead", func(b Backend) *Store {
				return New(b, Options{Now: func() time.Time { return time.Now().Add(time.Hour) }})
			}, 0},
			// Stores that stamp whole seconds (S3) make a heartbeat look
			// up to a second older than it is: 3 s of grace, 100 ms beats.
			{"longer than grace", func(b Backend) *Store { return New(b, Options{Grace: 3 * time.Second}) }, 4500 * time.Millisecond},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				b := open(t)
				cr, _ := newCrypto(t)
				h := newHolding(b, 3)
				s := New(h, Options{Crypto: cr, Workers: 1})
				s.beat = 100 * time.Millisecond
				done := slowPush(t, s, h, fourFiles(t))
				time.Sleep(tc.wait)
				r, err := tc.cleaner(b).Prune(ctx, "r", 10)
				if err != nil {
					t.Fatal(err)
				}
				if r.Leftovers != 0 {
					t.Errorf("the prune deleted %d objects of the push still running", r.Leftovers)
				}
				close(h.release)
				if err := <-done; err != nil {
					t.Fatalf("push: %v", err)
				}
				ms, probs, err := New(b, Options{Crypto: cr}).Verify(ctx, "r", "", true)
				if err != nil || len(ms) != 1 || len(probs) != 0 {
					t.Errorf("verify --deep: %d checkpoints, problems %v, %v", len(ms), probs, err)
				}
				if left, _ := b.List(ctx, "runs/r/uploads/"); len(left) != 0 {
					t.Errorf("the push left %v behind", left)
				}
			})
		}
	}
}

// A push whose objects were deleted while it ran (by a prune with no
// grace, or a gpurent from before heartbeats) finds out before it commits
// and commits nothing: before, it wrote its manifest and exited 0.
func TestPushFindsItsObjectsDeleted(t *testing.T) {
	for name, open := range fileAndS3(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			h := newHolding(b, 3)
			done := slowPush(t, New(h, Options{Crypto: cr, Workers: 1}), h, fourFiles(t))
			r, err := New(b, Options{Grace: -1}).Prune(ctx, "r", 10)
			if err != nil || r.Leftovers < 3 {
				t.Fatalf("the prune with no grace deleted %+v, %v; want the push's 3 objects", r, err)
			}
			close(h.release)
			err = <-done
			if err == nil || !strings.Contains(err.Error(), "objects of this checkpoint were deleted during its upload (a clean-up on another machine?): not committed") {
				t.Errorf("push: %v", err)
			}
			if ms, err := New(b, Options{}).List(ctx, "r"); err != nil || len(ms) != 0 {
				t.Errorf("committed %d checkpoints, %v", len(ms), err)
			}
		})
	}
}

// The clean-up judges a heartbeat by the store's clock: a dead push's
// heartbeat that went quiet goes with its data, whatever the time in its
// id says (here, a machine whose clock was an hour ahead); an upload
// without a heartbeat (an older gpurent) is judged by its id's time, as
// before. The file store's clock is its files' modification times.
func TestStaleHeartbeatCleanedUp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, _, err := Open(ctx, dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	put := func(key string, age time.Duration) {
		t.Helper()
		if _, err := b.Put(ctx, key, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(key)), at, at); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	dead := newID(now.Add(time.Hour)) // begun on a clock an hour ahead, quiet for 20 minutes
	put(heartbeatKey("r", dead), 20*time.Minute)
	put("runs/r/data/"+dead+"/000000", 20*time.Minute)
	live := newID(now.Add(-time.Hour)) // begun an hour ago by this clock, beating still
	put(heartbeatKey("r", live), time.Second)
	put("runs/r/data/"+live+"/000000", 30*time.Minute)
	oldYoung := newID(now.Add(-time.Minute)) // no heartbeat: by its id
	put("runs/r/data/"+oldYoung+"/000000", time.Hour)
	oldOld := newID(now.Add(-time.Hour))
	put("runs/r/data/"+oldOld+"/000000", 0)
	put("runs/r/uploads/"+probePrefix+"0123456789abcdef", time.Hour) // a probe whose push was killed

	p, err := New(b, Options{}).PlanPrune(ctx, "r", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{heartbeatKey("r", dead), "runs/r/data/" + dead + "/000000", "runs/r/data/" + oldOld + "/000000", "runs/r/uploads/" + probePrefix + "0123456789abcdef"}
	got := append([]string(nil), p.Leftovers...)
	if !sameSet(got, want) {
		t.Errorf("leftovers %v, want %v", got, want)
	}
	if left, _ := b.List(ctx, "runs/r/uploads/"+probePrefix); len(left) != 1 {
		t.Errorf("the clock's probe stayed: %v", left)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[string]int{}
	for _, k := range a {
		in[k]++
	}
	for _, k := range b {
		in[k]--
	}
	for _, n := range in {
		if n != 0 {
			return false
		}
	}
	return true
}

// On S3 a file longer to send than the grace period is a multipart upload
// begun more than the grace period ago: while its push's heartbeat is
// fresh the clean-up leaves it alone, rather than abort it under the push.
func TestLiveMultipartUploadKept(t *testing.T) {
	q := weedURL(t)
	if q == "" {
		t.Skip("needs SeaweedFS (bash scripts/test.sh builds it)")
	}
	ctx := context.Background()
	bucket := newBucket(t)
	b, _, err := Open(ctx, "s3://"+bucket+"/ckpt?"+q, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mp := s3Multipart(t, ctx, bucket, "ckpt", q)
	id := newID(time.Now())
	key := "runs/r/data/" + id + "/000000"
	up, err := mp.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(mp.bucket), Key: aws.String(mp.full(key))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mp.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(mp.bucket), Key: aws.String(mp.full(key)),
		UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, 5<<20))}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the upload is older than the grace
	s := New(b, Options{Grace: time.Second})
	hb, err := s.announce(ctx, "r", id, time.Now()) // and its push beats
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.PlanPrune(ctx, "r", 1)
	hb.stop()
	if err != nil || p.UploadsErr != nil || len(p.Uploads) != 0 {
		t.Errorf("plan %+v, %v: the live push's upload would be aborted", p, err)
	}
	// Once the push is gone (its heartbeat deleted), the upload is a
	// killed push's.
	if p, err := s.PlanPrune(ctx, "r", 1); err != nil || len(p.Uploads) != 1 {
		t.Errorf("plan %+v, %v: want the dead upload aborted", p, err)
	}
}

// gated holds the uploads of data objects after the first until open
// is closed: a push that is still running, its first object stored.
type gated struct {
	Backend
	open chan struct{}
}

func (g gated) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if strings.Contains(key, "/data/") && !strings.HasSuffix(key, "/000000") {
		<-g.open
	}
	return g.Backend.Put(ctx, key, fill)
}

// TestShortGraceKeepsALivePush: a clean-up whose --grace is shorter than
// the pushing machine's heartbeat interval (a prune with --grace 1m while
// the push, at the default grace, beats every 150 s) waits for three
// missed beats before it takes the push for dead.
func TestShortGraceKeepsALivePush(t *testing.T) {
	for name, open := range fileAndS3(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			src := filepath.Join(t.TempDir(), "ck")
			os.MkdirAll(src, 0o755)
			for i := range 3 {
				os.WriteFile(filepath.Join(src, fmt.Sprint("f", i)), []byte("weights"), 0o644)
			}
			g := gated{b, make(chan struct{})}
			pushed := make(chan error, 1)
			go func() {
				_, err := New(g, Options{Workers: 1}).Push(ctx, src, "r")
				pushed <- err
			}()
			for {
				if objs, _ := b.List(ctx, "runs/r/data/"); len(objs) > 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(2100 * time.Millisecond) // the heartbeat is over a second old, by any store's clock
			p, err := New(b, Options{Grace: 100 * time.Millisecond}).Prune(ctx, "r", 1)
			close(g.open)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-pushed; err != nil || p.Leftovers > 0 {
				t.Fatalf("a live push lost to a clean-up with a short grace: %v (the clean-up removed %d objects)", err, p.Leftovers)
			}
		})
	}
}

// midWrite holds the write of the object whose key ends in hold after
// its file is opened, before a byte of it is written.
type midWrite struct{ *holding }

func (h midWrite) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if !strings.Contains(key, "/data/") || !strings.HasSuffix(key, h.hold) {
		return h.Backend.Put(ctx, key, fill)
	}
	return h.Backend.Put(ctx, key, func(w io.Writer) error {
		h.once.Do(func() { close(h.reached) })
		<-h.release
		return fill(w)
	})
}

// A prune with no grace that deletes a push's objects while one of them
// is being written (its directory gone before the write's rename) ends
// the push as one whose objects were deleted, as documented, not with
// the raw rename error (issue #58: "prune --grace 0 during a push ends the
// push with a raw rename error and exit 2").
func TestPushObjectsDeletedMidWrite(t *testing.T) {
	ctx := context.Background()
	b, err := newLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := midWrite{newHolding(b, 2)}
	done := make(chan error, 1)
	go func() { _, err := New(h, Options{Workers: 1}).Push(ctx, fourFiles(t), "r"); done <- err }()
	select {
	case <-h.reached:
	case err := <-done:
		t.Fatalf("the push ended before its third object: %v", err)
	}
	if r, err := New(b, Options{Grace: -1}).Prune(ctx, "r", 10); err != nil || r.Leftovers < 2 {
		t.Fatalf("the prune with no grace deleted %+v, %v", r, err)
	}
	close(h.release)
	// Not a missing file of the user's, which gpurent exits 2 for.
	if err := <-done; !errors.Is(err, ErrObjectsDeleted) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("push: %v", err)
	}
}
