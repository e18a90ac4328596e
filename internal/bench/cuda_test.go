package bench

import (
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/specs"
)

// The driver's CUDA against what the software was built with: a newer
// major release fails, a newer minor one runs by minor version
// compatibility, an older one runs; a CPU-only PyTorch warns only when no
// CUDA build was found beside it.
func TestCUDACheck(t *testing.T) {
	tab, _ := specs.Load()
	conda := probe.TorchInstall{Path: "/opt/conda/lib/python3.11/site-packages/torch/version.py", Version: "2.7.0+cu128", CUDA: "12.8"}
	cpu := probe.TorchInstall{Path: "/usr/lib/python3/dist-packages/torch/version.py", Version: "2.7.0+cpu"}
	for _, tc := range []struct {
		name     string
		driver   int
		expect   string
		torch    []probe.TorchInstall
		status   string
		measured any
		expected any
		evidence []string
	}{
		{"newer minor", 12040, "", []probe.TorchInstall{conda}, Pass, "CUDA 12.4", "CUDA 12.8",
			[]string{"driver 575.1 supports CUDA 12.4: software built with CUDA 12.x or older runs", "PyTorch 2.7.0+cu128, built with CUDA 12.8 (" + conda.Path + "), runs by CUDA's minor version compatibility"}},
		{"older", 13000, "", []probe.TorchInstall{conda}, Pass, "CUDA 13.0", "CUDA 12.8", []string{"built with CUDA 12.8 (" + conda.Path + "), runs"}},
		{"newer major", 12080, "13.0", nil, Fail, "CUDA 12.8", "CUDA 13.0", []string{"software built with CUDA 13.0 (--expect-cuda) needs a driver that supports CUDA 13 (580 or newer)"}},
		{"cpu beside a cuda build", 12080, "", []probe.TorchInstall{cpu, conda}, Pass, "CUDA 12.8", "CUDA 12.8", []string{"is a CPU-only build"}},
		{"cpu alone", 12080, "", []probe.TorchInstall{cpu}, Warn, "CUDA 12.8", nil, []string{"PyTorch 2.7.0+cpu (" + cpu.Path + ") is a CPU-only build"}},
		{"rocm alone", 12080, "", []probe.TorchInstall{{Path: "/x/torch/version.py", Version: "2.7.0+rocm6.3", HIP: "6.3.4"}}, Warn, "CUDA 12.8", nil, []string{"is a ROCm build"}},
	} {
		f := healthyH100()
		f.GPU.DriverVersion, f.GPU.CUDADriverVersion, f.Torch = "575.1", tc.driver, tc.torch
		r, err := Judge(f, tab, Order{CUDA: tc.expect}, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		var c *Check
		for i := range r.Checks {
			if r.Checks[i].ID == "gpu.cuda" {
				c = &r.Checks[i]
			}
		}
		if c == nil {
			t.Fatalf("%s: no gpu.cuda check", tc.name)
		}
		if c.Status != tc.status || c.Measured != tc.measured || c.Expected != tc.expected {
			t.Errorf("%s: %s %v %v, want %s %v %v", tc.name, c.Status, c.Measured, c.Expected, tc.status, tc.measured, tc.expected)
		}
		for _, e := range tc.evidence {
			if !strings.Contains(c.Evidence.String(), e) {
				t.Errorf("%s: evidence %q lacks %q", tc.name, c.Evidence.String(), e)
			}
		}
	}
}
