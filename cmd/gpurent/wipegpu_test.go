//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/wipe"
)

// wipe --gpu on two simulated H100s: other processes hold memory on gpu0,
// gpu1 is idle. The dry run plans both and names the holders. --yes on a
// driver that leaves old data in fresh memory fills gpu1's free memory
// with zeros and reads it back, and leaves gpu0 alone (exit 1: not
// scrubbed as asked); on one that clears memory it says so of gpu1 and
// does nothing there; --gpu-force scrubs both. A GPU CUDA cannot reach
// is a failure, exit 1; --gpu-force alone is bad usage. Nothing outside
// the temporary home and root is planned.
func TestWipeGPUSimulated(t *testing.T) {
	t.Parallel() // it runs processes of its own: the longest tests overlap
	_, simEnv := simGPUs(t)
	dir := t.TempDir()
	for _, d := range []string{"home", "root", "state"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	wipeGPU := func(fakecuda string, extra []string, args ...string) (int, wipe.Report, string) {
		t.Helper()
		n++
		rp := filepath.Join(dir, "state", "report-"+string(rune('a'+n))+".json")
		cmd := exec.Command(os.Args[0], append([]string{"wipe", "--root", filepath.Join(dir, "root"), "--report", rp, "-o", "json"}, args...)...)
		cmd.Env = append(simEnv(2, fakecuda), append(extra, "GPURENT_AS_MAIN=1", "HOME="+filepath.Join(dir, "home"), "XDG_STATE_HOME="+filepath.Join(dir, "state"),
			"XDG_CONFIG_HOME="+filepath.Join(dir, "home", ".config"))...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var r wipe.Report
		if code != 2 {
			if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
				t.Fatalf("%v: %s\n%s", err, stdout.String(), stderr.String())
			}
		}
		return code, r, stderr.String()
	}
	two := func(r wipe.Report) (wipe.GPU, wipe.GPU) {
		t.Helper()
		if len(r.GPUs) != 2 || r.GPUs[0].Index != 0 || r.GPUs[1].Index != 1 {
			t.Fatalf("gpus: %+v", r.GPUs)
		}
		return r.GPUs[0], r.GPUs[1]
	}
	free := uint64(79 << 30) // 80 GiB, 1 GiB another tenant's
	scrubbed := func(g wipe.GPU) bool {
		return g.Status == wipe.GPUScrubbed && g.FreeBytes == free && free-g.ScrubbedBytes <= 2<<20 && g.NonzeroBytes == 0
	}

	code, r, _ := wipeGPU("residue=4096", nil, "--gpu")
	g0, g1 := two(r)
	if code != 0 || !r.DryRun || g0.Status != wipe.GPUPlanned || g1.Status != wipe.GPUPlanned || len(g0.HeldBy) == 0 ||
		!strings.HasPrefix(g0.HeldBy[0], "pid ") || len(g1.HeldBy) != 0 || g0.ScrubbedBytes != 0 {
		t.Errorf("dry run: exit %d, %+v %+v", code, g0, g1)
	}

	code, r, errOut := wipeGPU("residue=4096", nil, "--gpu", "--yes")
	g0, g1 = two(r)
	if code != 1 || g0.Status != wipe.GPUInUse || g0.ScrubbedBytes != 0 || !scrubbed(g1) || !strings.Contains(g1.Residue.String(), "held non-zero bytes; the first at") ||
		!strings.Contains(errOut, "the free memory of 1 of 2 GPUs was not scrubbed") {
		t.Errorf("a driver that leaves old data: exit %d, %+v %+v\n%s", code, g0, g1, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "state", "report-"+string(rune('a'+n))+".json")); err != nil || !strings.Contains(string(b), `"status": "scrubbed"`) {
		t.Errorf("the saved report lacks the scrub: %v\n%s", err, b)
	}

	code, r, _ = wipeGPU("", nil, "--gpu", "--yes")
	if g0, g1 = two(r); code != 1 || g0.Status != wipe.GPUInUse || g1.Status != wipe.GPUDriverClears || g1.ScrubbedBytes != 0 || !strings.Contains(g1.Residue.String(), ": 0 of ") {
		t.Errorf("a driver that clears memory: exit %d, %+v %+v", code, g0, g1)
	}
	code, r, _ = wipeGPU("", nil, "--gpu", "--gpu-force", "--yes")
	if g0, g1 = two(r); code != 0 || !scrubbed(g0) || !scrubbed(g1) {
		t.Errorf("forced: exit %d, %+v %+v", code, g0, g1)
	}

	code, r, errOut = wipeGPU("residue=4096", []string{"CUDA_VISIBLE_DEVICES="}, "--gpu", "--gpu-force", "--yes")
	if g0, g1 = two(r); code != 1 || g0.Status != wipe.GPUFailed || g1.Status != wipe.GPUFailed || g1.Error.IsZero() || !strings.Contains(errOut, "the free memory of 2 of 2 GPUs was not scrubbed") {
		t.Errorf("GPUs CUDA does not show: exit %d, %+v %+v\n%s", code, g0, g1, errOut)
	}

	if code, _, errOut = wipeGPU("", nil, "--gpu-force"); code != 2 || !strings.Contains(errOut, "give --gpu too") {
		t.Errorf("--gpu-force alone: exit %d: %s", code, errOut)
	}

	// Someone holds 10 GiB of each GPU and NVML names no process (another
	// container's job): the scrub sees the memory taken and leaves both.
	code, r, _ = wipeGPU("residue=4096 other=10737418240", nil, "--gpu", "--yes")
	if g0, g1 = two(r); code != 1 || g0.Status != wipe.GPUInUse || g1.Status != wipe.GPUInUse || g1.ScrubbedBytes != 0 ||
		!strings.Contains(g1.Error.String(), "though NVML names no process") {
		t.Errorf("memory taken, no process named: exit %d, %+v %+v", code, g0, g1)
	}

	// Without NVML no one can say who holds memory: nothing is scrubbed
	// unforced, and with --gpu-force both are.
	var noNVML []string
	for _, kv := range simEnv(2, "") {
		if v, ok := strings.CutPrefix(kv, "LD_LIBRARY_PATH="); ok {
			dirs := strings.Split(v, ":")
			noNVML = append(noNVML, "LD_LIBRARY_PATH="+strings.Join(dirs[1:], ":")) // simGPUs puts NVML's first
		}
	}
	code, r, errOut = wipeGPU("residue=4096", noNVML, "--gpu", "--yes")
	if len(r.GPUs) != 2 || code != 1 || r.GPUs[0].Status != wipe.GPUInUse || r.GPUs[1].Status != wipe.GPUInUse ||
		!strings.Contains(r.GPUs[0].HeldBy[0], "NVML does not list this GPU") || !strings.Contains(fmt.Sprint(r.Warnings), "NVML cannot list") {
		t.Errorf("no NVML: exit %d, %+v %v\n%s", code, r.GPUs, r.Warnings, errOut)
	}
	code, r, _ = wipeGPU("residue=4096", noNVML, "--gpu", "--gpu-force", "--yes")
	if len(r.GPUs) != 2 || code != 0 || r.GPUs[0].Status != wipe.GPUScrubbed || r.GPUs[1].Status != wipe.GPUScrubbed {
		t.Errorf("no NVML, forced: exit %d, %+v", code, r.GPUs)
	}
}
