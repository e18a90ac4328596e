// Package dltest builds the small C libraries the tests load in place of
// NVIDIA's (simulated NVML, CUDA driver and cuBLASLt), so that every
// binding is exercised through real dlopen and real calls on a machine
// without a GPU.
package dltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// BuildC compiles src (a path relative to the test's package directory)
// into a shared library called name in a fresh temporary directory and
// returns its path. It skips the test where no C compiler is installed:
// $CC, then cc, gcc, clang, clang-19.
func BuildC(t testing.TB, src, name string, flags ...string) string {
	t.Helper()
	cc := Compiler(t, "CC", "cc", "gcc", "clang", "clang-19")
	out := filepath.Join(t.TempDir(), name)
	args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", out, src}, flags...)
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, src, err, b)
	}
	return out
}

// Compiler returns the compiler named by the environment variable env or,
// where that is unset, the first of names on the PATH; it skips the test
// where there is none.
func Compiler(t testing.TB, env string, names ...string) string {
	t.Helper()
	if c := os.Getenv(env); c != "" {
		return c
	}
	for _, c := range names {
		if _, err := exec.LookPath(c); err == nil {
			return c
		}
	}
	t.Skipf("no compiler (%s or one of %v) to build the test's C library", env, names)
	return ""
}

// RealDrivers lists the directories of NVIDIA's real driver libraries
// (libcuda.so.1, libnvidia-ml.so.1) in GPURENT_NVIDIA_DRIVERS, which
// scripts/test.sh sets from scripts/nvidia-debs.sh; it skips the test
// where that is unset.
func RealDrivers(t testing.TB) []string {
	t.Helper()
	v := os.Getenv("GPURENT_NVIDIA_DRIVERS")
	if v == "" {
		t.Skip("GPURENT_NVIDIA_DRIVERS is not set: scripts/test.sh sets it (scripts/nvidia-debs.sh)")
	}
	return strings.Split(v, ":")
}

// BoundSymbols lists the distinct first submatches of pattern in the
// string literals of the test's package's non-test Go files: the entry
// points a binding names, so that a new one is checked against the real
// library without being listed in a test. It fails the test when there
// are fewer than min.
func BoundSymbols(t testing.TB, pattern string, min int) []string {
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
	if len(out) < min {
		t.Fatalf("only %d symbols matching %s in the package's source: %v", len(out), pattern, out)
	}
	return out
}
