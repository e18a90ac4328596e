package compute

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// simConfig mirrors struct config in testdata/fakecuda.c.
type simConfig struct {
	DriverVersion, MaxPTX    int64
	FP32, Tensor, Mem, Link  float64
	TotalMem, OtherTenantMem int64
	SliceEvery               int64
	SliceMs                  float64
	CC                       int64 // compute capability x10; 0: 9.0
	Residue                  int64 // bytes of another process's data at the start of each MiB of fresh memory
	FlipAt, FlipBit          int64 // a weak cell: bit FlipBit of the word at byte FlipAt-1 of each allocation reads 0
	SDCAt                    int64 // the SDCAt-th GEMM of the process gets one element wrong
	Devices                  int64 // 0: $FAKECUDA's devices=, else 1
	PeerBytes                float64
	NoPeer                   int64
	SlowA, SlowB             int64 // PCI rank+1 of a pair at a quarter of PeerBytes
	HangA, HangB             int64 // PCI rank+1 of a pair whose copies never complete
	BlockMs                  int64 // instead, the pair's cuMemcpyPeerAsync blocks this long
	FaultA, FaultB           int64 // PCI rank+1 of a pair whose copies fault
}

// simStats mirrors struct stats in testdata/fakecuda.c.
type simStats struct {
	Launches, LiveAllocs, LiveHost, LiveEvents, LiveModules, CtxRefs, WrongThread, BadCalls int64
	PeersEnabled                                                                            int64
}

// simDriver builds the simulated driver and a cuBLASLt that runs on it,
// and returns the backend that uses both.
func simDriver(t *testing.T, cfg simConfig, flags ...string) (cu CUDA, stats func() simStats) {
	t.Helper()
	path := dltest.BuildC(t, "testdata/fakecuda.c", "libcuda.so.1", flags...)
	blas := dltest.BuildC(t, "testdata/fakecublaslt.c", "libcublasLt.so.12")
	lib, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lib.Close)
	lib.Call("fake_config", uintptr(unsafe.Pointer(&cfg)))
	blib, err := dl.Open(blas)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(blib.Close)
	cpath := append([]byte(path), 0)
	blib.Call("fake_use_cuda_at", uintptr(unsafe.Pointer(&cpath[0])))
	return CUDA{Library: path, CublasLt: blas}, func() simStats {
		var s simStats
		lib.Call("fake_stats", uintptr(unsafe.Pointer(&s)))
		return s
	}
}

func simH100ish() simConfig {
	return simConfig{DriverVersion: 12080, MaxPTX: 88, FP32: 60e12, Tensor: 800e12, Mem: 3000e9, Link: 50e9,
		TotalMem: 80 << 30, OtherTenantMem: 1 << 30}
}

