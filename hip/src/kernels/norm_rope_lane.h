// One lane's share of the per-head RMS norm + RoPE (CoreOps::norm_rope) where a group of
// head_dim / 8 lanes (a power of two dividing the wave) holds one head of one row: lane s owns the
// elements i = 4s .. 4s+3 (a) and their rotation partners i + head_dim/2 (b). Shared by rows.hip's
// register kernel and the attention kernel's fused Q staging (attention.hip, AttentionQRope), so
// that both give the same bits.
#pragma once

#include <cstdint>

#include "kernels/tile_copy.h"
#include "runtime/portability.h"

namespace moss {
namespace norm_rope_lane {

__device__ inline float bf16_bits_to_float(uint32_t bits) { return __builtin_bit_cast(float, bits << 16); }

// Four consecutive elements at element offset e of p (aligned for one 16-byte f32 or 8-byte
// bf16 access), as f32; zeros (and no access) when !full.
__device__ inline void load4_at(const void* p, bool bf16, int64_t e, bool full, float v[4]) {
  if (bf16) {
    uint64_t bits = 0;
    if (full) bits = *reinterpret_cast<const uint64_t*>(static_cast<const uint16_t*>(p) + e);
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = bf16_bits_to_float(uint32_t(bits >> (16 * j)) & 0xffffu);
  } else {
    const tile::Chunk16 c = tile::load_chunk_or_zero(static_cast<const float*>(p) + e, full);
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = __builtin_bit_cast(float, c.w[j]);
  }
}

// A lane's weights and table values: its 4 + 4 columns of the norm weight, and of this row's sin
// and cos (index 0: columns i.., 1: columns i + half..).
struct Coefficients {
  float w0[4], w1[4], s0[4], s1[4], c0[4], c1[4];
};

// The lane's normalised, rotated values ya (columns i..) and yb (i + half..) from its inputs a and
// b: the group's sum of squares (reduced over the `lanes` lanes of the group, every lane of the
// wave taking part), n = x·inv, n·w, then x·cos + rotate_half(x)·sin, as the host replays.
__device__ inline void apply(const float (&a)[4], const float (&b)[4], const Coefficients& coef, int lanes,
                             int head_dim, float eps, float (&ya)[4], float (&yb)[4]) {
  float ss = 0.0f;
#pragma unroll
  for (int e = 0; e < 4; ++e) ss += a[e] * a[e] + b[e] * b[e];
  for (int m = lanes / 2; m > 0; m /= 2) ss += shfl_xor(ss, m);  // within the group
  const float inv = 1.0f / sqrt_f(ss / float(head_dim) + eps);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    float an = a[e] * inv, bn = b[e] * inv;
    an *= coef.w0[e];
    bn *= coef.w1[e];
    ya[e] = an * coef.c0[e] + (-bn) * coef.s0[e];
    yb[e] = bn * coef.c1[e] + an * coef.s1[e];
  }
}

}  // namespace norm_rope_lane
}  // namespace moss
