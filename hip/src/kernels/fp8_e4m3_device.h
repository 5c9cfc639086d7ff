// fp32 -> OCP FP8 E4M3 on the device: the bits of kernels/fp8_e4m3.h's definition (round to nearest
// even, subnormals kept, saturating to +-448, a NaN to its sign's NaN code), computed by the
// conversion instruction where the target has one:
//   gfx12 (RDNA4)  v_cvt_pk_fp8_f32 (OCP e4m3 on gfx12, to nearest even) after v_med3_f32 clamps the
//                  input to [-448, 448]: the clamp makes the result independent of what the
//                  instruction does beyond the range;
//   NVIDIA sm_89+  cvt.rn.satfinite.e4m3x2.f32 (PTX: to nearest even, finite overflow and infinity
//                  to +-448);
//   elsewhere      (gfx11, the AMD host pass) the integer definition itself.
// A NaN input is given its code by a select on every path (neither instruction promises a NaN's
// sign). docs/matrix_layouts.md section 9 cites the instructions' definitions.
#pragma once

#include <cstdint>

#include "runtime/portability.h"  // first: it makes fp8_e4m3.h's functions __host__ __device__
#include "kernels/fp8_e4m3.h"

namespace moss {

__device__ inline uint32_t f32_bits_device(float x) {
#if MOSS_PLATFORM_NVIDIA
  return __float_as_uint(x);
#else
  return __builtin_bit_cast(uint32_t, x);
#endif
}

__device__ inline uint8_t e4m3_from_f32(float x) {
  const uint32_t bits = f32_bits_device(x);
#if MOSS_PLATFORM_NVIDIA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t pair;  // a's code in bits 15:8, b's in bits 7:0
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(pair) : "f"(x), "f"(x));
  const uint8_t code = uint8_t(pair & 0xffu);
  return (bits & 0x7fffffffu) > 0x7f800000u ? uint8_t(((bits >> 24) & 0x80u) | e4m3::kNanCode) : code;
#elif defined(__GFX12__)
  const float clamped = __builtin_amdgcn_fmed3f(x, e4m3::kMax, -e4m3::kMax);
  const uint8_t code = uint8_t(__builtin_amdgcn_cvt_pk_fp8_f32(clamped, clamped, 0, false) & 0xff);
  return (bits & 0x7fffffffu) > 0x7f800000u ? uint8_t(((bits >> 24) & 0x80u) | e4m3::kNanCode) : code;
#else
  return e4m3::from_f32_bits(bits);
#endif
}

}  // namespace moss
