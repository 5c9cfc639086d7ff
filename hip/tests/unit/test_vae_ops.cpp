// The host VAE ops against straightforward loops in double precision, on small odd shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <random>
#include <stdexcept>
#include <vector>

#include "ops/backend.h"

namespace moss {
namespace {

Tensor random_tensor(const std::vector<int64_t>& dims, uint32_t seed, float mean = 0.0f, float sd = 1.0f) {
  Tensor t = host_tensor(DType::F32, dims);
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(mean, sd);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = dist(gen);
  return t;
}

double at(const Tensor& t, int64_t i) { return double(t.ptr<const float>()[i]); }

// (mean, rstd) per group of consecutive channels, two passes in double.
std::vector<double> reference_stats(const Tensor& x, int64_t groups, double eps) {
  const int64_t n = x.numel() / groups;
  std::vector<double> out;
  for (int64_t g = 0; g < groups; ++g) {
    double sum = 0, ss = 0;
    for (int64_t i = 0; i < n; ++i) sum += at(x, g * n + i);
    const double mean = sum / double(n);
    for (int64_t i = 0; i < n; ++i) ss += (at(x, g * n + i) - mean) * (at(x, g * n + i) - mean);
    out.push_back(mean);
    out.push_back(1.0 / std::sqrt(ss / double(n) + eps));
  }
  return out;
}

// x [C, H, W] group-normalised with the reference statistics (then SiLU when asked).
std::vector<double> reference_norm(const Tensor& x, int64_t groups, double eps, const Tensor& gamma,
                                   const Tensor& beta, bool silu) {
  const int64_t C = x.shape[0], P = x.shape[1] * x.shape[2];
  const std::vector<double> st = reference_stats(x, groups, eps);
  std::vector<double> out(size_t(C * P));
  for (int64_t c = 0; c < C; ++c) {
    const int64_t g = c / (C / groups);
    for (int64_t p = 0; p < P; ++p) {
      double y = (at(x, c * P + p) - st[size_t(2 * g)]) * st[size_t(2 * g + 1)] * at(gamma, c) + at(beta, c);
      out[size_t(c * P + p)] = silu ? y / (1.0 + std::exp(-y)) : y;
    }
  }
  return out;
}

struct ConvCase {
  const char* name;
  int64_t cin, cout, h, w, k;
  int64_t groups;  // 0: no input norm
  bool silu, upsample, residual, residual_is_out;
};

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class VaeConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(VaeConvTest, MatchesLoops) {
  const ConvCase c = GetParam();
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = random_tensor({c.cin, c.h, c.w}, 1, 0.3f, 1.5f);
  const Tensor w = random_tensor({c.cout, c.cin, c.k, c.k}, 2, 0.0f, 0.3f);
  const Tensor bias = random_tensor({c.cout}, 3);
  const Tensor gamma = random_tensor({c.cin}, 4, 1.0f, 0.3f), beta = random_tensor({c.cin}, 5, 0.0f, 0.3f);
  const int64_t up = c.upsample ? 2 : 1, Ho = c.h * up, Wo = c.w * up, pad = c.k / 2;
  const float eps = 1e-6f;

  // The reference: normalise, upsample, then the textbook convolution, all in double.
  std::vector<double> in(size_t(x.numel()));
  if (c.groups)
    in = reference_norm(x, c.groups, eps, gamma, beta, c.silu);
  else
    for (int64_t i = 0; i < x.numel(); ++i) in[size_t(i)] = at(x, i);
  Tensor out = random_tensor({c.cout, Ho, Wo}, 6);
  const Tensor residual_copy = random_tensor({c.cout, Ho, Wo}, 6);  // same values as out
  const Tensor separate_residual = random_tensor({c.cout, Ho, Wo}, 7);
  const Tensor& residual = c.residual_is_out ? residual_copy : separate_residual;
  std::vector<double> want(size_t(c.cout * Ho * Wo));
  for (int64_t co = 0; co < c.cout; ++co)
    for (int64_t y = 0; y < Ho; ++y)
      for (int64_t xo = 0; xo < Wo; ++xo) {
        double s = at(bias, co);
        for (int64_t ci = 0; ci < c.cin; ++ci)
          for (int64_t ky = 0; ky < c.k; ++ky)
            for (int64_t kx = 0; kx < c.k; ++kx) {
              const int64_t iy = y + ky - pad, ix = xo + kx - pad;
              if (iy < 0 || iy >= Ho || ix < 0 || ix >= Wo) continue;
              s += at(w, ((co * c.cin + ci) * c.k + ky) * c.k + kx) * in[size_t((ci * c.h + iy / up) * c.w + ix / up)];
            }
        if (c.residual) s += at(residual, (co * Ho + y) * Wo + xo);
        want[size_t((co * Ho + y) * Wo + xo)] = s;
      }

  Tensor stats = host_tensor(DType::F32, {std::max<int64_t>(c.groups, 1), 2});
  GroupNormInput norm;
  Conv2dOptions opt;
  if (c.groups) {
    be->vae().group_norm_stats(x, c.groups, eps, stats);
    norm = GroupNormInput{&stats, &gamma, &beta, c.silu};
    opt.norm = &norm;
  }
  opt.upsample2x = c.upsample;
  if (c.residual) opt.residual = c.residual_is_out ? &out : &separate_residual;
  be->vae().conv2d(x, w, bias, opt, out);

  double worst = 0;
  for (int64_t i = 0; i < out.numel(); ++i)
    worst = std::max(worst, std::fabs(at(out, i) - want[size_t(i)]) / (1.0 + std::fabs(want[size_t(i)])));
  EXPECT_LT(worst, 2e-6) << "conv " << c.cin << "->" << c.cout << " " << c.h << "x" << c.w << " k" << c.k;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, VaeConvTest,
    ::testing::Values(ConvCase{"Plain3x3", 5, 11, 5, 7, 3, 0, false, false, false, false},  // odd everything
                      ConvCase{"Plain1x1", 6, 3, 3, 5, 1, 0, false, false, false, false},   // the shortcut
                      ConvCase{"GroupNormSilu", 6, 9, 7, 5, 3, 3, true, false, false, false},
                      ConvCase{"Upsample", 5, 4, 3, 5, 3, 0, false, true, false, false},
                      ConvCase{"ResidualIsOut", 6, 6, 5, 3, 3, 2, true, false, true, true},  // conv2 in place
                      ConvCase{"Everything", 6, 10, 3, 3, 3, 3, true, true, true, false},
                      ConvCase{"OnePixel", 9, 5, 1, 1, 3, 3, false, false, true, false},
                      ConvCase{"GroupNormUpsample1x1", 6, 5, 2, 3, 1, 6, false, true, false, false}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return std::string(info.param.name); });

TEST(VaeOps, GroupNormStatsMatchLoops) {
  std::unique_ptr<Backend> be = make_host_backend();
  // The second map has a mean far above its spread: a plain fp32 Σx² − (Σx)²/N would fail it.
  for (auto [dims, groups, mean, sd] :
       {std::tuple<std::vector<int64_t>, int64_t, float, float>{{6, 5, 7}, 3, 3.0f, 0.5f},
        {{4, 33, 31}, 2, 1000.0f, 0.01f}, {{5, 1, 1}, 5, 0.0f, 1.0f}}) {
    const Tensor x = random_tensor(dims, 11, mean, sd);
    Tensor stats = host_tensor(DType::F32, {groups, 2});
    be->vae().group_norm_stats(x, groups, 1e-6f, stats);
    const std::vector<double> want = reference_stats(x, groups, 1e-6);
    for (int64_t g = 0; g < groups; ++g) {
      EXPECT_NEAR(at(stats, 2 * g), want[size_t(2 * g)], 1e-6 * std::fabs(want[size_t(2 * g)]) + 1e-7);
      EXPECT_NEAR(at(stats, 2 * g + 1), want[size_t(2 * g + 1)], 1e-6 * want[size_t(2 * g + 1)]);
    }
  }
}

TEST(VaeOps, UnpatchifyPlacesEachPackedChannel) {
  // docs/vae.md check 1: packed channel 4c + 2dy + dx at (i, j) lands at z[c, 2i+dy, 2j+dx].
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t C = 3, h = 3, w = 5;
  Tensor packed = host_tensor(DType::F32, {4 * C, h, w});
  for (int64_t k = 0; k < 4 * C; ++k)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) packed.ptr<float>()[(k * h + i) * w + j] = float(k * 100 + i * 10 + j);
  Tensor zero = host_tensor(DType::F32, {4 * C}), one = host_tensor(DType::F32, {4 * C});
  for (int64_t k = 0; k < 4 * C; ++k) one.ptr<float>()[k] = 1.0f;
  Tensor z = host_tensor(DType::F32, {C, 2 * h, 2 * w});
  be->vae().batch_norm_unpatchify(packed, zero, one, 0.0f, 2, z);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < 2 * h; ++y)
      for (int64_t x = 0; x < 2 * w; ++x)
        EXPECT_EQ(at(z, (c * 2 * h + y) * 2 * w + x), double((4 * c + 2 * (y % 2) + x % 2) * 100 + (y / 2) * 10 + x / 2));
}

