package gpu

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// The test machines have no NVIDIA driver: the cuda backend must say so
// in words, without panicking.
func TestCUDAAbsentFailsCleanly(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA driver (/dev/nvidiactl): scripts/gpu-check.sh covers it")
	}
	r := CUDA{}.Run(context.Background(), Options{})
	if r.Available || !strings.Contains(r.Error, "libcuda.so.1") || r.Results == nil {
		t.Errorf("%+v", r)
	}
}

func TestTorchWithoutTorch(t *testing.T) {
	r := Torch{Python: "python3"}.Run(context.Background(), Options{})
	if r.Available {
		t.Skip("this machine has torch with CUDA")
	}
	if r.Error == "" || r.Results == nil {
		t.Errorf("%+v", r)
	}
	r = Torch{Python: "no-such-python-here"}.Run(context.Background(), Options{})
	if r.Available || !strings.Contains(r.Error, "python3 not found") {
		t.Errorf("%+v", r)
	}
}

func TestCPUBackend(t *testing.T) {
	start := time.Now()
	r := CPU{}.Run(context.Background(), Options{})
	if !r.Available || !r.CPU || r.Backend != "cpu" {
		t.Fatalf("%+v", r)
	}
	gemm, copyR := r.Find(ProbeGEMMFP32), r.Find(ProbeCopy)
	if gemm == nil || gemm.Value <= 0 || gemm.Timing.N != 3 || copyR == nil || copyR.Value <= 0 {
		t.Errorf("%+v", r.Results)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("cpu backend took %v", d)
	}
}

// The committed PTX must hold the kernels the Go code looks up.
func TestEmbeddedPTX(t *testing.T) {
	for ptx, names := range map[string][]string{
		ptxCommon: {".entry fma32", ".entry copy16", ".target sm_70"},
		ptxMMA80:  {".entry mma_bf16", ".entry mma_f16", ".entry mma_tf32", ".target sm_80", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"},
		ptxMMA89:  {".entry mma_fp8", ".target sm_89", ".version 8.4", "e4m3.e4m3"},
	} {
		for _, n := range names {
			if !strings.Contains(ptx, n) {
				t.Errorf("PTX lacks %q", n)
			}
		}
	}
}
