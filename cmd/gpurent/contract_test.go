//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gpurent/gpurent/internal/catalog/refresh/feedtest"
	"github.com/gpurent/gpurent/internal/exitcode"
)

// Every command that prints a result prints it as one JSON document with
// -o json (issue #38: the README promised it of every command, and
// catalog check and catalog default printed text). The walk takes every
// runnable command: one without a case here, and not among the few that
// print no result of their own, fails the test, so a new command cannot
// leave the contract unnoticed.
func TestEveryCommandWritesJSON(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("GPURENT_IDENTITY", filepath.Join(dir, "identity.txt"))
	t.Setenv("GPURENT_RECIPIENT", "")
	t.Setenv("GPURENT_AUTH_KEY", "")
	st := filepath.Join(dir, "store")
	data := filepath.Join(dir, "data")
	for _, d := range []string{st, data} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "model.bin"), []byte("weights"), 0o600); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, "cat.yaml")
	if err := os.WriteFile(cat, catalogYAMLForTest(t), 0o600); err != nil {
		t.Fatal(err)
	}
	inStore := []string{"--store", st, "--run", "r"}
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("VAST_API_KEY", "vastkey")
	var refreshArgs []string
	for _, e := range feedtest.Serve(t, "../../internal/catalog/refresh/testdata") {
		refreshArgs = append(refreshArgs, "--endpoint", e)
	}
	// In order: keygen makes the identity the ckpt commands use, push the
	// checkpoints that ls, verify, pull, prune and rm find.
	cases := []struct {
		path []string
		args []string
		// verdict: a failed check (exit 3) writes its document too; this
		// machine's own figures (CPU steal, open ports) may fail it.
		verdict bool
		// output: what run prints instead of a document, its command's.
		output string
	}{
		{path: []string{"keygen"}},
		{path: []string{"ckpt", "push"}, args: append([]string{data}, inStore...)},
		{path: []string{"ckpt", "push"}, args: append([]string{data}, inStore...)},
		{path: []string{"ckpt", "ls"}, args: inStore},
		{path: []string{"ckpt", "runs"}, args: inStore[:2]},
		{path: []string{"ckpt", "verify"}, args: inStore},
		{path: []string{"ckpt", "pull"}, args: append([]string{filepath.Join(dir, "pulled")}, inStore...)},
		{path: []string{"ckpt", "prune"}, args: append([]string{"--keep", "1", "--grace", "0s"}, inStore...)},
		// run, which prints its command's output, ships the log that
		// ckpt log --list lists.
		{path: []string{"run"}, args: append([]string{"--ckpt-dir", filepath.Join(dir, "ck"), "--log", filepath.Join(dir, "run.log"), "--preemption", "none", "--no-status"}, append(inStore, "--", "echo", "trained")...), output: "trained\n"},
		{path: []string{"ckpt", "log"}, args: append([]string{"--list"}, inStore...)},
		{path: []string{"ckpt", "speed"}, args: []string{"--store", st, "--size", "1MiB", "--files", "1", "--dir", dir}},
		{path: []string{"quote"}, args: []string{"--gpu", "H100", "--hours", "10"}},
		{path: []string{"plan"}, args: []string{"--gpu", "H100", "--hours", "10"}},
		{path: []string{"catalog", "ls"}, args: []string{"--gpu", "H100"}},
		{path: []string{"catalog", "check"}, args: []string{cat}},
		{path: []string{"catalog", "default"}},
		{path: []string{"catalog", "refresh"}, args: refreshArgs},
		{path: []string{"catalog", "diff"}},
		{path: []string{"bench"}, args: []string{"--duration", "1s", "--disk-mb", "0"}, verdict: true},
		{path: []string{"bench", "history"}},
		{path: []string{"audit"}, verdict: true},
		{path: []string{"wipe"}, args: []string{data}},
		// release's dry run, on a machine that looks like a RunPod pod;
		// every endpoint on loopback, where nothing answers.
		{path: []string{"release"}, args: append([]string{"--stop", "--dry-run"}, deadEndpoints(t)...)},
	}
	t.Setenv("RUNPOD_POD_ID", "pod7")
	t.Setenv("RUNPOD_API_KEY", "rpa_TESTKEY0123456789")
	// ckpt rm takes an id that ls -o json names.
	rm := func() []string {
		code, out, errOut := gpurent(t, append([]string{"ckpt", "ls", "-o", "json"}, inStore...)...)
		var ls struct {
			Checkpoints []struct {
				ID string `json:"id"`
			} `json:"checkpoints"`
		}
		if err := json.Unmarshal([]byte(out), &ls); code != 0 || err != nil || len(ls.Checkpoints) == 0 {
			t.Fatalf("ckpt ls -o json: exit %d, %v, %q", code, err, errOut)
		}
		return append([]string{ls.Checkpoints[0].ID}, inStore...)
	}
	// What prints no result of gpurent's own: run passes its command's
	// output through, burn (hidden) only loads a GPU, gendocs (hidden)
	// writes pages, help and completion print text for people and shells.
	exempt := map[string]bool{"run": true, "burn": true, "gendocs": true, "help": true, "completion": true}
	// Commands that only hold subcommands print their help.
	groups := map[string]bool{"ckpt": true, "catalog": true}

	covered := map[string]bool{}
	for _, c := range cases {
		covered[strings.Join(c.path, " ")] = true
		args := append(append(slices.Clone(c.path), "-o", "json"), c.args...)
		if c.output != "" {
			if code, out, errOut := gpurentToFiles(t, args...); code != 0 || out != c.output {
				t.Errorf("gpurent %s: exit %d, stdout %q, stderr %.300q", strings.Join(args, " "), code, out, errOut)
			}
			continue
		}
		check(t, args, c.verdict)
	}
	covered["ckpt rm"] = true
	check(t, append([]string{"ckpt", "rm", "-o", "json"}, rm()...), false)

	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if len(path) > 0 && exempt[path[0]] {
			return
		}
		if name := strings.Join(path, " "); c.Runnable() && name != "" && !groups[name] {
			if !covered[name] {
				t.Errorf("gpurent %s: no case shows it writes JSON with -o json", strings.Join(path, " "))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clip(path), sub.Name()))
		}
	}
	walk(newRoot(io.Discard, io.Discard, nil), nil)
}

