// fakecuda.c: a simulated libcuda.so.1 for TestCUDABackendSimulated, written
// from the prototypes, symbol names and values in
// shared/reference/abi_reference.md §2, not from NVIDIA's headers. It has no
// GPU behind it: device memory is address ranges, and a virtual clock moves
// by what each launch or copy would take at the configured rates. What it
// does check is everything a real driver would refuse or a real card would
// fault on: calls from a thread without the context current, launch
// parameters read through kernelParams with the sizes the PTX declares,
// kernels and copies that stay inside their allocations, events and
// modules that are destroyed, a PTX ISA newer than the driver supports.
//
// Tests in this package configure it through fake_config. A whole gpurent
// process (TestGPUCheckSimulated runs scripts/gpu-check.sh on it) sets it
// from $FAKECUDA instead, "key=value" words: the rates and sizes below,
// the faults (residue=N, flip=BYTE:BIT, sdc=K), devices=N (see
// enumerate), and cotenant=FILE: a process running GEMMs
// (gpurent burn) marks FILE busy, and while it is, every
// cotenant_every-th launch of any other process waits cotenant_ms for the
// co-tenant's time slice.
//
// Like the real driver, it may be called from several threads at once,
// each with its own device's context current (bench --full measures the
// GPUs of a node in parallel): one lock serialises the calls, and each
// device has its own context and virtual clock.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
enum {
  SUCCESS = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, NO_DEVICE = 100, INVALID_DEVICE = 101,
  INVALID_CONTEXT = 201, INVALID_PTX = 218, UNSUPPORTED_PTX_VERSION = 222, INVALID_HANDLE = 400, NOT_FOUND = 500,
  NOT_READY = 600, ILLEGAL_ADDRESS = 700
};

// Configuration, set by the test through fake_config; all fields 8 bytes.
struct config {
  int64_t driver_version; // 1000*major + 10*minor
  int64_t max_ptx;        // highest PTX ISA accepted, x10 (84 = 8.4)
  double fp32_flops, tensor_flops, mem_bytes, link_bytes; // per second; tensor is BF16/FP16 (TF32 half, FP8 double)
  int64_t total_mem, other_tenant_mem;                   // bytes
  int64_t slice_every;                                   // every Nth launch waits for another tenant (0: never)
  double slice_ms;
  int64_t cc;                                            // compute capability x10 (89 = 8.9); 0: 9.0
  int64_t residue;                                       // bytes of another process's data at the start of each MiB of a fresh allocation (0: a scrubbing driver)
  int64_t flip_at, flip_bit;                             // a weak cell: bit flip_bit of the word at byte flip_at-1 of every allocation that long reads 0 (0: none)
  int64_t sdc_at;                                        // the sdc_at-th GEMM of the process gets one element wrong (0: none)
  // Between GPUs (PCI ranks): devices (0: $FAKECUDA's devices=, else 1),
  // peer_bytes/s GPU to GPU with peer access (staged through the host at
  // link_bytes/2 without), no_peer (cuDeviceCanAccessPeer says no),
  // slow_a/slow_b (rank+1 of a pair at a quarter of peer_bytes),
  // hang_a/hang_b (rank+1 of a pair whose copies never complete, or
  // whose cuMemcpyPeerAsync blocks for block_ms where that is set),
  // fault_a/fault_b (rank+1 of a pair whose copies fault: the GPU's
  // context is then broken, as a real illegal address leaves it).
  int64_t devices;
  double peer_bytes;
  int64_t no_peer, slow_a, slow_b, hang_a, hang_b, block_ms, fault_a, fault_b;
};
static struct config cfg;

// Counters the test reads through fake_stats; all fields 8 bytes.
struct stats {
  int64_t launches, live_allocs, live_host, live_events, live_modules, ctx_refs, wrong_thread, bad_calls;
  int64_t peers_enabled; // peer access turned on and not yet off
};
static struct stats st;

// Every exported call holds mu for its whole length (LOCKED).
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void unlock(int *unused) {
  (void)unused;
  pthread_mutex_unlock(&mu);
}
#define LOCKED                  \
  pthread_mutex_lock(&mu);      \
  __attribute__((cleanup(unlock))) int locked_ = 1; \
  (void)locked_

#define MAX_DEV 8
static int initialised;
static __thread int *current;   // the context current on this thread
static int primary_ctx[MAX_DEV]; // one per device ordinal; the value is its reference count
static double clock_us[MAX_DEV]; // virtual GPU time, per device
static double slice_wait(void);

// dev is the device of the context current on this thread.
static int dev(void) { return (int)(current - primary_ctx); }

static int64_t gemms; // GEMMs this process has run, for sdc=
static void reset_memory(void);
static int ndevices = 1, env_devices = 1; // env_devices: $FAKECUDA's devices=
static int peer_on[MAX_DEV][MAX_DEV]; // by CUDA ordinal: the first's context may access the second's memory
static int hung[MAX_DEV];             // the device's stream holds a copy that never completes
static int broken[MAX_DEV];           // the device's context faulted: every later call that touches it fails
void fake_config(const struct config *c) {
  LOCKED;
  cfg = *c;
  ndevices = c->devices > 0 && c->devices <= MAX_DEV ? (int)c->devices : env_devices;
  memset(peer_on, 0, sizeof peer_on);
  memset(hung, 0, sizeof hung);
  memset(broken, 0, sizeof broken);
  reset_memory(); // a new configuration is a fresh driver: what an abandoned test left is gone
  gemms = 0;
  memset(&st, 0, sizeof st);
  initialised = 0;
  memset(clock_us, 0, sizeof clock_us);
}
void fake_stats(struct stats *out) {
  LOCKED;
  *out = st;
}

