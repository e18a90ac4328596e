package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// asPID1 is a command that runs the test binary as gpurent with args, as
// PID 1 of a new pid namespace (a container's entrypoint), with D=dir in
// its environment. The test is skipped where this process may not make
// one (not root, no unshare).
func asPID1(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1) to start a pid namespace")
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot start a pid namespace here (%v: %s)", err, out)
	}
	cmd := exec.Command("unshare", append([]string{"--pid", "--fork", "--mount-proc", "--kill-child", os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "D="+dir)
	return cmd
}

// orphanMaker leaves three orphans that exit at once, then waits up to 5 s
// for each of them to be gone from /proc: a zombie stays there until its
// parent, PID 1, reaps it.
const orphanMaker = `
for i in 1 2 3; do (sh -c 'echo $$ >> "$D/orphans"' &); done
for t in $(seq 50); do
  if [ -f "$D/orphans" ] && [ "$(wc -l < "$D/orphans")" -eq 3 ]; then
    left=""
    for p in $(cat "$D/orphans"); do [ -e /proc/$p ] && left="$left $p"; done
    [ -z "$left" ] && { echo "all reaped"; exit 0; }
  fi
  sleep 0.1
done
echo "zombies under PID 1:$left"
exit 1
`

// TestPID1ReapsOrphans runs gpurent run as a container's PID 1: the
// orphans of its command must not stay zombies.
func TestPID1ReapsOrphans(t *testing.T) {
	dir := t.TempDir()
	cmd := asPID1(t, dir, "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--max-restarts", "0", "--", "sh", "-c", orphanMaker)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "all reaped") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestPID1ForwardsStop sends SIGTERM to PID 1, as docker stop and
// Kubernetes do: gpurent run must stop its command the usual way and exit
// 143, which the container reports.
func TestPID1ForwardsStop(t *testing.T) {
	dir := t.TempDir()
	trainer := `trap 'echo term > "$D/term"; exit 0' TERM; echo up > "$D/up"; while :; do sleep 0.05; done`
	cmd := asPID1(t, dir, "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--", "sh", "-c", trainer)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// unshare's one child is the namespace's PID 1, by this side's pid.
	pid1 := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(dir, "up"))
		kids, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
		if len(b) > 0 && len(strings.Fields(string(kids))) == 1 {
			pid1, _ = strconv.Atoi(strings.Fields(string(kids))[0])
			break
		}
	}
	if pid1 == 0 {
		t.Fatalf("the command did not start under PID 1 within 10 s:\n%s", out.String())
	}
	if err := syscall.Kill(pid1, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() }) // unshare --kill-child takes PID 1 along
	defer hung.Stop()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Errorf("exit %v, want 143\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "term")); err != nil {
		t.Errorf("the command did not get SIGTERM: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "received terminated: stopping the command") {
		t.Errorf("gpurent did not say it stopped the command:\n%s", out.String())
	}
}
