//go:build unix

package supervise

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/i18n"
	"github.com/gpurent/gpurent/internal/preempt"

	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/store/cloud"
	"github.com/gpurent/gpurent/internal/testfs"
)

var trials = flag.Int("trials", 100, "randomized kill trials")

func TestMain(m *testing.M) {
	if os.Getenv("FAKE_TRAINER") == "1" {
		fakeTrainer()
	}
	os.Exit(m.Run())
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		in     []string
		resume string
		want   string
	}{
		{[]string{"train.py", "--resume_from_checkpoint", "{resume}", "--bf16"}, "/c/ckpt-1", "train.py --resume_from_checkpoint /c/ckpt-1 --bf16"},
		{[]string{"train.py", "--resume_from_checkpoint", "{resume}", "--bf16"}, "", "train.py --bf16"},
		{[]string{"fit", "--ckpt_path={resume}", "x"}, "", "fit x"},
		{[]string{"fit", "--ckpt_path={resume}"}, "/a", "fit --ckpt_path=/a"},
		{[]string{"a", "b"}, "/a", "a b"},
	} {
		if got := strings.Join(Args(tc.in, tc.resume), " "); got != tc.want {
			t.Errorf("Args(%q, %q) = %q, want %q", tc.in, tc.resume, got, tc.want)
		}
	}
}

// TestDetectorSameTime: two saves in a row can share one coarse file time;
// the higher step in the name is then the newer, whatever the listing
// order ("checkpoint-1000" lists before "checkpoint-500").
func TestDetectorSameTime(t *testing.T) {
	for _, names := range [][]string{{"ckpt-000010.bin", "ckpt-000020.bin"}, {"checkpoint-500", "checkpoint-1000"}, {"epoch=0-step=900.ckpt", "epoch=1-step=1800.ckpt"}} {
		dir := t.TempDir()
		at := time.Now().Add(-time.Minute).Truncate(time.Second)
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(filepath.Join(dir, n), at, at)
		}
		d := &Detector{Dir: dir, Quiet: time.Second, OpenForWrite: func(string) bool { return false }}
		c, ok, err := d.Newest()
		if err != nil || !ok || c.Name != names[1] {
			t.Errorf("%v at one time: newest %q %v %v, want %s", names, c.Name, ok, err, names[1])
		}
	}
	if lastNumber("model.pt") != -1 || lastNumber("iter_0000020") != 20 {
		t.Error("lastNumber")
	}
}

func TestDetector(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-time.Minute)
	write := func(p string, at time.Time) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644)
		os.Chtimes(filepath.Join(dir, p), at, at)
	}
	write("a.pt", old)
	write("b.pt.tmp", now) // a temporary name: never a checkpoint
	write("c.pt", now)     // too fresh
	write(".gpurent-run.json", now)
	open := filepath.Join(dir, "d.pt")
	write("d.pt", old)
	d := &Detector{Dir: dir, Quiet: 5 * time.Second, OpenForWrite: func(p string) bool { return p == open }}
	got := completeness(t, d)
	want := map[string]bool{"a.pt": true, "c.pt": false, "d.pt": false}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s complete = %v, want %v", k, got[k], v)
		}
	}
	if _, ok := got["b.pt.tmp"]; ok {
		t.Error("a .tmp file was a candidate")
	}
	if _, ok := got[".gpurent-run.json"]; ok {
		t.Error("the state file was a candidate")
	}
	// A --ckpt-dir that is also the project directory: its code, logs,
	// notebooks and hidden entries are not checkpoints; a --glob that
	// names them makes them so.
	for _, f := range []string{"train.py", "train.log", "config.yaml", "notes.md", "run.ipynb", ".git/HEAD", ".env", "__pycache__/m.pyc"} {
		write(f, old)
	}
	os.Mkdir(filepath.Join(dir, "step-9"), 0o755) // made, nothing written yet
	os.Chtimes(filepath.Join(dir, "step-9"), old, old)
	got = completeness(t, d)
	for _, f := range []string{"train.py", "train.log", "config.yaml", "notes.md", "run.ipynb", ".git", ".env", "__pycache__", "step-9"} {
		if _, ok := got[f]; ok {
			t.Errorf("%s was a candidate", f)
		}
	}
	if !got["a.pt"] {
		t.Error("a.pt is no longer a whole checkpoint")
	}
	if got := completeness(t, &Detector{Dir: dir, Glob: "*.log", OpenForWrite: d.OpenForWrite}); !got["train.log"] {
		t.Error("--glob '*.log' did not make train.log a candidate")
	}
	// gpurent's own --log, whatever --glob says.
	if got := completeness(t, &Detector{Dir: dir, Glob: "*.log", Exclude: []string{"train.log"}, OpenForWrite: d.OpenForWrite}); len(got) != 0 {
		t.Errorf("with train.log excluded: %v", got)
	}
	// The real /proc check sees this process's own open file.
	f, _ := os.Create(filepath.Join(dir, "e.pt"))
	defer f.Close()
	if !procOpenForWrite(filepath.Join(dir, "e.pt")) || procOpenForWrite(filepath.Join(dir, "a.pt")) {
		t.Error("procOpenForWrite")
	}
}

// Checkpoints saved below --ckpt-dir's own entries (Lightning's default
// lightning_logs/version_N/checkpoints/) are found by Deeper, which Scan
// never reports; what is directly in the directory, or hidden, is not.
func TestDetectorDeeper(t *testing.T) {
	dir := t.TempDir()
	write := func(p string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644)
	}
	write("notes.txt")
	write(".cache/hub/model.safetensors") // hidden: never a checkpoint
	write("top.ckpt.tmp")
	for _, glob := range []string{"", "*.ckpt"} {
		if got := (&Detector{Dir: dir, Glob: glob}).Deeper(1000, time.Time{}); got != "" {
			t.Errorf("glob %q: Deeper = %q with nothing deeper", glob, got)
		}
	}
	nested := filepath.Join(dir, "lightning_logs", "version_0", "checkpoints", "epoch=0-step=5.ckpt")
	write("lightning_logs/version_0/events.out.tfevents.1")
	write("lightning_logs/version_0/checkpoints/epoch=0-step=5.ckpt")
	for _, glob := range []string{"", "*.ckpt", "epoch=*"} {
		d := &Detector{Dir: dir, Glob: glob, OpenForWrite: func(string) bool { return false }}
		if got := d.Deeper(1000, time.Time{}); got != nested {
			t.Errorf("glob %q: Deeper = %q, want %q", glob, got, nested)
		}
		if got := completeness(t, d); len(got) != 0 {
			t.Errorf("glob %q: candidates %v: lightning_logs is no checkpoint", glob, got)
		}
	}
	if got := (&Detector{Dir: dir, Glob: "*.pt"}).Deeper(1000, time.Time{}); got != "" {
		t.Errorf("--glob '*.pt' found %q", got)
	}
	if got := (&Detector{Dir: dir}).Deeper(3, time.Time{}); got != "" {
		t.Errorf("a walk limited to 3 entries found %q", got)
	}
	if got := (&Detector{Dir: dir}).Deeper(1000, time.Now().Add(time.Minute)); got != "" {
		t.Errorf("a file older than the run (pretrained weights, say) found: %q", got)
	}
}

// completeness is what d's scan says of each candidate: whole or not.
func completeness(t *testing.T, d *Detector) map[string]bool {
	t.Helper()
	cs, err := d.Scan()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range cs {
		got[c.Name] = c.Complete
	}
	return got
}

// The Hugging Face Trainer's output directory: checkpoint-N/ is whole with
// trainer_state.json, which it writes last; one with only the first files
// (a save in progress, or cut short by a crash) never is, however quiet;
// and what else the Trainer writes there (runs/ with TensorBoard events,
// the final model's files) is not a checkpoint at all, even when newer.
func TestDetectorHuggingFaceDir(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }
	write := func(p string, when time.Time) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644)
		os.Chtimes(filepath.Join(dir, p), when, when)
	}
	write("checkpoint-200/model.safetensors", at(5*time.Minute))
	write("checkpoint-200/training_args.bin", at(5*time.Minute))
	write("checkpoint-200/trainer_state.json", at(5*time.Minute))
	write("checkpoint-300/model.safetensors", at(3*time.Minute)) // cut short by a crash
	write("checkpoint-300/training_args.bin", at(3*time.Minute))
	write("runs/Nov30/events.out.tfevents.1", at(time.Minute)) // quiet, and newest
	write("config.json", at(time.Minute))
	// Directories as old as what they hold, so that quietness alone
	// would call each of them whole.
	for p, ago := range map[string]time.Duration{"checkpoint-200": 5 * time.Minute, "checkpoint-300": 3 * time.Minute, "runs/Nov30": time.Minute, "runs": time.Minute} {
		os.Chtimes(filepath.Join(dir, p), at(ago), at(ago))
	}
	d := &Detector{Dir: dir, Quiet: 5 * time.Second, OpenForWrite: func(string) bool { return false }}
	got := completeness(t, d)
	if len(got) != 2 || !got["checkpoint-200"] || got["checkpoint-300"] {
		t.Fatalf("candidates %v: want checkpoint-200 whole, checkpoint-300 not, nothing else", got)
	}
	if c, ok, _ := d.Newest(); !ok || c.Name != "checkpoint-200" {
		t.Errorf("newest %+v %v, want checkpoint-200", c, ok)
	}
	// A just-in-time save (enable_jit_checkpoint) still holding its
	// sentinel is not whole, though trainer_state.json is there.
	write("checkpoint-400/model.safetensors", at(2*time.Minute))
	write("checkpoint-400/training_args.bin", at(2*time.Minute))
	write("checkpoint-400/trainer_state.json", at(2*time.Minute))
	write("checkpoint-400/checkpoint-is-incomplete.txt", at(2*time.Minute))
	os.Chtimes(filepath.Join(dir, "checkpoint-400"), at(2*time.Minute), at(2*time.Minute))
	cs, _ := d.Scan()
	for _, c := range cs {
		if c.Name == "checkpoint-400" && (c.Complete || !strings.Contains(c.Why, "checkpoint-is-incomplete.txt is there")) {
			t.Errorf("a JIT save in progress: %+v", c)
		}
	}
	if c, ok, _ := d.Newest(); !ok || c.Name != "checkpoint-200" {
		t.Errorf("with a JIT save in progress, newest %+v %v, want checkpoint-200", c, ok)
	}
	// With --glob the user says what a checkpoint is.
	d.Glob = "*.json"
	if c, ok, _ := d.Newest(); !ok || c.Name != "config.json" {
		t.Errorf("with a glob, newest %+v %v, want config.json", c, ok)
	}
	// A directory of checkpoint-N/ that are not the Trainer's is judged as
	// any other directory: by quietness.
	other := t.TempDir()
	os.MkdirAll(filepath.Join(other, "checkpoint-7"), 0o755)
	os.WriteFile(filepath.Join(other, "checkpoint-7", "model.pt"), []byte("x"), 0o644)
	os.Chtimes(filepath.Join(other, "checkpoint-7", "model.pt"), at(time.Minute), at(time.Minute))
	os.Chtimes(filepath.Join(other, "checkpoint-7"), at(time.Minute), at(time.Minute))
	d2 := &Detector{Dir: other, Quiet: 5 * time.Second, OpenForWrite: func(string) bool { return false }}
	if c, ok, _ := d2.Newest(); !ok || c.Name != "checkpoint-7" || c.Kind != "dir" {
		t.Errorf("a plain checkpoint-7/: %+v %v", c, ok)
	}
}

