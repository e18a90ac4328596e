package compute

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl/dltest"
)

// fakeRecord mirrors struct record in fakecublaslt.c.
type fakeRecord struct {
	Calls, Compute, Scale, TransA, TransB int32
	Type                                  uint32
	Rows, Cols                            uint64
	LD                                    int64
	Alpha, Beta                           float32
	A, B, C, D, Workspace, WorkspaceSize  uint64
	Stream                                uint64
}

// The binding drives a C library built from the reference's prototypes:
// every argument of every call lands where the C ABI puts it, including
// cublasLtMatmul's 16, and nothing is leaked.
func TestCublasLtABI(t *testing.T) {
	lt, err := openBlasLt([]string{filepath.Join(t.TempDir(), "missing.so"), dltest.BuildC(t, "testdata/fakecublaslt.c", "libcublasLt.so.12")})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.close()
	if s := lt.String(); s != "cuBLASLt 12.6.4 (libcublasLt.so.12)" && !strings.HasPrefix(s, "cuBLASLt 12.6.4 (/") {
		t.Errorf("String() = %q", s)
	}
	live := func() int32 { n, _ := lt.lib.Call("fake_live"); return n }
	if n := live(); n != 1 {
		t.Fatalf("%d live objects after create, want the handle", n)
	}
	wantType := map[string]uint32{"fp32": 0, "tf32": 0, "bf16": 14}
	wantCompute := map[string]int32{"fp32": 68, "tf32": 77, "bf16": 68}
	for i, g := range gemmPrecisions() {
		p, err := lt.plan(g, 8192, 32<<20)
		if err != nil {
			t.Fatalf("%s: %v", g.prec, err)
		}
		if p.heur.WorkspaceSize != 4096 || p.heur.WavesCount != 1.5 || p.heur.State != 0 {
			t.Errorf("%s: heuristic result read as %+v", g.prec, p.heur)
		}
		stream := uintptr(0x5151 + i)
		if err := lt.matmul(p, 0xa000, 0xb000, 0xd000, 0xe000, 32<<20, stream); err != nil {
			t.Fatalf("%s: %v", g.prec, err)
		}
		var rec fakeRecord
		lt.lib.Call("fake_last", uintptr(unsafe.Pointer(&rec)))
		want := fakeRecord{Calls: int32(i + 1), Compute: wantCompute[g.prec], Scale: 0, TransA: 0, TransB: 0, Type: wantType[g.prec],
			Rows: 8192, Cols: 8192, LD: 8192, Alpha: 1, Beta: 0, A: 0xa000, B: 0xb000, C: 0xd000, D: 0xd000,
			Workspace: 0xe000, WorkspaceSize: 32 << 20, Stream: uint64(stream)}
		if rec != want {
			t.Errorf("%s: the library received\n %+v\nwant\n %+v", g.prec, rec, want)
		}
		lt.destroy(p)
		if n := live(); n != 1 {
			t.Errorf("%s: %d live objects after destroy, want 1", g.prec, n)
		}
	}
	// A heuristic that finds nothing is an error naming the set-up.
	lt.lib.Call("fake_fail_heuristic", 1)
	if _, err := lt.plan(gemmPrecisions()[2], 1024, 32<<20); err == nil || !strings.Contains(err.Error(), "CUBLAS_STATUS_NOT_SUPPORTED") {
		t.Errorf("failed heuristic: %v", err)
	}
	lt.lib.Call("fake_fail_heuristic", 0)
	// Too small a workspace limit: the fake finds no algorithm either.
	if _, err := lt.plan(gemmPrecisions()[0], 1024, 100); err == nil {
		t.Error("a 100-byte workspace limit found an algorithm")
	}
	if n := live(); n != 1 {
		t.Errorf("%d live objects after failed plans, want 1", n)
	}
}

