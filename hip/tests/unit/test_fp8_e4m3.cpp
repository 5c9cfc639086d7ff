// The OCP FP8 E4M3 conversion (kernels/fp8_e4m3.h) on the classes of fp32 inputs that decide it:
// every code's value and round trip, every midpoint between neighbouring codes and the fp32 values
// on either side of it, the saturation beyond 448, infinities, NaNs of every kind, fp32 subnormals and
// e4m3's own subnormals, and a sweep of 4 million fp32 bit patterns over all exponents against an
// independent reference (the nearest of the 127 finite magnitudes, found by search in double, ties to
// the even code). bench/tests/test_fp8_e4m3_torch.py compares the same function with
// torch.float8_e4m3fn through `moss-check fp8-e4m3`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/fp8_e4m3.h"

namespace {

using namespace moss;

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The value of a finite code from the format's definition (OCP OFP8 E4M3: bias 7, subnormals at
// exponent field 0), independently of to_f32_bits.
double defined_value(int code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double magnitude = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return code & 0x80 ? -magnitude : magnitude;
}
bool is_nan_code(int code) { return (code & 0x7f) == 0x7f; }

// The reference: NaN to its sign's NaN code, beyond 448 to +-448, otherwise the nearest finite
// magnitude (codes 0..0x7e ascend with the value), a tie to the even code.
uint8_t reference(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | 0x7f;
  const double a = std::fabs(double(x));
  if (a >= 448.0) return sign | 0x7e;
  int lo = 0, hi = 0x7e;  // the largest code whose value is <= a
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (defined_value(mid) <= a) lo = mid;
    else hi = mid - 1;
  }
  if (lo == 0x7e) return sign | 0x7e;
  const double below = a - defined_value(lo), above = defined_value(lo + 1) - a;
  const int code = below < above ? lo : above < below ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return uint8_t(sign | code);
}