// torch.distributed.checkpoint writes its shards (*.distcp), then renames
// .metadata into place: shards without it are a save in progress or cut
// short, never whole however quiet, and the directory's other entries are
// not checkpoints.
func TestDetectorDistributedCheckpointDir(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Minute)
	for p, at := range map[string]time.Time{
		"step-100/__0_0.distcp": old.Add(-time.Minute), "step-100/.metadata": old.Add(-time.Minute),
		"step-200/__0_0.distcp": old, // cut short by a crash
		"train.log":             old,
	} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte("x"), 0o644)
		os.Chtimes(full, at, at)
		os.Chtimes(filepath.Dir(full), at, at)
	}
	d := &Detector{Dir: dir, Quiet: 5 * time.Second, OpenForWrite: func(string) bool { return false }}
	got := completeness(t, d)
	if len(got) != 2 || !got["step-100"] || got["step-200"] {
		t.Fatalf("candidates %v: want step-100 whole, step-200 not, nothing else", got)
	}
}

// harness is one machine: a checkpoint directory, a shared store.
type harness struct {
	t     *testing.T
	b     store.Backend
	log   string
	quiet time.Duration
}

func newHarness(t *testing.T) *harness {
	b, _, err := cloud.Open(context.Background(), t.TempDir(), cloud.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &harness{t: t, b: b, log: filepath.Join(t.TempDir(), "trainer.log"), quiet: 50 * time.Millisecond}
}

func (h *harness) store(b store.Backend) *store.Store {
	return store.New(&store.Retrying{Backend: b, Base: time.Millisecond, Attempts: 2}, store.Options{Grace: -1, PullWait: time.Millisecond})
}

func (h *harness) config(dir string, b store.Backend) Config {
	return Config{Cmd: []string{os.Args[0]}, CkptDir: dir, Run: "trial", Store: h.store(b), MaxRestarts: 50, CrashLoop: 30,
		Backoff: 10 * time.Millisecond, Grace: time.Second, Poll: 20 * time.Millisecond, Quiet: h.quiet, Glob: "ckpt-*.bin",
		Stdout: io.Discard, Stderr: io.Discard}
}

// captureLog makes cfg log into memory, safely from any goroutine, and
// returns what was logged so far, a line each.
func captureLog(cfg *Config) func() string {
	var mu sync.Mutex
	var lines []string
	cfg.Log = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
}

// captureEvents records cfg's events as "kind: text", safely from any
// goroutine, and returns what was recorded so far.
func captureEvents(cfg *Config) func() []string {
	var mu sync.Mutex
	var events []string
	cfg.Event = func(kind string, text i18n.Text) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, kind+": "+text.String())
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), events...)
	}
}

// kinds are the events' kinds, in order.
func kinds(events []string) []string {
	var out []string
	for _, e := range events {
		k, _, _ := strings.Cut(e, ": ")
		out = append(out, k)
	}
	return out
}

// committedSteps lists the steps of the checkpoints the store has.
func (h *harness) committedSteps() []int {
	ms, err := h.store(h.b).List(context.Background(), "trial")
	if err != nil {
		h.t.Fatal(err)
	}
	var steps []int
	for _, m := range ms {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(m.Name, "ckpt-"), ".bin"))
		steps = append(steps, n)
	}
	sort.Ints(steps)
	return steps
}

// resumeSteps are the steps the trainer resumed from, in order.
func (h *harness) resumeSteps() []int {
	b, _ := os.ReadFile(h.log)
	var out []int
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "resume "); ok {
			n, _ := strconv.Atoi(v)
			out = append(out, n)
		}
	}
	return out
}

func (h *harness) resumes() []string {
	b, _ := os.ReadFile(h.log)
	return strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
}

func setTrainerEnv(t *testing.T, seed uint64, crash string, steps int) {
	for _, kv := range trainerEnv(seed, crash, steps) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// trainerEnv is the fake trainer's environment, for a Config's Env where
// tests run side by side (t.Setenv cannot).
func trainerEnv(seed uint64, crash string, steps int) []string {
	return []string{"FAKE_TRAINER=1", "FAKE_SEED=" + strconv.FormatUint(seed, 10), "FAKE_CRASH=" + crash,
		"FAKE_STEPS=" + strconv.Itoa(steps), "FAKE_EVERY=5", "FAKE_STEP_MS=5"}
}

// TestKillTrials runs the fake trainer under gpurent and kills the trainer,
// gpurent (everything in flight abandoned, as SIGKILL would) or the whole
// machine (a new, empty directory) at random moments, then checks that the
// run ends with every committed checkpoint whole, no corrupt resume, and
// each resume at or after the newest checkpoint committed before the kill.
func TestKillTrials(t *testing.T) {
	n := *trials
	if testing.Short() {
		n = 10
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (go test -run TestKillTrials with FAKE_SEED_BASE=%d to replay)", seed, seed)
	if v, err := strconv.ParseUint(os.Getenv("FAKE_SEED_BASE"), 10, 64); err == nil {
		seed = v
	}
	// The trials wait on their trainers more than they compute: they run
	// side by side (-parallel, GOMAXPROCS by default).
	for i := 0; i < n; i++ {
		s := seed + uint64(i)
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			t.Parallel()
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("trial failed; replay with FAKE_SEED_BASE=%d -trials=1", s)
				}
			})
			killTrial(t, s)
		})
	}
}

func killTrial(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	h := newHarness(t)
	env := append(trainerEnv(seed, "0.02", 60), "FAKE_LOG="+h.log)
	dir := t.TempDir()
	kills := rng.IntN(3)
	type floor struct{ logLen, step int }
	var floors []floor
	for k := 0; ; k++ {
		cfg := h.config(dir, h.b)
		cfg.Env = env
		sup, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan Exit, 1)
		go func() {
			ex, err := sup.Run(ctx, nil)
			if err != nil && ctx.Err() == nil {
				t.Errorf("run: %v", err)
			}
			done <- ex
		}()
		if k >= kills {
			select {
			case ex := <-done:
				cancel()
				if ex.Code != 0 {
					t.Fatalf("final run ended %d: %s (trainer log %q)", ex.Code, ex.Reason.String(), h.resumes())
				}
			case <-time.After(60 * time.Second):
				cancel()
				t.Fatalf("trial did not finish (trainer log %q)", h.resumes())
			}
			break
		}
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		what := rng.IntN(3)
		if what == 0 { // the trainer dies; gpurent restarts it
			sup.signal(syscall.SIGKILL)
			time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		}
		// gpurent dies with everything in flight, and the trainer with it.
		cancel()
		sup.signal(syscall.SIGKILL)
		<-done
		if what == 2 { // a new machine: an empty directory
			dir = t.TempDir()
		}
		// Whatever was committed when gpurent died bounds the next resume:
		// lost work is at most one checkpoint interval (a checkpoint being
		// rewritten may not be whole yet) plus the restart.
		if steps := h.committedSteps(); len(steps) > 0 {
			floors = append(floors, floor{logLen: len(h.resumeSteps()), step: steps[len(steps)-1]})
		}
	}
	resumed := h.resumeSteps()
	const every = 5 // FAKE_EVERY: one checkpoint interval, in steps
	for _, f := range floors {
		if f.logLen < len(resumed) && resumed[f.logLen] < f.step-every {
			t.Errorf("after a kill with step %d committed, the trainer resumed from %d: more than one checkpoint interval lost (resumes %v)", f.step, resumed[f.logLen], resumed)
		}
	}
	// Every committed checkpoint restores byte for byte.
	st := h.store(h.b)
	ms, _ := st.List(context.Background(), "trial")
	if len(ms) == 0 {
		t.Fatal("nothing committed")
	}
	for _, m := range ms {
		dest := filepath.Join(t.TempDir(), "r")
		if _, err := st.Pull(context.Background(), "trial", m.ID, dest); err != nil {
			t.Fatal(err)
		}
		if _, err := readCheckpoint(dest); err != nil {
			t.Errorf("committed %s (%s) does not restore whole: %v", m.ID, m.Name, err)
		}
	}
	log := strings.Join(h.resumes(), " ")
	if strings.Contains(log, "corrupt") {
		t.Errorf("the trainer was handed a broken checkpoint: %s", log)
	}
	// The final step is committed.
	steps := h.committedSteps()
	if steps[len(steps)-1] != 60 {
		t.Errorf("the last committed step is %d, want 60 (committed %v)", steps[len(steps)-1], steps)
	}
}

