// The small DeltaNet ops of the text family against their formulas (written out in double).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "ops/backend.h"

using namespace moss;

namespace {

Tensor matrix(int64_t rows, int64_t cols, float (*fill)(int64_t, int64_t)) {
  Tensor t = host_tensor(DType::F32, {rows, cols});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t.row<float>(r)[c] = fill(r, c);
  return t;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

TEST(DeltaNetOps, CausalConvSiluHasZeroHistory) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t T = 6, C = 3, K = 4;
  const Tensor x = matrix(T, C, [](int64_t r, int64_t c) { return 0.3f * float(r + 1) - 0.2f * float(c); });
  Tensor w = host_tensor(DType::BF16, {C, 1, K});  // the checkpoint's layout
  for (int64_t i = 0; i < C * K; ++i) w.ptr<uint16_t>()[i] = f32_to_bf16(0.25f * float(i % 5) - 0.5f);
  Tensor y = host_tensor(DType::F32, {T, C});
  be->text().causal_conv1d_silu(x, w, y);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double acc = 0;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t src = t - (K - 1) + j;  // tap K-1 multiplies the current token
        if (src >= 0) acc += double(bf16_to_f32(w.ptr<uint16_t>()[c * K + j])) * x.row<float>(src)[c];
      }
      EXPECT_NEAR(y.row<float>(t)[c], silu(acc), 1e-6) << "t=" << t << " c=" << c;
    }
}

TEST(DeltaNetOps, GatesAreLogDecayAndSigmoid) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t T = 3, H = 4;
  // a + dt_bias crosses softplus's threshold of 20 in the last row (softplus(x) = x there).
  const Tensor a = matrix(T, H, [](int64_t r, int64_t c) { return r == 2 ? 25.0f : 0.7f * float(r) - 0.4f * float(c); });
  const Tensor b = matrix(T, H, [](int64_t r, int64_t c) { return 0.5f * float(c) - float(r); });
  const Tensor a_log = matrix(1, H, [](int64_t, int64_t c) { return 0.3f * float(c) - 0.5f; });
  const Tensor dt_bias = matrix(1, H, [](int64_t, int64_t c) { return 0.1f * float(c); });
  Tensor g = host_tensor(DType::F32, {T, H}), beta = host_tensor(DType::F32, {T, H});
  be->text().deltanet_gates(a, b, a_log, dt_bias, g, beta);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const double x = double(a.row<float>(t)[h]) + dt_bias.ptr<float>()[h];
      const double sp = x > 20 ? x : std::log1p(std::exp(x));
      const double want_g = -std::exp(double(a_log.ptr<float>()[h])) * sp;
      EXPECT_NEAR(g.row<float>(t)[h], want_g, 1e-6 * std::fabs(want_g) + 1e-7);
      EXPECT_LE(g.row<float>(t)[h], 0.0f);
      EXPECT_NEAR(beta.row<float>(t)[h], 1.0 / (1.0 + std::exp(-double(b.row<float>(t)[h]))), 1e-7);
    }
}

TEST(DeltaNetOps, L2NormPerHeadWithEpsInsideTheSum) {
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = matrix(2, 8, [](int64_t r, int64_t c) { return r == 1 && c < 4 ? 0.0f : float(c) - 2.5f; });
  Tensor y = host_tensor(DType::F32, {2, 8});
  be->text().l2_norm(x, 1e-6f, 4, y);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t h = 0; h < 2; ++h) {
      double ss = 0;
      for (int64_t c = 0; c < 4; ++c) ss += double(x.row<float>(r)[h * 4 + c]) * x.row<float>(r)[h * 4 + c];
      for (int64_t c = 0; c < 4; ++c)
        EXPECT_NEAR(y.row<float>(r)[h * 4 + c], x.row<float>(r)[h * 4 + c] / std::sqrt(ss + 1e-6), 1e-6);
    }
  EXPECT_EQ(y.row<float>(1)[0], 0.0f);  // an all-zero head stays zero (no division by zero)
}

TEST(DeltaNetOps, GatedRmsNormIsNormThenWeightThenSiluGate) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t T = 3, group = 4, C = 8;
  const Tensor x = matrix(T, C, [](int64_t r, int64_t c) { return 0.2f * float(c * (r + 1)) - 0.6f; });
  const Tensor z = matrix(T, C, [](int64_t r, int64_t c) { return 0.5f * float(r) - 0.3f * float(c); });
  Tensor w = host_tensor(DType::BF16, {group});  // plain weight, shared by every head
  for (int64_t i = 0; i < group; ++i) w.ptr<uint16_t>()[i] = f32_to_bf16(0.5f + 0.25f * float(i));
  Tensor y = host_tensor(DType::F32, {T, C});
  be->text().gated_rms_norm(x, z, w, 1e-6f, group, y);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h0 = 0; h0 < C; h0 += group) {
      double ss = 0;
      for (int64_t c = 0; c < group; ++c) ss += double(x.row<float>(t)[h0 + c]) * x.row<float>(t)[h0 + c];
      const double inv = 1.0 / std::sqrt(ss / double(group) + 1e-6);
      for (int64_t c = 0; c < group; ++c) {
        const double want = x.row<float>(t)[h0 + c] * inv * bf16_to_f32(w.ptr<uint16_t>()[c]) *
                            silu(z.row<float>(t)[h0 + c]);
        EXPECT_NEAR(y.row<float>(t)[h0 + c], want, 1e-6 * std::fabs(want) + 1e-7);
      }
    }
}

}  // namespace
