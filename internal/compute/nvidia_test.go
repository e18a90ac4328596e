package compute

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// The tests in this file run against NVIDIA's own software without a GPU:
// the drivers' libcuda.so.1, the CUDA toolkit's ptxas and cuobjdump,
// cuBLASLt and the headers, unpacked from Debian's non-free archive by
// scripts/nvidia-debs.sh, which scripts/test.sh runs. Where they are
// absent, the tests say so and skip.

// cudaFallbacks names, for each entry point a driver may lack, the one the
// binding uses instead (abi_reference.md §2: cuEventElapsedTime_v2 is
// exported from CUDA 12.8).
var cudaFallbacks = map[string]string{"cuEventElapsedTime_v2": "cuEventElapsedTime"}

// A real driver library (550, CUDA 12.4; 535, 12.2; Tesla 470, 11.4) exports
// every entry point gpurent calls, or the fallback it uses in its place;
// and with no kernel driver, the backend says CUDA is unavailable and why,
// in words, without a panic.
func TestRealCUDADriverWithoutGPU(t *testing.T) {
	syms := dltest.BoundSymbols(t, `"(cu[A-Z][A-Za-z0-9_]*)"`, 20)
	for _, dir := range dltest.RealDrivers(t) {
		path := filepath.Join(dir, "libcuda.so.1")
		t.Run(filepath.Base(dir), func(t *testing.T) {
			lib, err := dl.Open(path)
			if err != nil {
				t.Fatalf("the driver library does not load: %v", err)
			}
			defer lib.Close()
			var version int32 // cuDriverGetVersion needs no cuInit
			if r, err := lib.Call("cuDriverGetVersion", uintptr(unsafe.Pointer(&version))); err != nil || r != 0 || version < 11000 {
				t.Fatalf("cuDriverGetVersion: %d, %d, %v", version, r, err)
			}
			t.Logf("%s: CUDA %d.%d driver API; %d entry points bound", path, version/1000, version%1000/10, len(syms))
			for _, s := range syms {
				if lib.Has(s) {
					continue
				}
				if fb, ok := cudaFallbacks[s]; !ok {
					t.Errorf("%s is not exported by the CUDA %d driver and the binding has no fallback for it", s, version)
				} else if !lib.Has(fb) {
					t.Errorf("neither %s nor its fallback %s is exported by the CUDA %d driver", s, fb, version)
				}
			}

			cu := CUDA{Library: path, CublasLt: "/nonexistent/libcublasLt.so"}
			r := cu.Run(context.Background(), Options{Probes: []string{ProbeFP32}})
			if r.Available || !strings.HasPrefix(r.Error, "CUDA unavailable: cuInit: CUDA_ERROR_") {
				t.Errorf("with no GPU: available %v, error %q", r.Available, r.Error)
			}
			if _, err := cu.Devices(); err == nil || !strings.HasPrefix(err.Error(), "CUDA unavailable: cuInit: CUDA_ERROR_") {
				t.Errorf("Devices with no GPU: %v", err)
			}
			t.Logf("without a GPU: %s", r.Error)
		})
	}
}

// The embedded PTX and the architectures each is loaded on (cudaprobe.go:
// common from sm_70, mma_sm80 from 8.0, mma_sm89 where fp8MMA says FP8
// mma.sync is native). ptxas 12.4 targets up to sm_90; newer cards are
// left to their drivers' JIT.
var ptxTargets = []struct {
	name, ptx string
	archs     []string
}{
	{"common_sm70", ptxCommon, []string{"sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90"}},
	{"mma_sm80", ptxMMA80, []string{"sm_80", "sm_86", "sm_89", "sm_90"}},
	{"mma_sm89", ptxMMA89, []string{"sm_89", "sm_90"}},
}