// TestResumeOnNewMachine: a new, empty directory resumes from the newest
// committed checkpoint, not from the beginning.
func TestResumeOnNewMachine(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 11, "0", 20)
	t.Setenv("FAKE_LOG", h.log)
	sup, _ := New(h.config(t.TempDir(), h.b))
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	os.Remove(h.log)
	setTrainerEnv(t, 12, "0", 30)
	cfg := h.config(t.TempDir(), h.b)
	cfg.Log = t.Logf
	sup, _ = New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	if log := h.resumes(); len(log) < 2 || log[0] != "resume" || log[1] != "20" {
		t.Errorf("the new machine resumed with %q, want resume 20", log)
	}
	// A run name with no checkpoint (a typo on the new machine) starts
	// from the beginning, and says so, naming the runs the store has.
	setTrainerEnv(t, 13, "0", 2)
	cfg = h.config(t.TempDir(), h.b)
	cfg.Run = "trail"
	logged := captureLog(&cfg)
	sup, _ = New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	if got := logged(); !strings.Contains(got, "no checkpoint of run trail in the store: the command starts from the beginning (runs in this store (checkpoints): trial (") {
		t.Errorf("a run with no checkpoint logged:\n%s", got)
	}
}

// A machine made from a snapshot of the first holds an older checkpoint
// than the store's newest: that one is pulled and resumed from, not the
// older one here; a store newest that is this directory's own is not.
func TestResumeNewerInStore(t *testing.T) {
	h := newHarness(t)
	t.Setenv("FAKE_LOG", h.log)
	first := t.TempDir()
	setTrainerEnv(t, 31, "0", 10)
	sup, _ := New(h.config(first, h.b))
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	// The first machine's disk at step 10; then it trains on to 30.
	snapshot := snapshotOf(t, first, "ckpt-000010.bin", StateFile)
	setTrainerEnv(t, 32, "0", 30)
	sup, _ = New(h.config(first, h.b))
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	os.Remove(h.log)
	setTrainerEnv(t, 33, "0", 40)
	cfg := h.config(snapshot, h.b)
	logged := captureLog(&cfg)
	sup, _ = New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	if log := h.resumes(); len(log) < 2 || log[0] != "resume" || log[1] != "30" {
		t.Errorf("the machine from the snapshot resumed with %q, want resume 30\n%s", log, logged())
	}
	if !strings.Contains(logged(), "the store's newest checkpoint ckpt-000030.bin (step 30, from ") || !strings.Contains(logged(), "is newer than ckpt-000010.bin here (step 10)") {
		t.Errorf("the newer checkpoint was not named:\n%s", logged())
	}
	// Back on the first machine, whose newest (40's, from the snapshot
	// machine) it lacks: it pulls that too; run again, it pulls nothing.
	os.Remove(h.log)
	setTrainerEnv(t, 34, "0", 40)
	pullsOnceThenNothing(t, func() Config { return h.config(first, h.b) }, "is newer than ckpt-000030.bin here")
}

// pullsOnceThenNothing runs the command twice with config: the first run
// pulls the store's newer checkpoint, saying newer, and the second pulls
// nothing.
func pullsOnceThenNothing(t *testing.T, config func() Config, newer string) {
	t.Helper()
	for i, want := range []string{newer, ""} {
		cfg := config()
		logged := captureLog(&cfg)
		sup, _ := New(cfg)
		if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
			t.Fatal(ex, err)
		}
		if got := logged(); (want == "") == strings.Contains(got, "pulling") || !strings.Contains(got, want) {
			t.Errorf("run %d on the first machine:\n%s", i, got)
		}
	}
}

