// Flash attention: QKᵀ and PV as bf16 tile products with fp32 accumulation, an fp32 online softmax
// in base 2 (scale·log2(e) folded into the scores), no materialised score matrix. Three kernels:
//   wgmma (NVIDIA Hopper, the DiT's case: head dim 128, bidirectional, bf16 q/k/v read in place):
//     FlashAttention-3 style, TMA-fed 128-key tiles, 2 consumer warpgroups of 64 queries, P in
//     registers as the A operand of P·V (kernels/attention_hopper.h).
//   flash (NVIDIA, head dims up to 128, the DiT's): 128 queries x 4 warps per workgroup, 64-key
//     tiles double-buffered with cp.async, ldmatrix fragment reads from XOR-swizzled shared memory,
//     P kept in registers as the A operand of P·V (kernels/attention_flash_nvidia.h). K and V are
//     read as [key][d] rows: straight from bf16 activations, or from a bf16 pack of them.
//   reference (AMD always; NVIDIA above 128 or on request): the matrix-leaf kernel with K packed
//     as [kv_head][key][d] and V transposed as [kv_head][d][key] (kernels/attention_pack); on the
//     portable configuration up to head dim 128 each wave reads its K and Vᵀ fragments straight
//     from global memory (the direct tiling: no shared-memory K/V tile), K from the bf16
//     activation rows themselves when they are 16-byte aligned (only Vᵀ packed: a fragment wants 8
//     keys of one dim contiguous; not even that where the caller hands Vᵀ over, as the DiT's v
//     GEMM writes it, ops/hip/attention_op.h v_transposed), and at head dim 256 it reads bf16 K
//     and V rows in place (transposing V on its way into shared memory) when they are 16-byte
//     aligned.
// Q is read straight from the activation (f32 or bf16, any row stride).
#pragma once

#include <cstdint>

#include "runtime/portability.h"

