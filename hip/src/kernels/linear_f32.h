// y[M,N] = x[M,K] · w[N,K]ᵀ (+ bias) entirely in fp32, for layers whose weights are fp32 (the
// VAE's mid-block projections): the model runs in fp32 officially, and rounding these operands
// to bf16 moves a few percent of the decoded 8-bit values by one level. Not a matrix-core
// kernel: fp32 FMAs, tiles staged in LDS; these layers are a sliver of the decode's work.
#pragma once
#include <cstdint>

#include "runtime/portability.h"

namespace moss {

struct LinearF32Args {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;  // may be null
  float* y = nullptr;
  int64_t m = 0, n = 0, k = 0;
  int64_t ldx = 0, ldw = 0, ldy = 0;  // row strides in elements
};

void linear_f32(const LinearF32Args& a, hipStream_t stream);

}  // namespace moss
