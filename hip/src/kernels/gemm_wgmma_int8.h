// The INT8 ConvRot GEMM on the Wgmma kernel (NVIDIA Hopper, sm_90a): the element traits that run
// kernels/gemm_wgmma.h's pipeline on s8 operands (int8_gemm_wgmma in kernels/int8_linear.h).
// Part of kernels/gemm.hip (its only includer: the kernel is instantiated in that one translation
// unit, inside its anonymous namespace).
//
// Why it carries over unchanged: a k32 step of int8 is 32 bytes of a row, exactly a bf16 k16
// step's, so the 128-byte k-steps (128 int8 instead of 64 bf16), the copy engine's boxes, the
// 128-byte swizzle, the stages and the matrix descriptors are the bf16 kernel's, proven by the same
// gemm_layout::sw128 models with K counted in bytes; and the s32 accumulator fragment of
// m64nNk32 has the f32 fragment's register layout (gemm_layout::sw128::accumulator). Per stage the
// tensor cores do twice the bf16 kernel's multiply-adds on the same bytes, at twice its rate.
// The sums are exact int32 (CoreOps::linear_int8 bounds K), so the order of the k-steps does not
// matter and the epilogue, int8_output_value, gives the host op's bits.
#pragma once

#include <cstdint>

#include "kernels/gemm_wgmma.h"
#include "kernels/int8_linear.h"

namespace moss {
namespace {

#if MOSS_PLATFORM_NVIDIA
// The kernel's arguments: the GEMM's (x and w are q_x and q_w, m, n, k, y, bias and the store
// flags; never gated) and the two scale vectors.
struct Int8WgmmaArgs : KernelArgs<int8_t, int8_t> {
  const float* sx;  // [m]: q_x's row scales
  const float* sw;  // [n]: q_w's row scales
};

struct WgmmaInt8 {
  using Acc = int32_t;
  using Args = Int8WgmmaArgs;
  static constexpr int kStepK = gemm_layout::sw128::kRowBytes;  // 128 int8 per k-step
  static constexpr bool kGates = false;
  __device__ __forceinline__ static void whole(int32_t (&acc)[128], uint64_t a, uint64_t b) {
    gemm_hopper::wgmma_m64n256k32_s8(acc, a, b);
  }
  template <int kFirst>
  __device__ __forceinline__ static void half(int32_t (&acc)[128], uint64_t a, uint64_t b, int accumulate) {
    gemm_hopper::wgmma_m64n128k32_s8<kFirst>(acc, a, b, accumulate);
  }
  // Register 4j + 2h + e of thread t is row accumulator(t, 2h).row of the consumer's 64 (two rows
  // per thread: their x scales are read once), column 8j + 2(t % 4) + e of the tile. Scales and
  // bias past m or n are never read (those outputs are not stored).
  template <bool kGated, class Put>
  __device__ __forceinline__ static void epilogue(const Args& a, const int32_t (&acc)[128], int t, int row0, int n0,
                                                  int lo, int hi, Put put) {
    static_assert(!kGated, "the int8 GEMM has no gated unit");
    namespace sw = gemm_layout::sw128;
    float sx[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + sw::accumulator(t, 2 * h).row;
      sx[h] = row < a.m ? a.sx[row] : 0.0f;
    }
    const bool has_bias = a.bias != nullptr;
#pragma unroll
    for (int j = 0; j < WgmmaTiles::BN / 8; ++j) {
      if (8 * j < lo || 8 * j >= hi) continue;  // accumulator columns 8j .. 8j + 7
      const int col = sw::accumulator(t, 4 * j).col;
      float s[2] = {0.0f, 0.0f}, b[2] = {0.0f, 0.0f};
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (n0 + col + e >= a.n) continue;
        s[e] = a.sw[n0 + col + e];
        b[e] = bias_at(a, n0 + col + e);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = 4 * j + 2 * h;
        put(sw::accumulator(t, i).row, col, int8_output_value(acc[i], sx[h], s[0], has_bias, b[0]),
            int8_output_value(acc[i + 1], sx[h], s[1], has_bias, b[1]));
      }
    }
  }
};
#endif  // MOSS_PLATFORM_NVIDIA

}  // namespace
}  // namespace moss
