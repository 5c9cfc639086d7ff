#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "pipeline/noise.h"
#include "util/error.h"

using namespace moss;

TEST(Noise, Mt19937MatchesTheStandardGenerator) {
  for (uint32_t seed : {0u, 1u, 42u, 5489u, 4294967295u}) {
    Mt19937 ours(seed);
    std::mt19937 ref(seed);
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(ours.next(), uint32_t(ref())) << "seed " << seed << " output " << i;
  }
  // The standard's check value: the 10000th output of the default seed.
  Mt19937 g(5489u);
  uint32_t v = 0;
  for (int i = 0; i < 10000; ++i) v = g.next();
  EXPECT_EQ(v, 4123659995u);
}

TEST(Noise, SeedKeepsOnlyItsLow32Bits) {
  const uint64_t low = 123456789012ull & 0xffffffffull;
  EXPECT_EQ(initial_noise(123456789012ull, 128, 2, 3), initial_noise(low, 128, 2, 3));
  EXPECT_EQ(initial_noise(7ull + (1ull << 32), 16, 1, 1), initial_noise(7, 16, 1, 1));
  EXPECT_NE(initial_noise(7, 16, 1, 1), initial_noise(8, 16, 1, 1));
}

TEST(Noise, BoxMullerInBlocksOfSixteen) {
  // Every uniform is drawn first (one 32-bit output each, low 24 bits); then within each block
  // of 16, value j and j+8 come from uniforms j (radius) and j+8 (angle).
  const std::vector<float> z = initial_noise(42, 2, 4, 4);  // 32 values: two blocks
  std::mt19937 ref(42);
  std::vector<float> u(32);
  for (float& x : u) x = float(ref() & 0xffffffu) / 16777216.0f;
  for (int b = 0; b < 32; b += 16)
    for (int j = 0; j < 8; ++j) {
      const double radius = std::sqrt(-2.0 * std::log(1.0 - double(u[size_t(b + j)])));
      const double theta = 2.0 * M_PI * double(u[size_t(b + j + 8)]);
      EXPECT_NEAR(z[size_t(b + j)], radius * std::cos(theta), 2e-6) << b + j;
      EXPECT_NEAR(z[size_t(b + j + 8)], radius * std::sin(theta), 2e-6) << b + j + 8;
    }
  // Blocks never mix across the shape: a longer draw begins with the shorter one.
  const std::vector<float> longer = initial_noise(42, 128, 2, 2);
  EXPECT_TRUE(std::equal(z.begin(), z.end(), longer.begin()));
}

TEST(Noise, RefusesCountsThatAreNotMultiplesOfSixteen) {
  EXPECT_THROW(initial_noise(1, 3, 1, 5), Error);
  EXPECT_THROW(initial_noise(1, 0, 4, 4), Error);
  EXPECT_NO_THROW(initial_noise(1, 128, 1, 1));
}

// The stream's first draw is the initial noise; the next draws continue the same generator
// (what the ancestral and SDE samplers add), each different, and a second stream of the same
// seed repeats them all.
TEST(Noise, StreamStartsWithTheInitialNoiseAndContinuesTheGenerator) {
  NoiseStream a(42), b(42);
  const std::vector<float> first = a.next(2, 4, 4);
  EXPECT_EQ(first, initial_noise(42, 2, 4, 4));
  const std::vector<float> second = a.next(2, 4, 4), third = a.next(2, 4, 4);
  EXPECT_NE(second, first);
  EXPECT_NE(third, second);
  EXPECT_EQ(b.next(2, 4, 4), first);
  EXPECT_EQ(b.next(2, 4, 4), second);
  // Continuing is drawing one long tensor: 32 + 32 elements are the first 64 of one draw.
  std::vector<float> joined = first;
  joined.insert(joined.end(), second.begin(), second.end());
  EXPECT_EQ(joined, initial_noise(42, 4, 4, 4));
}
