package compute

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/gpurent/gpurent/internal/dl"
)

// The cuBLASLt binding is written from NVIDIA's cublasLt.h
// (sonames, prototypes, struct sizes, enum values, all compiled from the
// CUDA 12.6 headers and unchanged through 13.0). Its symbols carry no
// version suffix. cublasLtMatmul takes 16 arguments, more than purego's
// 15 before v0.11; go.mod pins a purego that passes 32 (§4), and
// TestCublasLtABI calls it through a C library built from the prototypes.

// cuBLASLt enum values (abi_reference.md §3.4).
const (
	cublasCompute32F     = 68
	cublasCompute32FTF32 = 77
	cudaR32F             = 0
	cudaR16BF            = 14

	ltDescTransA       = 3
	ltDescTransB       = 4
	ltPrefMaxWorkspace = 1
	cublasOpN          = 0
)

// cublasStatusName names cublasStatus_t codes (§3.4).
func cublasStatusName(s int32) string {
	names := map[int32]string{1: "NOT_INITIALIZED", 3: "ALLOC_FAILED", 7: "INVALID_VALUE", 8: "ARCH_MISMATCH", 11: "MAPPING_ERROR",
		13: "EXECUTION_FAILED", 14: "INTERNAL_ERROR", 15: "NOT_SUPPORTED", 16: "LICENSE_ERROR"}
	if n, ok := names[s]; ok {
		return "CUBLAS_STATUS_" + n
	}
	return fmt.Sprintf("cublasStatus %d", s)
}

// ltHeuristic is cublasLtMatmulHeuristicResult_t: 96 bytes, the algo's 64
// opaque bytes first (§3.3).
type ltHeuristic struct {
	Algo          [8]uint64
	WorkspaceSize uint64
	State         int32
	WavesCount    float32
	_             [4]int32
}

// gemmPrecision is how one probe's GEMM is set up, as torch runs it:
// FP32 in and out with FP32 compute; the same with TF32 tensor cores
// allowed (torch's allow_tf32); BF16 in and out with FP32 accumulate.
type gemmPrecision struct {
	probe   string
	prec    string
	compute int32
	data    int32 // A, B, C and D
	elem    uint64
	what    string
}

func gemmPrecisions() []gemmPrecision {
	return []gemmPrecision{
		{ProbeGEMMFP32, "fp32", cublasCompute32F, cudaR32F, 4, "FP32 in and out, CUBLAS_COMPUTE_32F"},
		{ProbeGEMMTF32, "tf32", cublasCompute32FTF32, cudaR32F, 4, "FP32 in and out, CUBLAS_COMPUTE_32F_FAST_TF32"},
		{ProbeGEMMBF16, "bf16", cublasCompute32F, cudaR16BF, 2, "BF16 in and out, FP32 accumulate"},
	}
}

// blasLt is an open cuBLASLt with a handle.
type blasLt struct {
	lib *dl.Lib
	h   uintptr
	// version is cublasLtGetVersion's value, major*10000 + minor*100 +
	// patch as cublas_api.h composes CUBLAS_VERSION (the real 12.4.5.8
	// library says 120405: TestRealCublasLtWithoutGPU).
	version uint64
}

// openBlasLt opens the first candidate that loads and yields a handle. The
// error names every candidate tried and what went wrong with it.
func openBlasLt(candidates []string) (*blasLt, error) {
	const notFound = "libcublasLt.so was not found (it comes with the CUDA toolkit, or pip's nvidia-cublas wheels that PyTorch installs); set GPURENT_CUBLASLT to its path"
	if len(candidates) == 0 {
		return nil, errors.New(notFound)
	}
	var errs []string
	missing := 0
	for _, c := range candidates {
		lib, err := dl.Open(c)
		if errors.Is(err, dl.ErrNoLoader) {
			return nil, err
		}
		if err != nil {
			// A soname the loader does not know is the usual case on a
			// machine without the library: not worth a line each.
			if strings.Contains(err.Error(), "No such file or directory") {
				missing++
			}
			errs = append(errs, err.Error())
			continue
		}
		b := &blasLt{lib: lib}
		if err := b.check("cublasLtCreate", uintptr(unsafe.Pointer(&b.h))); err != nil {
			lib.Close()
			errs = append(errs, c+": "+err.Error())
			continue
		}
		if v, err := lib.CallWord("cublasLtGetVersion"); err == nil {
			b.version = uint64(v)
		}
		return b, nil
	}
	if missing == len(candidates) {
		return nil, errors.New(notFound)
	}
	return nil, fmt.Errorf("no usable libcublasLt: %s", strings.Join(errs, "; "))
}

func (b *blasLt) close() {
	b.lib.Call("cublasLtDestroy", b.h)
	b.lib.Close()
}

