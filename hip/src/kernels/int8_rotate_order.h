// The activation pass's rotation order (kernels/int8_rotate.hip), as plain constexpr/inline code
// that compiles on the host with no HIP, so a unit test (tests/unit/test_int8_kernel_order.cpp)
// replays the kernel's schedule -- which lane takes which quadruple at which stage, and the
// butterfly's operations -- and proves it gives convrot::rotate_groups' bits.
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

}  // namespace convrot_order
}  // namespace moss
