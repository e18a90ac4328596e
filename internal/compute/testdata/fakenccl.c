// fakenccl.c: a simulated libnccl.so.2 for the all-reduce tests, written
// from NCCL's nccl.h (2.30.7): the prototypes, ncclResult_t codes,
// ncclFloat32 = 7 and ncclSum = 0. It runs on fakecuda.c's simulated
// GPUs: an all-reduce advances each rank's stream by the time it would
// take at the configured bus bandwidth, and where the buffers are small
// enough to hold data (fakecuda.c's backed allocations) it really sums
// them. It refuses what real NCCL refuses or hangs on: a rank's collective
// outside a group in a multi-GPU single-process clique (real NCCL waits
// for the other ranks for ever), a group that leaves a rank out, a
// destroyed or unknown communicator, a type or operation out of range.
//
// $FAKENCCL configures a whole process, "key=value" words: busbw (GB/s,
// default 370), hang=1 (every all-reduce's work never completes),
// wrong=1 (sums come out one too high), init=R (ncclCommInitAll returns
// R). Tests call fake_nccl_config and read fake_nccl_stats.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
enum { ncclSuccess = 0, ncclInternalError = 3, ncclInvalidArgument = 4, ncclInvalidUsage = 5 };

struct config {
  double busbw;
  int64_t hang, wrong, init;
};
static struct config cfg = {.busbw = 370};
struct stats {
  int64_t live_comms, bad_calls, reduces, aborts;
};
static struct stats st;

void fake_nccl_config(const struct config *c) {
  cfg = *c;
  memset(&st, 0, sizeof st);
}
void fake_nccl_stats(struct stats *out) { *out = st; }

__attribute__((constructor)) static void from_env(void) {
  const char *env = getenv("FAKENCCL");
  if (!env) return;
  char *words = strdup(env), *save = NULL;
  for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    char *v = strchr(w, '=');
    if (!v) continue;
    *v++ = 0;
    if (!strcmp(w, "busbw")) cfg.busbw = strtod(v, NULL);
    else if (!strcmp(w, "hang")) cfg.hang = strtoll(v, NULL, 0);
    else if (!strcmp(w, "wrong")) cfg.wrong = strtoll(v, NULL, 0);
    else if (!strcmp(w, "init")) cfg.init = strtoll(v, NULL, 0);
  }
  free(words);
}

// The simulated driver's exports, from the fakecuda.c this process
// loaded (fake_nccl_use_cuda_at names one where a test loaded several).
static void *cuda_lib = RTLD_DEFAULT;
void fake_nccl_use_cuda_at(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (h) cuda_lib = h;
}

static ncclResult_t bad(ncclResult_t r) {
  st.bad_calls++;
  return r;
}

#define MAGIC 0x6e63636cu
#define MAXRANKS 8
struct clique;
struct comm {
  unsigned magic;
  int rank, dev;
  struct clique *clique;
};
struct pending {
  int set;
  uint64_t send, recv, count;
  void *stream;
};
struct clique {
  int n, live;
  struct comm *comms[MAXRANKS];
  struct pending p[MAXRANKS];
};

static int valid(struct comm *m) { return m && m->magic == MAGIC; }

#define MAXCLIQUES 16
static struct clique *cliques[MAXCLIQUES];

ncclResult_t ncclGetVersion(int *v) {
  if (!v) return bad(ncclInvalidArgument);
  *v = 22803; // 2.28.3: NCCL_VERSION(2,28,3) = 2*10000 + 28*100 + 3
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
  static const char *s[] = {"no error", "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
                            "unhandled system error (run with NCCL_DEBUG=INFO for details)", "internal error - please report this issue to the NCCL developers",
                            "invalid argument (run with NCCL_DEBUG=WARN for details)", "invalid usage (run with NCCL_DEBUG=WARN for details)",
                            "remote process exited or there was a network error", "NCCL operation in progress", "NCCL timeout"};
  return r >= 0 && r < 9 ? s[r] : "unknown result code";
}

ncclResult_t ncclCommInitAll(struct comm **comms, int ndev, const int *devlist) {
  if (cfg.init) return (ncclResult_t)cfg.init;
  if (!comms || ndev < 1 || ndev > MAXRANKS) return bad(ncclInvalidArgument);
  int slot = 0;
  while (slot < MAXCLIQUES && cliques[slot]) slot++;
  if (slot == MAXCLIQUES) return bad(ncclInternalError);
  struct clique *c = calloc(1, sizeof *c);
  c->n = ndev, c->live = ndev;
  for (int i = 0; i < ndev; i++) {
    if (devlist && (devlist[i] < 0 || devlist[i] >= MAXRANKS)) {
      free(c);
      return bad(ncclInvalidArgument);
    }
    struct comm *m = calloc(1, sizeof *m);
    m->magic = MAGIC, m->rank = i, m->dev = devlist ? devlist[i] : i, m->clique = c;
    c->comms[i] = comms[i] = m;
    st.live_comms++;
  }
  cliques[slot] = c;
  return ncclSuccess;
}

