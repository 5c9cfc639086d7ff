// Flash attention on the matrix leaf: QKᵀ and PV as 16x16x16 bf16 tile products with fp32
// accumulation, an fp32 online softmax in base 2 (scale·log2(e) folded into the scores), no
// materialised score matrix. K and V come pre-packed in bf16 by kernels/attention_pack (K as
// [kv_head][key][d], V transposed as [kv_head][d][key], zero-padded), so the kernel's tile copies
// are plain 16-byte moves; Q is read straight from the activation (f32 or bf16, any row stride).
#pragma once

#include <cstdint>

#include "runtime/portability.h"

namespace moss {

// The head dimensions the kernel is compiled for; a smaller head_dim runs in the next one up
// with zero padding (Q and K padded columns add nothing to the scores, V's give unwritten
// output columns). 0 when head_dim is not a multiple of 16 in [16, 384].
int attention_padded_head_dim(int head_dim);

// Packed K/V rows are padded to a multiple of this many keys (a multiple of every key tile).
constexpr int kAttentionKeyPadding = 64;

// NVIDIA tilings of the 32..128 head dims (the DiT's): 4 warps each owning two 16-row query
// tiles (64 rows per block; fewer shared-memory reads per matrix op), or 8 warps owning one
// (128 rows per block; fewer registers). Default is what the op uses; the others exist to be
// timed against it (hip kernel checks). Other head dims and AMD ignore the choice.
enum class AttentionTiling { Default, Warps4x2Tiles, Warps8x1Tile };

struct AttentionParams {
  const void* q = nullptr;  // [tq, heads·head_dim] rows of ldq elements
  bool q_bf16 = false;      // q is bf16 (else f32)
  int64_t ldq = 0;
  const bf16* kp = nullptr;  // [kv_heads][tk_pad][padded head dim], zero beyond tk / head_dim
  const bf16* vt = nullptr;  // [kv_heads][padded head dim][tk_pad], zero beyond tk / head_dim
  int tk_pad = 0;            // multiple of kAttentionKeyPadding
  void* out = nullptr;       // [tq, heads·head_dim] rows of ld_out elements
  bool out_bf16 = false;     // out is bf16 (else f32)
  int64_t ld_out = 0;
  int tq = 0, tk = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 0;      // softmax scale applied to q·k
  bool causal = false;  // query i sees keys j <= i
  AttentionTiling tiling = AttentionTiling::Default;
};

// Launches the attention kernel on `stream`. Every output element [query < tq, column < heads·
// head_dim] is written exactly once; nothing else of `out` is touched.
void attention_forward(const AttentionParams& p, hipStream_t stream);

}  // namespace moss
