// The INT8 ConvRot activation pass on a row held in registers (docs/int8_convrot.md sections 2-3
// and 9), shared by the stand-alone pass (int8_rotate.hip) and the producers that quantize their
// own fp32 rows (rows.hip: the norms' register kernel, the gated unit). The row is cut into
// segments of 512 values, one wave each, 16 consecutive values a lane; the radix-4 stages of the
// two lowest digits (strides 1 and 4) are within a lane's registers, and each further stage
// (stride 16, 64) first exchanges the digit it needs with the lane bits that hold it (two
// one-bit swaps, one lane shuffle per value) so that its quadruples are in registers too. No
// barrier between stages. Every output is convrot_order::butterfly's operations on the same four
// values, so the bits are convrot::rotate_groups' whichever lane computes them. The rotated
// values stay in registers (or, for a caller short of registers, go to LDS at their row
// positions); one barrier joins the waves' absmax, and the row is quantized
// (convrot::quantize_row's scale, an IEEE division, half to even) into 4-byte stores of 4
// consecutive values. Groups 4 to 256 (a wave's 512 values hold whole groups),
// widths a multiple of 16; other rows take int8_row_lds.h. Device code: include after
// runtime/portability.h.
#pragma once

#include <cstdint>

#include "kernels/int8_rotate_order.h"
#include "kernels/int8_row_lds.h"

