//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/ledger"
)

// With --price the end says what the machine cost while gpurent ran, and
// what that leaves out; a bad price is bad input.
func TestRunPrice(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--no-status", "--price", "18CNY", "--", "sleep", "1")
	if code != 0 || !strings.Contains(stderr, "gpurent: the machine cost about 0.0") ||
		!strings.Contains(stderr, " CNY while gpurent ran (") || !strings.Contains(stderr, "at 18 CNY/h; storage, egress and the provider's rounding are not in it") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--price", "2.49 dollars", "--", "true")
	if code != 2 || !strings.Contains(stderr, `--price: want the machine's hourly price such as 2.49, 2.49USD or 18CNY, got "2.49 dollars"`) {
		t.Errorf("bad price: exit %d\n%s", code, stderr)
	}
	// A word is an offer's id: one the catalog lacks is bad input too.
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--price", "cheap", "--", "true")
	if code != 2 || !strings.Contains(stderr, `--price: no offer has id "cheap"`) || !strings.Contains(stderr, "(or give the machine's hourly price, such as 2.49 or 18CNY)") {
		t.Errorf("no such offer: exit %d\n%s", code, stderr)
	}
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte("ckpt_dir: out\nprice: nope\ncommand: [true]\n"), 0o600)
	code, _, stderr = gpurent(t, "run", "--config", cfg, "--preemption", "none")
	if code != 2 || !strings.Contains(stderr, "run.yaml:2") || !strings.Contains(stderr, `no offer has id "nope"`) {
		t.Errorf("bad price in the config: exit %d\n%s", code, stderr)
	}
	// The offer's own price, and the end says whose it is.
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--no-status", "--price", "aws-p5.4xlarge", "--", "true")
	if code != 0 || !strings.Contains(stderr, "gpurent: the cost shown is at ") || !strings.Contains(stderr, "USD/h, aws-p5.4xlarge's on-demand price in the catalog (as of ") {
		t.Errorf("priced by an offer: exit %d\n%s", code, stderr)
	}
}

// --budget stops the command before the machine has cost it, at --price:
// at 3600 USD/h a budget of 3 USD lasts 3 s, the notification comes at
// 80% (2.4 s) and the stop at 2.7 s (a tenth of the time is left for the
// checkpoint asked for); the run exits 75. A budget without a price, in
// another currency or not a positive amount is bad input.
func TestRunBudget(t *testing.T) {
	dir := t.TempDir()
	began := time.Now()
	code, _, stderr := gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--no-status", "--price", "3600", "--budget", "3", "--", "sleep", "30")
	took := time.Since(began)
	for _, want := range []string{
		"gpurent: budget 3.00 USD: at 3600 USD/h it is spent in 3s (",
		"gpurent: the machine has cost 2.40 USD of the 3.00 USD budget: the command is stopped with a checkpoint in 0s\n",
		"gpurent: --budget 3.00 USD: the machine has cost 2.70 USD of it: asking the command for a checkpoint, then stopping it\n",
		"gpurent: --budget 3.00 USD: the machine has cost 2.70 USD of it: no complete checkpoint was written, command stopped; run the same gpurent run again to go on\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if code != exitcode.Stopped || took < 2700*time.Millisecond || took > 15*time.Second {
		t.Errorf("exit %d after %v, want 75 after 2.7 s\n%s", code, took, stderr)
	}

	cfg := filepath.Join(dir, "run.yaml")
	for _, tc := range []struct{ args, want string }{
		{"--budget 3", "--budget: needs --price: the budget is spent at the machine's hourly price"},
		{"--price 18CNY --budget 300USD", `--budget: "300USD" is in USD, and --price in CNY (18 CNY/h): give both in one currency`},
		{"--price 18CNY --budget -4", `--budget: want the most the machine may cost, such as 300 or 300CNY, got "-4"`},
		{"--price 2.49 --budget 0", `--budget: want the most the machine may cost, such as 300 or 300USD, got "0"`},
		{"--config " + cfg, "run.yaml:2"},
	} {
		os.WriteFile(cfg, []byte("price: 2.49\nbudget: lots\ncommand: [true]\n"), 0o600)
		args := append([]string{"run", "--ckpt-dir", dir, "--preemption", "none"}, strings.Fields(tc.args)...)
		code, _, stderr := gpurent(t, append(args, "--", "true")...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, want 2 with %q\n%s", tc.args, code, tc.want, stderr)
		}
	}
	// From the config file, a number as YAML writes it (in a directory of
	// its own: this one's ledger holds the stopped run's cost).
	os.WriteFile(cfg, []byte("price: 2.49\nbudget: 300\n"), 0o600)
	code, _, stderr = gpurent(t, "run", "--config", cfg, "--ckpt-dir", filepath.Join(dir, "fresh"), "--preemption", "none", "--no-status", "--", "true")
	if code != 0 || !strings.Contains(stderr, "gpurent: budget 300.00 USD: at 2.49 USD/h it is spent in 120h28m (") {
		t.Errorf("budget from the config file: exit %d\n%s", code, stderr)
	}
}