// The cuda backend runs every probe on a simulated driver whose rates are
// known: each figure must come back as the rate the simulation was given,
// through the real binding (purego calls, kernel parameters read by the
// sizes the PTX declares, events), with every allocation, event and module
// released and every call made on the thread that holds the context.
func TestCUDABackendSimulated(t *testing.T) {
	cu, stats := simDriver(t, simH100ish())
	r := cu.Run(context.Background(), Options{Sustained: 200 * time.Millisecond})
	if !r.Available || r.Error != "" || r.Device != "Simulated GPU (gpurent test driver)" || r.Driver != "CUDA 12.8" || r.BusID != "0000:3B:00.0" {
		t.Fatalf("%+v", r)
	}
	want := map[string]float64{
		ProbeFP32: 60, ProbeBF16: 800, ProbeFP16: 800, ProbeTF32: 400,
		ProbeGEMMFP32: 60, ProbeGEMMTF32: 400, ProbeGEMMBF16: 800,
		ProbeCopy: 3000, ProbeDtoD: 3000, ProbeH2D: 50, ProbeD2H: 50,
		ProbeAlloc: 79 - 1.6, // free minus the 2% margin
	}
	for probe, w := range want {
		got := r.Find(probe)
		if got == nil {
			t.Errorf("%s: missing", probe)
			continue
		}
		if got.Error != "" || math.Abs(got.Value-w)/w > 0.01 {
			t.Errorf("%s = %.2f %s (%s), want %.2f within 1%%", probe, got.Value, got.Unit, got.Error, w)
		}
		if got.WallMs <= 0 {
			t.Errorf("%s: no wall time", probe)
		}
		if probe != ProbeAlloc && got.Timing.N != 5 {
			t.Errorf("%s: %d repetitions, want 5 in quick mode", probe, got.Timing.N)
		}
	}
	if g := r.Find(ProbeGEMMBF16); g != nil && !strings.Contains(g.Notes.String(), "cuBLASLt 12.6.4") {
		t.Errorf("GEMM notes: %q", g.Notes)
	}
	// Compute capability 9.0 has no FP8 mma.sync (fp8MMA); 8.9 has.
	if f := r.Find(ProbeFP8); f == nil || !strings.HasPrefix(f.Error, "not measured on Hopper") || f.Value != 0 {
		t.Errorf("FP8 on Hopper: %+v", f)
	}
	ada := simH100ish()
	ada.CC = 89
	cuAda, _ := simDriver(t, ada)
	ra := cuAda.Run(context.Background(), Options{Probes: []string{ProbeFP8}})
	if f := ra.Find(ProbeFP8); f == nil || f.Error != "" || math.Abs(f.Value-1600)/1600 > 0.01 {
		t.Errorf("FP8 on compute capability 8.9: %+v, want 1600 TFLOPS", f)
	}
	s := r.Find(ProbeSustain)
	if s == nil || s.Contention == nil || s.Contention.Verdict != Clean || s.Contention.Launches < 100 {
		t.Errorf("sustained on an idle simulated GPU: %+v", s)
	}
	if st := stats(); st.LiveAllocs != 0 || st.LiveHost != 0 || st.LiveEvents != 0 || st.LiveModules != 0 || st.CtxRefs != 0 ||
		st.WrongThread != 0 || st.BadCalls != 0 {
		t.Errorf("driver state after the run: %+v", st)
	}
	// --probes: only what was asked, in the backend's order.
	r = cu.Run(context.Background(), Options{Sustained: 50 * time.Millisecond, Probes: []string{ProbeSustain, ProbeH2D}})
	if len(r.Results) != 2 || r.Results[0].Probe != ProbeH2D || r.Results[1].Probe != ProbeSustain {
		t.Errorf("probes h2d and sustained ran %+v", r.Results)
	}
}

// The residue probe reads fresh memory before anything writes it: a
// scrubbing driver's zeros are 0 bytes; a driver that hands out another
// process's data shows how much. Worked example: 50 GiB total, 1 GiB
// another tenant's, a 1 GiB margin (50/50): 48 allocations of 1 GiB (the
// probe runs before setup allocates anything), 16 samples each on MiB
// boundaries, each MiB starting with 4096 bytes of old data: 48 x 16 x
// 4096 = 3,145,728 bytes.
func TestCUDAResidueSimulated(t *testing.T) {
	cfg := simH100ish()
	cfg.TotalMem = 50 << 30
	clean, stats := simDriver(t, cfg)
	r := clean.Run(context.Background(), Options{Probes: []string{ProbeResidue, ProbeAlloc}})
	z := r.Find(ProbeResidue)
	if z == nil || z.Error != "" || z.Value != 0 || z.Unit != "bytes" ||
		!strings.HasPrefix(z.Notes.String(), "read 48.0 MiB in 768 samples over 48.00 GiB of fresh allocations before writing them, in ") ||
		!strings.HasSuffix(z.Notes.String(), " ms: 0 of 768 samples held non-zero bytes") {
		t.Fatalf("a scrubbing driver: %+v", z)
	}
	cfg.Residue = 4096
	dirty, _ := simDriver(t, cfg)
	r = dirty.Run(context.Background(), Options{Probes: []string{ProbeResidue, ProbeAlloc}})
	d := r.Find(ProbeResidue)
	// Each sample sits at a random whole MiB of its 64 MiB stretch, the
	// first within the first 64 MiB.
	if d == nil || d.Error != "" || d.Value != 48*16*4096 || !strings.Contains(d.Notes.String(), "768 of 768 samples held non-zero bytes; the first at 0.0") {
		t.Errorf("a driver that does not scrub: %+v", d)
	}
	// alloc, which runs after it, still finds the memory free again.
	if a := r.Find(ProbeAlloc); a == nil || a.Error != "" || math.Abs(a.Value-48) > 0.01 {
		t.Errorf("alloc after residue: %+v", a)
	}
	if st := stats(); st.LiveAllocs != 0 || st.BadCalls != 0 {
		t.Errorf("driver state after the run: %+v", st)
	}
}