// String names the library and its version, e.g. "cuBLASLt 12.6.4 (libcublasLt.so.12)".
func (b *blasLt) String() string {
	v := b.version
	return fmt.Sprintf("cuBLASLt %d.%d.%d (%s)", v/10000, v/100%100, v%100, b.lib.Name())
}

//go:uintptrescapes
func (b *blasLt) check(name string, args ...uintptr) error {
	s, err := b.lib.Call(name, args...)
	if err != nil {
		return err
	}
	if s != 0 {
		return fmt.Errorf("%s: %s", name, cublasStatusName(s))
	}
	return nil
}

// gemmPlan is an n×n×n GEMM, D = A·B, column-major, no transposes, with
// the algorithm the heuristic chose for a workspace limit.
type gemmPlan struct {
	desc, layout, pref uintptr
	heur               ltHeuristic
	n                  uint64
}

// plan describes the GEMM and asks the heuristic for its best algorithm.
func (b *blasLt) plan(g gemmPrecision, n, workspace uint64) (*gemmPlan, error) {
	p, err := b.describe(g, n, workspace)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*gemmPlan, error) {
		b.destroy(p)
		return nil, err
	}
	var found int32
	if err := b.check("cublasLtMatmulAlgoGetHeuristic", b.h, p.desc, p.layout, p.layout, p.layout, p.layout, p.pref, 1,
		uintptr(unsafe.Pointer(&p.heur)), uintptr(unsafe.Pointer(&found))); err != nil {
		return fail(err)
	}
	if found < 1 || p.heur.State != 0 {
		return fail(fmt.Errorf("cublasLtMatmulAlgoGetHeuristic found no algorithm for %s (%d results, state %s)", g.what, found, cublasStatusName(p.heur.State)))
	}
	if p.heur.WorkspaceSize > workspace {
		return fail(fmt.Errorf("cublasLtMatmulAlgoGetHeuristic chose an algorithm needing %d bytes of workspace, over the %d allowed", p.heur.WorkspaceSize, workspace))
	}
	return p, nil
}

// describe creates the GEMM's descriptors: the operation, one layout all
// four matrices share (square, same type, ld = n) and the preference that
// caps the workspace. It needs no GPU, unlike the heuristic.
func (b *blasLt) describe(g gemmPrecision, n, workspace uint64) (*gemmPlan, error) {
	p := &gemmPlan{n: n}
	fail := func(err error) (*gemmPlan, error) {
		b.destroy(p)
		return nil, err
	}
	if err := b.check("cublasLtMatmulDescCreate", uintptr(unsafe.Pointer(&p.desc)), uintptr(g.compute), cudaR32F); err != nil {
		return fail(err)
	}
	op := int32(cublasOpN)
	for _, attr := range []uintptr{ltDescTransA, ltDescTransB} {
		if err := b.check("cublasLtMatmulDescSetAttribute", p.desc, attr, uintptr(unsafe.Pointer(&op)), 4); err != nil {
			return fail(err)
		}
	}
	if err := b.check("cublasLtMatrixLayoutCreate", uintptr(unsafe.Pointer(&p.layout)), uintptr(g.data), uintptr(n), uintptr(n), uintptr(n)); err != nil {
		return fail(err)
	}
	if err := b.check("cublasLtMatmulPreferenceCreate", uintptr(unsafe.Pointer(&p.pref))); err != nil {
		return fail(err)
	}
	if err := b.check("cublasLtMatmulPreferenceSetAttribute", p.pref, ltPrefMaxWorkspace, uintptr(unsafe.Pointer(&workspace)), 8); err != nil {
		return fail(err)
	}
	return p, nil
}

// matmul enqueues D = 1·A·B + 0·D on stream.
func (b *blasLt) matmul(p *gemmPlan, a, bm, d, workspace, workspaceSize uint64, stream uintptr) error {
	alpha, beta := float32(1), float32(0)
	return b.check("cublasLtMatmul", b.h, p.desc,
		uintptr(unsafe.Pointer(&alpha)), uintptr(a), p.layout, uintptr(bm), p.layout,
		uintptr(unsafe.Pointer(&beta)), uintptr(d), p.layout, uintptr(d), p.layout,
		uintptr(unsafe.Pointer(&p.heur.Algo)), uintptr(workspace), uintptr(workspaceSize), stream)
}

func (b *blasLt) destroy(p *gemmPlan) {
	if p.pref != 0 {
		b.lib.Call("cublasLtMatmulPreferenceDestroy", p.pref)
	}
	if p.layout != 0 {
		b.lib.Call("cublasLtMatrixLayoutDestroy", p.layout)
	}
	if p.desc != 0 {
		b.lib.Call("cublasLtMatmulDescDestroy", p.desc)
	}
	*p = gemmPlan{}
}

