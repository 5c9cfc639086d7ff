// NVIDIA Hopper (sm_90a) instructions of the GEMM's wgmma kernel (kernels/gemm_wgmma.h):
// wgmma.mma_async m64n256k16 (bf16 in, f32 accumulators; GemmKernel::Wgmma), and m64n256k32 /
// m64n128k32 (s8 in, s32 accumulators; the INT8 ConvRot GEMM), both operands from shared memory
// through matrix descriptors (gemm_layout::sw128 models and proves the layout). The bf16
// m64n128k16 it also issues, on one column half of those accumulators, is hopper_common.h's.
// The machinery it shares with the attention kernel (mbarriers, TMA and its tensor maps,
// setmaxnreg, wgmma ordering) lives in kernels/hopper_common.h, namespace hopper, and is visible
// here as gemm_hopper::... through the using-directive below. Nothing here exists on AMD.
#pragma once

#include <cstdint>

#include "kernels/hopper_common.h"

#if MOSS_PLATFORM_NVIDIA
namespace moss {
namespace gemm_hopper {

using namespace hopper;  // TensorMap, kmajor_tensor_map, mbarrier_*, tma_load_2d, wgmma_* ...

// d[64 x 256] += A[64 x 16] · B[256 x 16]ᵀ for one warpgroup, both operands K-major in shared
// memory (descriptors: gemm_layout::sw128::step_descriptor); d in the order of
// gemm_layout::sw128::accumulator. Scale-d is 1 (predicate p: accumulate; the caller zeroes d first); no
// negation, no transposes (imm-trans 0 = K-major).
__device__ inline void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      MOSS_WGMMA_D0_63 ", " MOSS_WGMMA_D64_127
      "}, %128, %129, p, 1, 1, 0, 0;\n\t}"
      : MOSS_WGMMA_ACC64(d, 0), MOSS_WGMMA_ACC64(d, 64)
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

// The int8 products (the INT8 ConvRot GEMM): one k32 step of s8 is 32 bytes of a row, exactly a
// bf16 k16 step's, so the descriptors are the same (gemm_layout::sw128::step_descriptor) and the
// s32 accumulators sit in the f32 ones' registers (gemm_layout::sw128::accumulator). The sums are
// exact (the caller keeps them in range). Integer wgmma has no negation or transpose immediates.
// d[64 x 256] += A[64 x 32] · B[256 x 32]ᵀ, s8 x s8 -> s32 (scale-d 1, as wgmma_m64n256k16).
__device__ inline void wgmma_m64n256k32_s8(int32_t (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
      MOSS_WGMMA_D0_63 ", " MOSS_WGMMA_D64_127
      "}, %128, %129, p;\n\t}"
      : MOSS_WGMMA_ACC64_AS("+r", d, 0), MOSS_WGMMA_ACC64_AS("+r", d, 64)
      : "l"(desc_a), "l"(desc_b), "r"(1));
}
// d[kFirst .. kFirst + 63] (+)= A[64 x 32] · B[128 x 32]ᵀ: one column half of the accumulators
// above (registers 64h.. hold columns 128h..: gemm_layout::sw128::accumulator_halves_pair).
template <int kFirst, int N>
__device__ inline void wgmma_m64n128k32_s8(int32_t (&d)[N], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  static_assert(kFirst >= 0 && kFirst + 64 <= N, "64 accumulators inside d");
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
      MOSS_WGMMA_D0_63
      "}, %64, %65, p;\n\t}"
      : MOSS_WGMMA_ACC64_AS("+r", d, kFirst)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

}  // namespace gemm_hopper
}  // namespace moss
#endif  // MOSS_PLATFORM_NVIDIA
