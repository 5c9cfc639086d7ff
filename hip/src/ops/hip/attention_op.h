// The HIP attention op: CoreOps::attention on device tensors. Validates shapes, dtypes and
// strides (messages name the operand), packs K and V into bf16 tiles in the context's scratch
// (kernels/attention_pack) unless the kernel can read them as they are (bf16, 16-byte aligned
// rows, NVIDIA flash kernel), then runs the attention kernel (kernels/attention) on ctx.stream().
// Does not synchronise.
#pragma once
#include <cstdint>

#include "kernels/attention.h"
#include "ops/hip/hip_context.h"
#include "tensor/tensor.h"

namespace moss {

// Softmax attention, no materialised score matrix. q [Tq, heads·hd], k and v [Tk, kv_heads·hd]
// (f32 or bf16, all three the same dtype; any row stride, unit column stride, so column slices of
// a fused QKV projection are valid), out [Tq, heads·hd] f32 or bf16 (its own row stride). Query
// head h reads kv head h / (heads / kv_heads); scores are (q·k)·scale. causal: query i sees keys
// j <= i (needs Tq == Tk). head_dim: any multiple of 16 from 16 to 384 (the models use 32, 64,
// 96, 128, 256, 384). Matrix operands are rounded to bf16; softmax statistics and sums stay fp32.
// Uses ctx.scratch() for 4·kv_heads·Tk·hd bytes (rounded up to the kernel's tiles) when it packs.
// tiling: a kernel tiling to time against the default (kernels/attention.h); callers leave it.
// q_rope: q is the raw projection, normalised and rotated per head as CoreOps::norm_rope(q, w,
// eps, head_dim, sin, cos) on its way into the kernel (CoreOps::norm_rope_attention); only where
// hip_attention_fuses_q_rope holds.
// v_transposed: v is Vᵀ, bf16 [kv_heads·hd, P] (16-byte aligned rows, P >= Tk rounded up to
// kAttentionKeyPadding, zeros past Tk: CoreOps::linear_transposed's output), read as it is with no
// pack; only where hip_attention_reads_transposed_v holds (and k is bf16 with aligned rows).
struct QNormRope {
  const Tensor& w;  // [head_dim], f32 or bf16
  float eps;
  const Tensor& sin;  // f32 [Tq, >= head_dim]: row i for query i
  const Tensor& cos;
};
void hip_attention(HipContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads,
                   int64_t kv_heads, int64_t head_dim, float scale, bool causal,
                   AttentionTiling tiling = AttentionTiling::Default, const QNormRope* q_rope = nullptr,
                   bool v_transposed = false);

// Whether the kernel this tiling runs at head_dim reads a transposed V as it is (the portable
// direct tiling, which otherwise packs V into that very layout; kernels/attention.h
// AttentionKvLayout::k_in_place).
bool hip_attention_reads_transposed_v(int64_t head_dim, AttentionTiling tiling = AttentionTiling::Default);

// Whether hip_attention can take q_rope for this q at this tiling: the kernel stages Q through the
// norm_rope rows kernel's arithmetic (kernels/attention.h attention_fuses_q_rope), and q, w, sin
// and cos are device tensors laid out for its 16-byte loads (f32 tables; rows and bases aligned).
bool hip_attention_fuses_q_rope(const Tensor& q, const QNormRope& r, int64_t head_dim,
                                AttentionTiling tiling = AttentionTiling::Default);

// The int8 QKᵀ attention (CoreOps::quantize_keys and norm_rope_attention_int8_qk;
// docs/attention_int8_qk.md): where the kernel this tiling runs at head_dim has the int8 variant
// (kernels/attention.h attention_int8_qk: the portable direct tiling, head dims 32, 64, 128).
bool hip_attention_runs_int8_qk(int64_t head_dim, AttentionTiling tiling = AttentionTiling::Default);

// CoreOps::quantize_keys: k [Tk, heads·head_dim] f32 or bf16 device rows (any row stride, unit
// column stride) into kq_q, I8 [heads·keys_pad, head_dim], and kq_scale, F32 [heads·keys_pad /
// 32] (both contiguous device tensors; keys_pad = CoreOps::transposed_v_keys(Tk)), through
// kernels/attention_int8_keys.h. Uses ctx.scratch() for the heads·head_dim channel means.
void hip_quantize_keys(HipContext& ctx, const Tensor& k, int64_t heads, int64_t head_dim, int64_t keys_pad,
                       Tensor& kq_q, Tensor& kq_scale);

// CoreOps::norm_rope_attention_int8_qk: q (raw projection, normalised and rotated in the kernel;
// hip_attention_fuses_q_rope must hold), the quantized keys of `keys` keys as hip_quantize_keys
// writes them, v as hip_attention's (rows, packed here into Vᵀ, or Vᵀ itself where v_transposed),
// out [Tq, heads·head_dim] f32 or bf16. Refuses, naming the reason, what the kernel cannot take.
void hip_attention_int8_qk(HipContext& ctx, const Tensor& q, const QNormRope& q_rope, const Tensor& kq_q,
                           const Tensor& kq_scale, int64_t keys, int64_t keys_pad, const Tensor& v, Tensor& out,
                           int64_t heads, int64_t head_dim, float scale, bool v_transposed,
                           AttentionTiling tiling = AttentionTiling::Default);

}  // namespace moss