// check runs one command line and wants one JSON document on stdout.
func check(t *testing.T, args []string, verdict bool) {
	t.Helper()
	code, out, errOut := gpurent(t, args...)
	var v any
	err := json.Unmarshal([]byte(out), &v)
	if (code != 0 && !(verdict && code == exitcode.VerdictFail)) || err != nil {
		t.Errorf("gpurent %s: exit %d, %v\nstdout %.300q\nstderr %.300q", strings.Join(args, " "), code, err, out, errOut)
	}
}

// gpurentToFiles is gpurent with stdout and stderr files, as run --log
// wants them.
func gpurentToFiles(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	o, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	code = run(context.Background(), args, o, e)
	o.Close()
	e.Close()
	ob, _ := os.ReadFile(o.Name())
	eb, _ := os.ReadFile(e.Name())
	return code, string(ob), string(eb)
}

// catalogYAMLForTest is a one-offer catalog file.
func catalogYAMLForTest(t *testing.T) []byte {
	t.Helper()
	return []byte(`version: 1
offers:
  - id: t-4090
    provider: Test
    gpu: RTX 4090
    gpus: 1
    currency: USD
    source: https://example.com/prices
    as_of: "2026-11-01"
    on_demand: {hourly: 0.5, increment: 1s, minimum: 0s}
`)
}

