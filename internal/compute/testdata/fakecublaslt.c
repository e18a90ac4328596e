// fakecublaslt.c: a stand-in libcublasLt for TestCublasLtABI, written from
// the prototypes, struct layouts and enum values in
// shared/reference/abi_reference.md §3 (not from NVIDIA's headers, which
// the test machines lack). It checks every argument the way the real
// library's contract requires and records the last matmul, so the test
// proves the Go binding passes each of cublasLtMatmul's 16 arguments (10
// of them on the stack) where the C ABI expects them.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;
enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, NOT_SUPPORTED = 15 };

typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
} cublasLtMatmulHeuristicResult_t;
_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "heuristic result is 96 bytes");

#define MAGIC_HANDLE 0x6c74686eu
#define MAGIC_DESC 0x64657363u
#define MAGIC_LAYOUT 0x6c61796fu
#define MAGIC_PREF 0x70726566u
#define ALGO_WORKSPACE 4096

struct handle { unsigned magic; };
struct desc { unsigned magic; int compute, scale, transa, transb; };
struct layout { unsigned magic; unsigned type; uint64_t rows, cols; int64_t ld; };
struct pref { unsigned magic; uint64_t max_workspace; };

static int live;          // objects created and not yet destroyed
static int fail_heuristic; // set by fake_fail_heuristic

// What the last cublasLtMatmul received, read by the test.
struct record {
  int calls, compute, scale, transa, transb;
  unsigned type;
  uint64_t rows, cols;
  int64_t ld;
  float alpha, beta;
  uint64_t a, b, c, d, workspace, workspace_size, stream;
};
static struct record last;

void fake_last(struct record *out) { *out = last; }
int fake_live(void) { return live; }
void fake_fail_heuristic(int on) { fail_heuristic = on; }

// With fake_use_cuda(1), matmuls run on fakecuda.c's simulated GPU: the
// operands must lie in its device allocations, and its clock advances by
// the GEMM's time. Off by default, for the ABI test's made-up pointers.
// fake_use_cuda_at binds to the fakecuda.c at path, already loaded, rather
// than to the first one the process loaded (a test that leaves a driver
// loaded, as a hung one must be, would otherwise capture later tests').
static int use_cuda;
static void *cuda_lib = RTLD_DEFAULT;
void fake_use_cuda(int on) { use_cuda = on; }
void fake_use_cuda_at(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (h) cuda_lib = h, use_cuda = 1;
}

// A whole gpurent process configures fakecuda.c through $FAKECUDA; this
// library then runs on it too.
__attribute__((constructor)) static void from_env(void) { use_cuda = getenv("FAKECUDA") != NULL; }

size_t cublasLtGetVersion(void) { return 120604; }

cublasStatus_t cublasLtCreate(void **h) {
  if (!h) return INVALID_VALUE;
  struct handle *x = malloc(sizeof *x);
  x->magic = MAGIC_HANDLE;
  *h = x;
  live++;
  return OK;
}

cublasStatus_t cublasLtDestroy(struct handle *h) {
  if (!h || h->magic != MAGIC_HANDLE) return NOT_INITIALIZED;
  h->magic = 0;
  free(h);
  live--;
  return OK;
}

cublasStatus_t cublasLtMatmulDescCreate(void **out, int computeType, int scaleType) {
  if (!out) return INVALID_VALUE;
  if (computeType != 68 && computeType != 77) return NOT_SUPPORTED; // the binding uses 32F and 32F_FAST_TF32
  if (scaleType != 0) return INVALID_VALUE;                         // CUDA_R_32F for both
  struct desc *d = calloc(1, sizeof *d);
  d->magic = MAGIC_DESC;
  d->compute = computeType;
  d->scale = scaleType;
  d->transa = d->transb = -1; // unset
  *out = d;
  live++;
  return OK;
}