// NVIDIA's assembler takes every embedded kernel for every architecture it
// is loaded on, keeps each in registers (no stack, no spills), and the
// machine code of each probe's loop is what the probe's arithmetic assumes:
//   - fma32: at least 90% of the loop's instructions are FFMA, in multiples
//     of the 8 chains. On sm_86/sm_89 an FFMA issues every cycle, so every
//     other instruction in the loop costs FP32 peak; the target is 90%.
//   - mma_*: one tensor instruction (HMMA, QMMA) per mma.sync, and at most
//     two other instructions (NOPs the assembler pads QMMA with included)
//     for each. The quickest here, HMMA.16816 on sm_90, keeps the tensor
//     pipe of its SM partition busy 4 cycles (989 dense FP16 TFLOPS over
//     132 SMs x 4 partitions x 1.83 GHz is 1024 FLOPs a clock, and it is
//     4096 FLOPs), while the partition issues one instruction a cycle: up
//     to three others fit beside each without slowing it.
//   - copy16: every global load and store in the loop is 128 bits wide,
//     four or more a loop, and more than one load is issued before a store
//     waits for its data. Fewer bytes in flight per thread leave DRAM
//     latency uncovered (a copy of a 4-byte-aligned struct was four
//     dependent 32-bit load/store pairs: one load in flight per thread).
//
// mma_fp8 for sm_90 is the exception that proves fp8MMA right: Hopper has
// no FP8 tensor instruction for mma.sync, and the kernel must contain no
// QMMA.
func TestPTXAssemblesToRegisterLoops(t *testing.T) {
	tools := dltest.NVIDIA(t, "GPURENT_CUDA_TOOLS")
	ptxas := filepath.Join(tools, "ptxas")
	out, err := exec.Command(ptxas, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v: %s", ptxas, err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	dir := t.TempDir()
	checked := 0
	for _, tg := range ptxTargets {
		src := filepath.Join(dir, tg.name+".ptx")
		if err := os.WriteFile(src, []byte(tg.ptx), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, arch := range tg.archs {
			cubin := filepath.Join(dir, tg.name+"."+arch+".cubin")
			out, err := exec.Command(ptxas, "-arch="+arch, "-O3", "-v", src, "-o", cubin).CombinedOutput()
			if m := regexp.MustCompile(`Unsupported \.version (\S+); current version is '(\S+)'`).FindSubmatch(out); m != nil {
				t.Logf("%s: PTX ISA %s is newer than this ptxas reads (%s): not checked", tg.name, m[1], m[2])
				break
			}
			if err != nil {
				t.Errorf("ptxas -arch=%s %s: %v\n%s", arch, tg.name, err, out)
				continue
			}
			checked++
			for _, m := range regexp.MustCompile(`Function properties for (\w+)\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`).FindAllSubmatch(out, -1) {
				if string(m[2]) != "0" || string(m[3]) != "0" || string(m[4]) != "0" {
					t.Errorf("%s for %s: %s bytes stack, %s spill stores, %s spill loads: not register resident", m[1], arch, m[2], m[3], m[4])
				}
			}
			cmd := exec.Command(filepath.Join(tools, "cuobjdump"), "-sass", cubin)
			cmd.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH")) // cuobjdump runs nvdisasm
			sass, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("cuobjdump -sass %s: %v\n%s", cubin, err, sass)
			}
			for fn, code := range parseSASS(string(sass)) {
				if fn == "mma_fp8" && arch == "sm_90" {
					if n := count(code, "QMMA"); n != 0 {
						t.Errorf("mma_fp8 for sm_90 has %d QMMA: FP8 mma.sync is native on Hopper after all; revisit fp8MMA", n)
					}
					t.Logf("mma_fp8 for sm_90: no FP8 tensor instruction (%d HMMA in all: emulated through FP16)", count(code, "HMMA"))
					continue
				}
				checkLoop(t, fn+" for "+arch, fn, code)
			}
		}
	}
	if checked < 12 {
		t.Errorf("only %d kernel files assembled", checked)
	}
}

// sassInst is one machine instruction: its address, opcode with modifiers
// (e.g. LDG.E.128.CONSTANT) and, for a branch, its target.
type sassInst struct {
	addr, target int64
	op           string
}

// parseSASS reads cuobjdump -sass output into each function's instructions.
func parseSASS(text string) map[string][]sassInst {
	fnRe := regexp.MustCompile(`Function : (\w+)`)
	instRe := regexp.MustCompile(`^\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);`)
	braRe := regexp.MustCompile(`^\s*0x([0-9a-f]+)`)
	out := map[string][]sassInst{}
	fn := ""
	for _, line := range strings.Split(text, "\n") {
		if m := fnRe.FindStringSubmatch(line); m != nil {
			fn = m[1]
			continue
		}
		m := instRe.FindStringSubmatch(line)
		if m == nil || fn == "" {
			continue
		}
		in := sassInst{addr: hexInt(m[1]), target: -1, op: m[2]}
		if in.op == "BRA" {
			if b := braRe.FindStringSubmatch(m[3]); b != nil {
				in.target = hexInt(b[1])
			}
		}
		out[fn] = append(out[fn], in)
	}
	return out
}

func hexInt(s string) int64 {
	v, _ := strconv.ParseInt(s, 16, 64)
	return v
}

// hotLoop is the body of the backward branch that holds the most
// instructions whose opcode starts with work.
func hotLoop(code []sassInst, work string) []sassInst {
	var best []sassInst
	bestN := -1
	for _, b := range code {
		if b.target < 0 || b.target > b.addr {
			continue
		}
		var body []sassInst
		n := 0
		for _, in := range code {
			if in.addr >= b.target && in.addr <= b.addr {
				body = append(body, in)
				if strings.HasPrefix(in.op, work) {
					n++
				}
			}
		}
		if n > bestN {
			best, bestN = body, n
		}
	}
	return best
}

func count(body []sassInst, prefix string) int {
	n := 0
	for _, in := range body {
		if strings.HasPrefix(in.op, prefix) {
			n++
		}
	}
	return n
}

// checkLoop holds a probe kernel's loop to what its arithmetic assumes.
func checkLoop(t *testing.T, what, fn string, code []sassInst) {
	t.Helper()
	switch {
	case fn == "fma32":
		loop := hotLoop(code, "FFMA")
		n := count(loop, "FFMA")
		if n == 0 || n%8 != 0 || float64(n) < 0.9*float64(len(loop)) {
			t.Errorf("%s: the loop has %d FFMA of %d instructions; want a multiple of 8 and at least 90%%", what, n, len(loop))
		}
		t.Logf("%s: %d FFMA of %d instructions in the loop", what, n, len(loop))
	case strings.HasPrefix(fn, "mma_"):
		op := "HMMA"
		if fn == "mma_fp8" {
			op = "QMMA"
		}
		loop := hotLoop(code, op)
		n := count(loop, op)
		if n == 0 || n%4 != 0 || len(loop)-n > 2*n {
			t.Errorf("%s: the loop has %d %s of %d instructions; want a multiple of the 4 chains and at most 2 others for each", what, n, op, len(loop))
		}
		t.Logf("%s: %d %s of %d instructions in the loop", what, n, op, len(loop))
	case fn == "copy16":
		loop := hotLoop(code, "LDG")
		loads, stores := count(loop, "LDG"), count(loop, "STG")
		// A store waits for its load's data and the warp issues in order:
		// the loads issued ahead of the store that waits are in flight.
		inFlight, most := 0, 0
		for _, in := range loop {
			switch {
			case strings.HasPrefix(in.op, "LDG"):
				inFlight++
				most = max(most, inFlight)
			case strings.HasPrefix(in.op, "STG"):
				inFlight--
			}
		}
		if loads < 4 || loads != stores || most < 2 {
			t.Errorf("%s: the copy loop has %d loads and %d stores, at most %d loads in flight; want 4 or more of each, and more than one in flight", what, loads, stores, most)
		}
		for _, in := range loop {
			if (strings.HasPrefix(in.op, "LDG") || strings.HasPrefix(in.op, "STG")) && !strings.Contains(in.op, ".128") {
				t.Errorf("%s: %s at %#x in the copy loop: want 128-bit accesses only", what, in.op, in.addr)
			}
		}
		t.Logf("%s: %d 128-bit loads a loop, up to %d in flight before a store waits", what, loads, most)
	}
}

// The real cuBLASLt (12.4.5.8, Debian's libcublaslt12) without a GPU:
// cublasLtGetVersion reads as the library's own version, the descriptors
// of gpurent's GEMMs are accepted with the attribute sizes gpurent passes
// (the heuristic and the matmul need a device), and the missing GPU is
// reported at cublasLtCreate, naming the library.
func TestRealCublasLtWithoutGPU(t *testing.T) {
	path := dltest.NVIDIA(t, "GPURENT_REAL_CUBLASLT")
	if _, err := openBlasLt([]string{path}); err == nil || !strings.Contains(err.Error(), path+": cublasLtCreate: CUBLAS_STATUS_NOT_INITIALIZED") {
		t.Errorf("openBlasLt with no GPU: %v", err)
	}
	lib, err := dl.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	v, err := lib.CallWord("cublasLtGetVersion")
	if err != nil {
		t.Fatal(err)
	}
	b := &blasLt{lib: lib, version: uint64(v)} // no handle: cublasLtCreate needs a GPU
	file, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	// libcublasLt.so.12.4.5.8 is version 12.4.5, build 8.
	parts := strings.Split(strings.TrimPrefix(filepath.Base(file), "libcublasLt.so."), ".")
	if len(parts) < 3 || !strings.HasPrefix(b.String(), "cuBLASLt "+strings.Join(parts[:3], ".")+" ") {
		t.Errorf("cublasLtGetVersion %d reads as %q; the file is %s", v, b.String(), filepath.Base(file))
	}
	t.Logf("%s: cublasLtGetVersion %d, %s", file, v, b)

	for _, g := range gemmPrecisions() {
		p, err := b.describe(g, 8192, gemmWorkspace)
		if err != nil {
			t.Errorf("%s: %v", g.what, err)
			continue
		}
		b.destroy(p)
	}
	// The library checks attribute sizes, so the accepted ones above mean
	// something: a transpose attribute given 8 bytes is refused.
	var desc uintptr
	if err := b.check("cublasLtMatmulDescCreate", uintptr(unsafe.Pointer(&desc)), cublasCompute32F, cudaR32F); err != nil {
		t.Fatal(err)
	}
	defer lib.Call("cublasLtMatmulDescDestroy", desc)
	op := int64(cublasOpN)
	if err := b.check("cublasLtMatmulDescSetAttribute", desc, ltDescTransA, uintptr(unsafe.Pointer(&op)), 8); err == nil || !strings.Contains(err.Error(), "INVALID_VALUE") {
		t.Errorf("an 8-byte transpose attribute was not refused: %v", err)
	}
}

// The CUDA driver and cuBLASLt bindings agree with NVIDIA's cuda.h and
// cublasLt.h (12.4, Debian's nvidia-cuda-dev, headers only, unpacked by
// scripts/nvidia-debs.sh):
//   - every entry point gpurent calls is the one the header maps its name
//     to (cuMemAlloc is cuMemAlloc_v2; the bare names are the 32-bit
//     legacy ABI), but for cuEventElapsedTime_v2, newer than the header,
//     whose fallback must be the header's;
//   - every CUresult and cublasStatus_t gpurent names, device attribute,
//     JIT option and cuBLASLt enum it passes, and the layout of
//     cublasLtMatmulHeuristicResult_t it reads, have the header's values.
func TestCUDAMatchesNVIDIAHeaders(t *testing.T) {
	dir := dltest.NVIDIA(t, "GPURENT_NVIDIA_INCLUDE")
	syms := dltest.BoundSymbols(t, `"(cu[A-Z][A-Za-z0-9_]*)"`, 20)
	base := regexp.MustCompile(`_v[0-9]+$`)
	var names []string
	for _, s := range syms {
		names = append(names, base.ReplaceAllString(s, ""))
	}
	ev := dltest.EvalC(t, dir, []string{"cuda.h"}, nil, names)
	for _, s := range syms {
		want := ev.Names[base.ReplaceAllString(s, "")]
		if fb, ok := cudaFallbacks[s]; ok {
			s = fb // newer than the header: its fallback must be the header's name
		}
		if s != want {
			t.Errorf("gpurent calls %s; cuda.h maps %s to %s", s, base.ReplaceAllString(s, ""), want)
		}
	}

	checks := map[string]int64{
		"CU_DEVICE_ATTRIBUTE_CLOCK_RATE":               cuAttrClockRate,
		"CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT":     cuAttrSMCount,
		"CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE":        cuAttrMemClockRate,
		"CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH":  cuAttrBusWidth,
		"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": cuAttrCCMajor,
		"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": cuAttrCCMinor,
		"CU_DEVICE_ATTRIBUTE_MPS_ENABLED":              cuAttrMPSEnabled,
		"CU_JIT_ERROR_LOG_BUFFER":                      cuJitErrorLogBuffer,
		"CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES":           cuJitErrorLogBufBytes,
		"CUDA_SUCCESS":                                 0,
		"CU_STREAM_NON_BLOCKING":                       1,
		"CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED":       cuErrPeerAlreadyEnabled,
		"CUDA_ERROR_NOT_READY":                         cuErrNotReady,
	}
	for r := int32(1); r <= 1000; r++ {
		if n, ok := strings.CutPrefix(cuResultName(r), "CUDA_ERROR_"); ok {
			checks["CUDA_ERROR_"+n] = int64(r)
		}
	}
	ev = dltest.CompareC(t, dir, "cuda.h", checks)
	if len(ev.Values) < 40 {
		t.Errorf("only %d cuda.h values compiled", len(ev.Values))
	}
	t.Logf("%d entry points and %d values compared with cuda.h; not in it: %v", len(syms), len(ev.Values), ev.Absent)

	lt := map[string]int64{
		"CUBLAS_COMPUTE_32F":                                       cublasCompute32F,
		"CUBLAS_COMPUTE_32F_FAST_TF32":                             cublasCompute32FTF32,
		"CUDA_R_32F":                                               cudaR32F,
		"CUDA_R_16BF":                                              cudaR16BF,
		"CUBLASLT_MATMUL_DESC_TRANSA":                              ltDescTransA,
		"CUBLASLT_MATMUL_DESC_TRANSB":                              ltDescTransB,
		"CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES":                 ltPrefMaxWorkspace,
		"CUBLAS_OP_N":                                              cublasOpN,
		"CUBLAS_STATUS_SUCCESS":                                    0,
		"sizeof(cublasLtMatmulAlgo_t)":                             int64(unsafe.Sizeof(ltHeuristic{}.Algo)),
		"sizeof(cublasLtMatmulHeuristicResult_t)":                  int64(unsafe.Sizeof(ltHeuristic{})),
		"offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize)": int64(unsafe.Offsetof(ltHeuristic{}.WorkspaceSize)),
		"offsetof(cublasLtMatmulHeuristicResult_t, state)":         int64(unsafe.Offsetof(ltHeuristic{}.State)),
		"offsetof(cublasLtMatmulHeuristicResult_t, wavesCount)":    int64(unsafe.Offsetof(ltHeuristic{}.WavesCount)),
	}
	for s := int32(1); s <= 100; s++ {
		if n, ok := strings.CutPrefix(cublasStatusName(s), "CUBLAS_STATUS_"); ok {
			lt["CUBLAS_STATUS_"+n] = int64(s)
		}
	}
	ev = dltest.CompareC(t, dir, "cublasLt.h", lt)
	if len(ev.Values) != len(lt) {
		t.Errorf("cublasLt.h lacks %v", ev.Absent)
	}
	t.Logf("%d values compared with cublasLt.h", len(ev.Values))
}