// The budget is the run's: a gpurent started again in the same checkpoint
// directory (systemd, a reboot, by hand) counts what the earlier sessions
// spent, and once it is spent does not start the command at all.
func TestRunBudgetAcrossSessions(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	run := func(extra ...string) (int, string) {
		args := append([]string{"run", "--ckpt-dir", ck, "--preemption", "none", "--no-status", "--price", "3600"}, extra...)
		code, _, stderr := gpurent(t, args...)
		return code, stderr
	}
	// 1: about 2 of 6 USD.
	if code, stderr := run("--budget", "6", "--", "sleep", "2"); code != 0 {
		t.Fatalf("first session: exit %d\n%s", code, stderr)
	}
	l, err := ledger.Open(ck, "default", "USD", "probe", "", time.Now())
	if err != nil || l.Before().Sessions != 1 || l.Before().Spent < 2 || l.Before().Spent > 4 {
		t.Fatalf("after the first session the ledger holds %+v, %v; want 1 session of 2 to 4 USD", l.Before(), err)
	}
	first := l.Before().Spent

	// 2: the rest, then stopped as the budget's end nears.
	began := time.Now()
	code, stderr := run("--budget", "6", "--", "sleep", "30")
	took := time.Since(began)
	for _, want := range []string{
		fmt.Sprintf("gpurent: budget 6.00 USD; run default has cost %.2f USD of it in 1 earlier session here since ", first),
		"gpurent: the machine has cost 4.80 USD of the 6.00 USD budget: the command is stopped with a checkpoint in ",
		"gpurent: --budget 6.00 USD: the machine has cost 5.40 USD of it: asking the command for a checkpoint",
		"of the 6.00 USD budget\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("second session: stderr lacks %q", want)
		}
	}
	if left := time.Duration((5.4 - first) * float64(time.Second)); code != exitcode.Stopped || took < left || took > left+10*time.Second {
		t.Errorf("second session: exit %d after %v, want 75 after about %v\n%s", code, took, left, stderr)
	}

	// Both sessions together stayed near the budget: the stop came at 5.40,
	// and the command's end and the last record take a moment more (not
	// the 7.40 and more of a second budget of 6 counted from zero).
	if l, err := ledger.Open(ck, "default", "USD", "probe", "", time.Now()); err != nil || l.Before().Sessions != 2 || l.Before().Spent < 5.4 || l.Before().Spent > 6.5 {
		t.Errorf("after the second session the ledger holds %+v, %v; want 2 sessions of 5.40 to 6.50 USD", l.Before(), err)
	}

	// 3: spent; the command never starts.
	marker := filepath.Join(dir, "started")
	code, stderr = run("--budget", "6", "--", "touch", marker)
	if code != exitcode.Stopped || !strings.Contains(stderr, "in 2 earlier sessions here since") || !strings.Contains(stderr, "the command is not started (exit 75)") {
		t.Errorf("third session: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the third session started the command with its budget spent")
	}
	// A larger budget is the run's new total.
	code, stderr = run("--budget", "60", "--", "touch", marker)
	if _, err := os.Stat(marker); code != 0 || err != nil || !strings.Contains(stderr, "in 2 earlier sessions here since") {
		t.Errorf("a larger budget: exit %d, marker %v\n%s", code, err, stderr)
	}

	// Another currency is refused, naming the ledger; nothing is changed.
	before, _ := os.ReadFile(filepath.Join(ck, ledger.File))
	code, _, stderr = gpurent(t, "run", "--ckpt-dir", ck, "--preemption", "none", "--price", "18CNY", "--budget", "100", "--", "touch", marker+"2")
	if code != 2 || !strings.Contains(stderr, "counts run default's cost in USD") || !strings.Contains(stderr, ledger.File) {
		t.Errorf("another currency: exit %d\n%s", code, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(ck, ledger.File)); string(after) != string(before) {
		t.Errorf("a refused run changed the ledger:\n%s\n%s", before, after)
	}
	// Another run in the directory has a budget of its own.
	code, stderr = run("--run", "other", "--budget", "6", "--", "true")
	if code != 0 || strings.Contains(stderr, "earlier session") {
		t.Errorf("another run: exit %d\n%s", code, stderr)
	}
}

