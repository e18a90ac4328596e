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

struct float4_t { float x, y, z, w; };
