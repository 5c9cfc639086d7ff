// Packs attention K and V into the bf16 layouts the attention kernels copy tiles from
// (kernels/attention.h, AttentionKvLayout): K as [kv_head][tk_pad][d_pad], V the same or
// transposed as [kv_head][d_pad][tk_pad] (the reference kernel, whose PV operand tile wants keys
// contiguous), both zero beyond tk keys and head_dim columns, so every tile copy is a whole
// 16-byte move. K is left out (kp null) where the kernel reads K's rows in place and only Vᵀ
// needs the turn (the portable direct tiling, kernels/attention.h AttentionKvLayout::k_in_place);
// the DiT's main blocks skip the pack altogether there (their v GEMM writes Vᵀ,
// CoreOps::linear_transposed).
#pragma once

#include <cstdint>

#include "runtime/portability.h"

namespace moss {

// k, v: [tk, kv_heads·head_dim] rows of ldk / ldv elements, f32 (src_bf16 false) or bf16, device
// memory; kp, vt: device buffers of kv_heads·tk_pad·d_pad bf16 each (kp null: V only). d_pad and tk_pad are
// multiples of 32 with d_pad >= head_dim and tk_pad >= tk. v_transposed: vt is [kv_head][d_pad]
// [tk_pad] (else [kv_head][tk_pad][d_pad] like kp). Launches on `stream`.
void attention_pack_kv(const void* k, int64_t ldk, const void* v, int64_t ldv, bool src_bf16, int tk, int kv_heads,
                       int head_dim, int d_pad, int tk_pad, bool v_transposed, bf16* kp, bf16* vt,
                       hipStream_t stream);

}  // namespace moss
