package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// A run's log, shipped in segments, reads back as one text, encrypted at
// rest, and only with the identity; checkpoints, prune and the run
// listing do not see it.
func TestLogRoundTrip(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			s := New(b, Options{Crypto: cr, Host: "gpu-7", Version: "test", Grace: -1})
			// The output began before its first shipment.
			began := time.Now().Add(-10 * time.Minute)
			w, err := s.NewLog(ctx, "llama", began)
			if err != nil {
				t.Fatal(err)
			}
			parts := []string{"epoch 1 loss 2.31\n", "epoch 2 loss 1.80\nTraceback (most recent call last):\n", "RuntimeError: CUDA error: an illegal memory access"}
			for _, p := range parts {
				if err := w.Append(ctx, []byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Append(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if err := w.Append(ctx, make([]byte, MaxSegment+1)); err == nil {
				t.Error("a segment over MaxSegment was taken")
			}
			// A second session: a new machine.
			w2, err := s.NewLog(ctx, "llama", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w2.Append(ctx, []byte("resumed\n")); err != nil {
				t.Fatal(err)
			}

			ls, err := s.LogSessions(ctx, "llama")
			if err != nil {
				t.Fatal(err)
			}
			if len(ls) != 2 || ls[0].Session != w.Session() || ls[1].Session != w2.Session() {
				t.Fatalf("sessions %+v", ls)
			}
			if ls[0].Segments != 3 || ls[0].Host != "gpu-7" || !ls[0].Encrypted || ls[0].StoredBytes == 0 ||
				ls[0].Updated.IsZero() || !ls[0].Started.Equal(began) || ls[0].Missing != 0 {
				t.Errorf("session %+v", ls[0])
			}
			var got bytes.Buffer
			for i := range ls[0].Segments {
				if err := s.ReadLogSegment(ctx, &ls[0], i, &got); err != nil {
					t.Fatal(err)
				}
			}
			if got.String() != strings.Join(parts, "") {
				t.Errorf("read %q", got.String())
			}
			if err := s.ReadLogSegment(ctx, &ls[0], 3, io.Discard); err == nil {
				t.Error("segment 4 of 3 read")
			}
			// Encrypted at rest: no line is in any object.
			objs, _ := b.List(ctx, "runs/llama/logs/")
			for _, o := range objs {
				r, err := b.Get(ctx, o.Key)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(r)
				r.Close()
				if bytes.Contains(data, []byte("CUDA error")) || bytes.Contains(data, []byte("epoch")) {
					t.Errorf("%s holds the log in plaintext", o.Key)
				}
			}
			// Another identity cannot read it; none at all neither.
			other, _ := newCrypto(t)
			s2 := New(b, Options{Crypto: other})
			ls2, _ := s2.LogSessions(ctx, "llama")
			if err := s2.ReadLogSegment(ctx, &ls2[0], 0, io.Discard); !errors.Is(err, ErrWrongIdentity) {
				t.Errorf("wrong identity: %v", err)
			}
			s3 := New(b, Options{})
			if err := s3.ReadLogSegment(ctx, &ls2[0], 0, io.Discard); !errors.Is(err, ErrNoIdentity) {
				t.Errorf("no identity: %v", err)
			}

			// The log is not a checkpoint, a leftover or a run with one.
			if _, err := s.Find(ctx, "llama", "latest"); !errors.Is(err, ErrNoCheckpoint) {
				t.Errorf("Find: %v", err)
			}
			// A run that died before its first checkpoint is listed by
			// its log.
			if rs, err := s.Runs(ctx); err != nil || len(rs) != 1 || rs[0].Run != "llama" || rs[0].Checkpoints != 0 ||
				rs[0].LogSessions != 2 || rs[0].Newest != "" || !rs[0].NewestCreated.IsZero() {
				t.Errorf("runs %+v %v", rs, err)
			}
			if _, err := s.Push(ctx, tree(t), "llama"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Push(ctx, tree(t), "llama"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Prune(ctx, "llama", 1); err != nil {
				t.Fatal(err)
			}
			if after, _ := b.List(ctx, "runs/llama/logs/"); len(after) != len(objs) {
				t.Errorf("prune touched the log: %d objects before, %d after", len(objs), len(after))
			}
		})
	}
}

// A segment whose Put failed late (stored, yet reported failed) is
// written again under its number with more bytes: the later one is read,
// so no line appears twice. A segment deleted by hand ends the readable
// log before it, and says so.
func TestLogRetriedAndMissingSegments(t *testing.T) {
	ctx := context.Background()
	b, _, err := Open(ctx, t.TempDir(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	s := New(b, Options{Now: func() time.Time { return now }})
	w, err := s.NewLog(ctx, "r", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, []byte("one\n")); err != nil {
		t.Fatal(err)
	}
	// Segment 2, stored, then (the Put reported failed) again a minute
	// later from the same byte with what came since.
	if err := w.Append(ctx, []byte("two\n")); err != nil {
		t.Fatal(err)
	}
	w.seq--
	now = now.Add(time.Minute)
	if err := w.Append(ctx, []byte("two\nthree\n")); err != nil {
		t.Fatal(err)
	}
	ls, err := s.LogSessions(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	for i := range ls[0].Segments {
		if err := s.ReadLogSegment(ctx, &ls[0], i, &got); err != nil {
			t.Fatal(err)
		}
	}
	if ls[0].Segments != 2 || got.String() != "one\ntwo\nthree\n" {
		t.Fatalf("%d segments, read %q", ls[0].Segments, got.String())
	}

	if err := w.Append(ctx, []byte("four\n")); err != nil {
		t.Fatal(err)
	}
	objs, _ := b.List(ctx, "runs/r/logs/"+w.Session()+"/000002-")
	for _, o := range objs {
		if err := b.Delete(ctx, o.Key); err != nil {
			t.Fatal(err)
		}
	}
	ls, err = s.LogSessions(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if ls[0].Segments != 1 || ls[0].Missing != 2 {
		t.Errorf("with segment 2 deleted: %d segments, missing %d", ls[0].Segments, ls[0].Missing)
	}
	if _, err := s.LogSessions(ctx, "../x"); err == nil {
		t.Error("a bad run name was taken")
	}
	if ls, err := s.LogSessions(ctx, "none"); err != nil || len(ls) != 0 {
		t.Errorf("run without a log: %v %v", ls, err)
	}
}

// A damaged segment is an error, and nothing of it reaches the output.
func TestLogDamagedSegment(t *testing.T) {
	ctx := context.Background()
	b, _, err := Open(ctx, t.TempDir(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cr, _ := newCrypto(t)
	s := New(b, Options{Crypto: cr})
	w, _ := s.NewLog(ctx, "r", time.Time{})
	if err := w.Append(ctx, bytes.Repeat([]byte("loss 1.0\n"), 10000)); err != nil {
		t.Fatal(err)
	}
	ls, _ := s.LogSessions(ctx, "r")
	corrupt(t, b, ls[0].keys[0], func(d []byte) []byte { d[len(d)-40] ^= 1; return d })
	var got bytes.Buffer
	if err := s.ReadLogSegment(ctx, &ls[0], 0, &got); err == nil || got.Len() != 0 {
		t.Errorf("damaged segment: err %v, %d bytes written", err, got.Len())
	}
}

// A session's info.json is read once per Store: `ckpt log --follow` lists
// the sessions every few seconds, and a run can have many.
func TestLogSessionsReadEachInfoOnce(t *testing.T) {
	ctx := context.Background()
	b := &countingGets{Backend: backends(t)["file"](t)}
	s := New(b, Options{})
	for range 4 {
		w, err := s.NewLog(ctx, "r", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(ctx, []byte("line\n")); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		ls, err := s.LogSessions(ctx, "r")
		if err != nil || len(ls) != 4 || ls[3].Segments != 1 {
			t.Fatalf("sessions %+v %v", ls, err)
		}
	}
	if n := b.gets.Load(); n != 4 {
		t.Errorf("three listings read %d objects, want the 4 info.json once each", n)
	}
}

// PruneLogs keeps the newest sessions of a run and deletes everything of
// the others, retried segments included; a dry run deletes nothing.
func TestPruneLogs(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			s := New(b, Options{})
			var ids []string
			for i := range 3 {
				w, err := s.NewLog(ctx, "r", time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				for j := range 2 {
					if err := w.Append(ctx, []byte(fmt.Sprintf("session %d line %d\n", i, j))); err != nil {
						t.Fatal(err)
					}
				}
				ids = append(ids, w.Session())
				time.Sleep(2 * time.Millisecond) // session ids are stamped to the millisecond
			}
			if gone, err := s.PruneLogs(ctx, "r", 1, true); err != nil || !slices.Equal(gone, ids[:2]) {
				t.Fatalf("dry run: %v %v, want %v", gone, err, ids[:2])
			}
			if ls, _ := s.LogSessions(ctx, "r"); len(ls) != 3 {
				t.Fatalf("a dry run deleted: %d sessions left", len(ls))
			}
			if gone, err := s.PruneLogs(ctx, "r", 1, false); err != nil || !slices.Equal(gone, ids[:2]) {
				t.Fatalf("prune: %v %v, want %v", gone, err, ids[:2])
			}
			objs, err := b.List(ctx, "runs/r/logs/")
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if !strings.HasPrefix(o.Key, "runs/r/logs/"+ids[2]+"/") {
					t.Errorf("left: %s", o.Key)
				}
			}
			if len(objs) != 3 { // info.json and two segments
				t.Errorf("the newest session has %d objects, want 3", len(objs))
			}
			if gone, err := s.PruneLogs(ctx, "r", 5, false); err != nil || len(gone) != 0 {
				t.Errorf("keep 5 of 1: %v %v", gone, err)
			}
		})
	}
}