func TestCublasLtMissing(t *testing.T) {
	if _, err := openBlasLt(nil); err == nil || !strings.Contains(err.Error(), "GPURENT_CUBLASLT") {
		t.Errorf("no candidates: %v", err)
	}
	// Nothing there at all: one sentence, not a line per soname.
	_, err := openBlasLt([]string{"/nonexistent/libcublasLt.so.12", "libcublasLt-not-here.so.99"})
	if err == nil || !strings.Contains(err.Error(), "was not found") || strings.Contains(err.Error(), "not-here") {
		t.Errorf("missing files: %v", err)
	}
	// A file that is there but will not load is named, with why.
	bad := filepath.Join(t.TempDir(), "libcublasLt.so.12")
	if err := os.WriteFile(bad, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = openBlasLt([]string{"libcublasLt-not-here.so.99", bad})
	if err == nil || !strings.Contains(err.Error(), "no usable libcublasLt") || !strings.Contains(err.Error(), bad) {
		t.Errorf("unloadable file: %v", err)
	}
}

func TestCublasLtCandidates(t *testing.T) {
	root := fstest.MapFS{
		"usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublasLt.so.12":                              {},
		"usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublasLt.so.12.4.5.8":                        {},
		"usr/local/lib/python3.11/dist-packages/nvidia/cublas/lib/libcublasLt.so.12":                  {},
		"root/miniconda3/lib/python3.10/site-packages/nvidia/cu13/lib/libcublasLt.so.13":              {},
		"root/miniconda3/envs/torch/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.11": {},
		"srv/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.12":                   {},
		"usr/local/cuda/lib64/libcublas.so.12":                                                        {}, // not Lt
		"usr/local/cuda/lib64/libcublasLt.so":                                                         {}, // dev symlink: no major
	}
	env := map[string]string{"VIRTUAL_ENV": "/srv/venv"}
	got, tooNew := cublasLtCandidates(root, func(k string) string { return env[k] }, 12, nil)
	want := []string{
		"libcublasLt.so.12", "libcublasLt.so.11",
		"/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublasLt.so.12",
		"/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublasLt.so.12.4.5.8",
		"/usr/local/lib/python3.11/dist-packages/nvidia/cublas/lib/libcublasLt.so.12",
		"/srv/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.12",
		"/root/miniconda3/envs/torch/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.11",
	}
	if !slices.Equal(got, want) {
		t.Errorf("driver 12:\n got %q\nwant %q", got, want)
	}
	// What a CUDA 12 driver cannot run is named, so a failure can say why.
	if want := []string{"/root/miniconda3/lib/python3.10/site-packages/nvidia/cu13/lib/libcublasLt.so.13"}; !slices.Equal(tooNew, want) {
		t.Errorf("driver 12, too new:\n got %q\nwant %q", tooNew, want)
	}
	// A CUDA 13 driver takes the 13 library first; an explicit path goes
	// before everything.
	env["GPURENT_CUBLASLT"] = "/opt/mine/libcublasLt.so.12"
	got, tooNew = cublasLtCandidates(root, func(k string) string { return env[k] }, 13, nil)
	if len(got) < 3 || got[0] != "/opt/mine/libcublasLt.so.12" || got[1] != "libcublasLt.so.13" ||
		!slices.Contains(got, "/root/miniconda3/lib/python3.10/site-packages/nvidia/cu13/lib/libcublasLt.so.13") ||
		slices.Index(got, "/root/miniconda3/lib/python3.10/site-packages/nvidia/cu13/lib/libcublasLt.so.13") > slices.Index(got, "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcublasLt.so.12") {
		t.Errorf("driver 13: %q", got)
	}
	if len(tooNew) != 0 {
		t.Errorf("driver 13, too new: %q", tooNew)
	}
	// Where python3 keeps its packages (pyenv here) is searched too.
	root["opt/pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cublas/lib/libcublasLt.so.12"] = &fstest.MapFile{}
	got, _ = cublasLtCandidates(root, func(string) string { return "" }, 12, []string{"/opt/pyenv/versions/3.11.7/lib/python3.11/site-packages"})
	if !slices.Contains(got, "/opt/pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cublas/lib/libcublasLt.so.12") {
		t.Errorf("python's site-packages: %q", got)
	}
}

func TestPythonSitePackages(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	dirs := pythonSitePackages(context.Background())
	if len(dirs) == 0 {
		t.Fatal("python3 named no package directories")
	}
	for _, d := range dirs {
		if !filepath.IsAbs(d) || !strings.Contains(d, "python") {
			t.Errorf("%q", d)
		}
	}
}
