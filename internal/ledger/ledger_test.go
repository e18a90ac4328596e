package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func id(n int) string {
	return t0.Add(time.Duration(n)*time.Hour).Format("20060102T150405.000Z") + "-0000000" + string(rune('0'+n))
}

func TestSessionsAddUp(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, "llama", "USD", id(1), "gpu-1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if b := l.Before(); b.Spent != 0 || b.Sessions != 0 || !b.Since.Equal(t0) {
		t.Fatalf("a new ledger holds %+v", b)
	}
	// One session records as it goes: its latest cost, not their sum.
	var rec []byte
	for _, c := range []float64{1.5, 4, 12.25} {
		if rec, err = l.Record(c, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(string(rec), `"spent": 12.25`) || strings.Count(string(rec), `"id"`) != 1 {
		t.Errorf("the store's record holds\n%s", rec)
	}
	l2, err := Open(dir, "llama", "USD", id(2), "gpu-1", t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if b := l2.Before(); b.Spent != 12.25 || b.Sessions != 1 || !b.Since.Equal(t0) || b.Elsewhere != 0 {
		t.Fatalf("the second session found %+v, want 12.25 spent by 1 session since %v", b, t0)
	}
	if _, err := l2.Record(2.75, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A clock gone back never takes a cost back.
	if _, err := l2.Record(1, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	l3, err := Open(dir, "llama", "USD", id(3), "gpu-1", t0.Add(4*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if b := l3.Before(); b.Spent != 15 || b.Sessions != 2 {
		t.Fatalf("the third session found %+v, want 15 spent by 2 sessions", b)
	}
	if st, err := os.Stat(filepath.Join(dir, File)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("ledger file: %v, %v", st, err)
	}
}

// The store's records bring the sessions of other machines; a session
// known from both counts once, with the larger amount.
func TestMerge(t *testing.T) {
	here := t.TempDir()
	l, _ := Open(here, "llama", "USD", id(2), "gpu-2", t0.Add(2*time.Hour))
	mine, err := l.Record(10, t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// Elsewhere: a first session on another machine, gone with it.
	other, _ := Open(t.TempDir(), "llama", "USD", id(1), "gpu-1", t0)
	theirs, _ := other.Record(30, t0.Add(time.Hour))

	// A new session here, after the store got a later record of session 2
	// than the file (or the other way round): the larger counts.
	l3, _ := Open(here, "llama", "USD", id(3), "gpu-2", t0.Add(4*time.Hour))
	stale := strings.Replace(string(mine), `"spent": 10`, `"spent": 9`, 1)
	later := strings.Replace(string(mine), `"spent": 10`, `"spent": 11`, 1)
	for _, recs := range []map[string][]byte{{"s/1": theirs, "s/2": []byte(stale)}, {"s/2": []byte(later)}} {
		if err := l3.Merge(recs, "delete them"); err != nil {
			t.Fatal(err)
		}
	}
	if b := l3.Before(); b.Spent != 41 || b.Sessions != 2 || b.Elsewhere != 1 || !b.Since.Equal(t0) {
		t.Fatalf("merged %+v, want 41 spent by 2 sessions, 1 elsewhere, since %v", b, t0)
	}
	// Its own record, read back from the store, is not an earlier session.
	own, _ := l3.Record(1, t0.Add(5*time.Hour))
	if err := l3.Merge(map[string][]byte{"s/3": own}, "delete them"); err != nil || l3.Before().Spent != 41 {
		t.Errorf("own record merged: %v, %v", l3.Before(), err)
	}
	// The file now knows the other machine's session too.
	l4, _ := Open(here, "llama", "USD", id(4), "gpu-2", t0.Add(6*time.Hour))
	if b := l4.Before(); b.Spent != 42 || b.Sessions != 3 {
		t.Errorf("after the merge the file holds %+v, want 42 by 3 sessions", b)
	}
	// Another run's record, or one in another currency, is refused.
	cny, _ := Open(t.TempDir(), "llama", "CNY", id(5), "gpu-5", t0)
	rec, _ := cny.Record(100, t0)
	if err := l4.Merge(map[string][]byte{"runs/llama/spend/5.json": rec}, "delete runs/llama/spend/"); err == nil ||
		!strings.Contains(err.Error(), "runs/llama/spend/5.json counts run llama's cost in CNY (100.00 CNY so far)") || !strings.Contains(err.Error(), "delete runs/llama/spend/ to count") {
		t.Errorf("a record in CNY: %v", err)
	}
	x, _ := Open(t.TempDir(), "x", "USD", id(6), "gpu-6", t0)
	rec, _ = x.Record(100, t0)
	if err := l4.Merge(map[string][]byte{"k": rec}, ""); err == nil || !strings.Contains(err.Error(), "run x's, not llama's") {
		t.Errorf("another run's record: %v", err)
	}
}

// The directory reused by another run: that run's ledger is not this
// one's, as its state is not.
func TestAnotherRun(t *testing.T) {
	dir := t.TempDir()
	l, _ := Open(dir, "a", "USD", id(1), "h", t0)
	if _, err := l.Record(10, t0); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(dir, "b", "CNY", id(2), "h", t0)
	if err != nil || l2.Before().Spent != 0 || l2.Before().Sessions != 0 {
		t.Fatalf("run b found %+v, %v", l2.Before(), err)
	}
}

// What cannot be counted is refused, and the file is left as it was.
func TestRefused(t *testing.T) {
	for _, c := range []struct{ name, file, want string }{
		{"currency", `{"version":1,"run":"r","currency":"CNY","sessions":[{"id":"a","spent":200},{"id":"b","spent":100}]}`, "counts run r's cost in CNY (300.00 CNY so far), and --price is in USD"},
		{"garbage", `{"version":1,"run":"r","sessions":[`, "is damaged"},
		{"negative", `{"version":1,"run":"r","currency":"USD","sessions":[{"id":"a","spent":-5}]}`, `is damaged (session "a": not an amount spent)`},
		{"no id", `{"version":1,"run":"r","currency":"USD","sessions":[{"spent":5}]}`, "is damaged"},
		{"not ours", `{"hello":"world"}`, "is damaged (not a ledger gpurent wrote)"},
		{"newer", `{"version":2,"run":"r","currency":"USD"}`, "newer gpurent (version 2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, File)
			if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir, "r", "USD", id(1), "h", t0)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove the file to count") {
				t.Fatalf("error %v, want one naming %s and saying %q", err, path, c.want)
			}
			if b, _ := os.ReadFile(path); string(b) != c.file {
				t.Errorf("the file was changed to %s", b)
			}
		})
	}
}

// What a run cost, from its records: each session once, by currency.
func TestCosts(t *testing.T) {
	rec := func(n int, currency string, spent float64) []byte {
		l, _ := Open(t.TempDir(), "llama", currency, id(n), "h", t0)
		b, _ := l.Record(spent, t0)
		return b
	}
	got, err := Costs(map[string][]byte{"a": rec(1, "USD", 10), "b": rec(2, "USD", 2.5), "c": rec(3, "CNY", 70), "d": rec(1, "USD", 9)}, "llama")
	if err != nil || len(got) != 2 || got["USD"] != 12.5 || got["CNY"] != 70 {
		t.Errorf("costs %v, %v; want 12.5 USD and 70 CNY", got, err)
	}
	if got, err := Costs(nil, "llama"); err != nil || len(got) != 0 {
		t.Errorf("no records: %v, %v", got, err)
	}
	if _, err := Costs(map[string][]byte{"runs/llama/spend/x.json": []byte("{")}, "llama"); err == nil || !strings.Contains(err.Error(), "runs/llama/spend/x.json is damaged") {
		t.Errorf("a damaged record: %v", err)
	}
	if _, err := Costs(map[string][]byte{"k": rec(1, "USD", 1)}, "other"); err == nil || !strings.Contains(err.Error(), "run llama's, not other's") {
		t.Errorf("another run's record: %v", err)
	}
}