namespace moss {
namespace int8_regs {

using convrot_order::kLaneValues;     // consecutive row values a lane holds
using convrot_order::segment_offset;  // where register r of a lane is after rotate_segment
constexpr int kSegment = kLaneValues * kWaveSize;  // values a wave rotates at once
static_assert(kWaveSize == convrot_order::kSegmentLanes, "the schedule of int8_rotate_order.h is for 32 lanes");

// Four consecutive floats of LDS, moved as one 16-byte access (the row in LDS is 16-byte aligned
// and every offset a multiple of 4).
struct alignas(16) Quad {
  float f[4];
};

// Whether rows of width k and group G take this path.
MOSS_HOST_DEVICE constexpr bool fits(int64_t k, int64_t group) { return convrot_order::register_pass_fits(k, group); }

// Trades bit kRegBit of the register index with bit lane_bit of the lane index: the value lane L
// held in register r moves to the lane and register whose indexes have those two bits exchanged.
// One shuffle per pair of registers.
template <int kRegBit>
__device__ inline void swap_bit(float (&v)[kLaneValues], int lane_bit) {
  const bool high = (lane_id() >> lane_bit) & 1u;
#pragma unroll
  for (int r0 = 0; r0 < kLaneValues; ++r0) {
    if (r0 & (1 << kRegBit)) continue;
    const int r1 = r0 | (1 << kRegBit);
    // The low lane keeps its r0 and receives the partner's r0 as r1; the high lane the reverse.
    const float recv = shfl_xor(high ? v[r0] : v[r1], 1 << lane_bit);
    v[r0] = high ? recv : v[r0];
    v[r1] = high ? v[r1] : recv;
  }
}

// The wave's segment, 16 consecutive values a lane (lane l: offsets 16l .. 16l + 15), rotated in
// place by convrot::rotate_groups' stages over groups of G (4 <= G <= 256) in the schedule of
// int8_rotate_order.h; afterwards register r of each lane is offset segment_offset(lane, r, G).
// Every lane of the wave calls it.
__device__ inline void rotate_segment(float (&v)[kLaneValues], int group) {
  const auto mul = [](float a, float b) { return mul_rn(a, b); };
#pragma unroll
  for (int m = 0; m < 4; ++m) convrot_order::butterfly(v, 4 * m, 1, mul);  // stride 1: j
  if (group < 16) return;
#pragma unroll
  for (int j = 0; j < 4; ++j) convrot_order::butterfly(v, j, 4, mul);  // stride 4: m
  for (int stride = 16, slot = 0; stride < group; stride *= 4, ++slot) {  // 16, 64: from the lanes
    swap_bit<2>(v, 2 * slot);
    swap_bit<3>(v, 2 * slot + 1);
#pragma unroll
    for (int j = 0; j < 4; ++j) convrot_order::butterfly(v, j, 4, mul);
  }
}

// Four consecutive values quantized by scale s into one little-endian word; zeros where s is NaN
// (a row with a non-finite value).
__device__ inline uint32_t quantize_word(const float (&v)[4], float s) {
  uint32_t word = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) word |= uint32_t(uint8_t(int8_row::quantize_value(v[j], s))) << (8 * j);
  return finite_f(s) ? word : 0u;
}

// Segment seg's 16 values of this lane from load (zeros past the row: whole groups), rotated;
// amax and bad updated with them.
template <class Load>
__device__ inline void load_rotate(const Load& load, int seg, int k, int group, float (&v)[kLaneValues], float& amax,
                                   float& bad) {
  const int col = seg + kLaneValues * int(lane_id());
  if (col < k) {
    load(col, v);
  } else {
#pragma unroll
    for (int r = 0; r < kLaneValues; ++r) v[r] = 0.0f;
  }
  if (seg < k) rotate_segment(v, group);  // uniform in the wave
#pragma unroll
  for (int r = 0; r < kLaneValues; ++r) {
    bad = finite_f(v[r]) ? bad : 1.0f;
    amax = max_f(amax, abs_f(v[r]));
  }
}

// One row, a workgroup of kThreads (whole waves) per row, the row in registers: wave w rotates
// segments w, w + waves, ... (at most kSegs each: k <= kSegs·kThreads·16) with load(col, v)
// giving the row's values col .. col + 15 (col a multiple of 16 below k), keeps them, and after
// the row's scale (row_scale) quantizes its own values into q_row (4-byte aligned; 4 consecutive
// values a 4-byte store) and *scale_row as int8_row::rotate_quantize writes them. fits(k, G)
// must hold. Every thread of the workgroup calls it (it holds a barrier).
template <int kThreads, int kSegs, class Load>
__device__ inline void rotate_quantize_row(const Load& load, int k, int group, float* partial, int8_t* q_row,
                                           float* scale_row) {
  constexpr int kWaves = kThreads / kWaveSize;
  const int lane = int(lane_id()), wave = int(thread_x()) / kWaveSize;
  float v[kSegs][kLaneValues];
  float amax = 0.0f, bad = 0.0f;
#pragma unroll
  for (int sg = 0; sg < kSegs; ++sg) load_rotate(load, (wave + sg * kWaves) * kSegment, k, group, v[sg], amax, bad);
  const float s = int8_row::row_scale<kWaves>(amax, bad, partial);
#pragma unroll
  for (int sg = 0; sg < kSegs; ++sg) {
    const int seg = (wave + sg * kWaves) * kSegment;
#pragma unroll
    for (int r = 0; r < kLaneValues; r += 4) {  // registers r .. r+3: 4 consecutive offsets
      const int i = seg + segment_offset(lane, r, group);
      const float quad[4] = {v[sg][r], v[sg][r + 1], v[sg][r + 2], v[sg][r + 3]};
      if (i < k) *reinterpret_cast<uint32_t*>(q_row + i) = quantize_word(quad, s);
    }
  }
  if (thread_x() == 0) *scale_row = s;
}

// The same with the rotated row in LDS instead (lds: k floats, 16-byte aligned), for a caller
// whose registers cannot also hold the row (the norms' register kernel): each segment's values go
// to lds at their row positions once rotated, and the row is quantized from there, 4 values a
// thread (one 16-byte LDS read, one 4-byte store, coalesced). lds may hold the row that load
// reads: a segment's positions are read and written by its one wave, and for G >= 64 every
// lane's reads are done before the swaps' shuffles (for G <= 16 a lane writes what it read).
template <int kThreads, class Load>
__device__ inline void rotate_quantize_row_lds(const Load& load, int k, int group, float* lds, float* partial,
                                               int8_t* q_row, float* scale_row) {
  constexpr int kWaves = kThreads / kWaveSize;
  const int tid = int(thread_x()), lane = int(lane_id());
  float amax = 0.0f, bad = 0.0f;
  for (int seg = (tid / kWaveSize) * kSegment; seg < k; seg += kWaves * kSegment) {  // uniform in the wave
    float v[kLaneValues];
    load_rotate(load, seg, k, group, v, amax, bad);
#pragma unroll
    for (int r = 0; r < kLaneValues; r += 4) {
      const int i = seg + segment_offset(lane, r, group);
      if (i < k) *reinterpret_cast<Quad*>(lds + i) = Quad{{v[r], v[r + 1], v[r + 2], v[r + 3]}};
    }
  }
  const float s = int8_row::row_scale<kWaves>(amax, bad, partial);  // its barrier also orders the LDS row
  for (int c = tid; c < k / 4; c += kThreads) {
    const Quad quad = *reinterpret_cast<const Quad*>(lds + 4 * c);
    reinterpret_cast<uint32_t*>(q_row)[c] = quantize_word(quad.f, s);
  }
  if (tid == 0) *scale_row = s;
}

}  // namespace int8_regs
}  // namespace moss
