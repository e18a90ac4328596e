// mma80.cu: tensor-core throughput with mma.sync (sm_80 and newer).
// Each warp runs 4 independent accumulator chains of one mma instruction
// with register operands; FLOPs per warp per iteration = 4 x 2 x M x N x K.
// mma.sync does not reach Hopper's wgmma peak: the expected fraction per
// architecture is calibration data, not a constant here.
#include "mma.h"

// BF16 inputs 1.0 (0x3f80 twice), FP32 accumulate: m16n8k16.
extern "C" __global__ void mma_bf16(float *out, int iters) {
  MMA_LOOP("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 0x3f803f80u)
}

// FP16 inputs 1.0 (0x3c00 twice), FP32 accumulate: m16n8k16.
extern "C" __global__ void mma_f16(float *out, int iters) {
  MMA_LOOP("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 0x3c003c00u)
}

// TF32 inputs 1.0 (0x3f800000), FP32 accumulate: m16n8k8.
extern "C" __global__ void mma_tf32(float *out, int iters) {
  MMA_LOOP("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 0x3f800000u)
}
