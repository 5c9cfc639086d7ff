// CoreOps::linear_residual on the host reference: residual += gate·(x·wᵀ + bias) must be
// bit-identical to linear into a temporary then the gated add (the DiT's host goldens were made
// with the two ops, and the DiT now takes this op wherever the portable kernels fuse it), for bf16
// and f32 weights, with and without a bias, into a residual that is a column slice of a wider
// matrix (row stride kept, other columns untouched); operands of the wrong shape are refused.
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

void check(DType wdt, bool with_bias, int64_t m, int64_t k, int64_t n, uint32_t seed) {
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = random_tensor(DType::F32, {m, k}, seed);
  const Tensor w = random_tensor(wdt, {n, k}, seed + 1, 0.3f);
  const Tensor bias = random_tensor(wdt, {n}, seed + 2, 0.5f);
  const Tensor gate = random_tensor(DType::F32, {n}, seed + 3);
  // The residual is columns [3, 3 + n) of a wider matrix: the op must honour the row stride.
  const Tensor wide = random_tensor(DType::F32, {m, n + 5}, seed + 4, 2.0f);

  Tensor want = copy_of(wide);
  Tensor want_res = want.slice_cols(3, n);
  Tensor t = host_tensor(DType::F32, {m, n});
  be->core().linear(x, w, with_bias ? &bias : nullptr, t);
  be->core().add(want_res, t, &gate);

  Tensor got = copy_of(wide);
  Tensor got_res = got.slice_cols(3, n);
  be->core().linear_residual(x, w, with_bias ? &bias : nullptr, gate, got_res);
  ASSERT_EQ(std::memcmp(got.data, want.data, size_t(got.numel()) * sizeof(float)), 0);
  // The untouched columns really are untouched, and the update really changed the others.
  for (int64_t r = 0; r < m; ++r) {
    EXPECT_EQ(std::memcmp(got.row<float>(r), wide.row<const float>(r), 3 * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(got.row<float>(r) + 3 + n, wide.row<const float>(r) + 3 + n, 2 * sizeof(float)), 0);
  }
  EXPECT_NE(std::memcmp(got.row<float>(0) + 3, wide.row<const float>(0) + 3, size_t(n) * sizeof(float)), 0);
}

TEST(LinearResidual, HostIsLinearThenGatedAdd) {
  check(DType::BF16, true, 17, 40, 33, 1);
  check(DType::BF16, false, 5, 8, 3, 2);
  check(DType::F32, true, 9, 24, 20, 3);
  check(DType::F32, false, 1, 7, 1, 4);
}

TEST(LinearResidual, RefusesOperandsOfTheWrongShape) {
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = random_tensor(DType::F32, {4, 8}, 7);
  const Tensor w = random_tensor(DType::BF16, {6, 8}, 8);
  const Tensor gate = random_tensor(DType::F32, {6}, 9);
  const Tensor short_gate = random_tensor(DType::F32, {5}, 10);
  const Tensor w_other_k = random_tensor(DType::BF16, {6, 9}, 11);
  Tensor res = host_tensor(DType::F32, {4, 6});
  Tensor res_rows = host_tensor(DType::F32, {3, 6});
  Tensor res_cols = host_tensor(DType::F32, {4, 7});
  EXPECT_NO_THROW(be->core().linear_residual(x, w, nullptr, gate, res));
  EXPECT_THROW(be->core().linear_residual(x, w, nullptr, short_gate, res), std::invalid_argument);
  EXPECT_THROW(be->core().linear_residual(x, w_other_k, nullptr, gate, res), std::invalid_argument);
  EXPECT_THROW(be->core().linear_residual(x, w, nullptr, gate, res_rows), std::invalid_argument);
  EXPECT_THROW(be->core().linear_residual(x, w, nullptr, gate, res_cols), std::invalid_argument);
}

}  // namespace
}  // namespace moss
