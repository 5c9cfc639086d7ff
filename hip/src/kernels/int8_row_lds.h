// The INT8 ConvRot activation pass's core on a row already in LDS (docs/int8_convrot.md sections
// 2-3 and 9), stage by stage: the path of the rows the register pass (kernels/int8_row_regs.h)
// does not take (group 1024, widths not a multiple of 16), in the stand-alone pass
// (int8_rotate.hip) and the producers that quantize their own fp32 rows (rows.hip): every group
// of the row rotated in place by convrot::rotate_groups' radix-4 stages (one barrier per stage for
// the whole row; whichever thread takes a quadruple, its four outputs are the same operations, so
// the same bits), then convrot::quantize_row's scale and values. Device code: include after
// runtime/portability.h.
#pragma once

#include <cstdint>

#include "kernels/int8_rotate_order.h"

namespace moss {
namespace int8_row {

constexpr float kInv127 = 1.0f / 127.0f;  // convrot::quantize_row's fl(1/127)
constexpr float kScaleFloor = 1e-30f;     // convrot::kScaleFloor

// convrot::quantize_row's scale from a set's absmax and whether it holds a non-finite value:
// NaN for such a set, else max(fl(amax·fl(1/127)), kScaleFloor). Shared by the rows' passes and
// the attention's int8 Q and K blocks (kernels/attention.hip, kernels/attention_int8_keys.hip).
__device__ inline float set_scale(float amax, bool bad) {
  return bad ? nan_f() : max_f(mul_rn(amax, kInv127), kScaleFloor);
}

// One value's int8 at scale s (finite): rint(v / s) -- an IEEE division, half to even, as the
// host's -- clamped to [-128, 127].
__device__ inline int8_t quantize_value(float v, float s) {
  return int8_t(min_f(127.0f, max_f(-128.0f, rint_f(v / s))));
}

// The row's scale over the workgroup's waves, from each lane's absmax and non-finite flag:
// convrot::quantize_row's s, NaN for a row with a non-finite value (partial: 2·kWaves floats of
// LDS; one barrier). Every thread of the workgroup calls it (both passes: int8_row_regs.h too).
template <int kWaves>
__device__ inline float row_scale(float amax, float bad, float* partial) {
  const int wave = int(thread_x()) / kWaveSize;
  amax = wave_max(amax);
  bad = wave_max(bad);
  if (lane_id() == 0) {
    partial[wave] = amax;
    partial[kWaves + wave] = bad;
  }
  sync_workgroup();
  amax = 0.0f;
  bad = 0.0f;
#pragma unroll
  for (int w = 0; w < kWaves; ++w) {
    amax = max_f(amax, partial[w]);
    bad = max_f(bad, partial[kWaves + w]);
  }
  return set_scale(amax, bad != 0.0f);
}

// v: the row's k fp32 values in LDS (k a multiple of G), written by the workgroup and followed by
// a barrier; kThreads: the workgroup's threads (whole waves), tid this thread's index; partial:
// 2·kThreads/kWaveSize floats of LDS. Writes q_row[0, k) and *scale_row (NaN and zeros for a row
// with a non-finite value). Every thread of the workgroup calls it (it holds barriers).
template <int kThreads>
__device__ inline void rotate_quantize(float* v, int k, int G, int tid, float* partial, int8_t* q_row,
                                       float* scale_row) {
  constexpr int kWaves = kThreads / kWaveSize;
  const auto mul = [](float a, float b) { return mul_rn(a, b); };
  const int quads = G / 4;  // per group; quadruple t of the row is quadruple t % quads of group t / quads
  for (int s = 1; s < G; s *= 4) {
    for (int t = tid; t < k / 4; t += kThreads)
      convrot_order::butterfly(v + (t / quads) * G, convrot_order::quad_base(t % quads, s), s, mul);
    sync_workgroup();
  }
  float amax = 0.0f, bad = 0.0f;
  for (int i = tid; i < k; i += kThreads) {
    bad = finite_f(v[i]) ? bad : 1.0f;
    amax = max_f(amax, abs_f(v[i]));
  }
  const float s = row_scale<kWaves>(amax, bad, partial);
  if (s != s) {  // NaN: a row with a non-finite value
    for (int i = tid; i < k; i += kThreads) q_row[i] = 0;
    if (tid == 0) *scale_row = s;
    return;
  }
  for (int i = tid; i < k; i += kThreads) q_row[i] = quantize_value(v[i], s);
  if (tid == 0) *scale_row = s;
}

}  // namespace int8_row
}  // namespace moss
