// mma89.cu: FP8 (e4m3) tensor-core throughput with mma.sync, sm_89 and
// newer, PTX ISA 8.4 (drivers from CUDA 12.4). m16n8k32, FP32 accumulate.
#include "mma.h"

// e4m3 inputs 1.0 (0x38 in each byte).
extern "C" __global__ void mma_fp8(float *out, int iters) {
  MMA_LOOP("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", 0x38383838u)
}