TEST(VaeOps, BatchNormInverseMatchesFormula) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t C = 2, h = 3, w = 1;
  const Tensor packed = random_tensor({4 * C, h, w}, 21), mean = random_tensor({4 * C}, 22, 0.0f, 0.5f);
  Tensor var = random_tensor({4 * C}, 23);
  for (int64_t k = 0; k < 4 * C; ++k) var.ptr<float>()[k] = 0.5f + std::fabs(var.ptr<float>()[k]);
  Tensor z = host_tensor(DType::F32, {C, 2 * h, 2 * w});
  be->vae().batch_norm_unpatchify(packed, mean, var, 1e-4f, 2, z);
  for (int64_t k = 0; k < 4 * C; ++k)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        const int64_t c = k / 4, dy = (k / 2) % 2, dx = k % 2;
        const double want = at(packed, (k * h + i) * w + j) * std::sqrt(at(var, k) + 1e-4) + at(mean, k);
        EXPECT_NEAR(at(z, (c * 2 * h + 2 * i + dy) * 2 * w + 2 * j + dx), want, 1e-6 * (1 + std::fabs(want)));
      }
}

TEST(VaeOps, TokensRoundTripThroughColumnSlices) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t C = 6, H = 3, W = 5, P = H * W, groups = 3;
  const Tensor x = random_tensor({C, H, W}, 31, 1.0f, 2.0f);
  const Tensor gamma = random_tensor({C}, 32, 1.0f, 0.3f), beta = random_tensor({C}, 33);
  Tensor stats = host_tensor(DType::F32, {groups, 2});
  be->vae().group_norm_stats(x, groups, 1e-6f, stats);
  // Tokens land in columns 2..7 of a wider matrix; the other columns stay untouched.
  Tensor wide = host_tensor(DType::F32, {P, C + 4});
  Tensor tokens = wide.slice_cols(2, C);
  be->vae().group_norm_to_tokens(x, GroupNormInput{&stats, &gamma, &beta, false}, tokens);
  const std::vector<double> want = reference_norm(x, groups, 1e-6, gamma, beta, false);
  for (int64_t p = 0; p < P; ++p) {
    for (int64_t c = 0; c < C; ++c)
      EXPECT_NEAR(tokens.row<const float>(p)[c], want[size_t(c * P + p)], 2e-6 * (1 + std::fabs(want[size_t(c * P + p)])));
    EXPECT_EQ(wide.row<const float>(p)[0], 0.0f);
    EXPECT_EQ(wide.row<const float>(p)[C + 3], 0.0f);
  }
  Tensor y = random_tensor({C, H, W}, 34);
  const Tensor before = random_tensor({C, H, W}, 34);
  be->vae().add_tokens(y, tokens);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < P; ++p)
      EXPECT_FLOAT_EQ(at(y, c * P + p), at(before, c * P + p) + tokens.row<const float>(p)[c]);
}

TEST(VaeOps, RefusesMismatchedShapes) {
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = random_tensor({4, 3, 3}, 41), w = random_tensor({2, 5, 3, 3}, 42), b = random_tensor({2}, 43);
  Tensor out = host_tensor(DType::F32, {2, 3, 3});
  EXPECT_THROW(be->vae().conv2d(x, w, b, Conv2dOptions(), out), std::invalid_argument);
  const Tensor w2 = random_tensor({2, 4, 3, 3}, 44);
  Conv2dOptions up;
  up.upsample2x = true;  // out would have to be [2, 6, 6]
  EXPECT_THROW(be->vae().conv2d(x, w2, b, up, out), std::invalid_argument);
  Tensor stats = host_tensor(DType::F32, {3, 2});
  EXPECT_THROW(be->vae().group_norm_stats(x, 3, 1e-6f, stats), std::invalid_argument);  // 3 does not divide 4
}

}  // namespace
}  // namespace moss