// Another tenant's work every third launch shows as contention, and an
// old driver's JIT refusal of PTX 8.4 reaches the FP8 result with the
// JIT's own log, while the other probes still run.
func TestCUDABackendSimulatedSharedOldDriver(t *testing.T) {
	cfg := simH100ish()
	cfg.DriverVersion, cfg.MaxPTX, cfg.SliceEvery, cfg.SliceMs, cfg.CC = 12020, 82, 3, 4, 89
	cu, stats := simDriver(t, cfg)
	r := cu.Run(context.Background(), Options{Sustained: 200 * time.Millisecond})
	if !r.Available || r.Driver != "CUDA 12.2" {
		t.Fatalf("%+v", r)
	}
	s := r.Find(ProbeSustain)
	if s == nil || s.Contention == nil || s.Contention.Verdict != Contended {
		t.Errorf("sustained beside a simulated co-tenant: %+v", s)
	} else if math.Abs(s.Contention.SlowShare-1.0/3) > 0.02 || s.Contention.P50Ms < 0.5 || s.Contention.P50Ms > 2 {
		// The kernel is sized to about 1 ms on the fastest launches, not on
		// ones that waited for the other tenant.
		t.Errorf("slow share %.3f, want 1/3; p50 %.3f ms, want about 1", s.Contention.SlowShare, s.Contention.P50Ms)
	}
	fp8 := r.Find(ProbeFP8)
	if fp8 == nil || !strings.Contains(fp8.Error, "CUDA 12.4") || !strings.Contains(fp8.Error, "Unsupported .version 8.4") {
		t.Errorf("FP8 on a driver without PTX 8.4: %+v", fp8)
	}
	if bf := r.Find(ProbeBF16); bf == nil || bf.Error != "" || bf.Value <= 0 {
		t.Errorf("BF16 should still run: %+v", bf)
	}
	if st := stats(); st.LiveAllocs != 0 || st.LiveEvents != 0 || st.LiveModules != 0 || st.CtxRefs != 0 || st.WrongThread != 0 {
		t.Errorf("driver state after the run: %+v", st)
	}
}

// A driver before CUDA 12.8 has only the v1 cuEventElapsedTime, and one
// without a symbol the backend calls (cuMemHostAlloc here) costs the
// probes that need it, with the symbol named, and nothing else. Full mode
// takes 10 repetitions.
func TestCUDABackendSimulatedMissingSymbols(t *testing.T) {
	cfg := simH100ish()
	cfg.DriverVersion = 12060
	cu, stats := simDriver(t, cfg, "-DOLD_DRIVER", "-DNO_HOST_ALLOC")
	r := cu.Run(context.Background(), Options{Full: true, Sustained: 100 * time.Millisecond})
	if !r.Available {
		t.Fatalf("%+v", r)
	}
	for _, probe := range []string{ProbeH2D, ProbeD2H} {
		if h := r.Find(probe); h == nil || !strings.Contains(h.Error, "symbol cuMemHostAlloc is not in this driver's") {
			t.Errorf("%s without cuMemHostAlloc: %+v", probe, h)
		}
	}
	if f := r.Find(ProbeFP32); f == nil || f.Error != "" || math.Abs(f.Value-60)/60 > 0.01 || f.Timing.N != 10 {
		t.Errorf("FP32 on a 12.6 driver in full mode: %+v", f)
	}
	if c := r.Find(ProbeCopy); c == nil || !strings.Contains(c.Notes.String(), "1024 MiB") {
		t.Errorf("full mode copies 1 GiB: %+v", c)
	}
	if st := stats(); st.LiveAllocs != 0 || st.LiveEvents != 0 || st.CtxRefs != 0 || st.BadCalls != 0 {
		t.Errorf("driver state after the run: %+v", st)
	}
}