// release ends a communicator; its clique goes with its last.
static ncclResult_t release(struct comm *m) {
  if (!valid(m)) return bad(ncclInvalidArgument);
  struct clique *c = m->clique;
  m->magic = 0;
  free(m);
  st.live_comms--;
  if (--c->live == 0) {
    for (int i = 0; i < MAXCLIQUES; i++)
      if (cliques[i] == c) cliques[i] = NULL;
    free(c);
  }
  return ncclSuccess;
}
ncclResult_t ncclCommDestroy(struct comm *m) { return release(m); }
ncclResult_t ncclCommAbort(struct comm *m) {
  st.aborts++;
  return release(m);
}
ncclResult_t ncclCommGetAsyncError(struct comm *m, ncclResult_t *e) {
  if (!valid(m) || !e) return bad(ncclInvalidArgument);
  *e = ncclSuccess;
  return ncclSuccess;
}

static int group_depth;
ncclResult_t ncclGroupEnd(void);

ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, struct comm *m, void *stream) {
  if (!valid(m)) return bad(ncclInvalidArgument);
  if (type < 0 || type > 11 || op < 0 || op > 4 || !send || !recv || !stream || count == 0) return bad(ncclInvalidArgument);
  if (type != 7 || op != 0) return bad(ncclInvalidArgument); // this simulation sums floats only
  if (group_depth == 0 && m->clique->n > 1) return bad(ncclInvalidUsage); // real NCCL would wait for the other ranks for ever
  struct pending *p = &m->clique->p[m->rank];
  if (p->set) return bad(ncclInvalidUsage); // one collective per rank per group, in this simulation
  *p = (struct pending){1, (uint64_t)(uintptr_t)send, (uint64_t)(uintptr_t)recv, count, stream};
  if (group_depth == 0) { // a single rank: its own group
    group_depth++;
    return ncclGroupEnd();
  }
  return ncclSuccess;
}

// run completes a clique's pending all-reduce: every rank's sum where the
// data is there, and the time on every rank's stream.
static ncclResult_t run(struct clique *c) {
  int (*work)(void *, double, int) = (int (*)(void *, double, int))dlsym(cuda_lib, "fake_cuda_stream_work");
  unsigned char *(*bytes)(uint64_t, uint64_t) = (unsigned char *(*)(uint64_t, uint64_t))dlsym(cuda_lib, "fake_cuda_bytes");
  if (!work || !bytes) return bad(ncclInternalError);
  uint64_t count = c->p[0].count;
  for (int i = 0; i < c->n; i++)
    if (!c->p[i].set || c->p[i].count != count) return bad(ncclInvalidUsage); // real NCCL would hang
  float *sum = calloc(count, sizeof *sum);
  int have = 1;
  for (int i = 0; i < c->n && have; i++) {
    float *s = (float *)bytes(c->p[i].send, count * 4);
    if (!s) have = 0;
    else
      for (uint64_t k = 0; k < count; k++) sum[k] += s[k];
  }
  double alg = cfg.busbw * 1e9 / (c->n > 1 ? 2.0 * (c->n - 1) / c->n : 1);
  double us = (double)count * 4 / alg * 1e6 + 10;
  for (int i = 0; i < c->n; i++) {
    float *r = have ? (float *)bytes(c->p[i].recv, count * 4) : NULL;
    if (r)
      for (uint64_t k = 0; k < count; k++) r[k] = sum[k] + (float)cfg.wrong;
    if (!work(c->p[i].stream, us, (int)cfg.hang)) {
      free(sum);
      return bad(ncclInvalidArgument);
    }
    c->p[i].set = 0;
  }
  free(sum);
  st.reduces++;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (group_depth == 0) return bad(ncclInvalidUsage);
  if (--group_depth > 0) return ncclSuccess;
  // Every clique with a rank's collective pending runs now.
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < MAXCLIQUES; i++) {
    struct clique *c = cliques[i];
    if (!c) continue;
    int any = 0;
    for (int r = 0; r < c->n; r++) any |= c->p[r].set;
    if (!any) continue;
    ncclResult_t e = run(c);
    if (e != ncclSuccess) {
      for (int r = 0; r < c->n; r++) c->p[r].set = 0;
      res = e;
    }
  }
  return res;
}
