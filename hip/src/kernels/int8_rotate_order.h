// The activation pass's rotation order (kernels/int8_rotate.hip, kernels/int8_row_lds.h and
// kernels/int8_row_regs.h), as plain constexpr/inline code that compiles on the host with no HIP,
// so a unit test (tests/unit/test_int8_kernel_order.cpp) replays the kernels' schedules -- which
// lane takes which quadruple at which stage, where the register pass's values move, and the
// butterfly's operations -- and proves they give convrot::rotate_groups' bits.
#pragma once

// Device code includes runtime/portability.h first, which defines MOSS_HOST_DEVICE as
// __host__ __device__; the host unit test includes this header alone.
#ifndef MOSS_HOST_DEVICE
#define MOSS_HOST_DEVICE
#endif

namespace moss {
namespace convrot_order {

// Quadruple t (0 <= t < G/4) of the stage of stride s (1, 4, 16, ...): the index of its first
// value, the one whose base-4 digit at this stage is 0; its others are base + s, + 2s, + 3s.
// Over t the quadruples are disjoint and cover the group.
MOSS_HOST_DEVICE constexpr int quad_base(int t, int s) { return (t / s) * 4 * s + t % s; }

// One radix-4 butterfly in place, in convrot::rotate_groups' operation order: each output
// 0.5 * (the H4 row's signed sum, added left to right). mul(a, b) is the multiplication (on the
// device mul_rn: never contracted with an add of a later stage).
template <class Mul>
MOSS_HOST_DEVICE inline void butterfly(float* v, int base, int s, Mul mul) {
  const float a = v[base], b = v[base + s], c = v[base + 2 * s], d = v[base + 3 * s];
  v[base] = mul(0.5f, ((a + b) + c) - d);
  v[base + s] = mul(0.5f, ((a + b) - c) + d);
  v[base + 2 * s] = mul(0.5f, ((a - b) + c) + d);
  v[base + 3 * s] = mul(0.5f, ((-a + b) + c) + d);
}

// The register pass (kernels/int8_row_regs.h): a wave of 32 lanes holds a segment of 512 values,
// 16 a lane, lane l starting with offsets 16l + r in its registers r (r = j + 4m: j the lowest
// base-4 digit of the offset, m the second). The stages of strides 1 and 4 take the registers'
// quadruples (4m .. 4m+3, then j, j+4, j+8, j+12); before the stage of stride 4^d (d >= 2) the
// two bits of m are exchanged with lane bits 2(d-2) and 2(d-2)+1 (register bit 2 with the lower
// lane bit, bit 3 with the higher), after which m holds digit d. Groups 4 to 256 (whole groups in
// a segment), widths a multiple of 16.
constexpr int kLaneValues = 16;
constexpr int kSegmentLanes = 32;
constexpr int kRegisterPassMaxGroup = 256;

MOSS_HOST_DEVICE constexpr bool register_pass_fits(long long k, long long group) {
  return group >= 4 && group <= kRegisterPassMaxGroup && k % kLaneValues == 0;
}

// Register r of lane `lane` after the register pass's stages over groups of G: its offset in the
// segment. At the end the lane's low bits hold digits 1 .. n-2 (G = 4^n) and m digit n-1; for
// G <= 16 nothing moves. A group's values lie in G/16 consecutive lanes (G >= 16), and registers
// 4i .. 4i+3 are 4 consecutive offsets (one 4-byte store of the quantized values).
MOSS_HOST_DEVICE constexpr int segment_offset(int lane, int r, int group) {
  const int span = group < 16 ? 16 : group;  // values one lane-group holds (G <= 16: one lane's 16)
  const int lanes = span / 16;               // lanes per group
  return (r & 3) + 4 * (lane & (lanes - 1)) + (span / 4) * (r >> 2) + span * (lane / lanes);
}

}  // namespace convrot_order
}  // namespace moss
