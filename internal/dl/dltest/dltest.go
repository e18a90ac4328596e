// Package dltest builds the small C libraries the tests load in place of
// NVIDIA's (simulated NVML, CUDA driver and cuBLASLt), so that every
// binding is exercised through real dlopen and real calls on a machine
// without a GPU.
package dltest

import (
	"os"
	"os/exec"
	"path/filepath"
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