static int visible[MAX_DEV], nvisible; // see enumerate
// What cuInit returns instead of success, to test gpurent's words for a
// driver that will not start (fake_init_result, or $FAKECUDA's init=).
static int init_result;
// busy=N: the device of PCI rank N is in exclusive-process mode and held
// by another process: its context cannot be made (DEVICE_UNAVAILABLE).
static int busy_rank = -1;
static char cotenant[512];
static int64_t cotenant_every = 3;
static double cotenant_ms = 2;

__attribute__((constructor)) static void from_env(void) {
  const char *env = getenv("FAKECUDA");
  if (!env) return;
  struct config c = {.driver_version = 12080, .max_ptx = 88, .fp32_flops = 60e12, .tensor_flops = 800e12,
                     .mem_bytes = 3000e9, .link_bytes = 50e9, .total_mem = 80ll << 30, .other_tenant_mem = 1ll << 30,
                     .peer_bytes = 380e9};
  char *words = strdup(env), *save = NULL;
  for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    char *v = strchr(w, '=');
    if (!v) continue;
    *v++ = 0;
    if (!strcmp(w, "driver")) c.driver_version = strtoll(v, NULL, 0);
    else if (!strcmp(w, "ptx")) c.max_ptx = strtoll(v, NULL, 0);
    else if (!strcmp(w, "fp32")) c.fp32_flops = strtod(v, NULL);
    else if (!strcmp(w, "tensor")) c.tensor_flops = strtod(v, NULL);
    else if (!strcmp(w, "mem")) c.mem_bytes = strtod(v, NULL);
    else if (!strcmp(w, "link")) c.link_bytes = strtod(v, NULL);
    else if (!strcmp(w, "total")) c.total_mem = strtoll(v, NULL, 0);
    else if (!strcmp(w, "other")) c.other_tenant_mem = strtoll(v, NULL, 0);
    else if (!strcmp(w, "cc")) c.cc = strtoll(v, NULL, 0);
    else if (!strcmp(w, "residue")) c.residue = strtoll(v, NULL, 0);
    else if (!strcmp(w, "flip")) { // flip=BYTE:BIT
      char *colon = strchr(v, ':');
      c.flip_at = strtoll(v, NULL, 0) + 1;
      c.flip_bit = colon ? strtoll(colon + 1, NULL, 0) : 0;
    } else if (!strcmp(w, "sdc")) c.sdc_at = strtoll(v, NULL, 0);
    else if (!strcmp(w, "peer")) c.peer_bytes = strtod(v, NULL);
    else if (!strcmp(w, "nopeer")) c.no_peer = 1;
    else if (!strcmp(w, "slowpair") || !strcmp(w, "hangpair") || !strcmp(w, "faultpair")) { // A:B, PCI ranks
      char *colon = strchr(v, ':');
      int64_t a = strtoll(v, NULL, 0) + 1, b = colon ? strtoll(colon + 1, NULL, 0) + 1 : 0;
      if (w[0] == 's') c.slow_a = a, c.slow_b = b;
      else if (w[0] == 'h') c.hang_a = a, c.hang_b = b;
      else c.fault_a = a, c.fault_b = b;
    }
    else if (!strcmp(w, "devices")) {
      long n = strtol(v, NULL, 0);
      env_devices = n >= 1 && n <= MAX_DEV ? (int)n : 1;
    }
    else if (!strcmp(w, "busy")) busy_rank = (int)strtol(v, NULL, 0);
    else if (!strcmp(w, "init")) init_result = (int)strtol(v, NULL, 0);
    else if (!strcmp(w, "cotenant")) snprintf(cotenant, sizeof cotenant, "%s", v);
    else if (!strcmp(w, "cotenant_every")) cotenant_every = strtoll(v, NULL, 0);
    else if (!strcmp(w, "cotenant_ms")) cotenant_ms = strtod(v, NULL);
  }
  free(words);
  fake_config(&c);
}

static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

// mark_busy records, at most ten times a second, that this process keeps
// the GPU busy: its pid in the cotenant file, whose mtime says when.
static void mark_busy(void) {
  static double last;
  if (!cotenant[0] || wall() - last < 0.1) return;
  last = wall();
  FILE *f = fopen(cotenant, "w");
  if (f) {
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
  }
}

