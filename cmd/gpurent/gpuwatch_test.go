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
// and slowed down for heat, GPU 1 idle), gpurent run serves each GPU's
// utilization and slowdown with its metrics while the command runs, and
// says at the end how busy they were and how often slowed.
func TestRunWatchesGPUsSimulated(t *testing.T) {
	nvml := dltest.BuildC(t, "../../internal/probe/testdata/fakenvml.c", "libnvidia-ml.so.1")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "run", "--ckpt-dir", filepath.Join(dir, "ck"), "--preemption", "none", "--no-status",
		"--metrics", "127.0.0.1:0", "--", "sh", "-c", "sleep 4")
	cmd.Env = append(os.Environ(), "GPURENT_AS_MAIN=1", "LD_LIBRARY_PATH="+filepath.Dir(nvml), "FAKENVML=2", "FAKENVML_EVENTS=0x45")
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
		`gpurent_gpu_utilization_percent{gpu="1",uuid="GPU-0e2d7c41-8a9b-4f3e-b5d6-7c8d9e0f1a2b"} 0`,
		`gpurent_gpu_slowed_down{gpu="0",uuid="GPU-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e"} 1`,
		`gpurent_gpu_slowed_down{gpu="1",uuid="GPU-0e2d7c41-8a9b-4f3e-b5d6-7c8d9e0f1a2b"} 0`,
	}
	body := ""
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && !strings.Contains(body, want[1]); time.Sleep(100 * time.Millisecond) {
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
	rest, _ := io.ReadAll(stderr)
	log.Write(rest)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "gpurent: GPU utilization while the command ran (NVML, every 10s): GPU 0 37%, GPU 1 0%; slowed down by the hardware: GPU 0 in 100% of the samples (hw_thermal_slowdown)\n") {
		t.Errorf("no utilization summary:\n%s", log.String())
	}
}
