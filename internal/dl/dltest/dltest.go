// Package dltest builds the small C libraries the tests load in place of
// NVIDIA's (simulated NVML, CUDA driver and cuBLASLt), so that every
// binding is exercised through real dlopen and real calls on a machine
// without a GPU.
package dltest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// BuildC compiles src (a path relative to the test's package directory)
// into a shared library called name in a fresh temporary directory and
// returns its path. It skips the test where no C compiler is installed:
// $CC, then cc, gcc, clang, clang-19.
//
// The library binds its own symbols (-Bsymbolic): gpurent loads with
// RTLD_GLOBAL, and the simulated libraries share names such as
// fake_config, so without it one that is loaded while another is would
// have the other's constructor configure it.
func BuildC(t testing.TB, src, name string, flags ...string) string {
	t.Helper()
	cc := Compiler(t, "CC", "cc", "gcc", "clang", "clang-19")
	out := filepath.Join(t.TempDir(), name)
	args := append([]string{"-shared", "-fPIC", "-Wl,-Bsymbolic", "-O1", "-Wall", "-Werror", "-o", out, src}, flags...)
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

// NVIDIA is the value of env, one of the variables scripts/test.sh sets
// from scripts/nvidia-debs.sh to where NVIDIA's tools, libraries and
// headers were unpacked; it skips the test where that is unset (NVIDIA's
// software is not on this machine).
func NVIDIA(t testing.TB, env string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skip(env + " is not set: scripts/test.sh sets it (scripts/nvidia-debs.sh)")
	}
	return v
}

// RealDrivers lists the directories of NVIDIA's real driver libraries
// (libcuda.so.1, libnvidia-ml.so.1) in GPURENT_NVIDIA_DRIVERS.
func RealDrivers(t testing.TB) []string {
	t.Helper()
	return strings.Split(NVIDIA(t, "GPURENT_NVIDIA_DRIVERS"), ":")
}

// BoundSymbols lists the distinct first submatches of pattern in the test's
// package's non-test Go files (a pattern in quotes matches string
// literals): the entry points a binding names, so that a new one is
// checked against the real library without being listed in a test. It fails the test when there
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

// CEval is what a C compiler makes of expressions over headers.
type CEval struct {
	// Values maps each integer expression to its value, Names each name to
	// its macro expansion (cuMemAlloc to cuMemAlloc_v2).
	Values map[string]int64
	Names  map[string]string
	// Absent lists the value expressions that use an identifier no header
	// in the directory has (one newer than they are); they are not
	// compiled.
	Absent []string
}

// EvalC compiles and runs a C program that includes headers from dir (a
// list, as PATH is: the first holds the headers named, the rest what they
// include) and prints each of values (integer expressions: sizeof, offsetof, enum
// values, macros) and the expansion of each of names.
func EvalC(t testing.TB, dir string, headers, values, names []string) CEval {
	t.Helper()
	known := map[string]bool{"sizeof": true, "offsetof": true}
	dirs := filepath.SplitList(dir)
	files, _ := filepath.Glob(filepath.Join(dirs[0], "*.h"))
	ident := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ident.FindAll(b, -1) {
			known[string(id)] = true
		}
	}
	ev := CEval{Values: map[string]int64{}, Names: map[string]string{}}
	present := func(expr string) bool {
		for _, id := range ident.FindAllString(expr, -1) {
			if !known[id] {
				ev.Absent = append(ev.Absent, expr)
				return false
			}
		}
		return true
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n")
	for _, h := range headers {
		fmt.Fprintf(&src, "#include \"%s\"\n", h)
	}
	src.WriteString("#define GPURENT_STR(x) #x\n#define GPURENT_XSTR(x) GPURENT_STR(x)\nint main(void) {\n")
	var vals, nms []string
	for _, e := range values {
		if !slices.Contains(vals, e) && present(e) {
			fmt.Fprintf(&src, "  printf(\"v%d %%lld\\n\", (long long)(%s));\n", len(vals), e)
			vals = append(vals, e)
		}
	}
	for _, n := range names {
		if !slices.Contains(nms, n) {
			fmt.Fprintf(&src, "  printf(\"n%d %%s\\n\", GPURENT_XSTR(%s));\n", len(nms), n)
			nms = append(nms, n)
		}
	}
	src.WriteString("  return 0;\n}\n")
	tmp := t.TempDir()
	c, bin := filepath.Join(tmp, "eval.c"), filepath.Join(tmp, "eval")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := Compiler(t, "CC", "cc", "gcc", "clang", "clang-19")
	var args []string
	for _, d := range dirs {
		args = append(args, "-I", d)
	}
	if out, err := exec.Command(cc, append(args, "-o", bin, c)...).CombinedOutput(); err != nil {
		t.Fatalf("%s with %v: %v\n%s", cc, headers, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		key, val, _ := strings.Cut(line, " ")
		i, err := strconv.Atoi(key[1:])
		if err != nil {
			t.Fatalf("line %q", line)
		}
		if key[0] == 'n' {
			ev.Names[nms[i]] = strings.Join(strings.Fields(val), "")
			continue
		}
		v, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			t.Fatalf("line %q", line)
		}
		ev.Values[vals[i]] = v
	}
	if len(ev.Values) != len(vals) || len(ev.Names) != len(nms) {
		t.Fatalf("the C program printed %d values and %d names for %d and %d", len(ev.Values), len(ev.Names), len(vals), len(nms))
	}
	slices.Sort(ev.Absent)
	return ev
}

// CompareC evaluates the expressions of checks with EvalC and fails the
// test for each value that differs from the one the Go binding holds; it
// returns the evaluation.
func CompareC(t testing.TB, dir, header string, checks map[string]int64) CEval {
	t.Helper()
	exprs := make([]string, 0, len(checks))
	for e := range checks {
		exprs = append(exprs, e)
	}
	slices.Sort(exprs)
	ev := EvalC(t, dir, []string{header}, exprs, nil)
	for _, e := range exprs {
		if got, ok := ev.Values[e]; ok && got != checks[e] {
			t.Errorf("%s is %d in %s, %d in gpurent", e, got, header, checks[e])
		}
	}
	return ev
}