// other_busy: has another process marked the GPU busy in the last 5 s
// (ten marks; a loaded test machine may hold the marking process back)?
// Looked up at most every 50 ms of wall time.
static int other_busy(void) {
  static double checked;
  static int busy;
  if (!cotenant[0]) return 0;
  if (wall() - checked < 0.05) return busy;
  checked = wall();
  busy = 0;
  struct stat sb;
  FILE *f = fopen(cotenant, "r");
  int pid = 0;
  if (f && fstat(fileno(f), &sb) == 0 && fscanf(f, "%d", &pid) == 1)
    busy = pid != getpid() && checked - ((double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec / 1e9) < 5;
  if (f) fclose(f);
  return busy;
}

// bad records a refused call so that a test sees it even where the Go code
// keeps going after an error.
static CUresult bad(CUresult r) {
  st.bad_calls++;
  return r;
}

#define NEED_CTX()                                   \
  LOCKED;                                            \
  do {                                               \
    if (!initialised) return bad(NOT_INITIALIZED);   \
    if (!current || *current == 0) {                 \
      st.wrong_thread++;                             \
      return bad(INVALID_CONTEXT);                   \
    }                                                \
  } while (0)

// ---- memory: address ranges, device and pinned host ----
#define MAX_ALLOCS 4096
// A small device allocation (a probe's result words) has real bytes
// behind it, which kernels and copies read and write. A larger one holds
// no data; what it would hold is known where it matters: fill is the
// seed and element size (2 or 4) a fill_* kernel last wrote, and a GEMM
// result names its operands (product_a, product_b, n) and, where the
// simulated card got one element wrong, wrong = its index + 1.
#define BACKED_MAX 65536
struct alloc {
  uint64_t base, size;
  int live, host, dev, written;
  unsigned char *data;
  uint32_t fill_seed, fill_elem;
  uint64_t product_a, product_b, product_n, wrong;
};
static struct alloc allocs[MAX_ALLOCS];
static int nallocs;
static uint64_t next_dev = 0x700000000000ull, next_host = 0x7e0000000000ull, used[MAX_DEV];

static struct alloc *find(uint64_t p, uint64_t n, int host) {
  for (int i = 0; i < nallocs; i++) {
    struct alloc *a = &allocs[i];
    if (a->live && a->host == host && p >= a->base && n <= a->size && p - a->base <= a->size - n) return a;
  }
  return NULL;
}

// Exported for fakecublaslt.c: does [p, p+n) lie in one device allocation?
int fake_cuda_valid(uint64_t p, uint64_t n) {
  LOCKED;
  return find(p, n, 0) != NULL;
}
// Exported for fakecublaslt.c: run work on the virtual GPU.
void fake_cuda_advance(double us) {
  LOCKED;
  if (current) clock_us[dev()] += us;
}

// Exported for fakecublaslt.c: D = A·B (n×n, column-major, of A's and
// B's fill element type) now holds that product, with one element wrong
// where the process's GEMMs have reached sdc=K.
void fake_cuda_product(uint64_t a, uint64_t b, uint64_t d, uint64_t n) {
  LOCKED;
  struct alloc *out = find(d, 1, 0);
  if (!out) return;
  out->written = 1;
  out->product_a = a, out->product_b = b, out->product_n = n;
  out->wrong = ++gemms == cfg.sdc_at ? n * n / 3 + 1 : 0;
}

// Exported for fakecublaslt.c: a GEMM of flops in FP32 (0), TF32 (1) or
// BF16 (2), on the device current on this thread.
void fake_cuda_gemm(int precision, double flops) {
  LOCKED;
  double rate = precision == 0 ? cfg.fp32_flops : precision == 1 ? cfg.tensor_flops / 2 : cfg.tensor_flops;
  mark_busy();
  if (current) clock_us[dev()] += flops / rate * 1e6 + 2 + slice_wait();
}

static void reset_memory(void) {
  for (int i = 0; i < nallocs; i++) free(allocs[i].data);
  memset(allocs, 0, sizeof allocs);
  nallocs = 0;
  memset(used, 0, sizeof used);
  memset(primary_ctx, 0, sizeof primary_ctx);
}

static CUresult new_alloc(uint64_t *out, uint64_t n, int host) {
  if (n == 0) return bad(INVALID_VALUE);
  int d = dev();
  if (!host && used[d] + n > (uint64_t)(cfg.total_mem - cfg.other_tenant_mem)) return OUT_OF_MEMORY;
  if (nallocs == MAX_ALLOCS) return bad(OUT_OF_MEMORY);
  uint64_t *next = host ? &next_host : &next_dev;
  allocs[nallocs++] = (struct alloc){*next, n, 1, host, d, 0, !host && n <= BACKED_MAX ? calloc(1, n) : NULL, 0, 0, 0, 0, 0, 0};
  *out = *next;
  *next += (n + 0xfffff) & ~0xfffffull;
  if (host) st.live_host++; else { st.live_allocs++; used[d] += n; }
  return SUCCESS;
}

static CUresult free_alloc(uint64_t p, int host) {
  for (int i = 0; i < nallocs; i++) {
    struct alloc *a = &allocs[i];
    if (a->live && a->host == host && a->base == p) {
      a->live = 0;
      free(a->data);
      a->data = NULL;
      if (host) st.live_host--; else { st.live_allocs--; used[a->dev] -= a->size; }
      return SUCCESS;
    }
  }
  return bad(INVALID_VALUE);
}

// ---- initialisation, device, context ----
// Devices: $FAKECUDA's devices=N (default 1), at PCI buses 3B, 5E, 81, ...
// Like the real driver, CUDA numbers them fastest first (here: the
// highest bus first, so that the order differs from NVML's) unless
// CUDA_DEVICE_ORDER=PCI_BUS_ID, then keeps those CUDA_VISIBLE_DEVICES
// lists, in its order. visible[ordinal] is the device's PCI rank.
static void enumerate(void) {
  int order[MAX_DEV];
  const char *o = getenv("CUDA_DEVICE_ORDER");
  int pci = o && !strcmp(o, "PCI_BUS_ID");
  for (int i = 0; i < ndevices; i++) order[i] = pci ? i : ndevices - 1 - i;
  const char *v = getenv("CUDA_VISIBLE_DEVICES");
  nvisible = 0;
  if (!v) {
    for (int i = 0; i < ndevices; i++) visible[nvisible++] = order[i];
    return;
  }
  for (const char *p = v; *p && nvisible < MAX_DEV;) { // a bad entry hides it and all after it, as CUDA does
    char *end;
    long i = strtol(p, &end, 10);
    if (end == p || i < 0 || i >= ndevices) return;
    visible[nvisible++] = order[i];
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return;
  }
}

static int bus_of(int dev) { return (0x3b + 0x23 * visible[dev]) & 0xff; }

void fake_init_result(int r) {
  LOCKED;
  init_result = r;
}

CUresult cuInit(unsigned flags) {
  LOCKED;
  if (flags != 0) return bad(INVALID_VALUE);
  if (init_result) return init_result;
  enumerate();
  if (nvisible == 0) return NO_DEVICE;
  initialised = 1;
  return SUCCESS;
}
CUresult cuDriverGetVersion(int *v) {
  LOCKED;
  if (!v) return bad(INVALID_VALUE);
  *v = (int)cfg.driver_version;
  return SUCCESS;
}
CUresult cuDeviceGetCount(int *n) {
  LOCKED;
  if (!initialised) return bad(NOT_INITIALIZED);
  *n = nvisible;
  return SUCCESS;
}
CUresult cuDeviceGet(int *d, int ordinal) {
  LOCKED;
  if (!initialised) return bad(NOT_INITIALIZED);
  if (ordinal < 0 || ordinal >= nvisible) return bad(INVALID_DEVICE);
  *d = ordinal;
  return SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
  LOCKED;
  if (dev < 0 || dev >= nvisible || !name || len < 1) return bad(INVALID_VALUE);
  snprintf(name, (size_t)len, "Simulated GPU (gpurent test driver)");
  return SUCCESS;
}
CUresult cuDeviceGetPCIBusId(char *id, int len, int dev) {
  LOCKED;
  if (dev < 0 || dev >= nvisible || !id || len < 13) return bad(INVALID_VALUE);
  snprintf(id, (size_t)len, "0000:%02X:00.0", bus_of(dev));
  return SUCCESS;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  LOCKED;
  if (!initialised) return bad(NOT_INITIALIZED);
  if (dev < 0 || dev >= nvisible || !v) return bad(INVALID_DEVICE);
  switch (attr) {
  case 13: *v = 1980000; break; // clock rate, kHz
  case 16: *v = 132; break;     // SMs
  case 36: *v = 2619000; break; // memory clock, kHz
  case 37: *v = 5120; break;    // bus width, bits
  case 75: *v = cfg.cc ? (int)(cfg.cc / 10) : 9; break; // compute capability
  case 76: *v = cfg.cc ? (int)(cfg.cc % 10) : 0; break;
  case 133: *v = 0; break;      // MPS enabled
  default: return bad(INVALID_VALUE);
  }
  return SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  LOCKED;
  if (!initialised) return bad(NOT_INITIALIZED);
  if (dev < 0 || dev >= nvisible || !ctx) return bad(INVALID_DEVICE);
  if (visible[dev] == busy_rank) return 46; // CUDA_ERROR_DEVICE_UNAVAILABLE
  *ctx = &primary_ctx[dev];
  primary_ctx[dev]++;
  st.ctx_refs++;
  return SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  LOCKED;
  if (dev < 0 || dev >= nvisible || primary_ctx[dev] == 0) return bad(INVALID_DEVICE);
  primary_ctx[dev]--;
  st.ctx_refs--;
  return SUCCESS;
}
CUresult cuCtxSetCurrent(void *ctx) {
  LOCKED;
  int *c = ctx;
  if (c < primary_ctx || c >= primary_ctx + MAX_DEV || *c == 0) return bad(INVALID_CONTEXT);
  current = c;
  return SUCCESS;
}
CUresult cuCtxSynchronize(void) {
  NEED_CTX();
  if (hung[dev()] || broken[dev()]) return bad(hung[dev()] ? 702 : ILLEGAL_ADDRESS); // a real driver would wait for ever, or fail
  return SUCCESS;
}

// ---- between GPUs ----
static int pair_is(int64_t a1, int64_t b1, int x, int y) {
  int rx = visible[x] + 1, ry = visible[y] + 1;
  return a1 && b1 && ((a1 == rx && b1 == ry) || (a1 == ry && b1 == rx));
}
CUresult cuDeviceCanAccessPeer(int *can, int d, int peer) {
  LOCKED;
  if (!initialised) return bad(NOT_INITIALIZED);
  if (!can || d < 0 || d >= nvisible || peer < 0 || peer >= nvisible) return bad(INVALID_DEVICE);
  *can = d != peer && !cfg.no_peer;
  return SUCCESS;
}
CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags) {
  NEED_CTX();
  int *p = peer;
  if (flags != 0 || p < primary_ctx || p >= primary_ctx + MAX_DEV || *p == 0 || p == current) return bad(INVALID_VALUE);
  int k = (int)(p - primary_ctx);
  if (cfg.no_peer) return bad(217); // CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
  if (peer_on[dev()][k]) return 704; // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
  peer_on[dev()][k] = 1;
  st.peers_enabled++;
  return SUCCESS;
}
CUresult cuCtxDisablePeerAccess(void *peer) {
  NEED_CTX();
  int *p = peer;
  if (p < primary_ctx || p >= primary_ctx + MAX_DEV) return bad(INVALID_CONTEXT);
  int k = (int)(p - primary_ctx);
  if (!peer_on[dev()][k]) return bad(705); // CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
  peer_on[dev()][k] = 0;
  st.peers_enabled--;
  return SUCCESS;
}
// cuMemcpyPeerAsync copies on the current context's stream, which must be
// the source's or the destination's; only the legacy stream exists here.
CUresult cuMemcpyPeerAsync(uint64_t dst, void *dst_ctx, uint64_t src, void *src_ctx, size_t n, void *stream) {
  NEED_CTX();
  int *dc = dst_ctx, *sc = src_ctx;
  if (stream != NULL || dc < primary_ctx || dc >= primary_ctx + MAX_DEV || sc < primary_ctx || sc >= primary_ctx + MAX_DEV ||
      *dc == 0 || *sc == 0)
    return bad(INVALID_VALUE);
  int dd = (int)(dc - primary_ctx), sd = (int)(sc - primary_ctx);
  struct alloc *a = find(dst, n, 0), *from = find(src, n, 0);
  if (!a || !from || a->dev != dd || from->dev != sd) return bad(ILLEGAL_ADDRESS);
  if (current != dc && current != sc) return bad(INVALID_CONTEXT);
  a->written = 1;
  if (pair_is(cfg.hang_a, cfg.hang_b, sd, dd) && cfg.block_ms > 0) {
    usleep((useconds_t)(cfg.block_ms * 1000)); // holding the lock, as a stuck driver holds its own
    return SUCCESS;
  }
  if (pair_is(cfg.fault_a, cfg.fault_b, sd, dd)) {
    broken[dev()] = 1;
    return ILLEGAL_ADDRESS; // as a real copy reports a fault: the context is unusable from here on
  }
  if (pair_is(cfg.hang_a, cfg.hang_b, sd, dd)) hung[dev()] = 1;
  double rate = peer_on[sd][dd] || peer_on[dd][sd] ? cfg.peer_bytes : cfg.link_bytes / 2;
  if (pair_is(cfg.slow_a, cfg.slow_b, sd, dd)) rate /= 4;
  clock_us[dev()] += (double)n / rate * 1e6 + 5;
  return SUCCESS;
}

