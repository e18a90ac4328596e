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

int main() {
  const unsigned grids[][2] = {{1, 1}, {1, 32}, {3, 32}, {5, 64}};
  for (auto &g : grids) {
    unsigned long long s = (unsigned long long)g[0] * g[1]; // the grid stride
    const unsigned long long ns[] = {0, 1, 2, s - 1, s, s + 1, 2 * s + 1, 3 * s, 4 * s - 1, 4 * s, 4 * s + 1,
                                     5 * s + 3, 8 * s, 13 * s + 7, 1000};
    for (unsigned long long n : ns) {
      copy(g[0], g[1], n);
      fills(g[0], g[1], n);
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
