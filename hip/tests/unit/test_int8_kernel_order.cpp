// The INT8 ConvRot activation kernel's rotation order (kernels/int8_rotate_order.h), replayed on the
// host: the kernel's schedule (32 lanes, lane l taking quadruples l, l + 32, ... of each stage, the
// stages of strides 1, 4, 16, ... in order) with its butterfly must give convrot::rotate_groups'
// bits for every group size the kernel takes, and the quadruples of a stage must cover the group
// exactly once (a lane writing a value another reads in the same stage would race). The same for
// the register pass's schedule: its stages on a lane's registers with the lane-bit exchanges
// between them give rotate_groups' bits, and leave each value where segment_offset says.
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

// The register pass's placement: over the 32 lanes' 16 registers segment_offset is a bijection
// onto the segment's 512 offsets, registers 4i .. 4i+3 are 4 consecutive offsets (the quantized
// values' 4-byte stores), and a group's offsets lie in its own G/16 consecutive lanes (a partial
// segment's absent lanes hold whole groups of zeros).
TEST(Int8KernelOrder, RegisterPassPlacesEveryValueOnce) {
  constexpr int kSegment = convrot_order::kSegmentLanes * convrot_order::kLaneValues;
  for (int g = 4; g <= convrot_order::kRegisterPassMaxGroup; g *= 4) {
    std::vector<int> hits(size_t(kSegment), 0);
    for (int lane = 0; lane < convrot_order::kSegmentLanes; ++lane)
      for (int r = 0; r < convrot_order::kLaneValues; ++r) {
        const int i = convrot_order::segment_offset(lane, r, g);
        ASSERT_GE(i, 0);
        ASSERT_LT(i, kSegment);
        ++hits[size_t(i)];
        EXPECT_EQ(i - convrot_order::segment_offset(lane, r & ~3, g), r & 3) << "g " << g;
        const int lanes_per_group = g < 16 ? 1 : g / 16, span = g < 16 ? 16 : g;
        EXPECT_EQ(i / span, lane / lanes_per_group) << "g " << g << " lane " << lane << " r " << r;
      }
    for (int i = 0; i < kSegment; ++i) EXPECT_EQ(hits[size_t(i)], 1) << "g " << g << " offset " << i;
  }
  EXPECT_TRUE(convrot_order::register_pass_fits(3072, 256) && convrot_order::register_pass_fits(192, 64));
  EXPECT_FALSE(convrot_order::register_pass_fits(4096, 1024) || convrot_order::register_pass_fits(260, 4));
}

// The register pass's schedule replayed with plain arrays: reg[lane][r], the butterflies on the
// registers' quadruples, and between stages the exchange of register bits 2 and 3 with the lane
// bits (kernels/int8_row_regs.h's swap_bit as data movement). Scattered by segment_offset, the
// values are rotate_groups' to the bit.
void register_pass_rotate(std::vector<float>& segment, int g) {
  constexpr int kLanes = convrot_order::kSegmentLanes, kRegs = convrot_order::kLaneValues;
  const auto mul = [](float a, float b) { return a * b; };
  float reg[kLanes][kRegs];
  for (int lane = 0; lane < kLanes; ++lane)
    for (int r = 0; r < kRegs; ++r) reg[lane][r] = segment[size_t(kRegs * lane + r)];
  const auto exchange = [&](int reg_bit, int lane_bit) {  // bit reg_bit of r <-> bit lane_bit of the lane
    float out[kLanes][kRegs];
    for (int lane = 0; lane < kLanes; ++lane)
      for (int r = 0; r < kRegs; ++r) {
        const int rb = (r >> reg_bit) & 1, lb = (lane >> lane_bit) & 1;
        out[(lane & ~(1 << lane_bit)) | (rb << lane_bit)][(r & ~(1 << reg_bit)) | (lb << reg_bit)] = reg[lane][r];
      }
    std::memcpy(reg, out, sizeof(reg));
  };
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int m = 0; m < 4; ++m) convrot_order::butterfly(reg[lane], 4 * m, 1, mul);  // stride 1
    if (g >= 16)
      for (int j = 0; j < 4; ++j) convrot_order::butterfly(reg[lane], j, 4, mul);  // stride 4
  }
  for (int stride = 16, slot = 0; stride < g; stride *= 4, ++slot) {
    exchange(2, 2 * slot);
    exchange(3, 2 * slot + 1);
    for (int lane = 0; lane < kLanes; ++lane)
      for (int j = 0; j < 4; ++j) convrot_order::butterfly(reg[lane], j, 4, mul);
  }
  for (int lane = 0; lane < kLanes; ++lane)
    for (int r = 0; r < kRegs; ++r) segment[size_t(convrot_order::segment_offset(lane, r, g))] = reg[lane][r];
}

TEST(Int8KernelOrder, RegisterPassScheduleGivesRotateGroupsBitForBit) {
  std::mt19937 rng(4949);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-140, 100);
  for (int g = 4; g <= convrot_order::kRegisterPassMaxGroup; g *= 4) {
    SCOPED_TRACE("group " + std::to_string(g));
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<float> segment(size_t(convrot_order::kSegmentLanes * convrot_order::kLaneValues));
      for (float& v : segment) v = std::ldexp(normal(rng), trial % 2 ? exponent(rng) : 0);
      std::vector<float> want = segment;
      convrot::rotate_groups(want.data(), int64_t(want.size()), g);
      register_pass_rotate(segment, g);
      EXPECT_EQ(std::memcmp(segment.data(), want.data(), segment.size() * sizeof(float)), 0);
    }
  }
}

}  // namespace
