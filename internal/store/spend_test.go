package store

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// A session's spend record is replaced as it spends; each session has
// its own; checkpoints, prune and the run listing leave them alone.
func TestSpendRecords(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := open(t)
			cr, _ := newCrypto(t)
			s := New(b, Options{Crypto: cr, Grace: -1})
			if got, err := s.Spends(ctx, "llama"); err != nil || len(got) != 0 {
				t.Fatalf("no records: %v, %v", got, err)
			}
			one, two := NewID(time.Now()), NewID(time.Now().Add(time.Hour))
			for _, rec := range []string{`{"spent":1}`, `{"spent":2.5}`} {
				if err := s.PutSpend(ctx, "llama", one, []byte(rec)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.PutSpend(ctx, "llama", two, []byte(`{"spent":7}`)); err != nil {
				t.Fatal(err)
			}
			if err := s.PutSpend(ctx, "other", two, []byte(`{"spent":100}`)); err != nil {
				t.Fatal(err)
			}
			got, err := s.Spends(ctx, "llama")
			if err != nil || len(got) != 2 || string(got["runs/llama/spend/"+one+".json"]) != `{"spent":2.5}` || string(got["runs/llama/spend/"+two+".json"]) != `{"spent":7}` {
				t.Fatalf("records %q, %v", got, err)
			}
			// Plaintext: a machine with only the public key reads them.
			if got, err := New(b, Options{}).Spends(ctx, "llama"); err != nil || len(got) != 2 {
				t.Errorf("read without an identity: %d records, %v", len(got), err)
			}
			for _, bad := range []struct{ run, session string }{{"../x", one}, {"llama", "../../x"}, {"llama", "latest"}} {
				if err := s.PutSpend(ctx, bad.run, bad.session, []byte("{}")); err == nil {
					t.Errorf("run %q session %q taken", bad.run, bad.session)
				}
			}
			if err := s.PutSpend(ctx, "llama", NewID(time.Now()), make([]byte, maxSpend+1)); err == nil {
				t.Error("a record over maxSpend was taken")
			}

			// Not a checkpoint; kept through pushes and a prune.
			if _, err := s.Find(ctx, "llama", "latest"); !errors.Is(err, ErrNoCheckpoint) {
				t.Errorf("Find: %v", err)
			}
			for range 2 {
				if _, err := s.Push(ctx, tree(t), "llama"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Prune(ctx, "llama", 1); err != nil {
				t.Fatal(err)
			}
			if got, err := s.Spends(ctx, "llama"); err != nil || len(got) != 2 {
				t.Errorf("after a prune: %d records, %v", len(got), err)
			}
			// Listed with what the listing says of them: a run whose
			// machine died before its first checkpoint still cost money.
			if rs, err := s.Runs(ctx); err != nil || len(rs) != 2 || rs[0].Run != "llama" || rs[0].Checkpoints != 1 || rs[0].SpendSessions != 2 ||
				rs[1].Run != "other" || rs[1].Checkpoints != 0 || rs[1].SpendSessions != 1 {
				t.Errorf("runs %+v %v", rs, err)
			}
			// One written by something else, too large to be a record.
			if _, err := b.Put(ctx, "runs/llama/spend/"+NewID(time.Now())+".json", func(w io.Writer) error {
				_, err := w.Write(make([]byte, maxSpend+1))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Spends(ctx, "llama"); err == nil || !strings.Contains(err.Error(), "not one gpurent wrote") {
				t.Errorf("an oversized record: %v", err)
			}
		})
	}
}