// ---- modules: PTX text, entries and their parameters ----
#define MAGIC_MOD 0x6d6f64u
#define MAGIC_FN 0x666eu
struct module { unsigned magic; char *ptx; };
struct function {
  unsigned magic;
  struct module *mod;
  char name[64];
  int nparams, psize[8];
  int m, n, k; // mma shape found in the body, 0 when none
};

CUresult cuModuleLoadDataEx(struct module **out, const char *image, unsigned nopts, int *opts, void **vals) {
  NEED_CTX();
  if (!out || !image || (nopts && (!opts || !vals))) return bad(INVALID_VALUE);
  char *log = NULL;
  size_t logsize = 0;
  for (unsigned i = 0; i < nopts; i++) {
    if (opts[i] == 5) log = vals[i];
    else if (opts[i] == 6) logsize = (size_t)(uintptr_t)vals[i]; // by value in the pointer slot
    else return bad(INVALID_VALUE);
  }
  const char *v = strstr(image, "\n.version ");
  int major, minor;
  if (!v || sscanf(v, "\n.version %d.%d", &major, &minor) != 2 || !strstr(image, ".entry ")) return bad(INVALID_PTX);
  if (major * 10 + minor > cfg.max_ptx) {
    if (log && logsize) snprintf(log, logsize, "ptxas fatal : Unsupported .version %d.%d; current version is '%d.%d'", major,
                                 minor, (int)cfg.max_ptx / 10, (int)cfg.max_ptx % 10);
    return UNSUPPORTED_PTX_VERSION;
  }
  struct module *m = malloc(sizeof *m);
  m->magic = MAGIC_MOD;
  m->ptx = strdup(image);
  *out = m;
  st.live_modules++;
  return SUCCESS;
}