// snapshotOf copies the named files of dir, with their modification
// times, to a new directory, as a disk snapshot or image keeps them.
func snapshotOf(t *testing.T, dir string, names ...string) string {
	t.Helper()
	snap := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snap, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(snap, n), st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// A broken checkpoint with the name of the store's newest (a copy taken
// mid-write) is moved aside, kept, and the pulled one takes its name:
// frameworks find their checkpoint by name, so a pulled copy under another
// would be passed over for the broken one.
func TestResumeReplacesBrokenNamesake(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 21, "0", 20)
	sup, _ := New(h.config(t.TempDir(), h.b))
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	dir := t.TempDir()
	broken := filepath.Join(dir, "ckpt-000020.bin")
	if err := os.WriteFile(broken, []byte("half a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(broken, os.O_WRONLY|os.O_APPEND, 0) // still being written
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg := h.config(dir, h.b)
	seen := filepath.Join(t.TempDir(), "seen")
	// The command reads its checkpoint by name, as frameworks do.
	cfg.Cmd = []string{"sh", "-c", `head -c 8 "$GPURENT_CKPT_DIR/ckpt-000020.bin" > "$1"`, "sh", seen}
	logged := captureLog(&cfg)
	sup, _ = New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	if b, _ := os.ReadFile(seen); string(b) != "step 20\n" {
		t.Errorf("the command read %q from ckpt-000020.bin, want the pulled checkpoint's \"step 20\"\n%s", b, logged())
	}
	aside, _ := filepath.Glob(filepath.Join(dir, ".gpurent-incomplete-ckpt-000020.bin-*"))
	if len(aside) != 1 {
		t.Fatalf("moved aside: %q\n%s", aside, logged())
	}
	if b, _ := os.ReadFile(aside[0]); string(b) != "half a checkpoint" {
		t.Errorf("the broken checkpoint was not kept: %q", b)
	}
	if !strings.Contains(logged(), "is not a complete checkpoint: moved it to "+aside[0]) {
		t.Errorf("the move was not said:\n%s", logged())
	}
}

func TestCrashLoopStops(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 1, "1", 100) // crashes on its first step, every time
	cfg := h.config(t.TempDir(), h.b)
	cfg.CrashLoop = 3
	events := captureEvents(&cfg)
	sup, _ := New(cfg)
	start := time.Now()
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 1 || !strings.Contains(ex.Reason.String(), "crash loop") {
		t.Errorf("%+v %v", ex, err)
	}
	// The start, then a restart for each failure but the last (the run
	// ends there, and its end is the caller's to tell).
	if got := events(); !slices.Equal(kinds(got), []string{"start", "restart", "restart"}) ||
		!strings.HasPrefix(got[0], "start: started "+os.Args[0]+" (pid ") || !strings.HasSuffix(got[0], "), from the beginning") ||
		got[2] != "restart: the command failed (exit status 3); restart 2 of 50" {
		t.Errorf("events %q", got)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

// TestStraysEndedBeforeRestart: what a failed command left running in its
// process group (a rank that outlived rank 0's crash, holding GPU memory)
// is stopped before the restart, with SIGKILL for what ignores SIGTERM.
func TestStraysEndedBeforeRestart(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(t.TempDir(), h.b)
	cfg.MaxRestarts = 1
	cfg.Grace = 300 * time.Millisecond
	pids := filepath.Join(t.TempDir(), "pids")
	cfg.Cmd = []string{"sh", "-c", `sleep 60 & echo $! >> "$1"; sh -c 'trap "" TERM; exec sleep 61' & echo $! >> "$1"; exit 3`, "sh", pids}
	// Files, as a terminal is: with a pipe, Wait would wait for the
	// strays, which hold its write end.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	cfg.Stdout, cfg.Stderr = null, null
	logged := captureLog(&cfg)
	sup, _ := New(cfg)
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 1 {
		t.Fatalf("%+v %v", ex, err)
	}
	b, _ := os.ReadFile(pids)
	left := strings.Fields(string(b))
	if len(left) != 4 {
		t.Fatalf("strays started: %q, want two per start", left)
	}
	for _, p := range left {
		stat, err := os.ReadFile("/proc/" + p + "/stat")
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); err == nil && len(f) > 0 && f[0] != "Z" {
			t.Errorf("stray %s still runs: %s", p, stat)
			syscall.Kill(atoi(p), syscall.SIGKILL)
		}
	}
	if n := strings.Count(logged(), "the command left 2 processes running (pid "); n != 2 {
		t.Errorf("the strays were named %d times, want once per failure:\n%s", n, logged())
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestStallRestarts: a command that stops making checkpoints (--stall),
// or stops printing (--silence), is taken to hang, stopped and restarted;
// hanging again without a new checkpoint, it ends in the crash-loop rule.
func TestStallRestarts(t *testing.T) {
	for _, c := range []struct {
		rule, why string
		set       func(*Config)
	}{
		{"--stall 1s", "no new checkpoint for ", func(cfg *Config) { cfg.Stall = time.Second }},
		{"--silence 1s", "no output and no new checkpoint for ", func(cfg *Config) {
			out := &stampWriter{}
			cfg.Stdout, cfg.Stderr, cfg.Output, cfg.Silence = out, out, out.last, time.Second
		}},
	} {
		h := newHarness(t)
		cfg := h.config(t.TempDir(), h.b)
		c.set(&cfg) // 1 s: well above the start and first save, even under -race on a loaded machine
		cfg.CrashLoop = 2
		// One checkpoint on the first start, then it prints twice and hangs, every start.
		cfg.Cmd = []string{"sh", "-c", `if [ "$GPURENT_RESTART_COUNT" = 0 ]; then echo x > "$GPURENT_CKPT_DIR/ckpt-000001.bin"; fi; echo step 1; sleep 0.2; echo step 2; exec sleep 60`}
		events := captureEvents(&cfg)
		start := time.Now()
		sup, _ := New(cfg)
		ex, err := sup.Run(context.Background(), nil)
		if err != nil || ex.Code != 1 || !strings.Contains(ex.Reason.String(), "crash loop: the command failed 2 times in a row (stalled: "+c.why) {
			t.Fatalf("%s: %+v %v", c.rule, ex, err)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("%s: took %v", c.rule, d)
		}
		got := events()
		if want := []string{"start", "stall", "restart", "stall", "restart", "stall"}; !slices.Equal(kinds(got), want) {
			t.Errorf("%s: events %q, want kinds %v", c.rule, got, want)
		} else if !strings.Contains(got[1], "("+c.rule+"): restarting the command from its newest checkpoint") {
			t.Errorf("%s: stall event %q", c.rule, got[1])
		}
		if len(h.committedSteps()) != 1 {
			t.Errorf("%s: committed %v, want the one checkpoint", c.rule, h.committedSteps())
		}
		var b strings.Builder
		sup.Metrics.WriteTo(&b)
		if !strings.Contains(b.String(), "\ngpurent_stalls_total 3\n") || sup.Metrics.lastCheckpoint.Load() == 0 {
			t.Errorf("%s: metrics:\n%s", c.rule, b.String())
		}
	}
}

// TestStallLimit: without --stall, a stall is three times the usual
// interval between checkpoints of one start, 30 min at least, and unknown
// until three intervals are seen.
func TestStallLimit(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var p progress
	p.started(t0)
	sig := 0
	at := func(d time.Duration) {
		sig++
		p.saw(Candidate{Path: "/c", Size: int64(sig), ModTime: t0}, t0.Add(d))
	}
	at(2 * time.Hour) // the first checkpoint of a start: no interval yet
	at(2*time.Hour + 20*time.Minute)
	at(2*time.Hour + 40*time.Minute)
	if l := p.limit(0); l != 0 {
		t.Errorf("two intervals: limit %v, want none", l)
	}
	at(3*time.Hour + 10*time.Minute)
	if l := p.limit(0); l != time.Hour { // median of 20, 20, 30 min, times 3
		t.Errorf("limit %v, want 1h", l)
	}
	if l := p.limit(10 * time.Minute); l != 10*time.Minute {
		t.Errorf("--stall 10m: limit %v", l)
	}
	p.gaps = []time.Duration{time.Minute, time.Minute, time.Minute}
	if l := p.limit(0); l != 30*time.Minute {
		t.Errorf("checkpoints every minute: limit %v, want the 30 min floor", l)
	}
	// The same checkpoint seen again is no progress.
	before := p.at
	p.saw(Candidate{Path: "/c", Size: int64(sig), ModTime: t0}, t0.Add(5*time.Hour))
	if p.at != before {
		t.Error("an unchanged checkpoint counted as progress")
	}
}

// stampWriter keeps when it was last written to: the command's output as
// gpurent run --log sees it (runlog.Output.LastOutput).
type stampWriter struct{ at atomic.Int64 }

func (w *stampWriter) Write(b []byte) (int, error) {
	w.at.Store(time.Now().UnixNano())
	return len(b), nil
}

func (w *stampWriter) last() time.Time {
	if ns := w.at.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// TestSilenceNotWhilePrinting: a command that goes on printing, though it
// writes no checkpoint, is not taken to hang by --silence.
func TestSilenceNotWhilePrinting(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(t.TempDir(), h.b)
	out := &stampWriter{}
	cfg.Stdout, cfg.Stderr, cfg.Output = out, out, out.last
	// Printing every 200 ms for 3 s: never silent for 2 s (ten times
	// the gap, for a loaded machine).
	cfg.Silence = 2 * time.Second
	cfg.Cmd = []string{"sh", "-c", `for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo step $i; sleep 0.2; done`}
	events := captureEvents(&cfg)
	sup, _ := New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatalf("a command printing all along: %+v %v (events %q)", ex, err, events())
	}
	if k := kinds(events()); slices.Contains(k, "stall") {
		t.Errorf("a command printing all along was taken to hang: %q", events())
	}
}

// TestSilenceLimit: without --silence, silence is a stall once the command
// has printed ten times, at three times its longest silence between
// outputs of one start and 30 min at least; output from before a start is
// the previous command's.
func TestSilenceLimit(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var p progress
	p.started(t0)
	p.heard(time.Time{}) // nothing printed yet
	for i := 1; i <= 9; i++ {
		p.heard(t0.Add(time.Duration(i) * time.Second))
	}
	if l := p.silenceLimit(0); l != 0 {
		t.Errorf("nine outputs: limit %v, want none", l)
	}
	p.heard(t0.Add(9 * time.Second)) // the same output seen again
	if p.outs != 9 {
		t.Errorf("an output seen twice counted: %d", p.outs)
	}
	p.heard(t0.Add(20 * time.Minute)) // an 11 min 51 s evaluation
	if l := p.silenceLimit(0); l != 3*(20*time.Minute-9*time.Second) {
		t.Errorf("limit %v, want three times the longest silence", l)
	}
	if l := p.silenceLimit(5 * time.Minute); l != 5*time.Minute {
		t.Errorf("--silence 5m: limit %v", l)
	}
	var q progress
	q.started(t0)
	for i := 1; i <= 10; i++ {
		q.heard(t0.Add(time.Duration(i) * time.Second))
	}
	if l := q.silenceLimit(0); l != 30*time.Minute {
		t.Errorf("printing every second: limit %v, want the 30 min floor", l)
	}
	// A restart: the dying command's last output is not the new one's,
	// and the silence counts from the start.
	t1 := t0.Add(time.Hour)
	q.started(t1)
	q.heard(t0.Add(10 * time.Second))
	if !q.outAt.IsZero() || !q.silentSince().Equal(t1) {
		t.Errorf("after a restart: out %v, silent since %v", q.outAt, q.silentSince())
	}
	q.heard(t1.Add(time.Hour)) // the first output of a start is no interval
	if q.longest != time.Second {
		t.Errorf("longest silence %v, want 1s: the gap across a restart counted", q.longest)
	}
	// A new checkpoint is life too.
	q.saw(Candidate{Path: "/c", Size: 1, ModTime: t0}, t1.Add(2*time.Hour))
	if !q.silentSince().Equal(t1.Add(2 * time.Hour)) {
		t.Errorf("silent since %v, want the new checkpoint's time", q.silentSince())
	}
}

// TestSilenceWarns: without --silence, a silence past the limit is said
// once, as a warning and a stall event, and said again only after the
// command printed again; the checkpoint rule, seeing the same hang, says
// nothing more; --silence then acts though a warning was given.
func TestSilenceWarns(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(t.TempDir(), h.b)
	var last time.Time
	cfg.Output = func() time.Time { return last }
	logged := captureLog(&cfg)
	events := captureEvents(&cfg)
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sup.child.Store(1) // judged as if a command ran
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	sup.progress.started(t0)
	for i := 1; i <= 10; i++ {
		last = t0.Add(time.Duration(i) * time.Minute)
		sup.checkStall(last)
	}
	// Checkpoints every 20 min are known: three intervals, a limit of 1 h.
	sup.progress.gaps = []time.Duration{20 * time.Minute, 20 * time.Minute, 20 * time.Minute}
	sup.progress.at = t0.Add(10 * time.Minute)
	sup.checkStall(last.Add(29 * time.Minute))
	if e := events(); len(e) != 0 {
		t.Fatalf("29 min of silence: %q", e)
	}
	sup.checkStall(last.Add(30 * time.Minute))
	sup.checkStall(last.Add(31 * time.Minute))
	e := events()
	if len(e) != 1 || !strings.HasPrefix(e[0], "stall: no output and no new checkpoint for 30m0s, while it never went 1m0s without printing until now: the command may hang") {
		t.Fatalf("events %q, want one output stall", e)
	}
	if !strings.Contains(logged(), "warning: no output and no new checkpoint for 30m0s") {
		t.Errorf("log:\n%s", logged())
	}
	sup.checkStall(last.Add(3 * time.Hour)) // the checkpoint rule sees the same hang
	if e := events(); len(e) != 1 {
		t.Errorf("one hang said twice: %q", e)
	}
	if sup.Metrics.stalls.Load() != 1 || sup.Metrics.lastOutput.Load() != last.Unix() {
		t.Errorf("stalls %d, last output %d", sup.Metrics.stalls.Load(), sup.Metrics.lastOutput.Load())
	}
	// It prints again, then hangs again: said again.
	last = last.Add(3*time.Hour + time.Minute)
	sup.checkStall(last)
	sup.checkStall(last.Add(3 * time.Hour))
	if e := events(); len(e) != 2 {
		t.Errorf("a second hang: events %q", e)
	}
	// --silence acts though the warning was given.
	sup.cfg.Silence = 2 * time.Hour
	sup.checkStall(last.Add(3*time.Hour + time.Second))
	e = events()
	if len(e) != 3 || !strings.Contains(e[2], "(--silence 2h0m0s): restarting the command") {
		t.Errorf("events %q, want --silence to act", e)
	}
	select {
	case why := <-sup.stalled:
		if !strings.HasPrefix(why.String(), "no output and no new checkpoint for 3h0m1s") {
			t.Errorf("stalled: %q", why)
		}
	default:
		t.Error("the command was not stopped")
	}
}

// A command that saves its checkpoints below --ckpt-dir (Lightning's
// default) is warned about, since nothing is uploaded, and the exit says
// no checkpoint was written instead of a bare "finished".
func TestCheckpointsDeeperAreNamed(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	cfg := h.config(dir, h.b)
	cfg.Glob = "*.ckpt"
	nested := filepath.Join(dir, "lightning_logs", "version_0", "checkpoints")
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf("mkdir -p %q && echo x > %q/epoch=0-step=5.ckpt", nested, nested)}
	logged := captureLog(&cfg)
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 0 || ex.Reason.String() != "the command finished; no complete checkpoint was written" {
		t.Errorf("%+v %v", ex, err)
	}
	if l := logged(); strings.Count(l, "warning: nothing in") != 1 || !strings.Contains(l, filepath.Join(nested, "epoch=0-step=5.ckpt")+" is further down") ||
		!strings.Contains(l, "ModelCheckpoint(dirpath=...)") {
		t.Errorf("log:\n%s", l)
	}
	// A checkpoint where gpurent looks: no warning, and the exit says it
	// is in the store. (The first run's file goes: written a moment ago,
	// it is within the margin for coarse file times.)
	if err := os.RemoveAll(filepath.Join(dir, "lightning_logs")); err != nil {
		t.Fatal(err)
	}
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf("echo x > %q/epoch=1-step=9.ckpt", dir)}
	logged = captureLog(&cfg)
	sup, _ = New(cfg)
	ex, err = sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 0 || !regexp.MustCompile(`^the command finished; newest complete checkpoint uploaded \(epoch=1-step=9\.ckpt, as \d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}\)$`).MatchString(ex.Reason.String()) {
		t.Errorf("%+v %v", ex, err)
	}
	if l := logged(); strings.Contains(l, "warning: nothing in") {
		t.Errorf("log:\n%s", l)
	}
}

// A command that dies right after writing a checkpoint is restarted from
// that checkpoint, not an older one, though its quiet period had not passed
// when the command died.
func TestRestartWaitsForTheNewestCheckpoint(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 3, "0", 12)
	t.Setenv("FAKE_CRASH_AFTER", "10")
	t.Setenv("FAKE_LOG", h.log)
	cfg := h.config(t.TempDir(), h.b)
	cfg.Quiet = 1500 * time.Millisecond
	logged := captureLog(&cfg)
	sup, _ := New(cfg)
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 0 {
		t.Fatalf("%+v %v", ex, err)
	}
	if got := h.resumeSteps(); len(got) != 2 || got[0] != 0 || got[1] != 10 {
		t.Errorf("resumed from steps %v, want [0 10]: %v", got, h.resumes())
	}
	if got := logged(); !strings.Contains(got, "once ckpt-000010.bin has been quiet for 1.5s") {
		t.Errorf("the wait was not said:\n%s", got)
	}
}

// At start, a checkpoint written moments ago (gpurent killed and started
// again) is waited for, not passed over for an older one in the store.
func TestStartWaitsForAFreshCheckpoint(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 4, "0", 12)
	t.Setenv("FAKE_LOG", h.log)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	old := filepath.Join(t.TempDir(), "ckpt-000005.bin")
	if err := os.WriteFile(old, checkpointBytes(5, rng), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store(h.b).Push(context.Background(), old, "trial"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ckpt-000010.bin"), checkpointBytes(10, rng), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := h.config(dir, h.b)
	cfg.Quiet = time.Second
	sup, _ := New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatalf("%+v %v", ex, err)
	}
	if got := h.resumeSteps(); len(got) != 1 || got[0] != 10 {
		t.Errorf("resumed from steps %v, want [10]: %v", got, h.resumes())
	}
}

func TestStopSignalForwarded(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 2, "0", 100000)
	dir := t.TempDir()
	sup, _ := New(h.config(dir, h.b))
	stop := make(chan os.Signal, 1)
	go func() {
		// Stop once the trainer has written a checkpoint (a race-detector
		// build starts slowly), or after 20 s.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if m, _ := filepath.Glob(filepath.Join(dir, "ckpt-*.bin")); len(m) > 0 {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		stop <- syscall.SIGTERM
	}()
	ex, err := sup.Run(context.Background(), stop)
	if err != nil || ex.Code != 128+15 {
		t.Errorf("%+v %v", ex, err)
	}
	if len(h.committedSteps()) == 0 {
		t.Error("the newest checkpoint was not uploaded on stop")
	}
}

