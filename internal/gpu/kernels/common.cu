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
// and written once: bytes moved = 2 x 16 x n.
extern "C" __global__ void copy16(const float4_t *in, float4_t *out, unsigned long long n) {
  unsigned long long i = (unsigned long long)ctaid_x() * ntid_x() + tid_x();
  unsigned long long stride = (unsigned long long)nctaid_x() * ntid_x();
  for (; i < n; i += stride) out[i] = in[i];
}
