// kernels_host.cpp: kernels/common.cu compiled for the host, every thread
// of a grid run in turn, to check the kernels' index arithmetic without a
// GPU: each element below n copied exactly once or filled, none past it
// touched, and fma32 stores nothing. TestKernelsOnHost builds and runs it;
// it prints one line per failure and exits 1 when there is any.
#define GPURENT_HOST 1
// Plain C memory and no C++ library: the C compiler's driver links it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned gpurent_tid, gpurent_ntid, gpurent_ctaid, gpurent_nctaid;

#include "../kernels/common.cu"

// launch runs f for each thread of blocks x threads, in order. The kernels
// use no shared memory or barriers, so any order is one the GPU may take.
template <typename F> static void launch(unsigned blocks, unsigned threads, F f) {
  gpurent_nctaid = blocks;
  gpurent_ntid = threads;
  for (gpurent_ctaid = 0; gpurent_ctaid < blocks; gpurent_ctaid++)
    for (gpurent_tid = 0; gpurent_tid < threads; gpurent_tid++) f();
}

static int failures = 0, cases = 0;

static void fail(const char *what, unsigned blocks, unsigned threads, unsigned long long n, unsigned long long i) {
  if (++failures <= 20) printf("%s: grid %u x %u, n %llu: element %llu wrong\n", what, blocks, threads, n, i);
}

static const unsigned long long guard = 64; // elements past n that must stay untouched

static void copy(unsigned blocks, unsigned threads, unsigned long long n) {
  float4_t *in = (float4_t *)calloc(n + guard, sizeof *in), *out = (float4_t *)calloc(n + guard, sizeof *out);
  for (unsigned long long i = 0; i < n + guard; i++) {
    in[i] = float4_t{{float(i), float(i) + 0.25f, float(i) + 0.5f, float(i) + 0.75f}, 0};
    out[i] = float4_t{{-1, -1, -1, -1}, 0};
    out[i].stores = 0; // the assignment above counted
  }
  launch(blocks, threads, [&] { copy16(in, out, n); });
  for (unsigned long long i = 0; i < n + guard; i++) {
    bool ok = i < n ? memcmp(out[i].v, in[i].v, sizeof out[i].v) == 0 && out[i].stores == 1
                    : out[i].stores == 0 && out[i].v[0] == -1;
    if (!ok) {
      fail("copy16", blocks, threads, n, i);
      break;
    }
  }
  free(in);
  free(out);
  cases++;
}

static void fills(unsigned blocks, unsigned threads, unsigned long long n) {
  float *f = (float *)malloc((n + guard) * sizeof *f);
  for (unsigned long long i = 0; i < n + guard; i++) f[i] = 7.0f;
  launch(blocks, threads, [&] { fill_f32(f, n, 12345u); });
  for (unsigned long long i = 0; i < n + guard; i++) {
    bool ok = i < n ? (f[i] >= -1.0f && f[i] < 1.0f) : f[i] == 7.0f;
    if (!ok) {
      fail("fill_f32", blocks, threads, n, i);
      break;
    }
  }
  unsigned short *h = (unsigned short *)malloc((n + guard) * sizeof *h);
  memset(h, 0xff, (n + guard) * sizeof *h); // 0xffff is a NaN: never a value in [-1, 1)
  launch(blocks, threads, [&] { fill_bf16(h, n, 12345u); });
  for (unsigned long long i = 0; i < n + guard; i++) {
    unsigned bits = unsigned(h[i]) << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    bool ok = i < n ? (v >= -1.0f && v < 1.0f) : h[i] == 0xffff;
    if (!ok) {
      fail("fill_bf16", blocks, threads, n, i);
      break;
    }
  }
  free(f);
  free(h);
  cases += 2;
}

