// The int8 QKᵀ attention's keys (CoreOps::quantize_keys, docs/attention_int8_qk.md): the
// normalised and rotated K of every head smoothed by its channel means over the keys and quantized
// per block of kInt8KeyBlock keys of one head, the operand the attention kernel's int8 scores read
// (kernels/attention.h AttentionInt8Keys). Bit for bit the host op's arithmetic.
#pragma once

#include <cstdint>

#include "runtime/portability.h"

namespace moss {

// Keys per quantization block: one scale per block of one head (CoreOps::kInt8KeyBlock, and the
// portable direct tiling's key tile, kernels/attention.hip).
constexpr int kAttentionInt8KeyBlock = 32;

// k: [tk, heads·head_dim] rows of ldk elements, f32 (k_bf16 false) or bf16, device memory.
// means: device scratch of heads·head_dim floats (written: each channel's mean over the tk keys,
// summed in key order, divided by tk). q: [heads·keys_pad, head_dim] int8, row h·keys_pad + j
// for key j of head h, zeros for j >= tk; scale: heads·keys_pad / kAttentionInt8KeyBlock floats,
// block b of head h at h·keys_pad / 32 + b (NaN, its q zeros, for a block holding a non-finite
// value; the floor 1e-30 for a block of zeros or of no key). keys_pad: a multiple of
// kAttentionInt8KeyBlock, >= tk. Two launches on `stream`.
void attention_quantize_keys(const void* k, int64_t ldk, bool k_bf16, int tk, int heads, int head_dim,
                             int keys_pad, float* means, int8_t* q, float* scale, hipStream_t stream);

}  // namespace moss
