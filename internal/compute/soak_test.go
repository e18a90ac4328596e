package compute

import (
	"context"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
)

// reconfigure sets the simulated driver of cu anew.
func reconfigure(t *testing.T, cu CUDA, cfg simConfig) {
	t.Helper()
	lib, err := dl.Open(cu.Library)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	lib.Call("fake_config", uintptr(unsafe.Pointer(&cfg)))
}

// A soak on the simulated driver: every result compared with the first,
// the first's tile computed again on the CPU, throughput per batch. On a
// card that computes right, no mismatch and a tile within a rounding
// step; on one whose 5th GEMM gets an element wrong, the mismatch is
// named by iteration, element and size. The memory is freed afterwards.
func TestCUDASoakSimulated(t *testing.T) {
	cfg := simH100ish()
	cfg.TotalMem = 8 << 30
	cu, stats := simDriver(t, cfg)
	r := cu.Soak(context.Background(), 0, 300*time.Millisecond)
	s := r.Soak
	if r.Error != "" || s == nil {
		t.Fatalf("%+v", r)
	}
	if s.Mismatches != 0 || s.ReferenceChecked != 64 || s.ReferenceBad != 0 || s.ReferenceMaxErr > 0.004 || s.Iterations < 2 || len(s.Intervals) == 0 {
		t.Errorf("a healthy card: %+v", s)
	}
	if !strings.HasSuffix(s.GEMM, " 8192³ BF16") {
		t.Errorf("gemm %q", s.GEMM)
	}
	// 8 GiB, 1 GiB another tenant's, a 512 MiB margin: A, B, the first
	// result and the workspace, the FP32 GEMM's (1 GiB), then 128 MiB
	// results in what is left.
	if f := s.FP32; f == nil || f.Mismatches != 0 || f.ReferenceChecked != 64 || f.ReferenceBad != 0 || f.ReferenceMaxErr > 1e-5 || f.Slots != 2 ||
		f.Iterations < 2 || !strings.HasSuffix(f.GEMM, " 8192³ FP32") || len(f.Intervals) == 0 {
		t.Errorf("the FP32 GEMM beside it: %+v", f)
	}
	if s.Slots < 40 || s.MemoryGiB < 5 {
		t.Errorf("the loop should hold most of the free memory: %d slots, %.2f GiB", s.Slots, s.MemoryGiB)
	}
	// 800 TFLOPS simulated BF16: the comparisons between the GEMMs are
	// not counted (with them, 750).
	if r.Value < 790 || r.Value > 800 {
		t.Errorf("throughput %.1f TFLOPS, want about 800", r.Value)
	}
	if st := stats(); st.LiveAllocs != 0 || st.BadCalls != 0 || st.LiveEvents != 0 {
		t.Errorf("driver state after the soak: %+v", st)
	}

	// One simulated cuBLASLt finds the first simulated driver loaded, so
	// the faults are set on this one. The GEMMs run: BF16's first,
	// FP32's first, 128 BF16 (a batch), one FP32, ...
	cfg.SDCAt = 5
	reconfigure(t, cu, cfg)
	r = cu.Soak(context.Background(), 0, 300*time.Millisecond)
	s = r.Soak
	if r.Error != "" || s == nil || s.Mismatches != 1 || s.FirstMismatch == nil || s.FirstMismatch.Iteration != 3 ||
		s.FirstMismatch.Element != 8192*8192/3 || s.FirstMismatch.MaxDiff != 8 || s.FP32.Mismatches != 0 {
		t.Errorf("a wrong element in the 5th GEMM (BF16 iteration 3): %+v %+v", r, s)
	}
	cfg.SDCAt = 131
	reconfigure(t, cu, cfg)
	r = cu.Soak(context.Background(), 0, 300*time.Millisecond)
	if s = r.Soak; s == nil || s.Mismatches != 0 || s.FP32.Mismatches != 1 || s.FP32.FirstMismatch.Iteration != 1 {
		t.Errorf("a wrong element in the 131st GEMM (FP32 iteration 1): %+v", s)
	}
	// Wrong in the first result: every later one differs from it.
	cfg.SDCAt = 1
	reconfigure(t, cu, cfg)
	r = cu.Soak(context.Background(), 0, 100*time.Millisecond)
	if s := r.Soak; s == nil || s.Mismatches != s.Iterations-1 {
		t.Errorf("a wrong first result: %+v", s)
	}
}