namespace moss {

// The head dimensions the kernels are compiled for; a smaller head_dim runs in the next one up
// with zero padding (Q and K padded columns add nothing to the scores, V's give unwritten
// output columns). 0 when head_dim is not a multiple of 16 in [16, 384].
int attention_padded_head_dim(int head_dim);

// Packed K/V rows are padded to a multiple of this many keys (a multiple of every key tile).
constexpr int kAttentionKeyPadding = 64;

// Default: what the op uses: on NVIDIA Hopper the wgmma kernel where it applies (head dim 128,
// bidirectional, bf16 q/k/v with 16-byte aligned rows read in place, positive scale;
// kernels/attention_hopper.h; H200: 643-685 TFLOP/s at the DiT's shapes against 273-282 for
// flash), else the mma.sync flash kernel where it applies (64-key tiles, both row tiles of a warp
// sharing each K fragment), else the reference kernel. Flash: the flash kernel even where wgmma
// applies (what the Default falls back to; checked on its own). Wgmma: the wgmma kernel, named.
// Reference: the reference kernel even where flash applies. Portable: the reference kernel on the AMD build's tiling (what every request
// runs on AMD, and on NVIDIA under MOSSINFER_KERNELS=portable; kernels/kernel_path.h). The
// alternatives exist to be checked and timed against the default (hip kernel checks).
enum class AttentionTiling { Default, Flash, Wgmma, Reference, Portable };

// How the chosen kernel wants K and V: rows of d_pad bf16 (zero beyond head_dim), V transposed
// ([d][key]) or not ([key][d]). in_place: the kernel zero-fills keys past tk itself and can read
// the bf16 activations' [key][d] rows of K and V directly (AttentionParams::kv_in_place) when they
// are 16-byte aligned (row stride a multiple of 8, aligned base), so they need no pack; otherwise
// (f32 K/V, unaligned rows) they are packed as d_pad and v_transposed say. flash (NVIDIA) is
// always in place; the portable kernel (reference tiling on the AMD build's configuration) at head
// dim 256 (kernels/attention.hip, portable_in_place). k_in_place: the kernel reads K's aligned
// bf16 rows in place but wants V packed and transposed (AttentionParams::k_in_place): the
// portable direct tiling, head dims up to 128 with d_pad == head_dim.
struct AttentionKvLayout {
  int d_pad = 0;
  bool v_transposed = false;
  bool flash = false;
  bool in_place = false;
  bool k_in_place = false;
};
AttentionKvLayout attention_kv_layout(int head_dim, AttentionTiling tiling);

// CoreOps::norm_rope's per-head RMS norm (·w) and RoPE applied to q on its way into the kernel, q
// being the raw projection (CoreOps::norm_rope_attention): the rows kernel's lane arithmetic
// (kernels/norm_rope_lane.h), so the staged bf16 Q holds the bits that a norm_rope pass writing bf16
// would have stored. w: head_dim weights (bf16 or f32); sin, cos: f32 rows, row i for query i, ld
// in elements; all 16-byte aligned (rows too: ld % 4 == 0), q's rows aligned for 4-element loads.
// Only where attention_fuses_q_rope says.
struct AttentionQRope {
  const void* w = nullptr;  // null: q is used as it is
  bool w_bf16 = false;
  float eps = 0;
  const float* sin = nullptr;
  int64_t ld_sin = 0;
  const float* cos = nullptr;
  int64_t ld_cos = 0;
};

// Whether the kernel this tiling runs at head_dim can apply AttentionQRope: the portable direct
// tiling (head dims 32, 64 and 128, whose head_dim / 8 lanes are a power of two).
bool attention_fuses_q_rope(int head_dim, AttentionTiling tiling);

// The int8 QKᵀ variant's keys (CoreOps::quantize_keys' output, kernels/attention_int8_keys.h;
// docs/attention_int8_qk.md): key j of kv head h at q[(h·keys_pad + j)·head_dim + d], zeros past
// tk; block b (keys 32b..32b+31) of head h scaled by scale[h·keys_pad / 32 + b]. With q set the
// scores are exact int32 sums of these and of Q quantized per 16-query block (one wave's tile) from
// the fp32 norm_rope output times the softmax scale, times the two blocks' scales; K and ldk are
// not read. Only where attention_int8_qk says, with q_rope set.
struct AttentionInt8Keys {
  const int8_t* q = nullptr;  // null: the bf16 scores
  const float* scale = nullptr;
  int keys_pad = 0;  // a multiple of 32, >= tk
};

// Whether the kernel this tiling runs at head_dim has the int8 QKᵀ variant: the portable direct
// tiling with the fused q_rope (head dims 32, 64 and 128; every request on AMD, on NVIDIA only
// under MOSSINFER_KERNELS=portable or the Portable tiling).
bool attention_int8_qk(int head_dim, AttentionTiling tiling);

struct AttentionParams {
  const void* q = nullptr;  // [tq, heads·head_dim] rows of ldq elements
  bool q_bf16 = false;      // q is bf16 (else f32)
  int64_t ldq = 0;
  AttentionQRope q_rope;    // q's norm and RoPE, when q_rope.w is set
  // K (key j, dim d of kv head h) at k[h·k_head_stride + j·ldk + d]; V at v[h·v_head_stride +
  // j·ldv + d], or v[h·v_head_stride + d·ldv + j] when the layout says v_transposed. Reference
  // kernel: packed, zero up to tk_pad keys and d_pad dims. Flash: every row of the tk keys holds
  // d_pad readable elements, zero beyond head_dim; rows 16-byte aligned (ld % 8 == 0).
  const bf16* k = nullptr;
  int64_t ldk = 0, k_head_stride = 0;
  const bf16* v = nullptr;
  int64_t ldv = 0, v_head_stride = 0;
  int tk_pad = 0;            // reference kernel on a pack: multiple of kAttentionKeyPadding
  // K and V are the activations' [key][d] rows (tk of them, not padded; ld % 8 == 0, 16-byte
  // aligned), not a pack; only where attention_kv_layout says in_place.
  bool kv_in_place = false;
  // K alone is the activations' rows (as above), V the transposed pack (tk_pad keys); only where
  // attention_kv_layout says k_in_place.
  bool k_in_place = false;
  void* out = nullptr;       // [tq, heads·head_dim] rows of ld_out elements
  bool out_bf16 = false;     // out is bf16 (else f32)
  int64_t ld_out = 0;
  int tq = 0, tk = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 0;      // softmax scale applied to q·k
  bool causal = false;  // query i sees keys j <= i
  AttentionTiling tiling = AttentionTiling::Default;
  AttentionInt8Keys k8;  // int8 scores, when k8.q is set (last: the other fields keep their offsets)
};

// Launches the attention kernel on `stream`. Every output element [query < tq, column < heads·
// head_dim] is written exactly once; nothing else of `out` is touched.
void attention_forward(const AttentionParams& p, hipStream_t stream);

}  // namespace moss
