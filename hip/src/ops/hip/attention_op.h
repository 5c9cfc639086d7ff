// The HIP attention op: CoreOps::attention on device tensors (kernels/attention.hip does the
// work). Validates shapes, dtypes and strides with messages that name the operand, then launches
// the flash-attention kernel on ctx.stream().
#pragma once
#include <cstdint>

#include "ops/hip/hip_context.h"
#include "tensor/tensor.h"

namespace moss {

// Softmax attention, no materialised score matrix. q [Tq, heads·hd], k and v [Tk, kv_heads·hd]
// (f32 or bf16, all three the same dtype; any row stride, unit column stride, so column slices of
// a fused QKV projection are valid), out [Tq, heads·hd] f32 or bf16 (its own row stride). Query
// head h reads kv head h / (heads / kv_heads). causal: query i sees keys j <= i (needs Tq == Tk).
// head_dim: any multiple of 16 from 16 to 512 (the models use 32, 64, 96, 128, 256, 384).
// Operands are rounded to bf16 for the matrix products; softmax statistics and the output sums
// stay fp32.
void hip_attention(HipContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads,
                   int64_t kv_heads, int64_t head_dim, float scale, bool causal);

}  // namespace moss