CUresult cuModuleUnload(struct module *m) {
  NEED_CTX();
  if (!m || m->magic != MAGIC_MOD) return bad(INVALID_HANDLE);
  m->magic = 0;
  free(m->ptx);
  free(m);
  st.live_modules--;
  return SUCCESS;
}

CUresult cuModuleGetFunction(struct function **out, struct module *m, const char *name) {
  NEED_CTX();
  if (!out || !m || m->magic != MAGIC_MOD || !name || strlen(name) >= 64) return bad(INVALID_VALUE);
  char want[80];
  snprintf(want, sizeof want, ".entry %s(", name);
  const char *e = strstr(m->ptx, want);
  if (!e) return NOT_FOUND;
  struct function *f = calloc(1, sizeof *f);
  f->magic = MAGIC_FN;
  f->mod = m;
  strcpy(f->name, name);
  const char *end = strchr(e, ')');
  for (const char *p = strstr(e, ".param ."); p && p < end && f->nparams < 8; p = strstr(p + 1, ".param .")) {
    f->psize[f->nparams++] = (p[8] == 'u' && p[9] == '6') || (p[8] == 'b' && p[9] == '6') ? 8 : 4;
  }
  const char *next = strstr(end, ".entry ");
  const char *mma = strstr(end, "mma.sync.aligned.m");
  if (mma && (!next || mma < next)) sscanf(mma, "mma.sync.aligned.m%dn%dk%d", &f->m, &f->n, &f->k);
  *out = f; // functions live as long as the process: the driver owns them
  return SUCCESS;
}

// ---- launches ----
static CUresult check_kernel(const uint64_t *v);
static uint32_t mt_word(uint32_t mode, uint32_t arg, uint64_t base, uint64_t i);
static CUresult cmp_kernel(const uint64_t *v, uint64_t elem);
static double slice_wait(void) {
  st.launches++;
  double us = cfg.slice_every > 0 && st.launches % cfg.slice_every == 0 ? cfg.slice_ms * 1000 : 0;
  if (cotenant_every > 0 && st.launches % cotenant_every == 0 && other_busy()) us += cotenant_ms * 1000;
  return us;
}

