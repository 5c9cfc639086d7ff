// The gated delta rule of Qwen3.5's Gated DeltaNet layers on the GPU (docs/text_encoder.md
// 3.4 step 7 and 3.5), per value head with an fp32 state S [dk, dv]:
//   S ← exp(g_t)·S;  u = beta_t·(v_t − Sᵀk_t);  S ← S + k_t uᵀ;  out_t = Sᵀ(scale·q_t)
// in the chunked form of the host replay (ops/host/text_ops_host.cpp;
// kernels/deltanet_chunked.hip), blocks of 64 tokens: a parallel pass over all (block, head)
// pairs builds each block's intra-block terms on the matrix leaf, then a scan over the blocks
// carries the state, one workgroup per (head, 16 value columns). (The token-by-token form is
// the unit tests' host cross-check, tests/unit/test_deltanet.cpp; the product never runs it.)
// Head dims supported: dk = dv = 128 (Qwen3.5-9B) and dk = dv = 32 (the tiny test model).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/portability.h"

namespace moss {

constexpr int kDeltaRuleChunk = 64;  // tokens per block of the chunked form (the reference's C)

// One call's operands: device pointers, row strides in elements (column stride 1).
struct DeltaRuleArgs {
  const float* q = nullptr;     // [T, key_heads·dk], l2-normalised
  const float* k = nullptr;     // [T, key_heads·dk], l2-normalised
  const float* v = nullptr;     // [T, value_heads·dv]
  const float* g = nullptr;     // [T, value_heads], log-decay (≤ 0)
  const float* beta = nullptr;  // [T, value_heads]
  float* out = nullptr;         // [T, value_heads·dv]
  float* state = nullptr;       // null (S₀ = 0, final state dropped) or [value_heads, dk, dv] contiguous
  int64_t ldq = 0, ldk = 0, ldv = 0, ldg = 0, ldbeta = 0, ldo = 0;
  int T = 0, key_heads = 0, value_heads = 0, dk = 0, dv = 0;  // value head h reads key head h / (value_heads / key_heads)
  float scale = 1.0f;           // multiplies q (dk^-1/2)
};

// How the chunk products use the bf16 leaf: one bf16 product, or the split hi+lo form of
// kernels/split_leaf.h (three leaf instructions, ~16 mantissa bits; the default of the op).
enum class DeltaPrecision { Bf16, SplitBf16 };

bool delta_rule_dims_supported(int dk, int dv);

// Device scratch the chunked form needs (per-block intermediates of every head).
size_t delta_rule_chunked_scratch_bytes(int T, int value_heads, int dk, int dv);

// The chunked form; `scratch` holds delta_rule_chunked_scratch_bytes(...) bytes of device memory
// (256-byte aligned). Two launches on `stream`.
void delta_rule_chunked(const DeltaRuleArgs& args, DeltaPrecision precision, void* scratch, hipStream_t stream);

}  // namespace moss
