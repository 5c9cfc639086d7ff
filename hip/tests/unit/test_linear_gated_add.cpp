// CoreOps::linear_gated_add on the host reference: residual += gate ⊙ (x·wᵀ + bias) must be
// bit-identical to linear into a temporary then add(residual, temporary, &gate) -- the DiT's host
// goldens were made with the two ops -- for bf16 and f32 weights, with and without a bias, and on
// a residual that is a column slice of a wider matrix (row stride kept, other columns untouched).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
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

void check(DType wdt, bool with_bias, int64_t m, int64_t k, int64_t n, uint32_t seed) {
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = random_tensor(DType::F32, {m, k}, seed);
  const Tensor w = random_tensor(wdt, {n, k}, seed + 1, 0.1f);
  const Tensor bias = random_tensor(wdt, {n}, seed + 2, 0.5f);
  const Tensor gate = random_tensor(DType::F32, {n}, seed + 3);
  // The residual is columns [3, 3 + n) of a wider stream: the op must honour the row stride.
  const Tensor wide = random_tensor(DType::F32, {m, n + 5}, seed + 4, 2.0f);

  Tensor want = copy_of(wide);
  Tensor want_r = want.slice_cols(3, n);
  Tensor t = host_tensor(DType::F32, {m, n});
  be->core().linear(x, w, with_bias ? &bias : nullptr, t);
  be->core().add(want_r, t, &gate);

  Tensor got = copy_of(wide);
  Tensor got_r = got.slice_cols(3, n);
  be->core().linear_gated_add(x, w, with_bias ? &bias : nullptr, gate, got_r);
  expect_same_bits(got, want);
}

TEST(LinearGatedAdd, HostIsLinearThenAddBf16Weights) {
  check(DType::BF16, true, 17, 40, 33, 1);
  check(DType::BF16, false, 5, 8, 3, 2);
}

TEST(LinearGatedAdd, HostIsLinearThenAddF32Weights) {
  check(DType::F32, true, 9, 24, 20, 3);
  check(DType::F32, false, 1, 7, 1, 4);
}

}  // namespace
}  // namespace moss