CUresult cuLaunchKernel(struct function *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void *stream, void **params, void **extra) {
  NEED_CTX();
  if (!f || f->magic != MAGIC_FN || f->mod->magic != MAGIC_MOD) return bad(INVALID_HANDLE);
  if (gx == 0 || gy != 1 || gz != 1 || bx == 0 || bx > 1024 || by != 1 || bz != 1 || shmem != 0 || stream != NULL ||
      extra != NULL || !params)
    return bad(INVALID_VALUE);
  uint64_t v[8];
  for (int i = 0; i < f->nparams; i++) {
    if (!params[i]) return bad(INVALID_VALUE);
    v[i] = f->psize[i] == 8 ? *(uint64_t *)params[i] : *(uint32_t *)params[i];
  }
  double threads = (double)gx * bx, us;
  if (!strcmp(f->name, "fma32")) { // (float *out, int iters, float seed)
    float seed;
    memcpy(&seed, &v[2], 4);
    if (f->nparams != 3 || !find(v[0], (uint64_t)threads * 4, 0) || (int32_t)v[1] < 1 || !isfinite(seed))
      return bad(ILLEGAL_ADDRESS);
    us = threads * (double)v[1] * 8 * 2 / cfg.fp32_flops * 1e6;
  } else if (!strncmp(f->name, "mma_", 4)) { // (float *out, int iters)
    if (f->nparams != 2 || !f->m || !find(v[0], (uint64_t)threads * 4, 0) || (int32_t)v[1] < 1) return bad(ILLEGAL_ADDRESS);
    double rate = cfg.tensor_flops;
    if (!strcmp(f->name, "mma_tf32")) rate /= 2;
    if (!strcmp(f->name, "mma_fp8")) rate *= 2;
    us = threads / 32 * (double)v[1] * 4 * 2 * f->m * f->n * f->k / rate * 1e6;
  } else if (!strcmp(f->name, "copy16")) { // (in, out, n 16-byte elements)
    if (f->nparams != 3 || !find(v[0], v[2] * 16, 0) || !find(v[1], v[2] * 16, 0)) return bad(ILLEGAL_ADDRESS);
    us = 2.0 * 16 * (double)v[2] / cfg.mem_bytes * 1e6;
  } else if (!strcmp(f->name, "fill_f32") || !strcmp(f->name, "fill_bf16")) { // (p, n, seed)
    uint64_t elem = f->name[5] == 'f' ? 4 : 2;
    if (f->nparams != 3 || !find(v[0], v[1] * elem, 0)) return bad(ILLEGAL_ADDRESS);
    us = (double)(v[1] * elem) / cfg.mem_bytes * 1e6;
    struct alloc *a = find(v[0], v[1] * elem, 0);
    a->written = 1, a->fill_seed = (uint32_t)v[2], a->fill_elem = (uint32_t)elem, a->product_a = a->wrong = 0;
  } else if (!strcmp(f->name, "mt_fill")) { // (p, n words, mode, arg)
    struct alloc *a = find(v[0], v[1] * 4, 0);
    if (f->nparams != 4 || !a) return bad(ILLEGAL_ADDRESS);
    a->written = 1;
    if (a->data)
      for (uint64_t i = 0; i < v[1]; i++) ((uint32_t *)(a->data + (v[0] - a->base)))[i] = mt_word((uint32_t)v[2], (uint32_t)v[3], v[0], i);
    us = 4.0 * (double)v[1] / cfg.mem_bytes * 1e6;
  } else if (!strcmp(f->name, "mt_check")) { // (p, n words, mode, arg, flags, result)
    if (f->nparams != 6) return bad(INVALID_VALUE);
    CUresult r = check_kernel(v);
    if (r) return r;
    us = (v[4] & 2 ? 8.0 : 4.0) * (double)v[1] / cfg.mem_bytes * 1e6;
  } else if (!strcmp(f->name, "cmp_f32") || !strcmp(f->name, "cmp_bf16")) { // (a, b, n, tol, result)
    uint64_t elem = f->name[4] == 'f' ? 4 : 2;
    if (f->nparams != 5) return bad(INVALID_VALUE);
    CUresult r = cmp_kernel(v, elem);
    if (r) return r;
    us = 2.0 * elem * (double)v[2] / cfg.mem_bytes * 1e6;
  } else {
    return bad(INVALID_VALUE);
  }
  clock_us[dev()] += us + 2 + slice_wait(); // 2 us launch overhead
  return SUCCESS;
}

// ---- memory calls ----
static void product_bytes(const struct alloc *d, uint64_t off, uint64_t n, unsigned char *out);
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) {
  NEED_CTX();
  if (!p) return bad(INVALID_VALUE);
  return new_alloc(p, n, 0);
}
CUresult cuMemFree_v2(uint64_t p) {
  NEED_CTX();
  if (hung[dev()]) return bad(702); // freeing waits for the stream
  if (broken[dev()]) return bad(ILLEGAL_ADDRESS);
  return free_alloc(p, 0);
}
CUresult cuMemGetInfo_v2(size_t *free, size_t *total) {
  NEED_CTX();
  *total = (size_t)cfg.total_mem;
  *free = (size_t)(cfg.total_mem - cfg.other_tenant_mem) - used[dev()];
  return SUCCESS;
}
CUresult cuMemsetD8_v2(uint64_t p, unsigned char c, size_t n) {
  NEED_CTX();
  struct alloc *a = find(p, n, 0);
  if (!a) return bad(ILLEGAL_ADDRESS);
  a->written = 1;
  a->product_a = a->wrong = 0;
  if (a->data) memset(a->data + (p - a->base), c, n);
  clock_us[dev()] += (double)n / cfg.mem_bytes * 1e6;
  return SUCCESS;
}
CUresult cuMemsetD32_v2(uint64_t p, unsigned int v, size_t n) {
  NEED_CTX();
  struct alloc *a = find(p, n * 4, 0);
  if (!a || p % 4) return bad(ILLEGAL_ADDRESS);
  a->written = 1;
  a->product_a = a->wrong = 0;
  if (a->data)
    for (size_t i = 0; i < n; i++) memcpy(a->data + (p - a->base) + 4 * i, &v, 4);
  clock_us[dev()] += (double)n * 4 / cfg.mem_bytes * 1e6;
  return SUCCESS;
}
CUresult cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t n) {
  NEED_CTX();
  struct alloc *a = find(dst, n, 0), *from = find(src, n, 0);
  if (!a || !from) return bad(ILLEGAL_ADDRESS);
  a->written = 1;
  if (a->data && from->data) memmove(a->data + (dst - a->base), from->data + (src - from->base), n);
  if (dst == a->base && src == from->base && n == from->size) {
    a->product_a = from->product_a, a->product_b = from->product_b, a->product_n = from->product_n, a->wrong = from->wrong;
    a->fill_seed = from->fill_seed, a->fill_elem = from->fill_elem;
  }
  clock_us[dev()] += 2.0 * (double)n / cfg.mem_bytes * 1e6;
  return SUCCESS;
}
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) {
  NEED_CTX();
  struct alloc *a = find(dst, n, 0);
  if (!a || !find((uint64_t)(uintptr_t)src, n, 1)) return bad(ILLEGAL_ADDRESS);
  a->written = 1;
  clock_us[dev()] += (double)n / cfg.link_bytes * 1e6;
  return SUCCESS;
}
// The memory test's patterns and the fill kernels' values, as
// kernels/common.cu computes them.
static uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
static uint32_t mt_word(uint32_t mode, uint32_t arg, uint64_t base, uint64_t i) {
  if (mode == 1) {
    uint64_t a = base + 4 * i;
    return (uint32_t)a ^ (uint32_t)(a >> 32);
  }
  if (mode == 2) return hash32((uint32_t)i ^ arg) ^ hash32((uint32_t)(i >> 32) + arg);
  return arg;
}
static double fill_value(const struct alloc *a, uint64_t i) {
  float f = (float)((hash32((uint32_t)i ^ a->fill_seed) ^ (uint32_t)(i >> 32)) >> 8) * (2.0f / 16777216.0f) - 1.0f;
  if (a->fill_elem == 2) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    bits &= 0xffff0000u;
    memcpy(&f, &bits, 4);
  }
  return f;
}