// Each code help exit-codes gives to some commands is what those
// commands return when it says (issue #38: 3 meant a failed verdict in
// bench and audit but a failed upload in run). TestExitCodeTable checks
// the other way round: no command returns a code the table lacks.
func TestExitCodesAsDocumented(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GPURENT_IDENTITY", filepath.Join(dir, "identity.txt"))
	t.Setenv("GPURENT_RECIPIENT", "")
	t.Setenv("GPURENT_AUTH_KEY", "")
	if code, _, errOut := gpurent(t, "keygen"); code != 0 {
		t.Fatalf("keygen: %d %s", code, errOut)
	}
	root := filepath.Join(dir, "root")
	for name, body := range map[string]string{
		"etc/passwd": "root:x:0:0::/root:/bin/bash\n", "etc/ssh/sshd_config": "PermitEmptyPasswords yes\n",
		"proc/self/mounts": "/dev/vda1 / ext4 rw 0 0\n", "home/me/.keep": "",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st := filepath.Join(dir, "store")
	if err := os.Mkdir(st, 0o700); err != nil {
		t.Fatal(err)
	}
	runArgs := func(ck string) []string {
		return []string{"run", "--ckpt-dir", filepath.Join(dir, ck), "--store", st, "--run", "r", "--preemption", "none", "--no-status", "--quiet", "100ms", "--poll", "50ms"}
	}
	scenarios := map[string][]string{
		// A failed verdict: more RAM expected than any machine has; an
		// sshd that takes empty passwords.
		"3 bench": {"bench", "--no-history", "--duration", "1s", "--disk-mb", "0", "--expect-ram", "100TB"},
		"3 audit": {"audit", "--root", root, "--home", filepath.Join(root, "home", "me"), "--since", "1h"},
		// The command finishes after the store became a file: its last
		// checkpoint is on this machine only.
		"74 run": append(runArgs("ck74"), "--", "sh", "-c", fmt.Sprintf("rm -r %q && echo > %q && mkdir -p %q && echo 1 > %q/step-1.pt && sleep 0.5",
			st, st, filepath.Join(dir, "ck74"), filepath.Join(dir, "ck74"))),
		// At 360000 USD/h a budget of 0.1 lasts a second.
		"75 run": append(runArgs("ck75"), "--price", "360000", "--budget", "0.1", "--", "sleep", "30"),
	}
	// 75 first: 74 turns the store into a file.
	for _, key := range []string{"3 bench", "3 audit", "75 run", "74 run"} {
		var want int
		var who string
		fmt.Sscan(key, &want, &who)
		code, _, errOut := gpurentToFiles(t, scenarios[key]...)
		if code != want {
			t.Errorf("%s: exit %d, want %d\n%s", key, code, want, errOut)
		}
	}
	for _, r := range exitcode.Table() {
		if r.Commands == "all" {
			continue // 0 and 2 are walked above and in TestEveryCommandKeepsTheContract
		}
		for _, who := range strings.Split(r.Commands, ", ") {
			if _, ok := scenarios[fmt.Sprintf("%d %s", r.Code, who)]; !ok {
				t.Errorf("help exit-codes gives %d to %s, and no case here shows %s returning it", r.Code, who, who)
			}
		}
	}
}

// docs/commands is what gendocs writes: the command reference never
// drifts from --help (regenerate: go run ./cmd/gpurent --lang en gendocs
// /tmp/d && cp /tmp/d/md/*.md docs/commands/).
func TestCommandReferenceCurrent(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := gpurent(t, "--lang", "en", "gendocs", dir); code != 0 {
		t.Fatalf("gendocs: exit %d: %s", code, errOut)
	}
	made, _ := filepath.Glob(filepath.Join(dir, "md", "*.md"))
	kept, _ := filepath.Glob(filepath.Join("..", "..", "docs", "commands", "*.md"))
	if len(made) == 0 || len(made) != len(kept) {
		t.Errorf("gendocs wrote %d pages, docs/commands holds %d: regenerate it", len(made), len(kept))
	}
	for _, m := range made {
		want, _ := os.ReadFile(m)
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", "commands", filepath.Base(m)))
		if err != nil || string(got) != string(want) {
			t.Errorf("docs/commands/%s is not what gendocs writes: regenerate it", filepath.Base(m))
		}
	}
	if mans, _ := filepath.Glob(filepath.Join(dir, "man1", "gpurent-quote.1")); len(mans) != 1 {
		t.Error("gendocs wrote no gpurent-quote.1")
	}
}
