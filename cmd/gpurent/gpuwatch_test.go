package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// On a machine with NVIDIA GPUs (here the simulated NVML: GPU 0 at 37%
// and slowed down for heat, GPU 1 fallen off the bus), gpurent run serves
// each GPU's utilization, slowdown and loss with its metrics while the
// command runs, says at once that a GPU is lost, and at the end how busy
// the GPUs were and how often slowed.
func TestRunWatchesGPUsSimulated(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status",
		"--metrics", "127.0.0.1:0", "--", "sh", "-c", `for i in $(seq 300); do [ -e "$0" ] && exit 0; sleep 0.1; done; exit 1`, filepath.Join(dir, "done"))
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "LD_LIBRARY_PATH="+filepath.Dir(nvml), "FAKENVML=2", "FAKENVML_EVENTS=0x45", "FAKENVML_LOST=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var log strings.Builder
	lines := bufio.NewScanner(stderr)
	addr := regexp.MustCompile(`metrics on (http://\S+)`)
	url := ""
	for url == "" && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if m := addr.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("no metrics address:\n%s", log.String())
	}
	want := []string{
		`gpurent_gpu_utilization_percent{gpu="0",uuid="GPU-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e"} 37`,
		`gpurent_gpu_slowed_down{gpu="0",uuid="GPU-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e"} 1`,
		`gpurent_gpu_lost{gpu="0"} 0`,
		`gpurent_gpu_lost{gpu="1"} 1`,
	}
	body := ""
	// The command runs until the file "done" exists: up to 30 s.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !strings.Contains(body, want[len(want)-1]); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		}
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("metrics lack %s:\n%s", w, body)
		}
	}
	if strings.Contains(body, `gpurent_gpu_utilization_percent{gpu="1"`) {
		t.Errorf("a utilization for the lost GPU:\n%s", body)
	}
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() { // the scanner may hold lines read past the address
		log.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "gpurent: warning: GPU 1 has fallen off the bus (NVML: GPU_IS_LOST)") {
		t.Errorf("the lost GPU not said:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "gpurent: GPU utilization while the command ran (NVML, every 10s): GPU 0 37%; slowed down by the hardware: GPU 0 in 100% of the samples (hw_thermal_slowdown); fallen off the bus: GPU 1\n") {
		t.Errorf("no utilization summary:\n%s", log.String())
	}
}

// A command that fails after a GPU fell off the bus has that named as the
// cause, which its own output may not say.
func TestRunNamesALostGPUSimulated(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status",
		"--max-restarts", "0", "--", "sh", "-c", "sleep 2; exit 1")
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "LD_LIBRARY_PATH="+filepath.Dir(nvml), "FAKENVML=2", "FAKENVML_LOST=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("%v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "the 0 restarts allowed are used up; GPU 1 fell off the bus (NVML: GPU_IS_LOST)") {
		t.Errorf("the lost GPU is not named as the cause:\n%s", out)
	}
}

// NVML found but failing (here: the kernel driver is not loaded) is said
// once; no NVML at all, as on a CPU machine, is not said.
func TestRunSaysWhyGPUsAreNotWatched(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"LD_LIBRARY_PATH=" + filepath.Dir(nvml), "FAKENVML=1", "FAKENVML_INIT=9"},
			"gpurent: GPU utilization is not watched: no NVIDIA GPU was found: NVML failed to initialise: DRIVER_NOT_LOADED"},
		{[]string{"LD_LIBRARY_PATH=" + t.TempDir()}, ""},
	} {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status", "--", "sleep", "1")
		cmd.Env = append(os.Environ(), append(c.env, "GPURENT_AS_MAIN=1")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.env, err, out)
		}
		if said := strings.Contains(string(out), "GPU utilization is not watched"); said != (c.want != "") || !strings.Contains(string(out), c.want) {
			t.Errorf("%v:\n%s", c.env, out)
		}
	}
}

// bench on a machine where a GPU fell off the bus (the simulated NVML's
// GPU 1) fails that GPU with the reason, and exits 3.
func TestBenchLostGPUSimulated(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	cmd := exec.Command(os.Args[0], "bench", "--no-history", "--disk-mb", "0", "--duration", "200ms", "--backend", "cpu", "--probes", "mem_copy")
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "LD_LIBRARY_PATH="+filepath.Dir(nvml), "FAKENVML=2", "FAKENVML_LOST=1", "XDG_STATE_HOME="+t.TempDir())
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("%v, want exit 3\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^gpu1\.lost +fail +GPU_IS_LOST +answers +NVML says this GPU has fallen off the bus`).Match(out) {
		t.Errorf("no gpu1.lost failure:\n%s", out)
	}
	if strings.Contains(string(out), "gpu1.identity") {
		t.Errorf("checks of a GPU that answers nothing:\n%s", out)
	}
}