// product_bytes writes bytes [off, off+n) of a GEMM result: each element
// the dot product of its row of A and column of B, rounded to the element
// type as cuBLASLt's epilogue rounds (to nearest even), plus 8 where the
// card got it wrong.
static void product_bytes(const struct alloc *d, uint64_t off, uint64_t n, unsigned char *out) {
  struct alloc *a = find(d->product_a, 1, 0), *b = find(d->product_b, 1, 0);
  if (!a || !b || !a->fill_elem) return;
  uint64_t dim = d->product_n, elem = a->fill_elem;
  for (uint64_t e = off / elem; e * elem < off + n; e++) {
    uint64_t r = e % dim, c = e / dim;
    double sum = 0;
    for (uint64_t k = 0; k < dim; k++) sum += fill_value(a, r + k * dim) * fill_value(b, k + c * dim);
    if (d->wrong == e + 1) sum += 8;
    float f = (float)sum;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if (elem == 2) bits = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
    for (uint64_t k = 0; k < elem; k++) {
      uint64_t at = e * elem + k;
      if (at >= off && at < off + n) out[at - off] = (unsigned char)(bits >> (8 * k));
    }
  }
}

// tally adds one check kernel's findings to its result words (see
// kernels/common.cu): words and bytes wrong, ~first, last, bits, largest
// difference.
static void tally(uint64_t *r, uint64_t words, uint64_t bytes, uint64_t first, uint64_t last, uint64_t bits, float diff) {
  if (!words) return;
  uint32_t db;
  memcpy(&db, &diff, 4);
  r[0] += words, r[1] += bytes;
  if (~first > r[2]) r[2] = ~first;
  if (last > r[3]) r[3] = last;
  r[4] |= bits;
  if (db > r[5]) r[5] = db;
}

// check_kernel simulates mt_check (p, n words, mode, arg, flags, result)
// over an allocation with no bytes behind it: memory nothing has written
// holds $FAKECUDA's residue= bytes of 0xCD at the start of each MiB; a
// written one holds what the test wrote, but for the weak cell of flip=,
// which reads 0. Its result is in a small allocation with bytes behind it.
static CUresult check_kernel(const uint64_t *v) {
  struct alloc *a = find(v[0], v[1] * 4, 0), *res = find(v[5], 48, 0);
  if (!a || !res || !res->data) return bad(ILLEGAL_ADDRESS);
  uint64_t *r = (uint64_t *)(res->data + (v[5] - res->base)), off = v[0] - a->base;
  uint32_t mode = (uint32_t)v[2], arg = (uint32_t)v[3], inv = v[4] & 1 ? 0xffffffffu : 0;
  if (!a->written && cfg.residue > 0) { // wanted: zeros (the scrub's check)
    for (uint64_t mib = (off + 0xfffff) & ~0xfffffull; mib < off + v[1] * 4; mib += 1 << 20) {
      uint64_t w = (mib - off) / 4, nw = ((uint64_t)cfg.residue + 3) / 4;
      tally(r, nw, (uint64_t)cfg.residue, w, w + nw - 1, 0xcdcdcdcd, 0);
    }
  }
  uint64_t cell = (uint64_t)cfg.flip_at - 1;
  if (cfg.flip_at && a->written && cell >= off && cell < off + v[1] * 4) {
    uint64_t w = (cell - off) / 4;
    uint32_t want = mt_word(mode, arg, v[0], w) ^ inv;
    if (want >> cfg.flip_bit & 1) tally(r, 1, 1, w, w, 1ull << cfg.flip_bit, 0);
  }
  if (v[4] & 2 || !a->written) a->written = 1;
  return SUCCESS;
}

// cmp_kernel simulates cmp_f32 and cmp_bf16 (a, b, n, tol, result): two
// GEMM results differ where one of them holds a wrong element.
static CUresult cmp_kernel(const uint64_t *v, uint64_t elem) {
  struct alloc *a = find(v[0], v[2] * elem, 0), *b = find(v[1], v[2] * elem, 0), *res = find(v[4], 48, 0);
  if (!a || !b || !res || !res->data) return bad(ILLEGAL_ADDRESS);
  uint64_t *r = (uint64_t *)(res->data + (v[4] - res->base));
  const struct alloc *bad_one = a->wrong != b->wrong ? (a->wrong ? a : b) : NULL;
  if (bad_one && bad_one->wrong - 1 < v[2]) tally(r, 1, 2, bad_one->wrong - 1, bad_one->wrong - 1, 0x4100, 8.0f);
  return SUCCESS;
}

