// cuda_min.h: the few CUDA declarations the probe kernels need, so that
// clang compiles them to PTX without a CUDA toolkit (-nocudainc).
#pragma once
#ifdef GPURENT_HOST
// Compiled for the host instead, by TestKernelsOnHost: it runs every
// thread of a grid in turn (testdata/kernels_host.cpp) and sets these.
#define __global__
#define __device__
#define __forceinline__ inline
extern unsigned gpurent_tid, gpurent_ntid, gpurent_ctaid, gpurent_nctaid;
inline unsigned tid_x() { return gpurent_tid; }
inline unsigned ntid_x() { return gpurent_ntid; }
inline unsigned ctaid_x() { return gpurent_ctaid; }
inline unsigned nctaid_x() { return gpurent_nctaid; }
#else
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __forceinline__ __attribute__((always_inline)) inline

__device__ __forceinline__ unsigned tid_x() { return __nvvm_read_ptx_sreg_tid_x(); }
__device__ __forceinline__ unsigned ntid_x() { return __nvvm_read_ptx_sreg_ntid_x(); }
__device__ __forceinline__ unsigned ctaid_x() { return __nvvm_read_ptx_sreg_ctaid_x(); }
__device__ __forceinline__ unsigned nctaid_x() { return __nvvm_read_ptx_sreg_nctaid_x(); }
#endif

#ifdef GPURENT_HOST
// On the host a float4_t counts the stores into it, so that the test sees
// an element written twice (a copy that moves more bytes than it counts).
struct float4_t {
  float v[4];
  unsigned stores;
  float4_t &operator=(const float4_t &o) {
    for (int k = 0; k < 4; k++) v[k] = o.v[k];
    stores++;
    return *this;
  }
};
#else
// float4_t is a 16-byte vector, so that copying one is a single 128-bit
// load and store (ld.global.v4.f32): a struct of four floats compiles to
// four 32-bit accesses, or two 64-bit ones when aligned.
typedef float float4_t __attribute__((ext_vector_type(4)));
#endif