// memtest: for each pattern, mt_fill then mt_check finds nothing; one
// flipped bit is found with its index and bit, exactly once; the rewrite
// flag leaves the complement; nothing past n is touched.
static void memtest(unsigned blocks, unsigned threads, unsigned long long n) {
  unsigned *p = (unsigned *)malloc((n + guard) * sizeof *p);
  for (unsigned mode = 0; mode < 3; mode++) {
    for (unsigned long long i = 0; i < n + guard; i++) p[i] = 0xdeadbeefu;
    launch(blocks, threads, [&] { mt_fill(p, n, mode, 0x5555aaaau); });
    unsigned long long r[6] = {0};
    launch(blocks, threads, [&] { mt_check(p, n, mode, 0x5555aaaau, 0, r); });
    if (r[0] != 0) fail("mt_check clean", blocks, threads, n, mode);
    for (unsigned long long i = n; i < n + guard; i++)
      if (p[i] != 0xdeadbeefu) fail("mt_fill past n", blocks, threads, n, i);
    if (n == 0) continue;
    unsigned long long at = n / 2;
    p[at] ^= 1u << 13;
    launch(blocks, threads, [&] { mt_check(p, n, mode, 0x5555aaaau, 2, r); }); // and rewrite with the complement
    if (r[0] != 1 || r[1] != 1 || ~r[2] != at || r[3] != at || r[4] != 1u << 13) fail("mt_check flip", blocks, threads, n, at);
    unsigned long long r2[6] = {0};
    launch(blocks, threads, [&] { mt_check(p, n, mode, 0x5555aaaau, 1, r2); });
    if (r2[0] != 0) fail("mt_check inverted", blocks, threads, n, r2[3]);
  }
  free(p);
  cases += 3;
}

// compare: equal results pass, one element off by more than the
// tolerance is counted with its index and difference, one within it not.
static void compare(unsigned blocks, unsigned threads, unsigned long long n) {
  float *a = (float *)malloc((n + 1) * sizeof *a), *b = (float *)malloc((n + 1) * sizeof *b);
  for (unsigned long long i = 0; i < n; i++) a[i] = b[i] = float(i % 97) - 40.0f;
  unsigned long long r[6] = {0};
  if (n > 2) {
    b[1] += 0.1f;                 // 0.1 of 60: within 1/64
    b[n - 1] = a[n - 1] + 20.0f;  // far off
  }
  launch(blocks, threads, [&] { cmp_f32(a, b, n, 1.0f / 64, r); });
  float d;
  unsigned db = (unsigned)r[5];
  memcpy(&d, &db, sizeof d);
  if (n > 2 ? (r[0] != 1 || ~r[2] != n - 1 || d != 20.0f) : r[0] != 0) fail("cmp_f32", blocks, threads, n, r[0]);
  unsigned short *x = (unsigned short *)malloc((n + 1) * sizeof *x), *y = (unsigned short *)malloc((n + 1) * sizeof *y);
  for (unsigned long long i = 0; i < n; i++) x[i] = y[i] = 0x4120; // 10.0
  if (n > 0) y[0] = 0x7fc0;                                        // NaN
  unsigned long long q[6] = {0};
  launch(blocks, threads, [&] { cmp_bf16(x, y, n, 1.0f / 64, q); });
  if (q[0] != (n > 0 ? 1u : 0u) || (n > 0 && (unsigned)q[5] != 0x7f800000u)) fail("cmp_bf16", blocks, threads, n, q[0]);
  free(a);
  free(b);
  free(x);
  free(y);
  cases += 2;
}

int main() {
  const unsigned grids[][2] = {{1, 1}, {1, 32}, {3, 32}, {5, 64}};
  for (auto &g : grids) {
    unsigned long long s = (unsigned long long)g[0] * g[1]; // the grid stride
    const unsigned long long ns[] = {0, 1, 2, s - 1, s, s + 1, 2 * s + 1, 3 * s, 4 * s - 1, 4 * s, 4 * s + 1,
                                     5 * s + 3, 8 * s, 13 * s + 7, 1000};
    for (unsigned long long n : ns) {
      copy(g[0], g[1], n);
      fills(g[0], g[1], n);
      memtest(g[0], g[1], n);
      compare(g[0], g[1], n);
    }
  }
  // fma32 keeps its result unless the sum is exactly -1: no store.
  float out[64];
  for (int i = 0; i < 64; i++) out[i] = 7.0f;
  launch(2, 32, [&] { fma32(out, 100, 1.0f); });
  for (int i = 0; i < 64; i++)
    if (out[i] != 7.0f) fail("fma32", 2, 32, 100, i);
  cases++;
  printf("%d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
