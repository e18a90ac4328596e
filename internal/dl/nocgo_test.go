package dl

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// The tests run with cgo (the race detector needs it), but gpurent ships
// with CGO_ENABLED=0, where purego brings its own dlopen glue. This builds
// a small program that way and has it load and call a C++ library that
// needs what the real NVIDIA libraries need: static constructors, TLS,
// threads, exceptions; and a call with 16 arguments, as many as
// cublasLtMatmul takes.
func TestWithoutCgo(t *testing.T) {
	cxx := dltest.Compiler(t, "CXX", "c++", "g++", "clang++", "clang++-19")
	dir := t.TempDir()
	lib := filepath.Join(dir, "libcpplib.so")
	if b, err := exec.Command(cxx, "-shared", "-fPIC", "-O1", "-o", lib, "testdata/cpplib.cc").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cxx, err, b)
	}
	bin := filepath.Join(dir, "dlcall")
	build := exec.Command("go", "build", "-o", bin, "./testdata/dlcall")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	if b, err := exec.Command("go", "version", "-m", bin).Output(); err != nil || !strings.Contains(string(b), "CGO_ENABLED=0") {
		t.Fatalf("not a CGO_ENABLED=0 build: %v\n%s", err, b)
	}
	out, err := exec.Command(bin, lib).CombinedOutput()
	// sum over i of (i+1)·(1000+i), i = 0..15
	want := "constructed statically, calls 1, thread 100, caught 1\nconstructed statically, calls 2, thread 100, caught 1\nsum16 137360 <nil>\n"
	if err != nil || string(out) != want {
		t.Errorf("%v\n got %q\nwant %q", err, out, want)
	}
}