// burn, the co-tenant of scripts/gpu-check.sh, launches work until its
// time is up and releases what it took.
func TestBurnSimulated(t *testing.T) {
	cu, stats := simDriver(t, simH100ish())
	start := time.Now()
	what, err := cu.Burn(context.Background(), 0, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(what, "4096³ BF16 GEMM loop") {
		t.Errorf("burn ran %q, want the cuBLASLt GEMM loop", what)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 10*time.Second {
		t.Errorf("burn for 100ms took %v", d)
	}
	st := stats()
	if st.Launches < 16 || st.LiveAllocs != 0 || st.LiveModules != 0 || st.CtxRefs != 0 || st.BadCalls != 0 {
		t.Errorf("after burn: %+v", st)
	}
	cu.CublasLt = "/nonexistent/libcublasLt.so.12"
	what, err = cu.Burn(context.Background(), 0, 20*time.Millisecond)
	if err != nil || !strings.Contains(what, "mma_bf16 kernel loop") {
		t.Errorf("burn without cuBLASLt ran %q: %v", what, err)
	}
	if _, err := cu.Burn(context.Background(), 3, time.Millisecond); err == nil || !strings.Contains(err.Error(), "device 3 does not exist") {
		t.Errorf("burn on a missing device: %v", err)
	}
}

// A driver that will not start says why in words where the cause is one a
// rented machine's image typically has.
func TestCUDAInitFailures(t *testing.T) {
	for r, want := range map[int]string{
		34:  "CUDA unavailable: cuInit: CUDA_ERROR_STUB_LIBRARY: the libcuda.so loaded is the CUDA toolkit's stub",
		803: "CUDA unavailable: cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: the CUDA driver library and the kernel driver are different versions",
		804: "CUDA unavailable: cuInit: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: a CUDA forward-compatibility package",
		999: "CUDA unavailable: cuInit: CUDA_ERROR_UNKNOWN",
	} {
		cu, _ := simDriver(t, simH100ish())
		lib, err := dl.Open(cu.Library)
		if err != nil {
			t.Fatal(err)
		}
		lib.Call("fake_init_result", uintptr(r))
		res := cu.Run(context.Background(), Options{Probes: []string{ProbeFP32}})
		if res.Available || !strings.HasPrefix(res.Error, want) {
			t.Errorf("cuInit %d: %q, want %q", r, res.Error, want)
		}
		if _, err := cu.Devices(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Devices with cuInit %d: %v", r, err)
		}
		lib.Close()
	}
}

// A cuBLASLt newer than the driver (a PyTorch built for a newer CUDA than
// the host's driver, the usual case on a rented box) is not loaded, and
// the GEMM's error names it and what to do.
func TestCUDAGEMMLibraryTooNew(t *testing.T) {
	cfg := simH100ish()
	cfg.DriverVersion = 11080
	cu, _ := simDriver(t, cfg)
	prefix := t.TempDir() // a conda env with only a CUDA 12 cuBLASLt
	os.MkdirAll(filepath.Join(prefix, "lib"), 0o755)
	b, err := os.ReadFile(cu.CublasLt)
	if err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(prefix, "lib", "libcublasLt.so.12")
	if err := os.WriteFile(newer, b, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONDA_PREFIX", prefix)
	t.Setenv("GPURENT_CUBLASLT", "")
	cu.CublasLt = ""
	r := cu.Run(context.Background(), Options{Probes: []string{ProbeGEMMFP32}})
	g := r.Find(ProbeGEMMFP32)
	if g == nil || !strings.Contains(g.Error, "only cuBLASLt for CUDA 11 or older") ||
		!strings.HasPrefix(g.Error, newer+" (CUDA 12): newer than this driver's CUDA 11; update the driver") || !strings.Contains(g.Error, "nvidia-cublas-cu11") {
		t.Errorf("GEMM with only a too-new cuBLASLt: %+v", g)
	}
}
