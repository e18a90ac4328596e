package compute

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// TestKernelsOnHost compiles the FP32 and memory kernels (kernels/common.cu)
// for this machine with clang and runs every thread of several grids in
// turn over lengths around multiples of the grid stride: each element
// below n is copied exactly once (a store is counted) or filled with a
// value in [-1, 1), nothing past n is touched, and fma32 stores nothing.
// The GPU runs the same source through PTX; a wrong index there would go
// unseen, since the probes time the kernels and do not read their output.
func TestKernelsOnHost(t *testing.T) {
	clang := dltest.Compiler(t, "CLANG", "clang-19", "clang")
	bin := filepath.Join(t.TempDir(), "kernels_host")
	if out, err := exec.Command(clang, "-x", "c++", "-std=c++17", "-O1", "-Wall", "-Werror",
		"-o", bin, "testdata/kernels_host.cpp", "-lm").CombinedOutput(); err != nil {
		t.Fatalf("%s testdata/kernels_host.cpp: %v\n%s", clang, err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.HasSuffix(strings.TrimSpace(string(out)), " 0 failures") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}
