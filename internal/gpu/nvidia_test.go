package gpu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
)

// The tests in this file run against NVIDIA's own software without a GPU:
// the driver's libcuda.so.1 and the CUDA toolkit's ptxas and cuobjdump,
// unpacked from Debian's non-free archive by scripts/nvidia-debs.sh, which
// scripts/test.sh runs. Where they are absent, the tests say so and skip.

// realDrivers lists the driver library directories in
// GPURENT_NVIDIA_DRIVERS (colon-separated).
func realDrivers(t *testing.T) []string {
	t.Helper()
	v := os.Getenv("GPURENT_NVIDIA_DRIVERS")
	if v == "" {
		t.Skip("GPURENT_NVIDIA_DRIVERS is not set: scripts/test.sh sets it (scripts/nvidia-debs.sh)")
	}
	return strings.Split(v, ":")
}

// boundSymbols is every CUDA driver entry point the package's code names:
// the string literals of its non-test files that look like one, so a new
// binding is checked without being listed here.
func boundSymbols(t *testing.T, pattern string) []string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		t.Fatalf("no symbol matching %s in the package's source", pattern)
	}
	return out
}

// cudaFallbacks names, for each entry point a driver may lack, the one the
// binding uses instead (abi_reference.md §2: cuEventElapsedTime_v2 is
// exported from CUDA 12.8).
var cudaFallbacks = map[string]string{"cuEventElapsedTime_v2": "cuEventElapsedTime"}

// A real driver library (535, CUDA 12.2; Tesla 470, CUDA 11.4) exports
// every entry point gpurent calls, or the fallback it uses in its place;
// and with no kernel driver, the backend says CUDA is unavailable and why,
// in words, without a panic.
func TestRealCUDADriverWithoutGPU(t *testing.T) {
	syms := boundSymbols(t, `"(cu[A-Z][A-Za-z0-9_]*)"`)
	for _, dir := range realDrivers(t) {
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
// common from sm_70, mma_sm80 from 8.0, mma_sm89 from 8.9). ptxas 11.8
// targets up to sm_90; newer cards are left to their drivers' JIT.
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
//   - mma_*: at least one tensor instruction (HMMA) for every other
//     instruction in the loop, one per mma.sync. An m16n8k16 HMMA keeps the
//     tensor pipe busy 4 (sm_90) to 8 (sm_80) cycles while the warp can
//     issue one instruction a cycle, so that leaves room to spare.
//   - copy16: every global load and store in the loop is 128 bits wide.
//     Narrower accesses put too few bytes in flight per thread to cover
//     DRAM latency (a copy of a 4-byte-aligned struct was four dependent
//     32-bit load/store pairs: one load in flight per thread).
func TestPTXAssemblesToRegisterLoops(t *testing.T) {
	tools := os.Getenv("GPURENT_CUDA_TOOLS")
	if tools == "" {
		t.Skip("GPURENT_CUDA_TOOLS is not set: scripts/test.sh sets it (scripts/nvidia-debs.sh)")
	}
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
				checkLoop(t, fn+" for "+arch, fn, code)
			}
		}
	}
	if checked < 10 {
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
		loop := hotLoop(code, "HMMA")
		n := count(loop, "HMMA")
		if n == 0 || n%4 != 0 || 2*n < len(loop) {
			t.Errorf("%s: the loop has %d HMMA of %d instructions; want a multiple of the 4 chains and at least half", what, n, len(loop))
		}
		t.Logf("%s: %d HMMA of %d instructions in the loop", what, n, len(loop))
	case fn == "copy16":
		loop := hotLoop(code, "LDG")
		if count(loop, "LDG") == 0 || count(loop, "STG") == 0 {
			t.Errorf("%s: no loop with global loads and stores", what)
		}
		for _, in := range loop {
			if (strings.HasPrefix(in.op, "LDG") || strings.HasPrefix(in.op, "STG")) && !strings.Contains(in.op, ".128") {
				t.Errorf("%s: %s at %#x in the copy loop: want 128-bit accesses only", what, in.op, in.addr)
			}
		}
	}
}
