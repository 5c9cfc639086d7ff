// CoreOps::linear_gated_unit on the host reference: out = unit(t[:, :F], t[:, F:]) with
// t = x·wᵀ + bias must be bit-identical to linear into a temporary then gated_unit on its halves
// (the DiT's host goldens were made with the two ops), for each unit, bf16 and f32 weights, with
// and without a bias, into an out that is a column slice of a wider matrix (row stride kept,
// other columns untouched); a weight whose rows are not twice out's columns is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "ops/backend.h"

namespace moss {
namespace {

Tensor random_tensor(DType dt, const std::vector<int64_t>& dims, uint32_t seed, float sd = 1.0f) {
  Tensor t = host_tensor(dt, dims);
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DType::BF16) t.ptr<uint16_t>()[i] = f32_to_bf16(dist(gen));
    else t.ptr<float>()[i] = dist(gen);
  }
  return t;
}

Tensor copy_of(const Tensor& t) {
  Tensor c = host_tensor(t.dtype, t.dims());
  std::memcpy(c.data, t.data, size_t(t.numel()) * dtype_size(t.dtype));
  return c;
}

void expect_same_bits(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.numel(), want.numel());
  ASSERT_EQ(std::memcmp(got.data, want.data, size_t(got.numel()) * sizeof(float)), 0);
}

void check(GatedUnit kind, DType wdt, bool with_bias, int64_t m, int64_t k, int64_t f, uint32_t seed) {
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = random_tensor(DType::F32, {m, k}, seed);
  const Tensor w = random_tensor(wdt, {2 * f, k}, seed + 1, 0.3f);
  const Tensor bias = random_tensor(wdt, {2 * f}, seed + 2, 0.5f);
  // out is columns [3, 3 + f) of a wider matrix: the op must honour the row stride.
  const Tensor wide = random_tensor(DType::F32, {m, f + 5}, seed + 4, 2.0f);

  Tensor want = copy_of(wide);
  Tensor want_out = want.slice_cols(3, f);
  Tensor t = host_tensor(DType::F32, {m, 2 * f});
  be->core().linear(x, w, with_bias ? &bias : nullptr, t);
  be->core().gated_unit(kind, t.slice_cols(0, f), t.slice_cols(f, f), want_out);

  Tensor got = copy_of(wide);
  Tensor got_out = got.slice_cols(3, f);
  be->core().linear_gated_unit(kind, x, w, with_bias ? &bias : nullptr, got_out);
  expect_same_bits(got, want);
  // The untouched columns really are untouched, and the unit really changed the others.
  EXPECT_EQ(std::memcmp(got.data, wide.data, 3 * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(got.row<float>(0) + 3, wide.row<const float>(0) + 3, size_t(f) * sizeof(float)), 0);
}

TEST(LinearGatedUnit, HostIsLinearThenGatedUnitBf16Weights) {
  check(GatedUnit::Situ, DType::BF16, true, 17, 40, 33, 1);
  check(GatedUnit::Situ, DType::BF16, false, 5, 8, 3, 2);
  check(GatedUnit::SwiGlu, DType::BF16, true, 6, 16, 9, 5);
  check(GatedUnit::SigmoidGate, DType::BF16, false, 4, 24, 7, 6);
}

TEST(LinearGatedUnit, HostIsLinearThenGatedUnitF32Weights) {
  check(GatedUnit::Situ, DType::F32, true, 9, 24, 20, 3);
  check(GatedUnit::Situ, DType::F32, false, 1, 7, 1, 4);
}

TEST(LinearGatedUnit, RefusesAWeightThatIsNotTwiceTheOutput) {
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = random_tensor(DType::F32, {4, 8}, 7);
  const Tensor w = random_tensor(DType::BF16, {10, 8}, 8);
  Tensor out = host_tensor(DType::F32, {4, 4});
  EXPECT_THROW(be->core().linear_gated_unit(GatedUnit::Situ, x, w, nullptr, out), std::exception);
}

}  // namespace
}  // namespace moss
