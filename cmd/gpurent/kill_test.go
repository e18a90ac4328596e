//go:build unix

package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/store"
	"github.com/gpurent/gpurent/internal/store/cloud"
)

var killTrials = flag.Int("kill-trials", 10, "randomized SIGKILLs of a real gpurent run process")

// killTrainer is a training command in shell: it resumes from
// GPURENT_RESUME_FROM (refusing a checkpoint whose size or step is wrong),
// takes a step every 20 ms, writes every fifth step's checkpoint to a
// temporary name and renames it into place, and exits 0 at $TOTAL.
const killTrainer = `
echo $$ > "$PIDFILE"
step=0
if [ -n "$GPURENT_RESUME_FROM" ]; then
  step=$(head -n 1 "$GPURENT_RESUME_FROM")
  size=$(wc -c < "$GPURENT_RESUME_FROM")
  want=$(( ${#step} + 1 + 65536 ))
  case "$(basename "$GPURENT_RESUME_FROM")" in
    ckpt-$(printf %06d "$step").bin) ;;
    *) echo "corrupt name $GPURENT_RESUME_FROM" >> "$LOG"; exit 99 ;;
  esac
  if [ "$size" -ne "$want" ]; then echo "corrupt size $GPURENT_RESUME_FROM $size" >> "$LOG"; exit 99; fi
fi
echo "resume $step" >> "$LOG"
while [ "$step" -lt "$TOTAL" ]; do
  step=$((step + 1))
  sleep 0.02
  if [ $((step % 5)) -eq 0 ]; then
    f="$GPURENT_CKPT_DIR/ckpt-$(printf %06d $step).bin"
    { echo "$step"; head -c 65536 /dev/urandom; } > "$f.tmp" && mv "$f.tmp" "$f"
  fi
done
`

// TestKillGpurentForReal runs gpurent run as a real process and kills it
// with SIGKILL at random moments, sometimes restarting on an empty
// checkpoint directory (a new machine). The trainer must die with it; the
// next start must resume from at least the newest committed checkpoint;
// every committed checkpoint must restore byte for byte.
func TestKillGpurentForReal(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("KILL_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (KILL_SEED=%d reproduces the schedule)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	base := t.TempDir()
	ck, st := filepath.Join(base, "ck"), filepath.Join(base, "store")
	cfg := filepath.Join(base, "cfg")
	if _, err := store.Keygen(filepath.Join(cfg, "gpurent", "identity.txt")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(base, "trainer.sh")
	if err := os.WriteFile(script, []byte(killTrainer), 0o755); err != nil {
		t.Fatal(err)
	}
	log, pidfile := filepath.Join(base, "trainer.log"), filepath.Join(base, "trainer.pid")
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", ck, "--store", st, "--run", "r", "--keep", "0",
			"--preemption", "none", "--poll", "50ms", "--quiet", "200ms", "--", "sh", script)
		cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "XDG_CONFIG_HOME="+cfg, "LOG="+log, "PIDFILE="+pidfile, "TOTAL=200")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	opened, err := openFileStore(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	committedMax := func() int {
		ms, err := opened.List(ctx, "r")
		if err != nil {
			return 0
		}
		best := 0
		for _, m := range ms {
			best = max(best, stepOf(m.Name))
		}
		return best
	}
	// check reads the trainer's log after each start: the start resumed
	// (if its trainer got to run) from at least the newest step committed
	// before it.
	seen := 0
	var resumes []int
	check := func(i, floor int) {
		rs := readResumes(t, log)
		for _, r := range rs[seen:] {
			if r < floor {
				t.Errorf("start %d (seed %d): resumed from step %d, below the committed %d", i, seed, r, floor)
			}
		}
		if len(rs)-seen > 1 {
			t.Errorf("start %d (seed %d): %d trainers for one start", i, seed, len(rs)-seen)
		}
		resumes, seen = rs, len(rs)
	}
	for i := 0; i < *killTrials; i++ {
		floor := committedMax()
		os.Remove(pidfile)
		cmd := start()
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if b, err := os.ReadFile(pidfile); err == nil {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			deadline := time.Now().Add(3 * time.Second)
			for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if syscall.Kill(pid, 0) == nil {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("trial %d (seed %d): the trainer (pid %d) outlived gpurent's SIGKILL", i, seed, pid)
			}
		}
		check(i, floor)
		if rng.IntN(4) == 0 {
			if err := os.RemoveAll(ck); err != nil { // a new machine
				t.Fatal(err)
			}
		}
	}
	floor := committedMax()
	final := start()
	if err := final.Wait(); err != nil {
		t.Fatalf("the final run (seed %d): %v", seed, err)
	}
	check(*killTrials, floor)
	if len(resumes) == 0 || resumes[len(resumes)-1] < floor {
		t.Fatalf("seed %d: the final start did not resume from %d: %v", seed, floor, resumes)
	}
	// Every committed checkpoint restores byte for byte, under its name.
	ms, err := opened.List(ctx, "r")
	if err != nil || len(ms) == 0 {
		t.Fatalf("no committed checkpoint: %v", err)
	}
	for _, m := range ms {
		dest := filepath.Join(base, "restore-"+m.ID)
		if _, err := opened.Pull(ctx, "r", m.ID, dest); err != nil {
			t.Fatalf("seed %d: pull %s (%s): %v", seed, m.ID, m.Name, err)
		}
		b, err := os.ReadFile(dest)
		if err != nil {
			t.Fatal(err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if n, _ := strconv.Atoi(line); n != stepOf(m.Name) || len(b) != len(line)+1+65536 {
			t.Errorf("seed %d: %s restores as step %q, %d bytes", seed, m.Name, line, len(b))
		}
		if local, err := os.ReadFile(filepath.Join(ck, m.Name)); err == nil && string(local) != string(b) {
			t.Errorf("seed %d: %s differs from the local file", seed, m.Name)
		}
	}
	t.Logf("%d kills, %d resumes (%v), %d checkpoints committed", *killTrials, len(resumes), resumes, len(ms))
}

func stepOf(name string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "ckpt-"), ".bin"))
	return n
}

