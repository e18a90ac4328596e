// mma.h: the register-only mma.sync loop shared by the tensor kernels.
// Each warp runs 4 independent accumulator chains of one mma instruction;
// FLOPs per warp per iteration = 4 x 2 x M x N x K.
#pragma once
#include "cuda_min.h"

#define MMA_LOOP(INSTR, A0)                                                    \
  unsigned a0 = A0, a1 = A0, a2 = A0, a3 = A0, b0 = A0, b1 = A0;              \
  float c[4][4] = {};                                                          \
  for (int i = 0; i < iters; i++) {                                            \
    _Pragma("unroll") for (int k = 0; k < 4; k++) {                            \
      asm volatile(INSTR " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
                   : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3]) \
                   : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));  \
    }                                                                          \
  }                                                                            \
  float s = 0;                                                                 \
  _Pragma("unroll") for (int k = 0; k < 4; k++) s += c[k][0] + c[k][1] + c[k][2] + c[k][3]; \
  if (s == -1.0f) out[ctaid_x() * ntid_x() + tid_x()] = s;