// cublasLtDirs are where libcublasLt lives besides the loader's search
// path, relative to /: the CUDA toolkit's lib directories, and the
// site-packages directories of the pip wheels PyTorch depends on
// (nvidia/cublas/lib for CUDA 12, nvidia/cu13/lib for 13: NVIDIA's
// cuda-python pathfinder, supported_nvidia_libs.py at 076d7b4) under the
// system, user, conda and AutoDL's miniconda Pythons.
var cublasLtDirs = []string{
	"usr/local/cuda/lib64", "usr/local/cuda/targets/*/lib", "usr/local/cuda-*/lib64", "usr/local/cuda-*/targets/*/lib",
	"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu",
	"opt/conda/lib", "opt/conda/envs/*/lib", "root/miniconda3/lib", "root/miniconda3/envs/*/lib",
}

var usualSitePackages = []string{
	"usr/lib/python3*/*-packages", "usr/local/lib/python3*/*-packages",
	"opt/conda/lib/python3*/site-packages", "opt/conda/envs/*/lib/python3*/site-packages",
	"root/miniconda3/lib/python3*/site-packages", "root/miniconda3/envs/*/lib/python3*/site-packages",
	"root/.local/lib/python3*/site-packages", "home/*/.local/lib/python3*/site-packages",
}

// wheelDirs are the directories, relative to the root, where Python
// wheels put NVIDIA's libraries (subs, such as nvidia/cublas/lib): under
// the usual site-packages, the conda environment's, the virtualenv's,
// those python3 reported and the user's.
func wheelDirs(env func(string) string, sitePackages []string, subs ...string) []string {
	var dirs []string
	add := func(base string) {
		for _, sub := range subs {
			dirs = append(dirs, base+"/"+sub)
		}
	}
	for _, sp := range usualSitePackages {
		add(sp)
	}
	rel := func(p string) string { return strings.TrimPrefix(path.Clean(p), "/") }
	if p := env("CONDA_PREFIX"); p != "" {
		dirs = append(dirs, rel(p)+"/lib")
		add(rel(p) + "/lib/python3*/site-packages")
	}
	if p := env("VIRTUAL_ENV"); p != "" {
		add(rel(p) + "/lib/python3*/site-packages")
	}
	for _, sp := range sitePackages {
		add(rel(sp))
	}
	if p := env("HOME"); p != "" && p != "/" {
		add(rel(p) + "/.local/lib/python3*/site-packages")
	}
	return dirs
}

// cublasLtCandidates lists what to dlopen, best first: GPURENT_CUBLASLT;
// then the sonames, newest first, which the loader finds on its search
// path; then files found under root. A library newer than the driver's
// CUDA major version (driverMajor, 0 when unknown) cannot run on it and is
// left out; tooNew lists such files found, so that a failure can name them.
// env supplies CONDA_PREFIX, VIRTUAL_ENV and HOME; sitePackages are the
// Python package directories python3 reported (pythonSitePackages).
func cublasLtCandidates(root fs.FS, env func(string) string, driverMajor int, sitePackages []string) (out, tooNew []string) {
	if p := env("GPURENT_CUBLASLT"); p != "" {
		out = append(out, p)
	}
	fits := func(name string) bool {
		m := soMajor(path.Base(name))
		return m > 0 && (driverMajor == 0 || m <= driverMajor)
	}
	for _, m := range []int{13, 12, 11} {
		if so := "libcublasLt.so." + strconv.Itoa(m); fits(so) {
			out = append(out, so)
		}
	}
	dirs := append(slices.Clone(cublasLtDirs), wheelDirs(env, sitePackages, "nvidia/cublas/lib", "nvidia/cu13/lib")...)
	var found []string
	for _, d := range dirs {
		matches, _ := fs.Glob(root, d+"/libcublasLt.so.*")
		for _, m := range matches {
			switch {
			case slices.Contains(found, "/"+m) || slices.Contains(tooNew, "/"+m):
			case fits(m):
				found = append(found, "/"+m)
			case soMajor(path.Base(m)) > driverMajor:
				tooNew = append(tooNew, "/"+m)
			}
		}
	}
	// Newest major first; within one, the order of dirs above.
	slices.SortStableFunc(found, func(a, b string) int { return soMajor(path.Base(b)) - soMajor(path.Base(a)) })
	return append(out, found...), tooNew
}

// pythonSitePackages asks python3 on PATH where its packages live: the
// interpreter the user runs (a venv, a conda env, pyenv) knows its own
// directories better than any list of usual places. None when there is no
// python3 or it does not answer within 5 s.
func pythonSitePackages(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "python3", "-c",
		"import site; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()]))").Output()
	if err != nil {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); path.IsAbs(line) {
			dirs = append(dirs, line)
		}
	}
	return dirs
}

// soMajor is N in libcublasLt.so.N or libcublasLt.so.N.x.y; 0 otherwise.
func soMajor(name string) int {
	rest, ok := strings.CutPrefix(name, "libcublasLt.so.")
	if !ok {
		return 0
	}
	major, _, _ := strings.Cut(rest, ".")
	m, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return m
}
