package compute

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/dl"
)

// Without the CUDA driver library the cuda backend must say so in words,
// without panicking: a library path that does not exist, and the loader's
// search where it finds none (a machine with a driver skips that one).
func TestCUDAAbsentFailsCleanly(t *testing.T) {
	for _, lib := range []string{filepath.Join(t.TempDir(), "libcuda.so.1"), ""} {
		if l, err := dl.Open("libcuda.so.1"); lib == "" && err == nil {
			l.Close()
			t.Log("this machine has libcuda.so.1: scripts/gpu-check.sh covers it")
			continue
		}
		r := CUDA{Library: lib}.Run(context.Background(), Options{})
		if r.Available || !strings.Contains(r.Error, "libcuda.so.1") || r.Results == nil {
			t.Errorf("library %q: %+v", lib, r)
		}
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

// The embedded torch script runs against a stand-in torch module
// (testdata/faketorch) on a virtual clock: every probe comes back with the
// rate it was given, TF32 only where the script allowed it, and the JSON
// fits the Go side's Result.
//
// TF32 is set in the words each torch knows: allow_tf32 before 2.9, and
// fp32_precision alone in a torch that refuses allow_tf32.
func TestTorchScriptSimulated(t *testing.T) {
	for api, how := range map[string]string{"": "allow_tf32=True", "new": "fp32_precision=tf32"} {
		t.Run("tf32 api "+cmp.Or(api, "legacy"), func(t *testing.T) { torchScriptSimulated(t, api, how) })
	}
}

// fakeTorch puts the stand-in torch (testdata/faketorch) first on
// python3's path, at known rates; without python3 the test is skipped.
func fakeTorch(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 here")
	}
	dir, err := filepath.Abs("testdata/faketorch")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PYTHONPATH", dir)
	t.Setenv("FAKE_TORCH_RATES", `{"fp32": 6e13, "tf32": 4e14, "bf16": 8e14, "device": 3e12, "link": 5e10}`)
}

func torchScriptSimulated(t *testing.T, api, how string) {
	fakeTorch(t)
	t.Setenv("FAKE_TORCH_TF32_API", api)
	r := Torch{}.Run(context.Background(), Options{})
	if !r.Available || r.Error != "" || r.Device != "Simulated GPU (fake torch)" || r.Driver != "torch 0.0-fake, CUDA 12.8" || !SameBusID(r.BusID, "00000000:3B:00.0") {
		t.Fatalf("%+v", r)
	}
	want := map[string]float64{ProbeGEMMFP32: 60, ProbeGEMMTF32: 400, ProbeGEMMBF16: 800, ProbeCopy: 3000, ProbeH2D: 50, ProbeD2H: 50}
	for probe, w := range want {
		got := r.Find(probe)
		// the summary is gpurent's, from every repetition, as the cuda
		// backend's: p99 too, which the script does not compute
		if got == nil || got.Error != "" || math.Abs(got.Value-w)/w > 0.001 || got.Timing.N != 5 || got.Timing.P99 < got.Timing.Median || got.Timing.Median <= 0 {
			t.Errorf("%s = %+v, want %.0f", probe, got, w)
		}
	}
	if g := r.Find(ProbeGEMMTF32); g == nil || g.Precision != "tf32" || !strings.Contains(g.Notes.String(), how) {
		t.Errorf("tf32: %+v", g)
	}
	// 80 GiB, a 1.6 GiB margin: 79 allocations (the last 0.4 GiB), 16
	// samples of 64 KiB each, all zero.
	if z := r.Find(ProbeResidue); z == nil || z.Error != "" || z.Value != 0 || z.Unit != "bytes" ||
		!strings.HasPrefix(z.Notes.String(), "read 79.0 MiB in 1264 samples over 78.40 GiB of fresh allocations before writing them, in ") ||
		!strings.HasSuffix(z.Notes.String(), " ms: 0 of 1264 samples held non-zero bytes") {
		t.Errorf("residue: %+v", z)
	}
	if len(r.Results) != len(want)+1 {
		t.Errorf("%d results, want %d", len(r.Results), len(want)+1)
	}
}

// The torch backend reads fresh memory before writing it, as the cuda
// backend does. Worked example: 50 GiB, a 1 GiB margin: 49 allocations
// of 1 GiB, 16 samples each on MiB boundaries, each MiB starting with
// 4096 bytes of another process's data: 49 x 16 x 4096 = 3,211,264 bytes.
func TestTorchResidueSimulated(t *testing.T) {
	fakeTorch(t)
	t.Setenv("FAKE_TORCH_MEMORY", fmt.Sprint(50<<30))
	t.Setenv("FAKE_TORCH_RESIDUE", "4096")
	r := Torch{}.Run(context.Background(), Options{Probes: []string{ProbeResidue, ProbeCopy}})
	d := r.Find(ProbeResidue)
	if d == nil || d.Error != "" || d.Value != 49*16*4096 ||
		!strings.HasPrefix(d.Notes.String(), "read 49.0 MiB in 784 samples over 49.00 GiB of fresh allocations before writing them, in ") ||
		!strings.Contains(d.Notes.String(), " ms: 784 of 784 samples held non-zero bytes; the first at 0.0") {
		t.Errorf("residue: %+v", d)
	}
	// The memory is free again for the probes after it: in 1.5 GiB, a
	// 512 MiB margin leaves one 1 GiB allocation, which full mode's
	// mem_copy needs again; held by the probe, it would not fit.
	t.Setenv("FAKE_TORCH_MEMORY", fmt.Sprint(3<<29))
	for _, fail := range []string{"", "count_nonzero"} {
		t.Setenv("FAKE_TORCH_FAIL", fail)
		r = Torch{}.Run(context.Background(), Options{Full: true, Probes: []string{ProbeResidue, ProbeCopy}})
		if z := r.Find(ProbeResidue); z == nil || (fail == "") != (z.Error == "") {
			t.Errorf("FAKE_TORCH_FAIL=%q: residue %+v", fail, z)
		}
		if c := r.Find(ProbeCopy); c == nil || c.Error != "" {
			t.Errorf("FAKE_TORCH_FAIL=%q: mem_copy after residue: %+v (%s)", fail, c, r.Error)
		}
	}
	// Nothing beyond the margin: an error, and the other probes still run.
	t.Setenv("FAKE_TORCH_FAIL", "")
	t.Setenv("FAKE_TORCH_MEMORY", fmt.Sprint(100<<20))
	r = Torch{}.Run(context.Background(), Options{Probes: []string{ProbeResidue, ProbeH2D}})
	if z := r.Find(ProbeResidue); z == nil || z.Error != "free 0.10 GiB of 0.10 GiB total: nothing to sample beyond the margin" || r.Find(ProbeH2D) == nil {
		t.Errorf("no memory: %+v %+v", r, z)
	}
}
