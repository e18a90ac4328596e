package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/exitcode"
	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/report"
)

func TestMain(m *testing.M) {
	// The tests read gpurent's English: a developer's Chinese locale
	// must not turn their expectations into another language. The tests
	// of Chinese say so themselves (--lang zh, zh.txtar's LANG). Not in
	// the processes that are gpurent itself: a script's gpurent (testscript
	// runs this binary under that name) keeps the script's environment.
	var tm testscript.TestingM = m
	if os.Getenv("GPURENT_AS_MAIN") != "1" && filepath.Base(os.Args[0]) != "gpurent" {
		for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"} {
			os.Unsetenv(k)
		}
		// Prices a developer refreshed must not move the tests' bills: a
		// cache directory that is not there (the tests of refresh set
		// their own), removed at the end. The go builds some tests run
		// keep Go's own build cache, which would otherwise move there
		// with it: a cold build of each, and 1.2 GB left in /tmp per run.
		if os.Getenv("GOCACHE") == "" {
			if d, err := os.UserCacheDir(); err == nil {
				os.Setenv("GOCACHE", filepath.Join(d, "go-build"))
			}
		}
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("gpurent-test-cache-%d", os.Getpid()))
		os.Setenv("XDG_CACHE_HOME", dir)
		tm = removing{m, dir}
	}
	if os.Getenv("GPURENT_AS_MAIN") == "1" { // the test binary as gpurent, for tests that kill it
		if code, ok := asInit(os.Args, os.Stderr); ok {
			os.Exit(code)
		}
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	// The tests run gpurent in this process: from a terminal, wipe would
	// ask about this machine's real files a question someone could answer.
	if isTerminal(os.Stdin) {
		if null, err := os.Open(os.DevNull); err == nil {
			os.Stdin = null
		}
	}
	// The parallel tests here wait on processes most of their time
	// (gpu-check's simulated burns, builds of the other binaries, runs
	// killed and restarted): four at a time, not GOMAXPROCS (two on CI's
	// two cores), or the last of them starts minutes late. -parallel on
	// the command line still decides.
	if n := runtime.GOMAXPROCS(0); n < 4 {
		flag.Set("test.parallel", "4")
	}
	testscript.Main(tm, map[string]func(){
		"gpurent": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI the way users do: testdata/script/*.txtar hold a
// command line and what it must print, the way age tests its CLI.
func TestScripts(t *testing.T) {
	// UPDATE_GOLDEN=1 rewrites the expected output in the scripts: review the diff.
	fixtures, err := filepath.Abs("../../internal/bench/testdata/fixtures")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		WorkdirRoot:   t.TempDir(), // removed by the testing package once every script has run
		UpdateScripts: os.Getenv("UPDATE_GOLDEN") != "",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// live runs a bench that measures this machine, whose own
			// figures (CPU steal when the neighbours are busy, the disk)
			// may fail the verdict: it accepts exit 0 or 3, nothing else.
			"live": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) == 0 {
					ts.Fatalf("usage: live gpurent bench ARGS")
				}
				err := ts.Exec(args[0], args[1:]...)
				var ee *exec.ExitError
				if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != exitcode.VerdictFail) {
					ts.Fatalf("%v", err)
				}
			},
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "state"))
			return nil
		},
	})
}

// removing runs the tests, then removes dir.
type removing struct {
	m   *testing.M
	dir string
}

func (r removing) Run() int {
	code := r.m.Run()
	os.RemoveAll(r.dir)
	return code
}

func gpurent(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badProfile := write("bad.yaml", "gpu: RTX 4090\ncompute_hours: 300\nspan_days: 30\negress: 5\n")
	zeroHours := write("zero.yaml", "gpu: RTX 4090\ncompute_hours: 0\n")
	runKeep := write("run.yaml", "ckpt_dir: out\nkeep: -1\ncommand: [echo, hi]\n")
	runQuiet := write("quiet.yaml", "ckpt_dir: out\ncommand: [echo, hi]\nquiet: 5x\n")
	runStall := write("stall.yaml", "ckpt_dir: out\ncommand: [echo, hi]\nstall: 2x\n")
	runSilence := write("silence.yaml", "ckpt_dir: out\ncommand: [echo, hi]\nsilence: 30m\n")
	runLogEvery := write("logevery.yaml", "ckpt_dir: out\ncommand: [echo, hi]\nlog: out.log\nlog_every: 5s\n")
	existing := write("facts.json", "{\"an earlier run\": true}\n")
	if err := os.Mkdir(filepath.Join(dir, "st"), 0o700); err != nil { // a local store with no checkpoints
		t.Fatal(err)
	}
	noGPU := write("nogpu.yaml", "gpu: TPU v9\ncompute_hours: 10\n")
	badCatalog := write("cat.yaml", "version: 1\noffers:\n  - id: x\n    provider: P\n    gpu: G\n    gpus: 1\n    currency: USD\n    source: s\n    as_of: d\n    on_demand: {hourly: -1}\n")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"ok", []string{"quote", "--gpu", "RTX 4090", "--hours", "10"}, 0, ""},
		{"no hours", []string{"quote", "--gpu", "RTX 4090"}, 2, "--hours: required"},
		{"zero hours flag", []string{"quote", "--hours", "0"}, 2, "--hours: want a positive number of hours"},
		{"NaN hours", []string{"quote", "--hours", "NaN"}, 2, "--hours: want a positive number of hours"},
		{"provider nobody is", []string{"quote", "--hours", "1", "--gpu", "H100", "--provider", "runpod", "--provider", "nope"}, 2, `--provider: no offer from "nope"; providers: AWS`},
		{"zero gpus flag", []string{"quote", "--hours", "1", "--gpus", "0"}, 2, "--gpus: want at least 1 GPU, got 0"},
		{"zero starts flag", []string{"quote", "--hours", "1", "--starts", "0"}, 2, "--starts: want at least 1 start, got 0"},
		{"starts beyond the seconds", []string{"quote", "--hours", "1", "--starts", "3601"}, 2, "--starts: 3601 starts do not fit in 1 h of compute"},
		{"inference flag without --inference", []string{"plan", "--hours", "1", "--model", "70B"}, 2, "--model: not used without --inference"},
		{"training flag with --inference", []string{"plan", "--inference", "--tokens-per-day", "1e6", "--hours", "10"}, 2, "--hours: not used with --inference"},
		{"zero days flag", []string{"plan", "--hours", "1", "--days", "0"}, 2, "--days: want at least 1 day, got 0"},
		{"unknown flag", []string{"quote", "--hourz", "1"}, 2, "unknown flag: --hourz (did you mean --hours?)"},
		{"not a number", []string{"quote", "--hours", "abc"}, 2, `--hours: want hours such as 300, or a duration such as 300h, 90m or 12d, got "abc"`},
		{"not a duration", []string{"run", "--stop-grace", "5 min", "--", "true"}, 2, `--stop-grace: want a duration such as 90s, 30m, 2h or 1d, got "5 min"`},
		{"not a whole number", []string{"run", "--max-restarts", "2.5", "--", "true"}, 2, `--max-restarts: want a whole number, got "2.5"`},
		{"unknown flag near none", []string{"quote", "--frobnicate", "1"}, 2, "unknown flag: --frobnicate\n"},
		{"misspelt global flag", []string{"ckpt", "ls", "--outptu", "json"}, 2, "unknown flag: --outptu (did you mean --output?)"},
		{"unknown ckpt command", []string{"ckpt", "pul"}, 2, `unknown command "pul" for "gpurent ckpt" (did you mean "pull"?); its commands: log, ls, prune, pull, push, rm, runs, speed, verify`},
		{"unknown catalog command", []string{"catalog", "export"}, 2, `unknown command "export" for "gpurent catalog"; its commands: check, default, diff, ls, refresh`},
		{"ckpt alone is its help", []string{"ckpt"}, 0, ""},
		{"run priced by no offer", []string{"run", "--preemption", "none", "--price", "aws-p5.4xlargee", "--", "true"}, 2, `--price: no offer has id "aws-p5.4xlargee" (did you mean "aws-p5.4xlarge"?)`},
		{"help on a command", []string{"help", "ckpt", "pull"}, 0, ""},
		{"help on no command", []string{"help", "ckpt", "pul"}, 2, `no help for "ckpt pul": not a gpurent command (gpurent help lists them)`},
		{"help on no command at the root", []string{"help", "quot"}, 2, `no help for "quot": not a gpurent command`},
		{"completion for no shell", []string{"completion", "bassh"}, 2, `unknown command "bassh" for "gpurent completion" (did you mean "bash"?); its commands: bash, fish, powershell, zsh`},
		{"completion for bash", []string{"completion", "bash"}, 0, ""},
		{"bad output", []string{"quote", "--hours", "1", "-o", "xml"}, 2, `--output: want table or json, got "xml"`},
		{"gpu nobody has", []string{"quote", "--gpu", "TPU v9", "--hours", "1"}, 2, `--gpu: no offer has GPU "TPU v9"`},
		{"profile unknown field", []string{"quote", "--profile", badProfile}, 2, `bad.yaml:4: egress: unknown field "egress"`},
		{"profile zero hours", []string{"quote", "--profile", zeroHours}, 2, "zero.yaml:2: compute_hours: want a positive number of hours"},
		{"profile gpu nobody has", []string{"quote", "--profile", noGPU}, 2, `nogpu.yaml:1: gpu: no offer has GPU "TPU v9"`},
		{"missing profile", []string{"quote", "--profile", filepath.Join(dir, "none.yaml")}, 2, "none.yaml"},
		{"bad catalog", []string{"quote", "--catalog", badCatalog, "--hours", "1"}, 2, "cat.yaml:10: offers[0].on_demand.hourly: want a non-negative amount"},
		{"catalog check bad", []string{"catalog", "check", badCatalog}, 2, "cat.yaml:10: offers[0].on_demand.hourly"},
		{"bad duration", []string{"quote", "--hours", "1", "--ckpt-every", "30x"}, 2, `--ckpt-every: invalid duration "30x"`},
		{"bad currency", []string{"quote", "--hours", "1", "--currency", "JPY"}, 2, "--currency: no exchange rate for JPY"},
		{"bad deadline", []string{"plan", "--hours", "1", "--deadline", "soon"}, 2, "--deadline: want a positive duration"},
		{"bad trials", []string{"plan", "--hours", "1", "--trials", "0"}, 2, "--trials: want 1 to 10000000"},
		{"hours beyond span", []string{"quote", "--hours", "100", "--days", "1"}, 2, "--hours: 100 h do not fit in a span of 1 day"},
		{"a value without its flag", []string{"quote", "H100", "--hours", "1"}, 2, `quote takes no arguments, got "H100"; a value goes after its flag, as in --FLAG H100 (usage: gpurent quote [flags])`},
		{"push without a path", []string{"ckpt", "push", "--store", dir}, 2, "accepts 1 arg(s), received 0 (usage: gpurent ckpt push PATH [flags])"},
		{"inference without tokens", []string{"plan", "--inference"}, 2, "--tokens-per-day: required"},
		{"bench expecting a GPU on a machine without one", []string{"bench", "--no-history", "--duration", "1s", "--disk-mb", "0", "--expect", "H100 SXM"}, 3, ""},
		{"bench record into a missing directory", []string{"bench", "--no-history", "--record", filepath.Join(dir, "no-such-dir", "facts.json")}, 2, "--record " + filepath.Join(dir, "no-such-dir", "facts.json") + ": " + filepath.Join(dir, "no-such-dir") + " is not a directory"},
		{"bench missing data dir", []string{"bench", "--no-history", "--data-dir", filepath.Join(dir, "no-such-dir")}, 2, "--data-dir " + filepath.Join(dir, "no-such-dir") + ": not a directory"},
		{"bench unknown model", []string{"bench", "--expect", "TPU v5"}, 2, `--expect: no GPU in the datasheet table matches "TPU v5"`},
		{"bench interconnect nobody sells", []string{"bench", "--expect-interconnect", "nvswitch"}, 2, `--expect-interconnect: want nvlink, pcie or any, got "nvswitch"`},
		{"bench unknown offer", []string{"bench", "--offer", "nope"}, 2, `--offer: no offer has id "nope"`},
		{"bench offer of no datasheet row", []string{"bench", "--offer", "autodl-a800-2026-04"}, 2, `--offer autodl-a800-2026-04: its GPU "A800 / A100 80GB" is no model`},
		{"ckpt plain http to another machine", []string{"ckpt", "ls", "--store", "s3://b/x?endpoint=http://10.9.8.7:8333"}, 2, "plain http to another machine"},
		{"ckpt pull from a missing local store", []string{"ckpt", "pull", filepath.Join(dir, "out"), "--store", filepath.Join(dir, "no-store"), "--run", "r"}, 2, "store " + filepath.Join(dir, "no-store") + ": no such directory (a local store is made by the first push or run)"},
		{"ckpt pull an id the run lacks", []string{"ckpt", "pull", filepath.Join(dir, "out"), "--store", filepath.Join(dir, "st"), "--run", "r", "--id", "20261130T000000.000Z-deadbeef"}, 2, "run r has no checkpoint 20261130T000000.000Z-deadbeef"},
		{"ckpt verify an id the run lacks", []string{"ckpt", "verify", "--store", dir, "--run", "r", "--id", "20261130T000000.000Z-deadbeef"}, 2, "run r has no checkpoint 20261130T000000.000Z-deadbeef"},
		{"bench record over an earlier one", []string{"bench", "--no-history", "--record", existing}, 2, "--record " + existing + ": the file exists and is not overwritten"},
		{"bench soak too short", []string{"bench", "--soak", "5s"}, 2, `--soak: want a duration from 10s to 1h such as 2m, got "5s"`},
		{"bench soak on the cpu", []string{"bench", "--soak", "2m", "--backend", "cpu"}, 2, "--soak, --memtest and --links run on the GPUs: --backend cpu runs nothing there"},
		{"bench links through torch", []string{"bench", "--links", "--backend", "torch"}, 2, "--links measures through the CUDA driver and NCCL: --backend torch does not"},
		{"bench memtest of replayed facts", []string{"bench", "--memtest", "--replay", existing}, 2, "--soak, --memtest and --links measure this machine; --replay judges facts measured before"},
		{"bench links of replayed facts", []string{"bench", "--links", "--replay", existing}, 2, "--soak, --memtest and --links measure this machine"},
		{"wipe gpu-force without gpu", []string{"wipe", "--gpu-force"}, 2, "--gpu-force: it forces --gpu's scrub; give --gpu too"},
		{"wipe report over an earlier one", []string{"wipe", "--report", existing}, 2, "--report " + existing + ": the file exists and is not overwritten"},
		{"audit of a missing data directory", []string{"audit", "--data", "/nonexistent/data"}, 2, "--data /nonexistent/data: not a directory"},
		{"audit under a missing root", []string{"audit", "--root", "/nonexistent/root"}, 2, "--root /nonexistent/root: not a directory"},
		{"wipe under a missing root", []string{"wipe", "--root", "/nonexistent/root"}, 2, "--root /nonexistent/root: not a directory"},
		{"plan deadline shorter than the work", []string{"plan", "--gpu", "RTX 4090", "--hours", "100", "--interruptible", "--deadline", "1h"}, 2, "--deadline 1h is shorter than the 100 h of compute: no plan meets it"},
		{"ckpt prune negative grace", []string{"ckpt", "prune", "--store", dir, "--keep", "1", "--grace", "-5m"}, 2, `--grace: want a duration such as 90s, 30m, 2h or 1d, got "-5m"`},
		{"ckpt prune without keep", []string{"ckpt", "prune", "--store", dir}, 2, "--keep N is required"},
		{"ckpt part size too small", []string{"ckpt", "ls", "--store", dir, "--part-size", "1MiB"}, 2, `--part-size "1MiB": want 5MiB to 5GiB`},
		{"ckpt part concurrency of zero", []string{"ckpt", "ls", "--store", dir, "--part-concurrency", "0"}, 2, "--part-concurrency: want 1 to 64, got 0"},
		{"ckpt rm without an id", []string{"ckpt", "rm", "--store", dir}, 2, "rm: name the checkpoints to delete by id"},
		{"ckpt rm of a name", []string{"ckpt", "rm", "latest", "--store", dir}, 2, `checkpoint id "latest"`},
		{"ckpt rm of no such id", []string{"ckpt", "rm", "20261205T000000.000Z-00000000", "--store", dir}, 2, "has no checkpoint 20261205T000000.000Z-00000000"},
		{"ckpt push missing path", []string{"ckpt", "push", filepath.Join(dir, "nothing"), "--store", dir, "--no-encrypt"}, 2, "nothing"},
		{"run bad glob", []string{"run", "--ckpt-dir", dir, "--glob", "step-[", "--", "true"}, 2, `--glob: "step-[": syntax error in pattern (a shell-style pattern, such as 'ckpt-*.pt' or 'step-[0-9]*')`},
		{"run glob with a path", []string{"run", "--ckpt-dir", dir, "--glob", "out/step-*", "--", "true"}, 2, `--glob: "out/step-*" holds a /: it matches the names of the entries in --ckpt-dir, not paths`},
		{"run config negative keep", []string{"run", "--config", runKeep}, 2, "run.yaml:2: keep: want 0 (keep all) or more, got -1"},
		{"run config bad quiet", []string{"run", "--config", runQuiet}, 2, `quiet.yaml:3: quiet: invalid duration "5x": want Go syntax (90s, 30m, 2h) or days (15d)`},
		{"run config bad stall", []string{"run", "--config", runStall}, 2, `stall.yaml:3: stall: `},
		{"run config log too often", []string{"run", "--config", runLogEvery}, 2, `logevery.yaml:4: log_every: want 10s or more, got 5s`},
		{"negative checkpoint size", []string{"quote", "--hours", "10", "--ckpt-every", "1h", "--ckpt-size", "-1"}, 2, `--ckpt-size: want a size such as 20GB (a bare number is GB), got "-1"`},
		{"checkpoint size without interval", []string{"quote", "--hours", "10", "--ckpt-size", "20"}, 2, "checkpoint settings need --ckpt-every"},
		{"checkpoint interval of zero", []string{"quote", "--hours", "10", "--ckpt-every", "0s"}, 2, "--ckpt-every: want an interval of a second or more, such as 30m, got 0s"},
		{"run negative stall flag", []string{"run", "--stall", "-1s", "--", "true"}, 2, `--stall: want a duration such as 90s, 30m, 2h or 1d, got "-1s"`},
		{"run silence without log", []string{"run", "--silence", "20m", "--", "true"}, 2, "--silence: needs --log FILE: gpurent sees the command's output only when it keeps it"},
		{"run config silence without log", []string{"run", "--config", runSilence}, 2, "silence.yaml:3: silence: needs --log FILE"},
		{"run negative silence flag", []string{"run", "--silence", "-1s", "--log", "x.log", "--", "true"}, 2, `--silence: want a duration such as 90s, 30m, 2h or 1d, got "-1s"`},
		{"run keep-local without store", []string{"run", "--keep-local", "2", "--", "true"}, 2, "--keep-local: needs --store: a local checkpoint is deleted only once the store holds a newer one"},
		{"run negative keep-local", []string{"run", "--keep-local", "-1", "--store", dir, "--", "true"}, 2, "--keep-local: want 0 (keep all) or more, got -1"},
		{"run notify-every without notify", []string{"run", "--notify-every", "6h", "--", "true"}, 2, "--notify-every: needs --notify FILE (or $GPURENT_NOTIFY)"},
		{"run negative restarts flag", []string{"run", "--max-restarts", "-1", "--", "true"}, 2, "--max-restarts: want 0 or more, got -1"},
		{"run command not found", []string{"run", "--ckpt-dir", dir, "--preemption", "none", "--", "no-such-trainer"}, 2, `exec: "no-such-trainer": executable file not found`},
		{"bench zero expected GPUs", []string{"bench", "--expect-gpus", "0"}, 2, "--expect-gpus: want a positive number of GPUs, got 0"},
		{"bench bad expected disk", []string{"bench", "--expect-disk", "-5GB"}, 2, `--expect-disk: size "-5GB": want a positive amount`},
		{"bench bad expected CUDA", []string{"bench", "--expect-cuda", "cu128"}, 2, `--expect-cuda: want a CUDA version such as 12.8 or 13.0, got "cu128"`},
		{"bench zero expected CPUs", []string{"bench", "--expect-cpus", "0"}, 2, "--expect-cpus: want a positive number of CPUs, got 0"},
		{"bench bad expected RAM", []string{"bench", "--expect-ram", "120 gigs"}, 2, `--expect-ram: size "120 gigs": want a positive amount such as 120GB`},
		{"bench more RAM than here", []string{"bench", "--no-history", "--duration", "1s", "--disk-mb", "0", "--expect-ram", "100TB"}, 3, ""},
		{"ckpt push into itself", []string{"ckpt", "push", dir, "--store", filepath.Join(dir, "store"), "--no-encrypt"}, 2, "which would be pushed into itself"},
		{"run store inside ckpt dir", []string{"run", "--ckpt-dir", dir, "--store", filepath.Join(dir, "st"), "--", "true"}, 2, "lies inside --ckpt-dir"},
		{"ckpt bad id", []string{"ckpt", "pull", filepath.Join(t.TempDir(), "d"), "--store", dir, "--id", "a/b"}, 2, `--id: "a/b" is neither a checkpoint id`},
		{"ckpt name nobody pushed", []string{"ckpt", "pull", filepath.Join(t.TempDir(), "d"), "--store", dir, "--id", "yesterday"}, 2, `--id: run default has no checkpoint named yesterday; this store has no checkpoints in any run yet`},
		{"ckpt empty id", []string{"ckpt", "pull", filepath.Join(t.TempDir(), "d"), "--store", dir, "--id", ""}, 2, `--id: empty`},
		{"ckpt verify bad id", []string{"ckpt", "verify", "--store", dir, "--id", "yesterday"}, 2, `--id: run default has no checkpoint named yesterday`},
		{"bench bad backend", []string{"bench", "--backend", "opencl"}, 2, `--backend: want auto, cuda, torch, cpu or none, got "opencl"`},
		{"bench bad duration", []string{"bench", "--duration", "forever"}, 2, "--duration: want a positive duration up to 10m"},
		{"bench unknown probe", []string{"bench", "--probes", "gemm_fp64"}, 2, `--probes: unknown probe "gemm_fp64"`},
		{"bench replay missing", []string{"bench", "--replay", filepath.Join(dir, "none.json")}, 2, "none.json"},
		{"bench replay not facts", []string{"bench", "--replay", badProfile}, 2, "not a gpurent facts file"},
		{"inference bad model", []string{"plan", "--inference", "--tokens-per-day", "1e6", "--model", "13B"}, 2, `--model: want 8B or 70B, got "13B"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := gpurent(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "{\"an earlier run\": true}\n" {
		t.Errorf("an earlier record was changed: %q", b)
	}
}

func TestQuoteJSONContract(t *testing.T) {
	code, out, errOut := gpurent(t, "quote", "--gpu", "H100", "--hours", "100", "--days", "30", "--starts", "5", "--disk", "500", "--egress", "50", "--interruptible", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var q struct {
		Currency string `json:"currency"`
		Bills    []struct {
			Offer    string   `json:"offer"`
			Provider string   `json:"provider"`
			Plan     string   `json:"plan"`
			Detail   string   `json:"detail"`
			Total    *float64 `json:"total"`
			Estimate *struct {
				Total float64 `json:"total"`
			} `json:"estimate"`
			ListTotal   *float64 `json:"list_total"`
			HiddenShare *float64 `json:"hidden_share"`
			Items       []struct {
				Kind   string   `json:"kind"`
				Amount *float64 `json:"amount"`
			} `json:"items"`
			Warnings     []string `json:"warnings"`
			Source       string   `json:"source"`
			AsOf         string   `json:"as_of"`
			PriceAgeDays *int     `json:"price_age_days"`
		} `json:"bills"`
	}
	if err := json.Unmarshal([]byte(out), &q); err != nil {
		t.Fatal(err)
	}
	if q.Currency != "USD" || len(q.Bills) < 10 {
		t.Fatalf("currency %q, %d bills", q.Currency, len(q.Bills))
	}
	plans := map[string]bool{}
	dated := 0
	for i, b := range q.Bills {
		plans[b.Plan] = true
		if b.Offer == "" || b.Provider == "" || b.Total == nil || b.ListTotal == nil || b.HiddenShare == nil || len(b.Items) != 5 || b.Warnings == nil ||
			b.Source == "" || b.AsOf == "" {
			t.Fatalf("bill %d incomplete: %+v", i, b)
		}
		if b.PriceAgeDays != nil {
			dated++
		}
		// Ranked by the estimate where fees are unknown, else the total.
		rank := func(i int) float64 {
			if e := q.Bills[i].Estimate; e != nil {
				return e.Total
			}
			return *q.Bills[i].Total
		}
		if i > 0 && rank(i) < rank(i-1) {
			t.Errorf("bills not ranked by estimate or total at %d", i)
		}
	}
	if !plans["on_demand"] || !plans["spot"] {
		t.Errorf("plans seen: %v", plans)
	}
	if dated == 0 {
		t.Error("no bill has a price_age_days")
	}
}

func TestPlanJSONContract(t *testing.T) {
	code, out, errOut := gpurent(t, "plan", "--gpu", "H100", "--hours", "300", "--interruptible", "--interruptions-per-day", "1.5",
		"--ckpt-every", "30m", "--ckpt-write", "1m", "--ckpt-restart", "5m", "--trials", "2000", "--deadline", "14d", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p struct {
		Offers []struct {
			Offer     string `json:"offer"`
			BreakEven []struct {
				Period string
				Hours  float64
			} `json:"break_even"`
			Recommendation string `json:"recommendation"`
			Reason         string `json:"reason"`
			Checkpoint     *struct {
				Young *float64 `json:"young_minutes"`
				Daly  *float64 `json:"daly_minutes"`
				Lost  *float64 `json:"lost_fraction"`
			} `json:"checkpoint"`
			Spot *struct {
				P50Cost  *float64 `json:"p50_cost"`
				P90Cost  *float64 `json:"p90_cost"`
				P50Hours *float64 `json:"p50_hours"`
				P90Hours *float64 `json:"p90_hours"`
			} `json:"spot"`
		} `json:"offers"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	spots := 0
	for _, o := range p.Offers {
		if o.Recommendation == "" || o.Reason == "" || o.BreakEven == nil {
			t.Errorf("%s: recommendation %q reason %q", o.Offer, o.Recommendation, o.Reason)
		}
		if o.Spot != nil {
			spots++
			if o.Spot.P50Cost == nil || o.Spot.P90Hours == nil || *o.Spot.P90Cost < *o.Spot.P50Cost || o.Checkpoint == nil || o.Checkpoint.Daly == nil {
				t.Errorf("%s: spot %+v checkpoint %+v", o.Offer, o.Spot, o.Checkpoint)
			}
		}
	}
	if spots == 0 {
		t.Error("no offer was simulated")
	}
	// Same seed, same figures.
	_, again, _ := gpurent(t, "plan", "--gpu", "H100", "--hours", "300", "--interruptible", "--interruptions-per-day", "1.5",
		"--ckpt-every", "30m", "--ckpt-write", "1m", "--ckpt-restart", "5m", "--trials", "2000", "--deadline", "14d", "-o", "json")
	if again != out {
		t.Error("two runs with the same seed differ")
	}
}

// A missing or wrong age identity is the caller's to fix: exit 2, in pull,
// verify --deep and in run, whose command is then never started (it would
// train from the beginning on a new machine).
func TestIdentityErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "cfg"))
	t.Setenv("GPURENT_IDENTITY", "")
	t.Setenv("GPURENT_RECIPIENT", "")
	st, data, other := filepath.Join(dir, "store"), filepath.Join(dir, "step-1.pt"), filepath.Join(dir, "other.txt")
	if err := os.WriteFile(data, []byte("weights"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := filepath.Join(dir, "auth.key")
	for _, args := range [][]string{{"keygen", "--auth-key", auth}, {"keygen", "--identity", other}, {"ckpt", "push", data, "--store", st, "--run", "r"}} {
		if code, _, stderr := gpurent(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	marker := filepath.Join(dir, "started")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "empty"))
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"ckpt", "pull", filepath.Join(dir, "out"), "--store", st, "--run", "r"}, "and no identity was given: pass --identity FILE"},
		{[]string{"ckpt", "pull", filepath.Join(dir, "out"), "--store", st, "--run", "r", "--identity", other}, "wrong identity: this identity"},
		{[]string{"ckpt", "verify", "--deep", "--store", st, "--run", "r", "--identity", other}, "wrong identity: this identity"},
		// A machine that only pushes signs with the auth key, and cannot
		// resume without the identity.
		{[]string{"run", "--ckpt-dir", filepath.Join(dir, "ck"), "--store", st, "--run", "r", "--preemption", "none", "--no-encrypt", "--auth-key", auth, "--", "touch", marker},
			"resuming run r needs the age identity (secret key) its checkpoint"},
	} {
		if code, _, stderr := gpurent(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("run started the command without the checkpoint to resume from")
	}
}

// help exit-codes prints the one table of exit codes, and every code a
// command returns by name is in it.
func TestExitCodeTable(t *testing.T) {
	code, out, _ := gpurent(t, "help", "exit-codes")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	inTable := map[int]bool{}
	commandsOf := map[int]string{}
	for _, r := range exitcode.Table() {
		inTable[r.Code] = true
		commandsOf[r.Code] = r.Commands
		if !strings.Contains(out, fmt.Sprintf("  %-3d %-13s %s\n", r.Code, r.Commands, r.Means)) {
			t.Errorf("help exit-codes lacks %d (%s)", r.Code, r.Commands)
		}
	}
	named := map[string]int{"exitcode.OK": exitcode.OK, "exitcode.Failure": exitcode.Failure, "exitcode.Usage": exitcode.Usage, "exitcode.VerdictFail": exitcode.VerdictFail,
		"exitcode.NotStored": exitcode.NotStored, "exitcode.Stopped": exitcode.Stopped,
		// run passes on runner.Run's code: the command's own, or the
		// supervisor's ExitNotStored or ExitStopped.
		"code": -1}
	files, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`exitCode\(([^)]*)\)`)
	useRe := regexp.MustCompile(`Use: +"([a-z-]+)`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The commands this file defines, by their Use lines: a code the
		// table gives to some commands only is returned by those alone.
		var uses []string
		for _, m := range useRe.FindAllStringSubmatch(string(src), -1) {
			uses = append(uses, m[1])
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			v, ok := named[m[1]]
			if !ok && m[1] != "" {
				t.Errorf("%s returns exitCode(%s): name it by a constant of the table", f, m[1])
			} else if v >= 0 && m[1] != "" && !inTable[v] {
				t.Errorf("%s returns %s = %d, not in the table", f, m[1], v)
			}
			codes := []int{v}
			if v < 0 { // run's pass-through: the supervisor's codes
				codes = []int{exitcode.NotStored, exitcode.Stopped}
			}
			for _, c := range codes {
				if who := commandsOf[c]; who != "all" && !slices.ContainsFunc(uses, func(u string) bool { return slices.Contains(strings.Split(who, ", "), u) }) {
					t.Errorf("%s (%v) returns %d, which the table gives to %s only", f, uses, c, who)
				}
			}
		}
	}
}

// Every command keeps one CLI contract (issue #38), checked by walking the
// whole command tree, help topics and hidden commands too: -o takes table
// or json only, so -o yaml is bad usage (exit 2, nothing on stdout, one
// line naming --output) on every command, keygen, catalog check and run
// included (they took it and exited 0); an unknown flag is bad usage too;
// and every command the exit-code table names exists.
func TestEveryCommandKeepsTheContract(t *testing.T) {
	root := newRoot(io.Discard, io.Discard, nil)
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if len(path) > 0 {
			paths = append(paths, path)
		}
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clip(path), sub.Name()))
		}
	}
	walk(root, nil)
	if len(paths) < 20 {
		t.Fatalf("walked %d commands: %v", len(paths), paths)
	}
	names := map[string]bool{}
	for _, p := range paths {
		names[p[0]] = true
		for _, c := range []struct {
			args []string
			want string
		}{{[]string{"-o", "yaml"}, `--output: want table or json, got "yaml"`}, {[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"}} {
			args := append(slices.Clone(p), c.args...)
			code, out, errOut := gpurent(t, args...)
			if code != exitcode.Usage || out != "" || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 1 {
				t.Errorf("gpurent %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(args, " "), code, out, errOut, c.want)
			}
		}
	}
	for _, r := range exitcode.Table() {
		for _, name := range strings.Split(r.Commands, ", ") {
			if name != "all" && !names[name] {
				t.Errorf("help exit-codes gives %d to %q, which is no command", r.Code, name)
			}
		}
	}
}

// Every JSON document's keys are snake_case (issue #38), on the embedded
// catalog and this machine: a field added without its tag would show as
// Go's CamelCase.
func TestJSONKeysAreSnakeCase(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "st")
	if err := os.Mkdir(store, 0o700); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if !snake.MatchString(k) {
					t.Errorf("%s: key %q is not snake_case", path, k)
				}
				walk(x, path+"."+k)
			}
		case []any:
			for _, x := range v {
				walk(x, path+"[]")
			}
		}
	}
	for _, args := range [][]string{
		{"quote", "--gpu", "H100", "--hours", "10", "--ckpt-every", "1h", "--interruptible"},
		{"quote", "--gpu", "H100", "--budget", "500"},
		{"plan", "--gpu", "H100", "--hours", "10", "--interruptible", "--trials", "100", "--ckpt-every", "1h"},
		{"plan", "--inference", "--gpu", "H100", "--tokens-per-day", "1000000"},
		{"catalog", "ls"},
		{"bench", "--no-history", "--duration", "1s", "--disk-mb", "0"},
		{"wipe", dir},
		{"ckpt", "ls", "--store", store},
	} {
		code, out, errOut := gpurent(t, append(args, "-o", "json")...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 {
			t.Errorf("%s: exit %d, %v\n%s", strings.Join(args, " "), code, err, errOut)
			continue
		}
		walk(v, args[0])
	}
}

// Every duration flag of every command takes days, as the config files
// do (issue #38: --stall 1d was refused while stall: 1d was taken), and
// never a negative time. The walk finds pflag's own duration flags too,
// which would refuse 1d.
func TestDurationFlagsTakeDays(t *testing.T) {
	var found []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			found = append(found, c.CommandPath()+" --"+f.Name)
			if err := c.ParseFlags([]string{"--" + f.Name, "1d12h"}); err != nil || f.Value.String() != "36h" {
				t.Errorf("%s --%s 1d12h: %v (reads %s)", c.CommandPath(), f.Name, err, f.Value)
			}
			if err := c.ParseFlags([]string{"--" + f.Name, "-1s"}); err == nil {
				t.Errorf("%s --%s -1s accepted", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(io.Discard, io.Discard, nil))
	for _, want := range []string{"gpurent run --stall", "gpurent run --quiet", "gpurent wipe --recent", "gpurent ckpt log --every", "gpurent ckpt --grace"} {
		if !slices.Contains(found, want) {
			t.Errorf("%s is not among the duration flags found: %q", want, found)
		}
	}
}

// run's config file reads every duration as its flag does: quiet: 1d is
// a day, as --quiet 1d is (it was read by time.ParseDuration alone).
func TestRunConfigDurationsTakeDays(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "run.yaml")
	for _, field := range []string{"quiet", "stall", "silence", "log_every", "notify_every"} {
		if err := os.WriteFile(cfg, []byte("ckpt_dir: "+dir+"/ck\n"+field+": 1d\nmax_restarts: -1\ncommand: [true]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// max_restarts: -1 is refused after the durations are read, as
		// silence without log is: what is refused is not the duration.
		code, _, errOut := gpurent(t, "run", "--config", cfg)
		if code != exitcode.Usage || strings.Contains(errOut, "invalid duration") || strings.Contains(errOut, "unknown unit") {
			t.Errorf("%s: 1d: exit %d, %q; want the duration taken and another line refused", field, code, errOut)
		}
	}
}

// quote's default table fits 120 columns, on every offer and plan of the
// embedded catalog with its older readings (issue #38: it was 238 wide);
// --wide adds the rest.
func TestQuoteTableFits(t *testing.T) {
	for _, args := range [][]string{
		{"quote", "--hours", "300", "--days", "30", "--starts", "10", "--disk", "200", "--egress", "100", "--interruptible", "--ckpt-every", "1h", "--history"},
		{"quote", "--budget", "500", "--days", "30", "--interruptible", "--ckpt-every", "1h", "--history"},
	} {
		code, out, errOut := gpurent(t, args...)
		if code != 0 {
			t.Fatalf("%q: exit %d %s", args, code, errOut)
		}
		lines := strings.Split(out, "\n")
		table := 0
		for _, l := range lines[2:] {
			if l == "" {
				break
			}
			table++
			if w := report.Width(l); w > 120 {
				t.Errorf("%q: a line %d columns wide: %s", args[:2], w, l)
			}
		}
		if table < 50 || !strings.Contains(out, "\n--wide adds PROVIDER") {
			t.Errorf("%q: %d table lines, or no word of --wide", args[:2], table)
		}
		code, out, _ = gpurent(t, append(args, "--wide")...)
		if code != 0 || !strings.Contains(out, "PROVIDER") || !strings.Contains(out, "DETAIL") {
			t.Errorf("%q --wide lacks its columns", args[:2])
		}
	}
}

// --ckpt-size means one thing in quote, plan and ckpt speed: a size, a
// bare number being GB (issue #38: quote took GB as a number only, ckpt
// speed "20GB").
func TestCkptSizeOneMeaning(t *testing.T) {
	var gb []string
	for _, size := range []string{"20", "20GB", "20000MB"} {
		code, out, errOut := gpurent(t, "quote", "--gpu", "RTX 4090", "--hours", "10", "--ckpt-every", "1h", "--ckpt-size", size, "--top", "1")
		if code != 0 {
			t.Fatalf("--ckpt-size %s: exit %d %s", size, code, errOut)
		}
		gb = append(gb, strings.SplitN(out, "\n", 2)[0])
	}
	if gb[0] != gb[1] || gb[1] != gb[2] || !strings.Contains(gb[0], "200 GB of checkpoint uploads") {
		t.Errorf("the same size read three ways: %q", gb)
	}
}

// catalog check names each good file as it passes, so that a bad file
// after them does not hide that they were good.
func TestCatalogCheckNamesTheGoodBeforeTheBad(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("version: 1\noffers:\n  - id: g\n    provider: P\n    gpu: RTX 4090\n    gpus: 1\n    currency: USD\n    source: s\n    as_of: \"2026-11-01\"\n    on_demand: {hourly: 1}\n"), 0o600)
	os.WriteFile(bad, []byte("version: 1\noffers:\n  - id: b\n    provider: P\n    gpu: RTX 4090\n    gpus: 1\n    currency: USD\n    source: s\n    as_of: \"2026-11-01\"\n    on_demand: {hourly: -1}\n"), 0o600)
	code, out, errOut := gpurent(t, "catalog", "check", good, bad)
	if code != exitcode.Usage || !strings.HasPrefix(out, good+": ok, 1 offer\n") || !strings.Contains(errOut, "bad.yaml:10: offers[0].on_demand.hourly") {
		t.Errorf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
}

// TestHelpExitCodesMatchTable: every code a command's help names in its
// "Exit status:" or "Exit codes:" paragraph is one the table gives that
// command (or all). run's help once said 3 for "this machine holds the
// only copy", which the table and the code give 74: a wrapper written
// from the help would release the machine that holds the only checkpoint.
func TestHelpExitCodesMatchTable(t *testing.T) {
	tr, err := i18n.New(i18n.English)
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot(io.Discard, io.Discard, tr)
	codeRe := regexp.MustCompile(`(?:^|[:;,] )(\d+) `)
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		long := c.Long
		i := max(strings.Index(long, "Exit status:"), strings.Index(long, "Exit codes:"))
		if i < 0 {
			return
		}
		para, _, _ := strings.Cut(long[i:], "\n\n")
		para = strings.ReplaceAll(para, "\n", " ")
		for _, m := range codeRe.FindAllStringSubmatch(para, -1) {
			code, _ := strconv.Atoi(m[1])
			seen++
			ok := false
			for _, r := range exitcode.Table() {
				if r.Code == code && (r.Commands == "all" || slices.Contains(strings.Split(r.Commands, ", "), c.Name())) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("gpurent %s --help names exit %d, which the exit-code table does not give %s", c.Name(), code, c.Name())
			}
		}
	}
	walk(root)
	if seen < 10 {
		t.Errorf("found %d exit codes in help texts: the test reads none", seen)
	}
}
