// OCP FP8 E4M3 (the "fn" variant of torch.float8_e4m3fn): 1 sign, 4 exponent bits of bias 7, 3
// mantissa bits; no infinities; NaN is 0x7f and 0xff; the largest finite value 448 (0x7e), the
// smallest subnormal 2^-9 (0x01). The one definition of fp32 -> e4m3 for the host reference and the
// device kernels (kernels/fp8_e4m3_device.h issues the instructions that compute the same bits):
//   - round to nearest, ties to even, subnormals kept (never flushed);
//   - saturating: every finite value beyond 448 in magnitude, and +-infinity, gives +-448 (PTX's
//     .satfinite; gfx12's v_cvt_pk_fp8_f32 after a clamp to [-448, 448]): the attention's P.V
//     operands are scaled to at most 448, so saturation only ever absorbs a rounding's overshoot;
//   - a NaN gives the NaN code of its sign (0x7f, or 0xff when the sign bit is set).
// Written on integer bits only, so the host test walks the input classes exactly and every target
// (gfx11 included, which has no fp8 instruction) can run it. docs/matrix_layouts.md section 9 says
// where each rule comes from.
#pragma once

#include <cstdint>
#include <cstring>

#ifndef MOSS_HOST_DEVICE  // runtime/portability.h makes it __host__ __device__ in device builds
#define MOSS_HOST_DEVICE
#endif

namespace moss {
namespace e4m3 {

constexpr float kMax = 448.0f;           // the largest finite value
constexpr uint8_t kMaxCode = 0x7e;       // +448
constexpr uint8_t kNanCode = 0x7f;       // a positive NaN (0xff: a negative one)
constexpr uint32_t kMaxF32Bits = 0x43e00000u;  // 448.0f
constexpr uint32_t kMinNormalF32Bits = 0x3c800000u;  // 2^-6, e4m3's smallest normal

// The code of the fp32 value with these bits.
MOSS_HOST_DEVICE constexpr uint8_t from_f32_bits(uint32_t bits) {
  const uint8_t sign = uint8_t((bits >> 24) & 0x80u);
  const uint32_t mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) return uint8_t(sign | kNanCode);
  if (mag >= kMaxF32Bits) return uint8_t(sign | kMaxCode);  // saturate (infinity too)
  if (mag >= kMinNormalF32Bits) {
    // Normal: keep 3 of the 23 mantissa bits, to nearest even (a carry into the exponent is the
    // right next code); the exponent is rebiased from 127 to 7. At most 448 after rounding.
    const uint32_t rounded = (mag + 0x7ffffu + ((mag >> 20) & 1u)) & ~0xfffffu;
    return uint8_t(sign | ((((rounded >> 23) - 120u) << 3) | ((rounded >> 20) & 7u)));
  }
  // Subnormal: the code is round(|x| * 2^9) to nearest even, 0..8 (8 is the smallest normal, the
  // next code). |x| = significand * 2^(exponent - 150), so |x| * 2^9 = significand >> (141 - exponent).
  const uint32_t exponent = mag >> 23;
  if (exponent == 0) return sign;  // an fp32 subnormal is below 2^-126: zero
  const uint32_t significand = (mag & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 141u - exponent;  // >= 21 here (exponent <= 120)
  if (shift >= 25u) return sign;           // significand < 2^24: |x| * 2^9 < 1/2, zero
  uint32_t q = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u))) ++q;
  return uint8_t(sign | q);
}

// The fp32 bits of a code (exact: every e4m3 value is an fp32 value); a NaN code gives a quiet NaN
// of its sign.
MOSS_HOST_DEVICE constexpr uint32_t to_f32_bits(uint8_t code) {
  const uint32_t sign = uint32_t(code & 0x80u) << 24;
  const uint32_t exponent = (code >> 3) & 15u, mantissa = code & 7u;
  if ((code & 0x7fu) == kNanCode) return sign | 0x7fc00000u;
  if (exponent != 0) return sign | ((exponent + 120u) << 23) | (mantissa << 20);
  if (mantissa == 0) return sign;
  // Subnormal mantissa * 2^-9: normalise the 1-3 bit mantissa into an fp32 normal.
  uint32_t e = 127u - 9u, m = mantissa;  // value = m * 2^(e - 127)
  while (m < 8u) {
    m <<= 1;
    --e;
  }
  // m in [8, 16): value = (m / 8) * 2^(e + 3 - 127)
  return sign | ((e + 3u) << 23) | ((m & 7u) << 20);
}

// Host conveniences over the bits (device code: kernels/fp8_e4m3_device.h).
inline uint8_t from_f32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return from_f32_bits(bits);
}
inline float to_f32(uint8_t code) {
  const uint32_t bits = to_f32_bits(code);
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace e4m3
}  // namespace moss