// readResumes lists the steps the trainer resumed from; none when no
// trainer has started yet (gpurent killed before it got that far, which a
// loaded machine makes likely on the first start).
func readResumes(t *testing.T, path string) []int {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "corrupt") {
			t.Fatalf("the trainer was given a bad checkpoint: %s", line)
		}
		if v, ok := strings.CutPrefix(line, "resume "); ok {
			n, _ := strconv.Atoi(v)
			out = append(out, n)
		}
	}
	return out
}

func openFileStore(ctx context.Context, dir, cfg string) (*store.Store, error) {
	ids, err := store.LoadIdentities(filepath.Join(cfg, "gpurent", "identity.txt"))
	if err != nil {
		return nil, err
	}
	b, _, err := cloud.Open(ctx, dir, cloud.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	return store.New(b, store.Options{Crypto: &store.Crypto{Identities: ids}, Grace: -1}), nil
}

// A hangup (the SSH connection behind the terminal dropped) stops the
// command with SIGTERM and exits 129, saying where the checkpoints are;
// under nohup, which ignores SIGHUP, gpurent leaves it ignored and the
// command trains on.
func TestHangup(t *testing.T) {
	base := t.TempDir()
	up, done := filepath.Join(base, "up"), filepath.Join(base, "done")
	start := func(nohup bool, script string) (*exec.Cmd, *strings.Builder) {
		args := []string{os.Args[0], "run", "--ckpt-dir", filepath.Join(base, "ck"), "--quiet", "100ms", "--preemption", "none", "--no-status", "--", "sh", "-c", script}
		if nohup {
			p, err := exec.LookPath("nohup")
			if err != nil {
				t.Skip("no nohup")
			}
			args = append([]string{p}, args...)
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "UP="+up, "DONE="+done)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		os.Remove(up)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(up); err == nil {
				break
			}
		}
		return cmd, &stderr
	}

	// wait gives a run a minute to end, then kills it: a hangup that is
	// not seen must fail the test, not hang it.
	wait := func(cmd *exec.Cmd) error {
		timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
		defer timer.Stop()
		return cmd.Wait()
	}
	// Run under nohup itself, this test would hand its children SIGHUP
	// ignored; a handler here makes them start with the default action.
	if signal.Ignored(syscall.SIGHUP) {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	cmd, stderr := start(false, `echo 1 > "$GPURENT_CKPT_DIR/ckpt-1"; echo up > "$UP"; trap 'exit 0' TERM; while :; do sleep 0.05; done`)
	cmd.Process.Signal(syscall.SIGHUP)
	err := wait(cmd)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 129 {
		t.Errorf("after a hangup: %v, want exit 129\n%s", err, stderr)
	}
	for _, want := range []string{"received hangup (the terminal closed): stopping the command with terminated", "no store given: checkpoints are only in"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	cmd, stderr = start(true, `echo up > "$UP"; sleep 1; echo done > "$DONE"`)
	cmd.Process.Signal(syscall.SIGHUP)
	if err := wait(cmd); err != nil {
		t.Errorf("under nohup a hangup ended the run: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(done); err != nil {
		t.Errorf("under nohup the command did not finish: %v\n%s", err, stderr)
	}
}
