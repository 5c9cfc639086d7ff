// The fp8 matrix leaf (kernels/matrix_leaf.h: load_a_f8, load_b_f8, mma_f8, store_c_f8) run as a kernel
// would run it, through the device emulation of tests/emulation/runtime/portability.h: one wave of
// 32 host threads, the leaf of NVIDIA or gfx12 by MOSS_LEAF_EMULATED_TARGET (its lane maps and an
// instruction model written from the vendor's tables), the operands e4m3 codes made by the one
// conversion (kernels/fp8_e4m3.h). Products of e4m3 values and their sums of 32 are exact in double,
// so on tiles whose sums fit fp32 exactly (codes of small integers) the leaf must give the plain
// product bit for bit, and on random codes over the whole range the product within the fp32
// roundings of its two instructions. gfx11 has no fp8 leaf (it refuses to compile; docs/matrix_layouts.md 10).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/portability.h"  // the emulation: tests/emulation comes first on the include path

#include "kernels/fp8_e4m3.h"
#include "kernels/matrix_leaf.h"

namespace {

using namespace moss;
constexpr int kM = 16, kN = 16, kK = 32;

// One wave: C (16x16 fp32, row-major) = A·B + C, A given as codes [m][k] and B transposed, as
// codes [n][k] (the way the attention holds Vᵀ), each row 32 codes = 8 words.
__global__ void leaf_f8_kernel(const uint8_t* a, const uint8_t* bt, float* c) {
  auto word = [](const uint8_t* p) {
    return int32_t(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
  };
  leaf::FragAF8 fa;
  leaf::FragBF8 fb;
  leaf::FragCF8 acc;
  leaf::zero_f8(acc);
  const int lane = int(lane_id());
  for (int i = 0; i < leaf::LayoutF8::kSlotsC; ++i) {  // C in through the same map it leaves by
    const mma_layout::Elem e = leaf::LayoutF8::c(lane, i);
    acc.x[i] = c[e.row * kN + e.col];
  }
  leaf::load_a_f8(fa, [&](int m, int k0) { return word(a + m * kK + k0); });
  leaf::load_b_f8(fb, [&](int n, int k0) { return word(bt + n * kK + k0); });
  leaf::mma_f8(acc, fa, fb);
  leaf::store_c_f8(acc, [&](int m, int n, float v) { c[m * kN + n] = v; });
}

struct Tiles {
  std::vector<uint8_t> a, bt;  // codes
  std::vector<float> c;
};

std::vector<float> run_leaf(const Tiles& t) {
  std::vector<float> c = t.c;
  hipLaunchKernelGGL(leaf_f8_kernel, dim3(1), dim3(kWaveSize), 0, nullptr, t.a.data(), t.bt.data(), c.data());
  return c;
}

// The plain product in double: sum_k A[m][k] B[k][n] + C[m][n], and the sum of the magnitudes.
double product(const Tiles& t, int m, int n, double* magnitude = nullptr) {
  double sum = t.c[size_t(m * kN + n)], mag = std::fabs(sum);
  for (int k = 0; k < kK; ++k) {
    const double p = double(e4m3::to_f32(t.a[size_t(m * kK + k)])) * e4m3::to_f32(t.bt[size_t(n * kK + k)]);
    sum += p;
    mag += std::fabs(p);
  }
  if (magnitude) *magnitude = mag;
  return sum;
}

Tiles integer_tiles(std::mt19937& rng) {
  std::uniform_int_distribution<int> small(-16, 16), acc(-4096, 4096);
  Tiles t{std::vector<uint8_t>(kM * kK), std::vector<uint8_t>(kN * kK), std::vector<float>(kM * kN)};
  for (uint8_t& v : t.a) v = e4m3::from_f32(float(small(rng)));  // integers to 16 are exact in e4m3
  for (uint8_t& v : t.bt) v = e4m3::from_f32(float(small(rng)));
  for (float& v : t.c) v = float(acc(rng));
  return t;
}

// Every finite code, both signs, subnormals and 448 included (NaN codes excluded).
Tiles random_code_tiles(std::mt19937& rng) {
  std::uniform_int_distribution<int> code(0, 255);
  auto finite = [&] {
    int c;
    do c = code(rng);
    while ((c & 0x7f) == 0x7f);
    return uint8_t(c);
  };
  Tiles t{std::vector<uint8_t>(kM * kK), std::vector<uint8_t>(kN * kK), std::vector<float>(kM * kN)};
  for (uint8_t& v : t.a) v = finite();
  for (uint8_t& v : t.bt) v = finite();
  std::normal_distribution<float> normal(0.0f, 1000.0f);
  for (float& v : t.c) v = normal(rng);
  return t;
}

TEST(Fp8LeafEmulated, IntegerTilesGiveThePlainProductExactly) {
  std::mt19937 rng(49);
  for (int trial = 0; trial < 20; ++trial) {
    const Tiles t = integer_tiles(rng);
    const std::vector<float> got = run_leaf(t);
    ASSERT_FALSE(leaf_violation());
    for (int m = 0; m < kM; ++m)
      for (int n = 0; n < kN; ++n) ASSERT_EQ(double(got[size_t(m * kN + n)]), product(t, m, n)) << m << "," << n;
  }
}

TEST(Fp8LeafEmulated, RandomCodesOverTheWholeRangeGiveTheProductWithinTheAccumulatorsRoundings) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 10; ++trial) {
    const Tiles t = random_code_tiles(rng);
    const std::vector<float> got = run_leaf(t);
    for (int m = 0; m < kM; ++m)
      for (int n = 0; n < kN; ++n) {
        double magnitude;
        const double want = product(t, m, n, &magnitude);
        // Each instruction rounds its partial sum into the fp32 accumulator (two on each platform,
        // gfx12 chaining C through both): at most two half-ulps of the magnitudes summed.
        ASSERT_NEAR(got[size_t(m * kN + n)], want, 0x1p-23 * magnitude) << m << "," << n;
      }
  }
}

// Sharpness: a single code moved (A[5][19], the second instruction's K half on gfx12 and the
// second A register pair on NVIDIA) changes exactly row 5 of the result.
TEST(Fp8LeafEmulated, OneOperandCodeMovesOnlyItsRow) {
  std::mt19937 rng(3);
  Tiles t = integer_tiles(rng);
  const std::vector<float> before = run_leaf(t);
  t.a[size_t(5 * kK + 19)] = e4m3::from_f32(e4m3::to_f32(t.a[size_t(5 * kK + 19)]) + 32.0f);
  const std::vector<float> after = run_leaf(t);
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n) {
      if (m == 5) EXPECT_EQ(double(after[size_t(m * kN + n)]), product(t, m, n));
      else EXPECT_EQ(after[size_t(m * kN + n)], before[size_t(m * kN + n)]);
    }
}

}  // namespace
