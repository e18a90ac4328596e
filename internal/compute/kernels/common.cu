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