cublasStatus_t cublasLtMatmulDescDestroy(struct desc *d) {
  if (!d || d->magic != MAGIC_DESC) return INVALID_VALUE;
  d->magic = 0;
  free(d);
  live--;
  return OK;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(struct desc *d, int attr, const void *buf, size_t size) {
  if (!d || d->magic != MAGIC_DESC || !buf) return INVALID_VALUE;
  if (attr != 3 && attr != 4) return NOT_SUPPORTED; // only TRANSA, TRANSB are used
  if (size != 4) return INVALID_VALUE;              // int32 cublasOperation_t
  int op;
  memcpy(&op, buf, 4);
  if (op < 0 || op > 2) return INVALID_VALUE;
  if (attr == 3) d->transa = op; else d->transb = op;
  return OK;
}

cublasStatus_t cublasLtMatrixLayoutCreate(void **out, unsigned type, uint64_t rows, uint64_t cols, int64_t ld) {
  if (!out) return INVALID_VALUE;
  if (type != 0 && type != 14) return NOT_SUPPORTED; // CUDA_R_32F, CUDA_R_16BF
  if (rows == 0 || cols == 0 || ld < (int64_t)rows) return INVALID_VALUE;
  struct layout *l = malloc(sizeof *l);
  *l = (struct layout){MAGIC_LAYOUT, type, rows, cols, ld};
  *out = l;
  live++;
  return OK;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(struct layout *l) {
  if (!l || l->magic != MAGIC_LAYOUT) return INVALID_VALUE;
  l->magic = 0;
  free(l);
  live--;
  return OK;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(void **out) {
  if (!out) return INVALID_VALUE;
  struct pref *p = calloc(1, sizeof *p);
  p->magic = MAGIC_PREF;
  *out = p;
  live++;
  return OK;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(struct pref *p) {
  if (!p || p->magic != MAGIC_PREF) return INVALID_VALUE;
  p->magic = 0;
  free(p);
  live--;
  return OK;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(struct pref *p, int attr, const void *buf, size_t size) {
  if (!p || p->magic != MAGIC_PREF || !buf) return INVALID_VALUE;
  if (attr != 1) return NOT_SUPPORTED; // MAX_WORKSPACE_BYTES
  if (size != 8) return INVALID_VALUE; // uint64
  memcpy(&p->max_workspace, buf, 8);
  return OK;
}

// compatible: FP32 data with 32F or 32F_FAST_TF32 compute, BF16 data with
// 32F compute; all four layouts alike.
static int compatible(const struct desc *d, const struct layout *a, const struct layout *b, const struct layout *c,
                      const struct layout *dd) {
  const struct layout *ls[] = {a, b, c, dd};
  for (int i = 0; i < 4; i++)
    if (!ls[i] || ls[i]->magic != MAGIC_LAYOUT) return 0;
  if (a->type != b->type || a->type != c->type || a->type != dd->type) return 0;
  if (a->type == 14 && d->compute != 68) return 0;
  return a->cols == b->rows && c->rows == a->rows && c->cols == b->cols && dd->rows == c->rows && dd->cols == c->cols;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(struct handle *h, struct desc *op, struct layout *a, struct layout *b,
                                              struct layout *c, struct layout *d, struct pref *pref, int requested,
                                              cublasLtMatmulHeuristicResult_t *results, int *returned) {
  if (!h || h->magic != MAGIC_HANDLE) return NOT_INITIALIZED;
  if (!op || op->magic != MAGIC_DESC || !pref || pref->magic != MAGIC_PREF || requested < 1 || !results || !returned)
    return INVALID_VALUE;
  if (!compatible(op, a, b, c, d)) return INVALID_VALUE;
  if (fail_heuristic || pref->max_workspace < ALGO_WORKSPACE) {
    *returned = 0;
    return NOT_SUPPORTED;
  }
  memset(&results[0], 0, sizeof results[0]);
  for (int i = 0; i < 8; i++) results[0].algo.data[i] = 0xa160000000000000ull + (uint64_t)i * 0x1111 + (uint64_t)op->compute;
  results[0].workspaceSize = ALGO_WORKSPACE;
  results[0].state = OK;
  results[0].wavesCount = 1.5f;
  *returned = 1;
  return OK;
}

cublasStatus_t cublasLtMatmul(struct handle *h, struct desc *op, const float *alpha, const void *A, struct layout *Adesc,
                              const void *B, struct layout *Bdesc, const float *beta, const void *C, struct layout *Cdesc,
                              void *D, struct layout *Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspaceSize, void *stream) {
  if (!h || h->magic != MAGIC_HANDLE) return NOT_INITIALIZED;
  if (!op || op->magic != MAGIC_DESC || !alpha || !beta || !A || !B || !C || !D || !algo) return INVALID_VALUE;
  if (!compatible(op, Adesc, Bdesc, Cdesc, Ddesc)) return INVALID_VALUE;
  for (int i = 0; i < 8; i++)
    if (algo->data[i] != 0xa160000000000000ull + (uint64_t)i * 0x1111 + (uint64_t)op->compute) return INVALID_VALUE;
  if (workspaceSize < ALGO_WORKSPACE || !workspace) return INVALID_VALUE;
  if (use_cuda) {
    int (*valid)(uint64_t, uint64_t) = (int (*)(uint64_t, uint64_t))dlsym(cuda_lib, "fake_cuda_valid");
    void (*gemm)(int, double) = (void (*)(int, double))dlsym(cuda_lib, "fake_cuda_gemm");
    void (*product)(uint64_t, uint64_t, uint64_t, uint64_t) =
        (void (*)(uint64_t, uint64_t, uint64_t, uint64_t))dlsym(cuda_lib, "fake_cuda_product");
    if (!valid || !gemm || !product) return NOT_INITIALIZED;
    uint64_t bytes = Adesc->rows * Adesc->cols * (Adesc->type == 14 ? 2 : 4);
    if (!valid((uintptr_t)A, bytes) || !valid((uintptr_t)B, bytes) || !valid((uintptr_t)D, bytes) ||
        !valid((uintptr_t)workspace, workspaceSize))
      return 14; // CUBLAS_STATUS_INTERNAL_ERROR: a real GPU would fault
    gemm(Adesc->type == 14 ? 2 : op->compute == 77 ? 1 : 0, 2.0 * (double)Adesc->rows * (double)Bdesc->cols * (double)Adesc->cols);
    product((uintptr_t)A, (uintptr_t)B, (uintptr_t)D, Adesc->rows);
  }
  last = (struct record){
      .calls = last.calls + 1, .compute = op->compute, .scale = op->scale, .transa = op->transa, .transb = op->transb,
      .type = Adesc->type, .rows = Adesc->rows, .cols = Adesc->cols, .ld = Adesc->ld, .alpha = *alpha, .beta = *beta,
      .a = (uintptr_t)A, .b = (uintptr_t)B, .c = (uintptr_t)C, .d = (uintptr_t)D, .workspace = (uintptr_t)workspace,
      .workspace_size = workspaceSize, .stream = (uintptr_t)stream};
  return OK;
}
