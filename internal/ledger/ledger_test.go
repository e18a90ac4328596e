package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func TestSessionsAddUp(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, "llama", "USD", t0)
	if err != nil {
		t.Fatal(err)
	}
	if b := l.Before(); b.Spent != 0 || b.Sessions != 0 || !b.Since.Equal(t0) {
		t.Fatalf("a new ledger holds %+v", b)
	}
	// One session records as it goes: its latest cost, not their sum.
	for _, c := range []float64{1.5, 4, 12.25} {
		if err := l.Record(c, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	l2, err := Open(dir, "llama", "USD", t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if b := l2.Before(); b.Spent != 12.25 || b.Sessions != 1 || !b.Since.Equal(t0) {
		t.Fatalf("the second session found %+v, want 12.25 spent by 1 session since %v", b, t0)
	}
	if err := l2.Record(2.75, t0.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	l3, err := Open(dir, "llama", "USD", t0.Add(4*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if b := l3.Before(); b.Spent != 15 || b.Sessions != 2 || !b.Updated.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("the third session found %+v, want 15 spent by 2 sessions", b)
	}
	// A clock gone back or a rounding never takes a cost back.
	if err := l3.Record(-1, t0.Add(5*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if l4, _ := Open(dir, "llama", "USD", t0); l4.Before().Spent != 15 {
		t.Errorf("a negative cost changed the total to %v", l4.Before().Spent)
	}
	if st, err := os.Stat(filepath.Join(dir, File)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("ledger file: %v, %v", st, err)
	}
}

// The directory reused by another run: that run's ledger is not this
// one's, as its state is not.
func TestAnotherRun(t *testing.T) {
	dir := t.TempDir()
	l, _ := Open(dir, "a", "USD", t0)
	if err := l.Record(10, t0); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(dir, "b", "USD", t0)
	if err != nil || l2.Before().Spent != 0 || l2.Before().Run != "b" {
		t.Fatalf("run b found %+v, %v", l2.Before(), err)
	}
}

// What cannot be counted is refused, and the file is left as it was.
func TestRefused(t *testing.T) {
	for _, c := range []struct{ name, file, currency, want string }{
		{"currency", `{"version":1,"run":"r","currency":"CNY","spent":300,"sessions":2}`, "USD", "counts run r's cost in CNY (300.00 CNY so far), and --price is in USD"},
		{"garbage", `{"version":1,"run":"r","spent":`, "USD", "is damaged"},
		{"negative", `{"version":1,"run":"r","currency":"USD","spent":-5}`, "USD", "is damaged"},
		{"not ours", `{"hello":"world"}`, "USD", "is damaged (not a ledger gpurent wrote)"},
		{"newer", `{"version":2,"run":"r","currency":"USD","spent":5}`, "USD", "newer gpurent (version 2)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, File)
			if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir, "r", c.currency, t0)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, path, c.want)
			}
			if b, _ := os.ReadFile(path); string(b) != c.file {
				t.Errorf("the file was changed to %s", b)
			}
		})
	}
}