// With a store, the budget follows the run to another machine: a fresh
// checkpoint directory counts what the run's sessions recorded there.
func TestRunBudgetFollowsTheRun(t *testing.T) {
	dir := t.TempDir()
	st := filepath.Join(dir, "store")
	run := func(machine string, extra ...string) (int, string) {
		args := append([]string{"run", "--ckpt-dir", filepath.Join(dir, machine), "--store", st, "--no-encrypt", "--allow-unauthenticated", "--preemption", "none", "--no-status", "--price", "3600", "--budget", "6"}, extra...)
		code, _, stderr := gpurent(t, args...)
		return code, stderr
	}
	if code, stderr := run("one", "--", "sleep", "2"); code != 0 {
		t.Fatalf("first machine: exit %d\n%s", code, stderr)
	}
	recs, _ := filepath.Glob(filepath.Join(st, "runs", "default", "spend", "*.json"))
	if len(recs) != 1 {
		t.Fatalf("the store holds %d spend records, want 1", len(recs))
	}
	code, stderr := run("two", "--", "sleep", "30")
	if code != exitcode.Stopped || !strings.Contains(stderr, "USD of it in 1 earlier session here since") ||
		!strings.Contains(stderr, "gpurent: --budget 6.00 USD: the machine has cost 5.40 USD of it: asking the command for a checkpoint") {
		t.Errorf("second machine: exit %d\n%s", code, stderr)
	}
	marker := filepath.Join(dir, "started")
	code, stderr = run("three", "--", "touch", marker)
	if _, err := os.Stat(marker); code != exitcode.Stopped || err == nil || !strings.Contains(stderr, "in 2 earlier sessions here since") ||
		!strings.Contains(stderr, "the store's runs/default/spend/ counts from zero") {
		t.Errorf("third machine: exit %d, command started: %v\n%s", code, err == nil, stderr)
	}
	// A record that cannot be read is named, not counted as nothing.
	good, _ := os.ReadFile(recs[0])
	if err := os.WriteFile(recs[0], []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr = run("four", "--", "touch", marker)
	if _, err := os.Stat(marker); code != 2 || err == nil || !strings.Contains(stderr, "runs/default/spend/"+filepath.Base(recs[0])+" is damaged") {
		t.Errorf("a damaged record: exit %d, command started: %v\n%s", code, err == nil, stderr)
	}
	if err := os.WriteFile(recs[0], good, 0o600); err != nil {
		t.Fatal(err)
	}

	// Without a budget, a priced session is recorded all the same, and
	// ckpt runs sums what the run cost, by currency.
	args := []string{"run", "--ckpt-dir", filepath.Join(dir, "cny"), "--store", st, "--no-encrypt", "--allow-unauthenticated", "--preemption", "none", "--no-status", "--price", "36000CNY", "--", "sleep", "1"}
	if code, _, stderr := gpurent(t, args...); code != 0 {
		t.Fatalf("a session priced in CNY: exit %d\n%s", code, stderr)
	}
	recs, _ = filepath.Glob(filepath.Join(st, "runs", "default", "spend", "*.json"))
	all := map[string][]byte{}
	for _, r := range recs {
		all[r], _ = os.ReadFile(r)
	}
	costs, err := ledger.Costs(all, "default")
	if err != nil || len(recs) != 3 || costs["USD"] < 5.4 || costs["USD"] > 6.5 || costs["CNY"] < 10 || costs["CNY"] > 30 {
		t.Fatalf("%d records, costs %v, %v; want 3 (the spent session started nothing), 5.40 to 6.50 USD and 10 to 30 CNY", len(recs), costs, err)
	}
	code, out, _ := gpurent(t, "ckpt", "runs", "--store", st)
	// Currencies in alphabetical order, each to the cent.
	if want := fmt.Sprintf("  %.2f CNY + %.2f USD\n", costs["CNY"], costs["USD"]); code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "COST: each gpurent run session's --price") {
		t.Errorf("ckpt runs: exit %d, want a COST of %q\n%s", code, want, out)
	}
	// A budget in USD cannot count the session in CNY: refused, not
	// converted at a rate nobody chose.
	code, stderr = run("five", "--", "touch", marker)
	if _, err := os.Stat(marker); code != 2 || err == nil || !strings.Contains(stderr, "counts run default's cost in CNY") {
		t.Errorf("a budget in USD over a session in CNY: exit %d, command started: %v\n%s", code, err == nil, stderr)
	}
}

// A command that ignores SIGTERM is killed when the budget is spent, not
// --stop-grace (30 s) later: on 7f49d07 a budget of 10 was spent as 11.51.
func TestRunBudgetKeepsTheStopGraceInside(t *testing.T) {
	dir := t.TempDir()
	began := time.Now()
	code, _, stderr := gpurent(t, "run", "--ckpt-dir", dir, "--preemption", "none", "--no-status", "--price", "3600", "--budget", "3", "--", "sh", "-c", "trap '' TERM; sleep 60 & wait; sleep 60")
	took := time.Since(began)
	// 3 s of budget, and a second for gpurent's own ending; 30 s of
	// grace would be 30 USD more at this price.
	if code != exitcode.Stopped || took > 5*time.Second {
		t.Errorf("exit %d after %v, want 75 within the budget's 3 s\n%s", code, took, stderr)
	}
}