TEST(Fp8E4m3, EveryCodeDecodesToItsDefinedValueAndRoundTrips) {
  int finite = 0;
  for (int code = 0; code < 256; ++code) {
    SCOPED_TRACE(code);
    const float v = e4m3::to_f32(uint8_t(code));
    if (is_nan_code(code)) {
      EXPECT_TRUE(std::isnan(v));
      EXPECT_EQ(std::signbit(v), code >= 0x80);
    } else {
      ++finite;
      EXPECT_EQ(double(v), defined_value(code));
      EXPECT_EQ(std::signbit(v), code >= 0x80);  // 0x80 is -0
    }
    EXPECT_EQ(e4m3::from_f32(v), code);
  }
  EXPECT_EQ(finite, 254);
  EXPECT_EQ(e4m3::to_f32(0x7e), 448.0f);
  EXPECT_EQ(e4m3::to_f32(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_EQ(e4m3::to_f32(0x08), std::ldexp(1.0f, -6));  // the smallest normal
  for (int code = 1; code <= 0x7e; ++code) EXPECT_LT(defined_value(code - 1), defined_value(code)) << code;
}

// Between neighbours c and c+1 (subnormals, the subnormal/normal seam, each binade, up to 448): the
// midpoint goes to the even code, the fp32 values just below and above it to the nearer one.
TEST(Fp8E4m3, MidpointsTieToEvenAndTheirNeighboursRoundToTheNearer) {
  int ties = 0;
  for (int c = 0; c < 0x7e; ++c)
    for (float sign : {1.0f, -1.0f}) {
      SCOPED_TRACE(c);
      const uint8_t s = sign < 0 ? 0x80 : 0x00;
      const float mid = sign * float((defined_value(c) + defined_value(c + 1)) / 2);
      ASSERT_EQ(double(mid), sign * (defined_value(c) + defined_value(c + 1)) / 2) << "midpoint exact in fp32";
      EXPECT_EQ(e4m3::from_f32(mid), s | (c % 2 == 0 ? c : c + 1));
      const float toward_zero = std::nextafter(mid, 0.0f), away = std::nextafter(mid, sign * 1e9f);
      EXPECT_EQ(e4m3::from_f32(toward_zero), s | c);
      EXPECT_EQ(e4m3::from_f32(away), s | (c + 1));
      ++ties;
    }
  EXPECT_EQ(ties, 2 * 126);
}

// Saturation: every finite fp32 beyond 448 (through the midpoint 464 to the would-be 480 and up to
// FLT_MAX) and the infinities give +-448, never a NaN.
TEST(Fp8E4m3, BeyondTheRangeSaturatesTo448) {
  const float big[] = {std::nextafter(448.0f, 1e9f), 463.99f, 464.0f, 464.01f, 479.9f, 480.0f, 512.0f, 1e6f,
                       std::numeric_limits<float>::max(), std::numeric_limits<float>::infinity()};
  for (float v : big) {
    SCOPED_TRACE(v);
    EXPECT_EQ(e4m3::from_f32(v), 0x7e);
    EXPECT_EQ(e4m3::from_f32(-v), 0xfe);
  }
  // Every fp32 from 448 up to infinity, by bit patterns (a stride of 4099 over 2^30 patterns).
  for (uint32_t b = bits_of(448.0f); b <= 0x7f800000u; b += 4099u) ASSERT_EQ(e4m3::from_f32_bits(b), 0x7e) << b;
  // Just below 448: 447.99 rounds to 448, 432 (the midpoint under it, odd code 0x7d) ties up to 448.
  EXPECT_EQ(e4m3::from_f32(447.99f), 0x7e);
  EXPECT_EQ(e4m3::from_f32(432.0f), 0x7e);
  EXPECT_EQ(e4m3::from_f32(std::nextafter(432.0f, 0.0f)), 0x7d);
}

TEST(Fp8E4m3, EveryNanGivesTheNanCodeOfItsSign) {
  // Quiet and signalling, every payload bit, both signs.
  std::vector<uint32_t> nans = {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0x7fa00000u};
  for (int bit = 0; bit < 23; ++bit) nans.push_back(0x7f800000u | (1u << bit));
  for (uint32_t n : nans) {
    SCOPED_TRACE(n);
    EXPECT_EQ(e4m3::from_f32_bits(n), 0x7f);
    EXPECT_EQ(e4m3::from_f32_bits(n | 0x80000000u), 0xff);
  }
  EXPECT_EQ(e4m3::from_f32(std::numeric_limits<float>::quiet_NaN()), 0x7f);
}

// fp32 subnormals and anything below 2^-10 (half the smallest e4m3 subnormal) are zero of their sign;
// 2^-10 itself is a tie to the even code 0; a hair above it is 2^-9.
TEST(Fp8E4m3, TinyValuesAndSubnormals) {
  for (uint32_t b : {0x00000000u, 0x00000001u, 0x00400000u, 0x007fffffu, 0x00800000u, bits_of(1e-20f),
                     bits_of(std::nextafter(std::ldexp(1.0f, -10), 0.0f)), bits_of(std::ldexp(1.0f, -10))}) {
    SCOPED_TRACE(b);
    EXPECT_EQ(e4m3::from_f32_bits(b), 0x00);
    EXPECT_EQ(e4m3::from_f32_bits(b | 0x80000000u), 0x80);
  }
  EXPECT_EQ(e4m3::from_f32(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x01);
  EXPECT_EQ(e4m3::from_f32(-std::nextafter(std::ldexp(1.0f, -10), 1.0f)), 0x81);
  // The subnormal codes 1..7 are k * 2^-9; 7.5 * 2^-9 ties to the even code 8, the smallest normal.
  for (int k = 1; k <= 7; ++k) EXPECT_EQ(e4m3::from_f32(std::ldexp(float(k), -9)), k);
  EXPECT_EQ(e4m3::from_f32(std::ldexp(7.5f, -9)), 0x08);
}

// 4 million fp32 bit patterns spread over every exponent and sign (a prime stride), plus every
// pattern of the binades e4m3 covers whose low 16 bits are 0 or 0xffff, against the reference.
TEST(Fp8E4m3, SweepAgreesWithTheNearestValueReference) {
  uint64_t checked = 0;
  for (uint64_t b = 0; b <= 0xffffffffull; b += 1021) {
    const uint32_t bits = uint32_t(b);
    ASSERT_EQ(e4m3::from_f32_bits(bits), reference(from_bits(bits))) << std::hex << bits;
    ++checked;
  }
  for (uint32_t hi = bits_of(std::ldexp(1.0f, -11)) >> 16; hi <= bits_of(512.0f) >> 16; ++hi)
    for (uint32_t lo : {0x0000u, 0xffffu})
      for (uint32_t sign : {0u, 0x80000000u}) {
        const uint32_t bits = sign | (hi << 16) | lo;
        ASSERT_EQ(e4m3::from_f32_bits(bits), reference(from_bits(bits))) << std::hex << bits;
        ++checked;
      }
  EXPECT_GT(checked, 4000000u);
}

}  // namespace
