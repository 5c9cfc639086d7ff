// The INT8 ConvRot activation kernel's rotation order (kernels/int8_rotate_order.h), replayed on the
// host: the kernel's schedule (32 lanes, lane l taking quadruples l, l + 32, ... of each stage, the
// stages of strides 1, 4, 16, ... in order) with its butterfly must give convrot::rotate_groups'
// bits for every group size the kernel takes, and the quadruples of a stage must cover the group
// exactly once (a lane writing a value another reads in the same stage would race).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/int8_rotate_order.h"
#include "tensor/int8_convrot.h"

namespace {

using namespace moss;
constexpr int kLanes = 32;

TEST(Int8KernelOrder, QuadruplesCoverEachStageOnce) {
  for (int g = 4; g <= 4096; g *= 4)
    for (int s = 1; s < g; s *= 4) {
      std::vector<int> hits(size_t(g), 0);
      for (int t = 0; t < g / 4; ++t) {
        const int base = convrot_order::quad_base(t, s);
        EXPECT_EQ((base / s) % 4, 0) << "g " << g << " s " << s << " t " << t;
        for (int j = 0; j < 4; ++j) {
          ASSERT_LT(base + j * s, g);
          ++hits[size_t(base + j * s)];
        }
      }
      for (int i = 0; i < g; ++i) EXPECT_EQ(hits[size_t(i)], 1) << "g " << g << " s " << s << " index " << i;
    }
}

// The kernel's schedule on one row of width n (a multiple of g).
void kernel_rotate(std::vector<float>& row, int g) {
  const auto mul = [](float a, float b) { return a * b; };
  for (size_t g0 = 0; g0 < row.size(); g0 += size_t(g)) {
    float* v = row.data() + g0;
    for (int s = 1; s < g; s *= 4)
      for (int lane = 0; lane < kLanes; ++lane)
        for (int t = lane; t < g / 4; t += kLanes) convrot_order::butterfly(v, convrot_order::quad_base(t, s), s, mul);
  }
}

TEST(Int8KernelOrder, KernelScheduleGivesRotateGroupsBitForBit) {
  std::mt19937 rng(49);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-140, 100);
  for (int g = 4; g <= 1024; g *= 4) {
    SCOPED_TRACE("group " + std::to_string(g));
    for (int trial = 0; trial < 4; ++trial) {
      // Magnitudes from subnormal to 2^100, so rounding happens in every add of every stage.
      std::vector<float> row(size_t(3 * g));
      for (float& v : row) v = std::ldexp(normal(rng), trial % 2 ? exponent(rng) : 0);
      std::vector<float> want = row;
      convrot::rotate_groups(want.data(), int64_t(want.size()), g);
      kernel_rotate(row, g);
      EXPECT_EQ(std::memcmp(row.data(), want.data(), row.size() * sizeof(float)), 0);
    }
  }
}

// The replay can fail: another (valid-looking) order of the same stages, strides high to low,
// gives different bits for real data, so the bit-for-bit test above is sharp.
TEST(Int8KernelOrder, ReversedStagesDifferInTheBits) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int g = 256;
  std::vector<float> row(static_cast<size_t>(g));
  for (float& v : row) v = normal(rng);
  std::vector<float> want = row;
  convrot::rotate_groups(want.data(), g, g);
  const auto mul = [](float a, float b) { return a * b; };
  for (int s = g / 4; s >= 1; s /= 4)
    for (int t = 0; t < g / 4; ++t) convrot_order::butterfly(row.data(), convrot_order::quad_base(t, s), s, mul);
  EXPECT_NE(std::memcmp(row.data(), want.data(), row.size() * sizeof(float)), 0);
}

}  // namespace