// A hangup (the terminal closed) stops the command with SIGTERM, which
// trainers handle, not SIGHUP, and the exit says what reached the store:
// with no store, that nothing did.
func TestHangupStopsWithSIGTERM(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(t.TempDir(), "signal")
	script := `trap 'echo TERM > "$GOT"; exit 0' TERM; trap 'echo HUP > "$GOT"; exit 0' HUP; echo 1 > "$GPURENT_CKPT_DIR/ckpt-1"; echo up > "$GOT.up"; while :; do sleep 0.05; done`
	t.Setenv("GOT", got)
	cfg := Config{Cmd: []string{"sh", "-c", script}, CkptDir: dir, Run: "trial", MaxRestarts: 1, CrashLoop: 3,
		Backoff: 10 * time.Millisecond, Grace: 5 * time.Second, Poll: 20 * time.Millisecond, Quiet: 50 * time.Millisecond,
		Stdout: io.Discard, Stderr: io.Discard, Log: func(string, ...any) {}}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan os.Signal, 1)
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(got + ".up"); err == nil {
				break
			}
		}
		stop <- syscall.SIGHUP
	}()
	ex, err := sup.Run(context.Background(), stop)
	if err != nil || ex.Code != 128+1 {
		t.Errorf("%+v %v", ex, err)
	}
	if b, _ := os.ReadFile(got); strings.TrimSpace(string(b)) != "TERM" {
		t.Errorf("the command got %q, want TERM", b)
	}
	if !strings.Contains(ex.Reason.String(), "no store given: checkpoints are only in "+dir) {
		t.Errorf("reason %q", ex.Reason.String())
	}
}

// failingBackend fails every write until healed.
type failingBackend struct {
	store.Backend
	healed atomic.Bool
}

func (f *failingBackend) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if !f.healed.Load() {
		return 0, errors.New("503 Service Unavailable")
	}
	return f.Backend.Put(ctx, key, fill)
}

// rotatingBackend deletes the checkpoint being uploaded as its first
// object is stored, as a trainer keeping one checkpoint deletes the last
// when it saves the next, for the first n uploads. Only an upload's first
// object deletes: a later one of the same upload, put in parallel, may
// come after the command has saved the next checkpoint, which is not
// this upload's to delete.
type rotatingBackend struct {
	store.Backend
	dir  string
	mu   sync.Mutex // uploads put files in parallel
	n    int
	seen map[string]bool // uploads (data/<id>/) already begun
}

func (r *rotatingBackend) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	r.mu.Lock()
	_, rest, isData := strings.Cut(key, "/data/")
	id, _, _ := strings.Cut(rest, "/")
	first := isData && !r.seen[id]
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[id] = true
	if es, _ := os.ReadDir(r.dir); r.n > 0 && len(es) > 0 && first {
		r.n--
		for _, e := range es {
			os.RemoveAll(filepath.Join(r.dir, e.Name()))
		}
	}
	r.mu.Unlock()
	return r.Backend.Put(ctx, key, fill)
}