// A copy to pageable memory (a buffer of the caller's, not from
// cuMemHostAlloc) writes what the device range holds: zeros, as a driver
// that scrubs between processes hands out, or in an allocation nothing has
// written yet, $FAKECUDA's residue= bytes of 0xCD at the start of each MiB:
// another process's data. A copy to pinned memory writes nothing: its
// pointers are the fake's own and never dereferenced.
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) {
  NEED_CTX();
  struct alloc *from = find(src, n, 0);
  if (!from || !dst) return bad(ILLEGAL_ADDRESS);
  if (!find((uint64_t)(uintptr_t)dst, n, 1)) {
    unsigned char *out = dst;
    memset(out, 0, n);
    if (from->data) memcpy(out, from->data + (src - from->base), n);
    else if (from->product_a) product_bytes(from, src - from->base, n, out);
    for (uint64_t i = 0; i < n && cfg.residue > 0 && !from->written; i++) {
      uint64_t at = src - from->base + i;
      if ((at & 0xfffff) < (uint64_t)cfg.residue) out[i] = 0xCD;
    }
  }
  clock_us[dev()] += (double)n / cfg.link_bytes * 1e6;
  return SUCCESS;
}
#ifndef NO_HOST_ALLOC // to test a missing symbol
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  NEED_CTX();
  if (!p || flags > 7) return bad(INVALID_VALUE);
  uint64_t a;
  CUresult r = new_alloc(&a, n, 1);
  *p = (void *)(uintptr_t)a; // never dereferenced: the Go side only passes it on
  return r;
}
CUresult cuMemFreeHost(void *p) {
  NEED_CTX();
  return free_alloc((uint64_t)(uintptr_t)p, 1);
}
#endif

// ---- events on the virtual clock ----
#define MAGIC_EV 0x6576u
struct event { unsigned magic; int recorded; double at; };

CUresult cuEventCreate(struct event **e, unsigned flags) {
  NEED_CTX();
  if (!e || flags != 0) return bad(INVALID_VALUE); // timing events only
  *e = calloc(1, sizeof **e);
  (*e)->magic = MAGIC_EV;
  st.live_events++;
  return SUCCESS;
}
CUresult cuEventDestroy_v2(struct event *e) {
  NEED_CTX();
  if (!e || e->magic != MAGIC_EV) return bad(INVALID_HANDLE);
  e->magic = 0;
  free(e);
  st.live_events--;
  return SUCCESS;
}
// ---- streams: each on its device's one virtual clock ----
#define MAGIC_STREAM 0x7374u
struct stream { unsigned magic; int dev; };
static int64_t live_streams;
CUresult cuStreamCreate(struct stream **s, unsigned flags) {
  NEED_CTX();
  if (!s || flags > 1) return bad(INVALID_VALUE); // CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING
  *s = calloc(1, sizeof **s);
  (*s)->magic = MAGIC_STREAM, (*s)->dev = dev();
  live_streams++;
  return SUCCESS;
}
CUresult cuStreamDestroy_v2(struct stream *s) {
  NEED_CTX();
  if (!s || s->magic != MAGIC_STREAM) return bad(INVALID_HANDLE);
  s->magic = 0;
  free(s);
  live_streams--;
  return SUCCESS;
}
CUresult cuStreamSynchronize(struct stream *s) {
  NEED_CTX();
  if (s && s->magic != MAGIC_STREAM) return bad(INVALID_HANDLE);
  if (hung[s ? s->dev : dev()]) return bad(702); // a real driver would wait for ever
  return SUCCESS;
}
// stream_dev is the device of a stream handle given with the current
// context: NULL is the context's legacy stream; -1 is a bad handle or a
// stream of another context.
static int stream_dev(struct stream *s) {
  if (!s) return dev();
  return s->magic == MAGIC_STREAM && s->dev == dev() ? s->dev : -1;
}
// Exported for fakenccl.c: the stream's device runs us of work, or, with
// hang, work that never completes.
int fake_cuda_stream_work(struct stream *s, double us, int hang) {
  LOCKED;
  if (!s || s->magic != MAGIC_STREAM) return 0;
  if (hang) hung[s->dev] = 1;
  clock_us[s->dev] += us;
  return 1;
}
// Exported for fakenccl.c: the bytes behind [p, p+n) of a small device
// allocation, NULL for a larger one (which holds no data).
unsigned char *fake_cuda_bytes(uint64_t p, uint64_t n) {
  LOCKED;
  struct alloc *a = find(p, n, 0);
  return a && a->data ? a->data + (p - a->base) : NULL;
}
int64_t fake_cuda_live_streams(void) {
  LOCKED;
  return live_streams;
}

CUresult cuEventRecord(struct event *e, void *stream) {
  NEED_CTX();
  if (!e || e->magic != MAGIC_EV || stream_dev(stream) < 0) return bad(INVALID_HANDLE);
  e->recorded = 1;
  e->at = hung[dev()] ? INFINITY : clock_us[dev()];
  return SUCCESS;
}
CUresult cuEventSynchronize(struct event *e) {
  NEED_CTX();
  if (!e || e->magic != MAGIC_EV) return bad(INVALID_HANDLE);
  if (isinf(e->at)) return bad(702); // a real driver would wait for ever
  return e->recorded ? SUCCESS : bad(INVALID_HANDLE);
}
CUresult cuEventQuery(struct event *e) {
  NEED_CTX();
  if (!e || e->magic != MAGIC_EV) return bad(INVALID_HANDLE);
  return e->recorded && !isinf(e->at) ? SUCCESS : NOT_READY;
}
static CUresult elapsed(float *ms, struct event *a, struct event *b) {
  NEED_CTX();
  if (!ms || !a || !b || a->magic != MAGIC_EV || b->magic != MAGIC_EV) return bad(INVALID_HANDLE);
  if (!a->recorded || !b->recorded) return bad(NOT_READY);
  *ms = (float)((b->at - a->at) / 1000);
  return SUCCESS;
}
CUresult cuEventElapsedTime(float *ms, struct event *a, struct event *b) { return elapsed(ms, a, b); }
#ifndef OLD_DRIVER // drivers before CUDA 12.8 lack the _v2 name
CUresult cuEventElapsedTime_v2(float *ms, struct event *a, struct event *b) { return elapsed(ms, a, b); }
#endif
