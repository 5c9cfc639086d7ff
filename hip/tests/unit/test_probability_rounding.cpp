// Host checks of kernels/probability_rounding.h, the one-add bf16 rounding of the AMD attention's
// probabilities (attention_device.h probability_bf16; no GPU runs here): against the host's round to
// nearest even (tensor.h f32_to_bf16), for every low-half bit pattern of probabilities in every
// binade the softmax produces (2^-126 .. 2^8) and for 0: the same bits except on an exact tie below
// an even bf16, which rounds up; never more than half an ulp away; infinity stays infinite and
// v_exp_f32's NaN a NaN. The test is sharp: truncation (no add) and an add of 0x7fff fail it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/probability_rounding.h"
#include "tensor/tensor.h"

namespace {

using moss::probability_rounding::bf16_bits_half_up;

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The number of values of the sweep where `round` disagrees with the rule (nearest even, ties up).
template <class Round>
int64_t violations(Round round) {
  int64_t bad = 0;
  for (uint32_t exponent = 1; exponent <= 127 + 8; ++exponent) {  // 2^-126 .. 2^8, the probabilities
    for (uint32_t high = 0; high < 128; high += 37) {                // a few upper mantissas (bits 16-22)
      for (uint32_t low = 0; low < 0x10000u; ++low) {               // every low half
        const uint32_t u = (exponent << 23) | (high << 16) | low;
        const uint16_t even = moss::f32_to_bf16(from_bits(u));
        const bool tie_below_even = low == 0x8000u && (u >> 16 & 1u) == 0;
        const uint16_t want = tie_below_even ? uint16_t(even + 1) : even;
        const uint16_t got = round(u);
        const double err = std::fabs(double(moss::bf16_to_f32(got)) - double(from_bits(u)));
        const double half_ulp = std::ldexp(1.0, int(exponent) - 127 - 8);
        if (got != want || err > half_ulp) ++bad;
      }
    }
  }
  return bad;
}

TEST(ProbabilityRounding, IsNearestEvenExceptTiesGoUp) {
  EXPECT_EQ(violations([](uint32_t u) { return bf16_bits_half_up(u); }), 0);
  EXPECT_EQ(bf16_bits_half_up(0u), 0u);  // a masked key's probability
  EXPECT_EQ(bf16_bits_half_up(0x3f800000u), 0x3f80u);  // the row's maximum: exactly 1
}

TEST(ProbabilityRounding, SpecialValues) {
  EXPECT_EQ(bf16_bits_half_up(0x7f800000u), 0x7f80u);  // infinity
  const uint16_t nan = bf16_bits_half_up(0x7fc00000u);  // v_exp_f32's NaN
  EXPECT_TRUE(std::isnan(moss::bf16_to_f32(nan)));
}

TEST(ProbabilityRounding, TheCheckIsSharp) {
  EXPECT_GT(violations([](uint32_t u) { return uint16_t(u >> 16); }), 0);                // truncation
  EXPECT_GT(violations([](uint32_t u) { return uint16_t((u + 0x7fffu) >> 16); }), 0);    // ties down
}

}  // namespace