// A checkpoint deleted by the command while it was uploaded is said to be
// so, not reported as a failure of the store; two in a row bring the
// advice to keep more of them.
func TestCheckpointRotatedDuringUpload(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	rb := &rotatingBackend{Backend: h.b, dir: dir, n: 2}
	cfg := h.config(dir, rb)
	cfg.Glob = "step-*"
	// Each save waits (20 s at most) until the upload has deleted it, so
	// that the next is not saved before: however slow the machine, the
	// first two are overtaken and the third is not.
	save := `mkdir %[1]q/step-%[2]d && echo a%[2]d > %[1]q/step-%[2]d/a && echo b%[2]d > %[1]q/step-%[2]d/b`
	rotated := `; i=0; while [ -e %[1]q/step-%[2]d ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf(save+rotated, dir, 1) + "; " + fmt.Sprintf(save+rotated, dir, 2) + "; " + fmt.Sprintf(save, dir, 3) + "; sleep 0.3"}
	logged := captureLog(&cfg)
	sup, _ := New(cfg)
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	l := logged()
	if strings.Count(l, "was deleted while it was uploaded") != 2 || strings.Count(l, "warning: 2 checkpoints in a row were deleted") != 1 ||
		strings.Contains(l, "upload of") || sup.Metrics.uploadErrors.Load() != 0 {
		t.Errorf("log:\n%s", l)
	}
	if !strings.Contains(ex.Reason.String(), "newest complete checkpoint uploaded") {
		t.Errorf("exit %+v\n%s", ex, l)
	}
}

// gatedBackend holds the first checkpoint's upload until dir holds n
// entries, as a slow link would while the command saves on.
type gatedBackend struct {
	store.Backend
	dir  string
	n    int
	once sync.Once
}

func (g *gatedBackend) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	if strings.Contains(key, "/data/") {
		g.once.Do(func() {
			for i := 0; i < 400; i++ {
				es, _ := os.ReadDir(g.dir)
				saved := 0
				for _, e := range es {
					if !strings.HasPrefix(e.Name(), ".") { // not gpurent's own lock
						saved++
					}
				}
				if saved >= g.n {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // past the quiet period: complete
		})
	}
	return g.Backend.Put(ctx, key, fill)
}

// Two checkpoints saved while one was uploaded: the one between them never
// reaches the store, and that is said once.
func TestUploadsFallBehind(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	cfg := h.config(dir, &gatedBackend{Backend: h.b, dir: dir, n: 3})
	cfg.Glob = "step-*"
	save := `echo %[2]d > %[1]q/step-%[2]d; sleep 0.3`
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf(save, dir, 1) + "; " + fmt.Sprintf(save, dir, 2) + "; " + fmt.Sprintf(save, dir, 3) + "; sleep 1"}
	logged := captureLog(&cfg)
	sup, _ := New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	l := logged()
	if strings.Count(l, "warning: uploads fall behind the checkpoints: step-2, step-3 were saved while step-1 was uploaded") != 1 ||
		!strings.Contains(l, "so the newest goes next and step-2 never reaches the store") {
		t.Errorf("log:\n%s", l)
	}
	ms, _ := h.store(h.b).List(context.Background(), "trial")
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	if strings.Join(names, " ") != "step-1 step-3" {
		t.Errorf("committed %v", names)
	}
}

// slowBackend takes d over each object it stores.
type slowBackend struct {
	store.Backend
	d time.Duration
}

func (b slowBackend) Put(ctx context.Context, key string, fill func(io.Writer) error) (int64, error) {
	time.Sleep(b.d)
	return b.Backend.Put(ctx, key, fill)
}

// An upload longer than the watched cloud's shortest preemption notice is
// said once: a checkpoint saved on the notice cannot reach the store.
func TestUploadLongerThanTheNotice(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		notice time.Duration
		want   int
	}{{50 * time.Millisecond, 1}, {time.Minute, 0}, {0, 0}} {
		cfg := h.config(dir, slowBackend{h.b, 60 * time.Millisecond})
		cfg.Cloud, cfg.Notice, cfg.Glob = "gcp", tc.notice, "step-*"
		save := `echo %[2]d%[3]v > %[1]q/step-%[2]d; sleep 0.3`
		cfg.Cmd = []string{"sh", "-c", fmt.Sprintf(save, dir, 1, tc.notice) + "; " + fmt.Sprintf(save, dir, 2, tc.notice)}
		logged := captureLog(&cfg)
		sup, _ := New(cfg)
		if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
			t.Fatal(ex, err)
		}
		if l := logged(); strings.Count(l, "longer than the 50ms notice a gcp preemption can give") != tc.want || strings.Count(l, "committed") < 1 {
			t.Errorf("notice %v: log:\n%s", tc.notice, l)
		}
	}
}

func TestStoreDownForAWhile(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 3, "0", 60)
	t.Setenv("FAKE_LOG", h.log)
	fb := &failingBackend{Backend: h.b}
	cfg := h.config(t.TempDir(), fb)
	cfg.StoreAlarm = 50 * time.Millisecond
	events := captureEvents(&cfg)
	sup, _ := New(cfg)
	go func() {
		// Heal once the failing store was told of (or after 20 s).
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !slices.Contains(kinds(events()), "store_failing"); {
			time.Sleep(20 * time.Millisecond)
		}
		fb.healed.Store(true)
	}()
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	if steps := h.committedSteps(); len(steps) == 0 || steps[len(steps)-1] != 60 {
		t.Errorf("committed %v", steps)
	}
	if sup.Metrics.uploadErrors.Load() == 0 {
		t.Error("no upload failed while the store was down")
	}
	// Told once when uploads had failed for StoreAlarm, once when they
	// worked again.
	if got := events(); !slices.Equal(kinds(got), []string{"start", "store_failing", "store_ok"}) ||
		!strings.Contains(got[1], "no checkpoint has reached the store for ") || !strings.Contains(got[2], "uploads work again after ") {
		t.Errorf("events %q", got)
	}
}

// A command that finished while the store stayed down ends with
// ExitNotStored, not 0: `gpurent run ... && shutdown` must not release a
// machine that holds the only copy of the last checkpoint. A command that
// gave up still says where its checkpoint is.
func TestFinishedButNotStored(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	cfg := h.config(dir, &failingBackend{Backend: h.b})
	cfg.Glob = "step-*"
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf("echo 1 > %q/step-1.pt", dir)}
	sup, _ := New(cfg)
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != ExitNotStored || !strings.Contains(ex.Reason.String(), "the newest checkpoint is NOT in the store") {
		t.Errorf("%+v %v", ex, err)
	}
	cfg.Cmd = []string{"sh", "-c", fmt.Sprintf("echo 2 > %q/step-2.pt; exit 1", dir)}
	cfg.MaxRestarts = 0
	sup, _ = New(cfg)
	ex, err = sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 1 || !strings.HasSuffix(ex.Reason.String(), "allowed are used up; the newest checkpoint is NOT in the store (its upload failed, see above): it is only in "+dir) {
		t.Errorf("%+v %v", ex, err)
	}
}

// Preemption on each cloud's fake metadata server.
func TestPreemption(t *testing.T) {
	var notice atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds") == "" {
			w.WriteHeader(400)
			return
		}
		io.WriteString(w, "tok")
	})
	mux.HandleFunc("GET /latest/meta-data/spot/instance-action", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-aws-ec2-metadata-token") != "tok" {
			w.WriteHeader(401)
			return
		}
		if !notice.Load() {
			w.WriteHeader(404)
			return
		}
		fmt.Fprintf(w, `{"action": "terminate", "time": %q}`, time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339))
	})
	mux.HandleFunc("GET /computeMetadata/v1/instance/preempted", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			w.WriteHeader(403)
			return
		}
		if notice.Load() {
			io.WriteString(w, "TRUE")
		} else {
			io.WriteString(w, "FALSE")
		}
	})
	mux.HandleFunc("GET /metadata/scheduledevents", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata") != "true" {
			w.WriteHeader(400)
			return
		}
		if !notice.Load() {
			io.WriteString(w, `{"DocumentIncarnation": 1, "Events": []}`)
			return
		}
		// Another VM of the scale set is evicted first: not this one's notice.
		fmt.Fprintf(w, `{"DocumentIncarnation": 2, "Events": [
			{"EventId": "E0", "EventType": "Preempt", "ResourceType": "VirtualMachine", "Resources": ["spot_7"], "EventStatus": "Scheduled", "NotBefore": %[1]q},
			{"EventId": "E1", "EventType": "Preempt", "ResourceType": "VirtualMachine", "Resources": ["spot_3"], "EventStatus": "Scheduled", "NotBefore": %[1]q}]}`,
			time.Now().Add(30*time.Second).UTC().Format(time.RFC1123))
	})
	mux.HandleFunc("GET /metadata/instance/compute/name", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata") != "true" || r.URL.Query().Get("format") != "text" {
			w.WriteHeader(400)
			return
		}
		io.WriteString(w, "spot_3")
	})
	var approved atomic.Value
	mux.HandleFunc("POST /metadata/scheduledevents", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Metadata") != "true" {
			w.WriteHeader(400)
			return
		}
		approved.Store(string(b))
	})
	mux.HandleFunc("GET /computeMetadata/v1/instance/id", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			w.WriteHeader(403)
			return
		}
		io.WriteString(w, "4520031799277581759")
	})
	mux.HandleFunc("GET /tencent/latest/meta-data/instance-id", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ins-2pz8d9r1") })
	mux.HandleFunc("GET /tencent/latest/meta-data/spot/termination-time", func(w http.ResponseWriter, r *http.Request) {
		if !notice.Load() {
			w.WriteHeader(404)
			return
		}
		io.WriteString(w, time.Now().Add(2*time.Minute).In(time.FixedZone("CST", 8*3600)).Format(time.DateTime))
	})
	srv := httptest.NewServer(mux) // 127.0.0.1
	defer srv.Close()
	// Alibaba's token path is AWS's, with other headers: a server apart.
	ali := http.NewServeMux()
	ali.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-aliyun-ecs-metadata-token-ttl-seconds") == "" {
			w.WriteHeader(400)
			return
		}
		io.WriteString(w, "ali-tok")
	})
	ali.HandleFunc("GET /latest/meta-data/instance/spot/termination-time", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-aliyun-ecs-metadata-token") != "ali-tok" {
			w.WriteHeader(401)
			return
		}
		if !notice.Load() {
			w.WriteHeader(404)
			return
		}
		io.WriteString(w, time.Now().Add(5*time.Minute).UTC().Format(time.RFC3339))
	})
	aliSrv := httptest.NewServer(ali) // 127.0.0.1
	defer aliSrv.Close()
	for _, tc := range []struct {
		cloud string
		p     Preempter
	}{
		{"aws", preempt.AWS(srv.URL, 20*time.Millisecond)},
		{"gcp", preempt.GCP(srv.URL, 20*time.Millisecond)},
		{"azure", preempt.Azure(srv.URL, 20*time.Millisecond)},
		{"alibaba", preempt.Alibaba(aliSrv.URL, 20*time.Millisecond)},
		{"tencent", preempt.Tencent(srv.URL+"/tencent", 20*time.Millisecond)},
	} {
		t.Run(tc.cloud, func(t *testing.T) {
			notice.Store(false)
			h := newHarness(t)
			setTrainerEnv(t, 5, "0", 1000000)
			t.Setenv("FAKE_EVERY", "1000000") // no periodic checkpoints: only the one asked for
			t.Setenv("FAKE_LOG", h.log)
			cfg := h.config(t.TempDir(), h.b)
			cfg.Preemption = tc.p
			events := captureEvents(&cfg)
			sup, _ := New(cfg)
			go func() {
				// The notice comes once the trainer runs (its SIGUSR1
				// handler is in place), or after 20 s.
				for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if b, _ := os.ReadFile(h.log); strings.Contains(string(b), "resume") {
						break
					}
				}
				notice.Store(true)
			}()
			ex, err := sup.Run(context.Background(), nil)
			if err != nil || ex.Code != ExitStopped || !strings.Contains(ex.Reason.String(), "preempted ("+tc.cloud+")") {
				t.Fatalf("%+v %v", ex, err)
			}
			if !strings.Contains(strings.Join(h.resumes(), " "), "checkpoint-now") {
				t.Error("the trainer was not asked for a checkpoint")
			}
			if got := events(); !slices.Equal(kinds(got), []string{"start", "notice"}) || !strings.Contains(got[1], "from "+tc.cloud) {
				t.Errorf("events %q, want the start and the notice from %s", got, tc.cloud)
			}
			if len(h.committedSteps()) != 1 {
				t.Errorf("committed %v, want the checkpoint written on notice", h.committedSteps())
			}
			// Azure is told this VM may go, once its checkpoint is safe.
			if got, _ := approved.Load().(string); tc.cloud == "azure" && got != `{"StartRequests":[{"EventId":"E1"}]}` {
				t.Errorf("approval %q, want event E1's", got)
			}
		})
	}
}

// At Until (a budget spent) the command is stopped as on a notice: asked
// for a checkpoint, which is uploaded, then stopped; the run exits 75 with
// UntilWhy, and the "budget" event says so. A command that had crashed
// and waits for its restart is not started again.
func TestUntilStopsTheCommand(t *testing.T) {
	h := newHarness(t)
	setTrainerEnv(t, 5, "0", 1000000)
	t.Setenv("FAKE_EVERY", "1000000") // no periodic checkpoints: only the one asked for
	t.Setenv("FAKE_LOG", h.log)
	cfg := h.config(t.TempDir(), h.b)
	// Far enough ahead for a race-detector build of the trainer to be
	// running with its SIGUSR1 handler in place.
	cfg.Until, cfg.UntilWindow, cfg.UntilWhy = time.Now().Add(3*time.Second), 20*time.Second, i18n.Plain("the budget of 5.00 USD is spent")
	events := captureEvents(&cfg)
	logged := captureLog(&cfg)
	sup, _ := New(cfg)
	began := time.Now()
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != ExitStopped || !strings.HasPrefix(ex.Reason.String(), "the budget of 5.00 USD is spent: newest complete checkpoint uploaded (") {
		t.Fatalf("%+v %v\n%s", ex, err, logged())
	}
	if took := time.Since(began); took < 3*time.Second || took > 20*time.Second {
		t.Errorf("stopped after %v, want soon after Until (3 s), well within the window", took)
	}
	if !strings.Contains(strings.Join(h.resumes(), " "), "checkpoint-now") || len(h.committedSteps()) != 1 {
		t.Errorf("the trainer's checkpoint on demand: log %v, committed %v", h.resumes(), h.committedSteps())
	}
	if got := events(); !slices.Equal(kinds(got), []string{"start", "budget"}) || !strings.Contains(got[1], "the budget of 5.00 USD is spent: saving a checkpoint") {
		t.Errorf("events %q", got)
	}
	if sup.Metrics.Snapshot(time.Now()).Notices != 0 {
		t.Error("a budget counted as a preemption notice")
	}

	// Between restarts: the command fails at once, restarts are 10 s
	// apart, and Until comes in the first wait.
	h = newHarness(t)
	cfg = h.config(t.TempDir(), h.b)
	cfg.Cmd = []string{"false"}
	cfg.Backoff = 10 * time.Second
	cfg.Until, cfg.UntilWindow, cfg.UntilWhy = time.Now().Add(500*time.Millisecond), time.Second, i18n.Plain("the budget is spent")
	events = captureEvents(&cfg)
	sup, _ = New(cfg)
	ex, err = sup.Run(context.Background(), nil)
	if err != nil || ex.Code != ExitStopped || ex.Reason.String() != "the budget is spent, between restarts: no complete checkpoint was written; run the same gpurent run again to go on" {
		t.Fatalf("%+v %v", ex, err)
	}
	if got := kinds(events()); !slices.Equal(got, []string{"start", "restart", "budget"}) {
		t.Errorf("events %q", got)
	}
}

// TestFileEventsTriggerUpload: with the periodic scan an hour away, a
// Hugging Face checkpoint is committed within seconds because the file
// events started a scan. The command itself waits for the commit to show
// in the state file and fails if it does not.
func TestFileEventsTriggerUpload(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	cfg := h.config(dir, h.b)
	cfg.Poll, cfg.Glob, cfg.MaxRestarts = time.Hour, "", 0
	cfg.Log = t.Logf
	cfg.Cmd = []string{"sh", "-c", `sleep 0.3
mkdir -p "$GPURENT_CKPT_DIR/checkpoint-5"
head -c 100000 /dev/urandom > "$GPURENT_CKPT_DIR/checkpoint-5/model.safetensors"
echo '{"global_step": 5}' > "$GPURENT_CKPT_DIR/checkpoint-5/trainer_state.json"
for i in $(seq 100); do
  grep -q checkpoint-5 "$GPURENT_CKPT_DIR/.gpurent-run.json" 2>/dev/null && exit 0
  sleep 0.05
done
exit 1`}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 0 {
		t.Fatalf("the checkpoint was not committed while the command waited 5 s: %+v %v", ex, err)
	}
}

// tmpfs mounts a small tmpfs (root only) and unmounts it at the end.
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	testfs.Tmpfs(t, dir, size)
	return dir
}

// TestFullLocalDisk: the checkpoint directory's disk fills up. What was
// committed stays whole and restorable, the failing command stops as a
// crash loop whose message names the full disk, and a new machine whose
// disk cannot hold the checkpoint gets a clear error and no half checkpoint.
func TestFullLocalDisk(t *testing.T) {
	h := newHarness(t)
	dir := tmpfs(t, "3m")
	cfg := h.config(dir, h.b)
	cfg.CrashLoop = 3
	cfg.Log = t.Logf
	cfg.Cmd = []string{"sh", "-c", `i=$(ls "$GPURENT_CKPT_DIR" | grep -c '^ckpt-.*\.bin$')
while :; do
  i=$((i + 1)); sleep 0.2
  f="$GPURENT_CKPT_DIR/ckpt-$(printf %06d $i).bin"
  head -c 1000000 /dev/urandom > "$f.tmp" && mv "$f.tmp" "$f" || { rm -f "$f.tmp"; exit 1; }
done`}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 1 || !strings.Contains(ex.Reason.String(), "crash loop") || !strings.Contains(ex.Reason.String(), "is full") {
		t.Fatalf("%+v %v", ex, err)
	}
	steps := h.committedSteps()
	if len(steps) < 2 {
		t.Fatalf("committed %v: want the checkpoints that fit", steps)
	}
	st := h.store(h.b)
	ms, _ := st.List(context.Background(), "trial")
	for _, m := range ms {
		if _, err := st.Pull(context.Background(), "trial", m.ID, filepath.Join(t.TempDir(), "x")); err != nil {
			t.Errorf("%s does not restore: %v", m.Name, err)
		}
	}

	// A new machine with too small a disk: a clear error, nothing half-pulled.
	small := tmpfs(t, "512k")
	cfg = h.config(small, h.b)
	cfg.Cmd = []string{"true"}
	sup, _ = New(cfg)
	ex, err = sup.Run(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "free: make room or pull elsewhere (nothing was written)") {
		t.Fatalf("pull into a small disk: %+v %v", ex, err)
	}
	ents, _ := os.ReadDir(small)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".gpurent") {
			t.Errorf("left in the small disk: %s", e.Name())
		}
	}
}

// brokenReads is a store whose reads of the objects named fail: gone in
// the middle of a pull.
type brokenReads struct {
	store.Backend
	key string
}

func (b brokenReads) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if key == b.key {
		return nil, errors.New("connection reset by peer")
	}
	return b.Backend.GetRange(ctx, key, off, n)
}

func (b brokenReads) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if key == b.key {
		return nil, errors.New("connection reset by peer")
	}
	return b.Backend.Get(ctx, key)
}

// When the store's newer checkpoint cannot be pulled and the run goes on
// from the older one here, what the pull kept is removed: this run will
// not want it, and it would hold the disk unseen.
func TestResumeFromOlderDiscardsThePartialPull(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	newer := filepath.Join(t.TempDir(), "ckpt-000020")
	os.MkdirAll(newer, 0o755)
	for _, n := range []string{"a.bin", "b.bin", "c.bin"} {
		os.WriteFile(filepath.Join(newer, n), []byte("weights "+n), 0o644)
	}
	m, err := h.store(h.b).Push(ctx, newer, "trial")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	older := filepath.Join(dir, "ckpt-000010")
	os.MkdirAll(older, 0o755)
	os.WriteFile(filepath.Join(older, "a.bin"), []byte("old"), 0o644)
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(older, "a.bin"), past, past)
	os.Chtimes(older, past, past)
	cfg := h.config(dir, h.b)
	cfg.Glob = "ckpt-*"
	cfg.Store = store.New(&store.Retrying{Backend: brokenReads{Backend: h.b, key: m.Objects[len(m.Objects)-1].Key}, Base: time.Millisecond, Attempts: 2},
		store.Options{Grace: -1, Workers: 1, PullWait: time.Millisecond})
	cfg.Cmd = []string{"sh", "-c", `echo "resumed from $GPURENT_RESUME_FROM"`}
	logged := captureLog(&cfg)
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ex, err := sup.Run(ctx, nil); err != nil || ex.Code != 0 {
		t.Fatalf("%+v %v", ex, err)
	}
	l := logged()
	if !strings.Contains(l, "warning: could not pull "+m.ID+" (") || !strings.Contains(l, "): resuming from the older ckpt-000010 here") || strings.Contains(l, "are kept in") {
		t.Errorf("log:\n%s", l)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".ckpt-000020.gpurent-pull-*")); len(left) != 0 {
		t.Errorf("the partial pull stayed: %v", left)
	}
}

// The snapshot machine again, with one name saved over and over (as
// Lightning's last.ckpt and a script's ckpt_latest.pt are): no step tells
// the two apart, but the one here was committed before the store's
// newest, so that one is pulled in its place and resumed from.
func TestResumeNewerInStoreSameName(t *testing.T) {
	h := newHarness(t)
	t.Setenv("FAKE_LOG", h.log)
	t.Setenv("FAKE_NAME", "last.ckpt")
	config := func(dir string) Config {
		cfg := h.config(dir, h.b)
		cfg.Glob = "last.ckpt"
		return cfg
	}
	first := t.TempDir()
	setTrainerEnv(t, 41, "0", 10)
	sup, _ := New(config(first))
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	// The first machine's disk at step 10; then it trains on to 30.
	snapshot := snapshotOf(t, first, "last.ckpt", StateFile)
	setTrainerEnv(t, 42, "0", 30)
	sup, _ = New(config(first))
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	// A pull that fails puts the older last.ckpt back, unchanged, and the
	// command resumes from it.
	before, _ := os.ReadFile(filepath.Join(snapshot, "last.ckpt"))
	m, err := h.store(h.b).Find(context.Background(), "trial", "latest")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config(snapshot)
	cfg.Store = store.New(&store.Retrying{Backend: brokenReads{Backend: h.b, key: m.Objects[len(m.Objects)-1].Key}, Base: time.Millisecond, Attempts: 2},
		store.Options{Grace: -1, Workers: 1, PullWait: time.Millisecond})
	cfg.Cmd = []string{"sh", "-c", `echo "resumed from $GPURENT_RESUME_FROM"`}
	logged := captureLog(&cfg)
	sup, _ = New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	if after, _ := os.ReadFile(filepath.Join(snapshot, "last.ckpt")); !bytes.Equal(after, before) || !strings.Contains(logged(), "resuming from the older last.ckpt here") {
		t.Errorf("after a failed pull last.ckpt changed (%d bytes, was %d):\n%s", len(after), len(before), logged())
	}

	os.Remove(h.log)
	setTrainerEnv(t, 43, "0", 40)
	cfg = config(snapshot)
	logged = captureLog(&cfg)
	sup, _ = New(cfg)
	if ex, err := sup.Run(context.Background(), nil); err != nil || ex.Code != 0 {
		t.Fatal(ex, err)
	}
	if log := h.resumes(); len(log) < 2 || log[0] != "resume" || log[1] != "30" {
		t.Errorf("the machine from the snapshot resumed with %q, want resume 30\n%s", log, logged())
	}
	for _, want := range []string{"the store's newest checkpoint last.ckpt (", "is newer than last.ckpt here, which is the store's older ", "removed the older last.ckpt here; the store keeps it as "} {
		if !strings.Contains(logged(), want) {
			t.Errorf("log lacks %q:\n%s", want, logged())
		}
	}
	if left, _ := filepath.Glob(filepath.Join(snapshot, ".gpurent-older-*")); len(left) != 0 {
		t.Errorf("left behind: %q", left)
	}
	// Back on the first machine, whose last.ckpt (30) the snapshot
	// machine's 40 came after: pulled too; run again, nothing is.
	os.Remove(h.log)
	pullsOnceThenNothing(t, func() Config { return config(first) }, "is newer than last.ckpt here")
	if log := h.resumes(); len(log) < 2 || log[1] != "40" {
		t.Errorf("the first machine resumed with %q, want resume 40 first", log)
	}
}

// A command that saves a checkpoint and fails within --quiet, resuming
// from a newer one each time, makes progress: it is no crash loop
// (7f49d07 stopped it as one "without a new checkpoint").
func TestSaveThenCrashIsNoCrashLoop(t *testing.T) {
	dir := t.TempDir()
	script := `n=$(ls "$GPURENT_CKPT_DIR" | grep -c '^ckpt-'); n=$((n+1)); echo "$n" > "$GPURENT_CKPT_DIR/ckpt-$n"; [ "$n" -ge 5 ] && exit 0; exit 3`
	cfg := Config{Cmd: []string{"sh", "-c", script}, CkptDir: dir, Run: "trial", MaxRestarts: 10, CrashLoop: 2,
		Backoff: 10 * time.Millisecond, Grace: 5 * time.Second, Poll: 20 * time.Millisecond, Quiet: 300 * time.Millisecond,
		Stdout: io.Discard, Stderr: io.Discard, Log: func(string, ...any) {}}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code != 0 || strings.Contains(ex.Reason.String(), "crash loop") {
		t.Errorf("%+v %v", ex, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ckpt-5")); err != nil {
		t.Errorf("the fifth run did not come: %v", err)
	}
}

// A process the command started in a session of its own (setsid, a
// daemonizing server) is ended with the command: on 7f49d07 it survived
// the stop and the restart, and kept `gpurent run ... | tee` open.
func TestStrayInItsOwnSessionIsEnded(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Setenv("PIDFILE", pidFile)
	script := `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$PIDFILE"; sleep 0.2; exit 3`
	cfg := Config{Cmd: []string{"sh", "-c", script}, CkptDir: dir, Run: "trial", MaxRestarts: 1, CrashLoop: 5,
		Backoff: 10 * time.Millisecond, Grace: time.Second, Poll: 20 * time.Millisecond, Quiet: 50 * time.Millisecond,
		Stdout: io.Discard, Stderr: io.Discard, Log: func(string, ...any) {}}
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	t.Cleanup(func() {
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	ex, err := sup.Run(context.Background(), nil)
	if err != nil || ex.Code == 0 {
		t.Fatalf("%+v %v", ex, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	pids = append(pids, pid)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return // gone, or a zombie waiting for init
		}
	}
	t.Errorf("the process the command started with setsid (pid %d) outlived the run", pid)
}

// A fresh machine whose store's newest checkpoint is corrupt resumed from
// nothing on the commit before (rc 1, no hint): it now resumes from the
// newest that restores, naming the one it passed over and how to remove
// it.
func TestFreshMachineFallsBackPastCorruptNewest(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	var ms []*store.Manifest
	for _, step := range []string{"ckpt-000010", "ckpt-000020"} {
		src := filepath.Join(t.TempDir(), step)
		os.MkdirAll(src, 0o755)
		os.WriteFile(filepath.Join(src, "w.bin"), []byte("weights of "+step), 0o644)
		m, err := h.store(h.b).Push(ctx, src, "trial")
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	broken := ms[1]
	dir := t.TempDir()
	cfg := h.config(dir, h.b)
	cfg.Glob = "ckpt-*"
	cfg.Store = store.New(&store.Retrying{Backend: brokenReads{Backend: h.b, key: broken.Objects[0].Key}, Base: time.Millisecond, Attempts: 2},
		store.Options{Grace: -1, Workers: 1, PullWait: time.Millisecond})
	out := filepath.Join(t.TempDir(), "out")
	cfg.Cmd = []string{"sh", "-c", `echo "$GPURENT_RESUME_FROM" > ` + out}
	logged := captureLog(&cfg)
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ex, err := sup.Run(ctx, nil); err != nil || ex.Code != 0 {
		t.Fatalf("%+v %v\n%s", ex, err, logged())
	}
	got, _ := os.ReadFile(out)
	if strings.TrimSpace(string(got)) != filepath.Join(dir, "ckpt-000010") {
		t.Errorf("resumed from %q, want ckpt-000010\n%s", got, logged())
	}
	if l := logged(); !strings.Contains(l, "the newest checkpoint "+broken.ID+" (ckpt-000020) could not be restored") || !strings.Contains(l, "gpurent ckpt rm --run trial "+broken.ID) {
		t.Errorf("log:\n%s", l)
	}
}

// A checkpoint gpurent ckpt push stored before the run started was
// uploaded again as a new checkpoint on the commit before (same name and
// bytes, twice in the store); now the run sees it there and commits it
// locally as that one.
func TestPushedBeforeNotUploadedAgain(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	dir := t.TempDir()
	ck := filepath.Join(dir, "ckpt-000010")
	os.MkdirAll(ck, 0o755)
	os.WriteFile(filepath.Join(ck, "w.bin"), []byte("weights"), 0o644)
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(ck, "w.bin"), past, past)
	os.Chtimes(ck, past, past)
	st := h.store(h.b)
	m, err := st.Push(ctx, ck, "trial")
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.config(dir, h.b)
	cfg.Glob = "ckpt-*"
	cfg.Cmd = []string{"true"}
	logged := captureLog(&cfg)
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ex, err := sup.Run(ctx, nil); err != nil || ex.Code != 0 {
		t.Fatalf("%+v %v\n%s", ex, err, logged())
	}
	ms, err := st.List(ctx, "trial")
	if err != nil || len(ms) != 1 {
		t.Errorf("%d checkpoints in the store (%v), want the one pushed before\n%s", len(ms), err, logged())
	}
	if l := logged(); !strings.Contains(l, "ckpt-000010 is in the store already, as "+m.ID) {
		t.Errorf("log:\n%s", l)
	}
}

// TestBackoff: while uploads fail they are tried after 1 s (or --poll,
// if longer), 2 s, 4 s ... and never less often than every 5 minutes.
// On the commit before, every scan tried (and said so): 143 lines in 22 s
// at --poll 200ms.
func TestBackoff(t *testing.T) {
	var waits []time.Duration
	w := time.Duration(0)
	for range 12 {
		w = backoff(w, 200*time.Millisecond)
		waits = append(waits, w)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	if !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if got := backoff(0, 3*time.Second); got != 3*time.Second {
		t.Errorf("first wait at --poll 3s: %v", got)
	}
}

// TestIdleStop: a command that has printed nothing, written no new
// checkpoint and kept no GPU busy for --idle-stop is taken to be idle,
// once; output, a new checkpoint or a busy GPU in the window each keep it
// running.
func TestIdleStop(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(t.TempDir(), h.b)
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	out, busy := t0, time.Time{}
	cfg.Output = func() time.Time { return out }
	cfg.Busy = func() time.Time { return busy }
	cfg.IdleStop = 30 * time.Minute
	sup, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sup.child.Store(1)
	sup.progress.started(t0)
	idle := func() string {
		select {
		case why := <-sup.idle:
			return why.String()
		default:
			return ""
		}
	}
	sup.checkStall(t0.Add(29 * time.Minute))
	if w := idle(); w != "" {
		t.Fatalf("29 min: %q", w)
	}
	// A GPU busy 10 min in: idle only 30 min after that.
	busy = t0.Add(10 * time.Minute)
	sup.checkStall(t0.Add(31 * time.Minute))
	if w := idle(); w != "" {
		t.Fatalf("busy GPU: %q", w)
	}
	// Output at 20 min, then nothing: idle at 50.
	out = t0.Add(20 * time.Minute)
	sup.checkStall(t0.Add(49 * time.Minute))
	if w := idle(); w != "" {
		t.Fatalf("printed at 20 min: %q", w)
	}
	sup.checkStall(t0.Add(50 * time.Minute))
	if w := idle(); !strings.HasPrefix(w, "idle for 30m0s: no output, no new checkpoint and no busy GPU (--idle-stop 30m0s)") {
		t.Fatalf("50 min: %q", w)
	}
	sup.checkStall(t0.Add(90 * time.Minute))
	if w := idle(); w != "" {
		t.Fatalf("said twice: %q", w)
	}
}
