package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// TestGPUCheckSimulated runs scripts/gpu-check.sh, the check a session with
// a GPU gets a few minutes of device time for, whole, on a machine made to
// look like one: a CGO_ENABLED=0 gpurent as shipped, the simulated NVML,
// CUDA driver and cuBLASLt the package tests use (an H100 SXM with other
// tenants' processes), the stand-in torch, and an nvidia-smi that prints
// what the simulated NVML says. Every step must run and print its figures:
// NVML agrees with nvidia-smi field by field; cuda and torch, given the
// same rates, agree within 2% on each probe both have; the sustained probe
// raises no alarm on the idle GPU and catches the co-tenant (gpurent burn,
// whose GEMMs make other processes' launches wait) in 10 of 10 runs. It
// checks the script and the binary's plumbing, not any GPU figure.
func TestGPUCheckSimulated(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute")
	}
	for _, tool := range []string{"bash", "python3", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	nvml := dltest.BuildC(t, filepath.Join(root, "internal/probe/testdata/fakenvml.c"), "libnvidia-ml.so.1")
	cuda := dltest.BuildC(t, filepath.Join(root, "internal/gpu/testdata/fakecuda.c"), "libcuda.so.1", "-lm")
	blas := dltest.BuildC(t, filepath.Join(root, "internal/gpu/testdata/fakecublaslt.c"), "libcublasLt.so.12")

	dir := t.TempDir()
	bin := filepath.Join(dir, "gpurent")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	smi := filepath.Join(dir, "bin", "nvidia-smi")
	os.MkdirAll(filepath.Dir(smi), 0o755)
	// The fields gpu-check.sh queries, as nvidia-smi prints them for the
	// simulated NVML's device (fakenvml.c, fake_default).
	csv := "0, NVIDIA H100 80GB HBM3, GPU-5b8c9a3e-1f2d-4c6b-9e7a-0d1c2b3a4f5e, 0x233010DE, 0x16C110DE, 81559, 2048, " +
		"500.00, 700.00, 4, 16, 570.86.15, Disabled, Enabled, Exclusive_Process, 41"
	if err := os.WriteFile(smi, []byte("#!/bin/sh\ncase \"$*\" in\n*--query-gpu*) echo '"+csv+"' ;;\n*) echo 'simulated nvidia-smi' ;;\nesac\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out")
	cmd := exec.Command("bash", filepath.Join(root, "scripts/gpu-check.sh"), out)
	cmd.Env = append(os.Environ(),
		"GPURENT_BIN="+bin,
		"PATH="+filepath.Dir(smi)+":"+os.Getenv("PATH"),
		"LD_LIBRARY_PATH="+strings.Join([]string{filepath.Dir(nvml), filepath.Dir(cuda), filepath.Dir(blas)}, ":"),
		"FAKENVML=1",
		"FAKECUDA=driver=12080 ptx=88 fp32=60e12 tensor=800e12 mem=3000e9 link=50e9 cotenant="+filepath.Join(dir, "busy")+" cotenant_every=3 cotenant_ms=2",
		"PYTHONPATH="+filepath.Join(root, "internal/gpu/testdata/faketorch"),
		`FAKE_TORCH_RATES={"fp32": 6e13, "tf32": 4e14, "bf16": 8e14, "device": 3e12, "link": 5e10}`,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
	)
	b, err := cmd.CombinedOutput()
	summary, _ := os.ReadFile(filepath.Join(out, "summary.txt"))
	t.Logf("gpu-check.sh summary:\n%s", summary)
	if err != nil {
		t.Fatalf("gpu-check.sh: %v\n%s", err, b)
	}
	s := string(summary)
	for _, want := range []string{
		"all fields agree",
		"cuda backend on Simulated GPU (gpurent test driver):",
		"cuda/torch ratios on Simulated GPU (fake torch):",
		"sustained probe: alarm in 0 of 10 idle runs (want 0), in 10 of 10 runs beside a co-tenant (want 10)",
		"co-tenant: gpurent burn: device 0, cuBLASLt ",
		"GEMM loop",
		"every probe beside the co-tenant, over the idle quick run:",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if strings.Contains(s, "DIFF") || strings.Contains(s, "did not run") || strings.Contains(s, "no ratio") {
		t.Errorf("summary reports a difference or a probe that did not run")
	}
	ratio := regexp.MustCompile(`(?m)^  (\w+) +cuda [0-9.]+ / torch [0-9.]+ \S+ = ([0-9.]+)$`)
	seen := map[string]bool{}
	for _, m := range ratio.FindAllStringSubmatch(s, -1) {
		seen[m[1]] = true
		if r, _ := strconv.ParseFloat(m[2], 64); r < 0.98 || r > 1.02 {
			t.Errorf("%s: cuda/torch %s on equal simulated rates", m[1], m[2])
		}
	}
	for _, p := range []string{"mem_copy", "h2d", "d2h", "gemm_fp32", "gemm_tf32", "gemm_bf16"} {
		if !seen[p] {
			t.Errorf("no cuda/torch ratio for %s", p)
		}
	}
}
