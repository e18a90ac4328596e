// common.cu: FP32 and memory probe kernels, PTX for sm_70 and newer.
#include "cuda_min.h"

// fma32: 8 independent FMA chains per thread, register resident, so the
// SIMT pipes are the only limit. FLOPs = threads x iters x 8 chains x 2.
// The conditional store keeps the compiler from removing the work.
extern "C" __global__ void fma32(float *out, int iters, float seed) {
  unsigned t = ctaid_x() * ntid_x() + tid_x();
  const float b = 0.9999f, c = seed * 1e-4f;
  float x0 = seed + t, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;
  float x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;
  for (int i = 0; i < iters; i++) {
    x0 = __builtin_fmaf(x0, b, c);
    x1 = __builtin_fmaf(x1, b, c);
    x2 = __builtin_fmaf(x2, b, c);
    x3 = __builtin_fmaf(x3, b, c);
    x4 = __builtin_fmaf(x4, b, c);
    x5 = __builtin_fmaf(x5, b, c);
    x6 = __builtin_fmaf(x6, b, c);
    x7 = __builtin_fmaf(x7, b, c);
  }
  float s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
  if (s == -1.0f) out[t] = s;
}

// copy16: grid-stride copy of n 16-byte elements. Each element is read once
// and written once: bytes moved = 2 x 16 x n. The buffers do not overlap
// (__restrict__): otherwise each load must wait for the previous store.
// Each thread loads four elements, a grid stride apart, before it stores
// any: four 16-byte loads in flight per thread. With one, latency rules on
// HBM3e: gpu-benches' grid-stride stream kernels read 57% and copy 74% of
// the H200's datasheet bandwidth (shared/reference/bench_anchors.md 6c),
// where PyTorch's copy moved 4.3 of its 4.8 TB/s on the project's device
// machine (2026-10-28).
extern "C" __global__ void copy16(const float4_t *__restrict__ in, float4_t *__restrict__ out, unsigned long long n) {
  unsigned long long i = (unsigned long long)ctaid_x() * ntid_x() + tid_x();
  unsigned long long stride = (unsigned long long)nctaid_x() * ntid_x();
  for (; i + 3 * stride < n; i += 4 * stride) {
    float4_t v0 = in[i], v1 = in[i + stride], v2 = in[i + 2 * stride], v3 = in[i + 3 * stride];
    out[i] = v0;
    out[i + stride] = v1;
    out[i + 2 * stride] = v2;
    out[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride) out[i] = in[i];
}

// hash32 is a 32-bit integer mix (the "lowbias32" constants), enough to
// give the GEMM probe operands that look like random data: a GEMM over
// constant or zero inputs toggles fewer bits, draws less power and can run
// faster than users' real matmuls.
__device__ __forceinline__ unsigned hash32(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// uniform maps a hash to [-1, 1).
__device__ __forceinline__ float uniform(unsigned h) { return (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f; }

// fill_f32 writes n pseudo-random floats in [-1, 1).
extern "C" __global__ void fill_f32(float *p, unsigned long long n, unsigned seed) {
  unsigned long long i = (unsigned long long)ctaid_x() * ntid_x() + tid_x();
  unsigned long long stride = (unsigned long long)nctaid_x() * ntid_x();
  for (; i < n; i += stride) p[i] = uniform(hash32((unsigned)i ^ seed) ^ (unsigned)(i >> 32));
}

// fill_bf16 writes n pseudo-random bfloat16 values in [-1, 1): the high
// half of the FP32 bit pattern.
extern "C" __global__ void fill_bf16(unsigned short *p, unsigned long long n, unsigned seed) {
  unsigned long long i = (unsigned long long)ctaid_x() * ntid_x() + tid_x();
  unsigned long long stride = (unsigned long long)nctaid_x() * ntid_x();
  for (; i < n; i += stride) {
    float f = uniform(hash32((unsigned)i ^ seed) ^ (unsigned)(i >> 32));
    p[i] = (unsigned short)(__builtin_bit_cast(unsigned, f) >> 16);
  }
}

// ---- memory test, scrub and result checks ----
// Every check kernel adds what it found to a result of six 64-bit words,
// zeroed before the launch (struct check_result in the Go code):
//   [0] words wrong, [1] bytes wrong, [2] ~first word wrong (the maximum of
//   ~index is the smallest index, so zero needs no special start),
//   [3] last word wrong, [4] the OR of every wrong bit, [5] the largest
//   difference as float bits (cmp kernels; non-negative floats order as
//   their bits do).
// Each thread keeps its own tally over its grid-stride loop and adds it
// once: memory that is wrong everywhere (another tenant's data in all of
// it) must not serialise billions of atomics on one address.
struct tally {
  unsigned long long words, bytes, nfirst, last, bits;
  unsigned maxdiff;
};

__device__ __forceinline__ void tally_word(tally &t, unsigned long long i, unsigned diff) {
  t.words++;
  t.bytes += ((diff & 0xffu) != 0) + ((diff & 0xff00u) != 0) + ((diff & 0xff0000u) != 0) + ((diff & 0xff000000u) != 0);
  if (~i > t.nfirst) t.nfirst = ~i;
  if (i > t.last) t.last = i;
  t.bits |= diff;
}

__device__ __forceinline__ void tally_add(const tally &t, unsigned long long *result) {
  if (t.words == 0) return;
  __atomic_fetch_add(&result[0], t.words, __ATOMIC_RELAXED);
  __atomic_fetch_add(&result[1], t.bytes, __ATOMIC_RELAXED);
  __atomic_fetch_max(&result[2], t.nfirst, __ATOMIC_RELAXED);
  __atomic_fetch_max(&result[3], t.last, __ATOMIC_RELAXED);
  __atomic_fetch_or(&result[4], t.bits, __ATOMIC_RELAXED);
  __atomic_fetch_max(&result[5], (unsigned long long)t.maxdiff, __ATOMIC_RELAXED);
}

// mt_word is the word the memory test's pattern `mode` puts at word i of
// a buffer whose first word is at byte address base: 0 the constant arg
// (zeros to scrub, a walking one, moving inversions' pattern), 1 the word's
// own address (its low 32 bits xor its high ones: no two words of a
// 16 GiB stretch alike), 2 pseudo-random from seed arg.
__device__ __forceinline__ unsigned mt_word(unsigned mode, unsigned arg, unsigned long long base, unsigned long long i) {
  if (mode == 1) {
    unsigned long long a = base + 4 * i;
    return (unsigned)a ^ (unsigned)(a >> 32);
  }
  if (mode == 2) return hash32((unsigned)i ^ arg) ^ hash32((unsigned)(i >> 32) + arg);
  return arg;
}

// mt_fill writes pattern (mode, arg) to n words.
extern "C" __global__ void mt_fill(unsigned *p, unsigned long long n, unsigned mode, unsigned arg) {
  unsigned long long i = (unsigned long long)ctaid_x() * ntid_x() + tid_x();
  unsigned long long stride = (unsigned long long)nctaid_x() * ntid_x();
  unsigned long long base = (unsigned long long)p;
  for (; i < n; i += stride) p[i] = mt_word(mode, arg, base, i);
}

// mt_check reads n words and tallies those that differ from pattern
// (mode, arg), complemented when flags bit 0 is set. With flags bit 1 it
// then writes the complement of what it expected (moving inversions: each
// pass reads one pattern and leaves its inverse for the next).
extern "C" __global__ void mt_check(unsigned *p, unsigned long long n, unsigned mode, unsigned arg, unsigned flags,
                                    unsigned long long *result) {
  unsigned long long i = (unsigned long long)ctaid_x() * ntid_x() + tid_x();
  unsigned long long stride = (unsigned long long)nctaid_x() * ntid_x();
  unsigned long long base = (unsigned long long)p;
  unsigned inv = (flags & 1) ? 0xffffffffu : 0;
  tally t = {0, 0, 0, 0, 0, 0};
  for (; i < n; i += stride) {
    unsigned want = mt_word(mode, arg, base, i) ^ inv, got = p[i];
    if (got != want) tally_word(t, i, got ^ want);
    if (flags & 2) p[i] = ~want;
  }
  tally_add(t, result);
}

__device__ __forceinline__ float absf(float x) { return x < 0 ? -x : x; }

// differs reports whether two results disagree by more than tol relative
// to their size (plus one, so that values near zero are not held to a
// tolerance no accumulation order meets); a NaN always differs.
__device__ __forceinline__ bool differs(float a, float b, float tol, float &d) {
  d = absf(a - b);
  float m = absf(a) > absf(b) ? absf(a) : absf(b);
  return !(d <= tol * (m + 1.0f));
}

// cmp_f32 and cmp_bf16 compare two results of the same GEMM element by
// element: a card that computes one element differently under load has a
// fault that ECC does not see (silent data corruption).
extern "C" __global__ void cmp_f32(const float *a, const float *b, unsigned long long n, float tol, unsigned long long *result) {
  unsigned long long i = (unsigned long long)ctaid_x() * ntid_x() + tid_x();
  unsigned long long stride = (unsigned long long)nctaid_x() * ntid_x();
  tally t = {0, 0, 0, 0, 0, 0};
  for (; i < n; i += stride) {
    float d;
    if (differs(a[i], b[i], tol, d)) {
      unsigned x = __builtin_bit_cast(unsigned, a[i]) ^ __builtin_bit_cast(unsigned, b[i]);
      tally_word(t, i, x);
      unsigned db = d == d ? __builtin_bit_cast(unsigned, d) : 0x7f800000u; // NaN counts as infinitely far
      if (db > t.maxdiff) t.maxdiff = db;
    }
  }
  tally_add(t, result);
}

extern "C" __global__ void cmp_bf16(const unsigned short *a, const unsigned short *b, unsigned long long n, float tol,
                                    unsigned long long *result) {
  unsigned long long i = (unsigned long long)ctaid_x() * ntid_x() + tid_x();
  unsigned long long stride = (unsigned long long)nctaid_x() * ntid_x();
  tally t = {0, 0, 0, 0, 0, 0};
  for (; i < n; i += stride) {
    float fa = __builtin_bit_cast(float, (unsigned)a[i] << 16), fb = __builtin_bit_cast(float, (unsigned)b[i] << 16), d;
    if (differs(fa, fb, tol, d)) {
      tally_word(t, i, (unsigned)(a[i] ^ b[i]));
      unsigned db = d == d ? __builtin_bit_cast(unsigned, d) : 0x7f800000u;
      if (db > t.maxdiff) t.maxdiff = db;
    }
  }
  tally_add(t, result);
}
