// cuda_min.h: the few CUDA declarations the probe kernels need, so that
// clang compiles them to PTX without a CUDA toolkit (-nocudainc).
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __forceinline__ __attribute__((always_inline)) inline

__device__ __forceinline__ unsigned tid_x() { return __nvvm_read_ptx_sreg_tid_x(); }
__device__ __forceinline__ unsigned ntid_x() { return __nvvm_read_ptx_sreg_ntid_x(); }
__device__ __forceinline__ unsigned ctaid_x() { return __nvvm_read_ptx_sreg_ctaid_x(); }
__device__ __forceinline__ unsigned nctaid_x() { return __nvvm_read_ptx_sreg_nctaid_x(); }

// float4_t is a 16-byte vector, so that copying one is a single 128-bit
// load and store (ld.global.v4.f32): a struct of four floats compiles to
// four 32-bit accesses, or two 64-bit ones when aligned.
typedef float float4_t __attribute__((ext_vector_type(4)));
