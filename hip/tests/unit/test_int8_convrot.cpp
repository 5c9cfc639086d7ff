// INT8 ConvRot's host arithmetic (tensor/int8_convrot.h, docs/int8_convrot.md sections 2-4) and
// the host op CoreOps::linear_int8:
// - the group sizes accepted (powers of 4 from 4) and refused;
// - the fast rotation against the dense Kronecker power of H4 built from its definition in
//   double (which the test also checks is symmetric and orthogonal), for every group size up to
//   256 and rows of one to three groups; rotating twice gives the row back; groups are independent;
//   a constant row is left constant (H4's rows each sum to 2: the "regular" Hadamard);
// - the row quantizer: round half to even, the largest magnitude at ±127, every value within half
//   a step, the all-zero row (scale 1e-30), non-finite rows (NaN scale);
// - the op against plain loops over the format's pieces (bit for bit) at the tiny models' widths
//   128, 192 and 384 with group 64, [N] and [N, 1] scales, bf16, f32 and no bias; the int32
//   accumulation at its extreme; the op against fp32 x·Wᵀ within the format's error; its refusals;
// - the op against the PyTorch reference (bench/int8_convrot_ref.py) through the cases it wrote
//   into hip/tests/data/int8_convrot_cases.safetensors: rotation, quantization and output, bit for
//   bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "io/safetensors.h"
#include "test_support.h"
#include "ops/backend.h"
#include "tensor/int8_convrot.h"
#include "util/error.h"

namespace moss {
namespace {

std::vector<float> random_row(int64_t n, uint32_t seed, float sd = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(gen);
  return v;
}

// H_g from its definition: the product over base-4 digits of H4[i_d][j_d] / 2.
std::vector<double> dense_hadamard(int64_t g) {
  static const int h4[4][4] = {{1, 1, 1, -1}, {1, 1, -1, 1}, {1, -1, 1, 1}, {-1, 1, 1, 1}};
  std::vector<double> h(size_t(g * g));
  for (int64_t i = 0; i < g; ++i)
    for (int64_t j = 0; j < g; ++j) {
      double v = 1.0;
      for (int64_t a = i, b = j, s = 1; s < g; s *= 4, a /= 4, b /= 4) v *= h4[a % 4][b % 4] * 0.5;
      h[size_t(i * g + j)] = v;
    }
  return h;
}

TEST(Int8ConvRot, GroupSizesArePowersOfFourFromFour) {
  for (int64_t g : {4, 16, 64, 256, 1024, 4096, 1 << 20}) EXPECT_TRUE(convrot::valid_group_size(g)) << g;
  for (int64_t g : {-16, -4, 0, 1, 2, 3, 8, 12, 32, 48, 128, 192, 512, 2048, 260}) EXPECT_FALSE(convrot::valid_group_size(g)) << g;
}

TEST(Int8ConvRot, DenseHadamardIsSymmetricAndOrthogonal) {
  for (int64_t g : {4, 16, 64}) {
    const std::vector<double> h = dense_hadamard(g);
    for (int64_t i = 0; i < g; ++i)
      for (int64_t j = 0; j < g; ++j) {
        EXPECT_EQ(h[size_t(i * g + j)], h[size_t(j * g + i)]);
        double dot = 0;
        for (int64_t k = 0; k < g; ++k) dot += h[size_t(i * g + k)] * h[size_t(j * g + k)];
        EXPECT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-12) << g << " " << i << " " << j;
      }
  }
}

TEST(Int8ConvRot, FastRotationIsTheDenseProductGroupByGroup) {
  uint32_t seed = 10;
  for (int64_t g : {4, 16, 64, 256}) {
    const std::vector<double> h = dense_hadamard(g);
    for (int64_t groups : {1, 2, 3}) {
      const int64_t n = g * groups;
      const std::vector<float> x = random_row(n, ++seed, 3.0f);
      std::vector<float> y = x;
      convrot::rotate_groups(y.data(), n, g);
      double xmax = 0;
      for (float v : x) xmax = std::max(xmax, double(std::fabs(v)));
      for (int64_t g0 = 0; g0 < n; g0 += g)
        for (int64_t j = 0; j < g; ++j) {
          double want = 0;  // (x_group · H)[j]; H is symmetric
          for (int64_t i = 0; i < g; ++i) want += double(x[size_t(g0 + i)]) * h[size_t(i * g + j)];
          // A few fp32 roundings per stage, each at most the group's magnitude.
          EXPECT_NEAR(y[size_t(g0 + j)], want, 1e-6 * xmax * std::sqrt(double(g))) << g << " " << g0 + j;
        }
    }
  }
}

TEST(Int8ConvRot, RotationIsItsOwnInverseKeepsConstantsAndGroupsApart) {
  const int64_t g = 64, n = 3 * g;
  const std::vector<float> x = random_row(n, 3);
  std::vector<float> y = x;
  convrot::rotate_groups(y.data(), n, g);
  double norm_x = 0, norm_y = 0;
  for (int64_t i = 0; i < n; ++i) norm_x += double(x[size_t(i)]) * x[size_t(i)], norm_y += double(y[size_t(i)]) * y[size_t(i)];
  EXPECT_NEAR(norm_y, norm_x, 1e-5 * norm_x);
  std::vector<float> back = y;
  convrot::rotate_groups(back.data(), n, g);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(back[size_t(i)], x[size_t(i)], 1e-5f);
  // Changing the second group leaves the first and third groups' outputs as they were.
  std::vector<float> x2 = x;
  for (int64_t i = g; i < 2 * g; ++i) x2[size_t(i)] += 1.0f;
  convrot::rotate_groups(x2.data(), n, g);
  EXPECT_EQ(std::memcmp(x2.data(), y.data(), size_t(g) * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(x2.data() + 2 * g, y.data() + 2 * g, size_t(g) * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(x2.data() + g, y.data() + g, size_t(g) * sizeof(float)), 0);
  // Every row of H4 sums to 2, so H_g maps a constant group to itself, exactly.
  std::vector<float> c(size_t(n), 0.375f);
  convrot::rotate_groups(c.data(), n, g);
  for (float v : c) EXPECT_EQ(v, 0.375f);
  EXPECT_THROW(convrot::rotate_groups(c.data(), n, 128), std::invalid_argument);  // 128 is not a power of 4
  EXPECT_THROW(convrot::rotate_groups(c.data(), n - 4, g), std::invalid_argument);  // 188 is not a multiple of 64
}

TEST(Int8ConvRot, QuantizeRowRoundsHalfToEvenWithinHalfAStep) {
  // absmax 127: s = 127 · fl(1/127) = 1 exactly, so the quotients are the values themselves.
  const std::vector<float> v = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -126.5f, 3.25f};
  std::vector<int8_t> q(v.size());
  EXPECT_EQ(convrot::quantize_row(v.data(), int64_t(v.size()), q.data()), 1.0f);
  EXPECT_EQ(q, (std::vector<int8_t>{127, 0, 2, 2, 0, -2, -126, 3}));

  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> r = random_row(192, seed, float(seed) * 0.01f);
    std::vector<int8_t> qr(r.size());
    const float s = convrot::quantize_row(r.data(), 192, qr.data());
    int peak = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      peak = std::max(peak, std::abs(int(qr[i])));
      EXPECT_LE(std::fabs(double(r[i]) - double(qr[i]) * s), 0.5 * s * (1 + 1e-6)) << seed << " " << i;
      EXPECT_GE(qr[i], -127);
    }
    EXPECT_EQ(peak, 127) << seed;
  }
}

TEST(Int8ConvRot, QuantizeRowZeroAndNonFiniteRows) {
  std::vector<float> zero(16, 0.0f);
  std::vector<int8_t> q(16, 5);
  EXPECT_EQ(convrot::quantize_row(zero.data(), 16, q.data()), convrot::kScaleFloor);
  for (int8_t v : q) EXPECT_EQ(v, 0);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> row = random_row(16, 4);
    row[7] = bad;
    std::fill(q.begin(), q.end(), int8_t(5));
    EXPECT_TRUE(std::isnan(convrot::quantize_row(row.data(), 16, q.data())));
    for (int8_t v : q) EXPECT_EQ(v, 0);
  }
}

TEST(Int8ConvRot, ComfyQuantRecord) {
  EXPECT_EQ(convrot::comfy_quant_json(256), R"({"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 256})");
  EXPECT_EQ(convrot::comfy_quant_json(64), R"({"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 64})");
}

Tensor random_f32(const std::vector<int64_t>& dims, uint32_t seed, float sd = 1.0f) {
  Tensor t = host_tensor(DType::F32, dims);
  const std::vector<float> v = random_row(t.numel(), seed, sd);
  std::memcpy(t.data, v.data(), v.size() * sizeof(float));
  return t;
}

// The op's definition as plain loops over the format's pieces: rotate and quantize each row, the
// integer dot product in int64, then float(acc)·(s_x·s_w) + b.
Tensor plain_linear_int8(const Tensor& x, const Tensor& qw, const Tensor& sw, const Tensor* bias, int64_t g) {
  const int64_t M = x.rows(), K = x.cols(), N = qw.rows();
  const std::vector<float> b = bias ? to_f32_vector(*bias) : std::vector<float>();
  Tensor y = host_tensor(DType::F32, {M, N});
  std::vector<float> row(static_cast<size_t>(K));
  std::vector<int8_t> q(static_cast<size_t>(K));
  for (int64_t m = 0; m < M; ++m) {
    std::memcpy(row.data(), x.row<const float>(m), size_t(K) * sizeof(float));
    convrot::rotate_groups(row.data(), K, g);
    const float s = convrot::quantize_row(row.data(), K, q.data());
    for (int64_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += int64_t(q[size_t(k)]) * qw.ptr<const int8_t>()[n * K + k];
      const float v = float(int32_t(acc)) * (s * sw.ptr<const float>()[n]);
      y.ptr<float>()[m * N + n] = bias ? v + b[size_t(n)] : v;
    }
  }
  return y;
}

void expect_same_bits(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, got.ptr<const float>() + i, 4);
    std::memcpy(&b, want.ptr<const float>() + i, 4);
    ASSERT_EQ(a, b) << "element " << i << ": " << got.ptr<const float>()[i] << " vs " << want.ptr<const float>()[i];
  }
}

TEST(Int8ConvRot, HostOpIsThePlainLoopsAtTheTinyWidths) {
  std::unique_ptr<Backend> be = make_host_backend();
  uint32_t seed = 100;
  for (int64_t K : {128, 192, 384}) {
    const int64_t M = 7, N = 33;
    const Tensor x = random_f32({M, K}, ++seed, 2.0f);
    const Tensor qw = random_i8(N, K, ++seed, -127);
    Tensor sw = random_f32({N}, ++seed);
    for (int64_t i = 0; i < N; ++i) sw.ptr<float>()[i] = std::fabs(sw.ptr<float>()[i]) * 1e-3f;
    Tensor bias16 = host_tensor(DType::BF16, {N});
    const Tensor bias32 = random_f32({N}, ++seed);
    for (int64_t i = 0; i < N; ++i) bias16.ptr<uint16_t>()[i] = f32_to_bf16(bias32.ptr<const float>()[i]);
    for (const Tensor* bias : std::vector<const Tensor*>{nullptr, &bias16, &bias32}) {
      for (const Tensor& scale : {sw, sw.reshape({N, 1})}) {
        Tensor y = host_tensor(DType::F32, {M, N});
        be->core().linear_int8(x, qw, scale, bias, 64, y);
        expect_same_bits(y, plain_linear_int8(x, qw, sw, bias, 64));
      }
    }
  }
}

TEST(Int8ConvRot, HostOpAccumulatesExactlyAtTheExtremes) {
  // A constant row rotates to itself and quantizes to 127 everywhere; against a weight of -127
  // everywhere the sum is -127·127·K, exact in int32 and (K = 384: 6193536 < 2^24) in fp32.
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t K = 384, N = 3;
  Tensor x = host_tensor(DType::F32, {2, K});
  for (int64_t i = 0; i < K; ++i) x.ptr<float>()[i] = 2.5f, x.ptr<float>()[K + i] = -1.0f;
  Tensor qw = host_tensor(DType::I8, {N, K});
  for (int64_t i = 0; i < qw.numel(); ++i) qw.ptr<int8_t>()[i] = -127;
  Tensor sw = host_tensor(DType::F32, {N});
  for (int64_t i = 0; i < N; ++i) sw.ptr<float>()[i] = 0.25f * float(i + 1);
  Tensor y = host_tensor(DType::F32, {2, N});
  be->core().linear_int8(x, qw, sw, nullptr, 64, y);
  const float sx0 = 2.5f * (1.0f / 127.0f), sx1 = 1.0f * (1.0f / 127.0f);
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(y.ptr<float>()[n], -6193536.0f * (sx0 * sw.ptr<float>()[n]));
    EXPECT_EQ(y.ptr<float>()[N + n], 6193536.0f * (sx1 * sw.ptr<float>()[n]));
  }
}

TEST(Int8ConvRot, HostOpIsCloseToTheFloatProduct) {
  // Weights quantized offline as the format says (rotate, then quantize each row), activations at
  // run time: against x·Wᵀ in fp32 the relative L2 error is that of two 8-bit roundings of
  // Gaussian rows (about 1% each after the rotation); 4% leaves room and still catches a wrong
  // rotation (which gives errors of order 1).
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t M = 9, K = 384, N = 40;
  const Tensor x = random_f32({M, K}, 7);
  const Tensor w = random_f32({N, K}, 8, 0.05f);
  Tensor qw = host_tensor(DType::I8, {N, K});
  Tensor sw = host_tensor(DType::F32, {N, 1});
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; ++n) {
    std::memcpy(row.data(), w.ptr<const float>() + n * K, size_t(K) * sizeof(float));
    convrot::rotate_groups(row.data(), K, 64);
    sw.ptr<float>()[n] = convrot::quantize_row(row.data(), K, qw.ptr<int8_t>() + n * K);
  }
  Tensor y = host_tensor(DType::F32, {M, N}), want = host_tensor(DType::F32, {M, N});
  be->core().linear_int8(x, qw, sw, nullptr, 64, y);
  be->core().linear(x, w, nullptr, want);
  double num = 0, den = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double d = double(y.ptr<float>()[i]) - want.ptr<float>()[i];
    num += d * d;
    den += double(want.ptr<float>()[i]) * want.ptr<float>()[i];
  }
  EXPECT_LT(std::sqrt(num / den), 0.04);
  EXPECT_GT(std::sqrt(num / den), 1e-4);  // it is quantized: not the float product itself
}

TEST(Int8ConvRot, HostOpRefusals) {
  std::unique_ptr<Backend> be = make_host_backend();
  const Tensor x = random_f32({3, 192}, 1);
  const Tensor qw = random_i8(8, 192, 2, -127);
  const Tensor sw = random_f32({8}, 3);
  Tensor y = host_tensor(DType::F32, {3, 8});
  auto refusal = [&](const Tensor& xx, const Tensor& w, const Tensor& s, int64_t g, Tensor& out) {
    try {
      be->core().linear_int8(xx, w, s, nullptr, g, out);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no refusal");
  };
  EXPECT_NE(refusal(x, qw, sw, 128, y).find("group size 128 is not a power of 4 dividing the width 192"), std::string::npos);
  EXPECT_NE(refusal(x, qw, sw, 32, y).find("group size 32"), std::string::npos);
  EXPECT_NE(refusal(x, qw, sw, 256, y).find("group size 256"), std::string::npos);
  Tensor w16 = host_tensor(DType::BF16, {8, 192});
  EXPECT_NE(refusal(x, w16, sw, 64, y).find("weight must be I8"), std::string::npos);
  EXPECT_NE(refusal(x, qw, random_f32({9}, 4), 64, y).find("weight_scale [9]"), std::string::npos);
  EXPECT_NE(refusal(x, qw, random_f32({8, 2}, 4), 64, y).find("weight_scale [8, 2]"), std::string::npos);
  EXPECT_NE(refusal(x, qw, host_tensor(DType::BF16, {8}), 64, y).find("is not F32"), std::string::npos);
  EXPECT_NE(refusal(x, random_i8(8, 128, 5, -127), sw, 64, y).find("does not match x"), std::string::npos);
  // 132104 = 2^31 / (127 · 128) is the widest the int32 sum holds; the next group is refused.
  const Tensor wide_x = host_tensor(DType::F32, {1, 132160}), wide_w = host_tensor(DType::I8, {1, 132160});
  Tensor wide_y = host_tensor(DType::F32, {1, 1});
  EXPECT_NE(refusal(wide_x, wide_w, random_f32({1}, 4), 64, wide_y).find("width 132160 could overflow the int32 sum (at most 132104)"),
            std::string::npos);
  Tensor y_bad = host_tensor(DType::F32, {3, 7});
  EXPECT_NE(refusal(x, qw, sw, 64, y_bad).find("is not [M, N]"), std::string::npos);
}

// The cases bench/int8_convrot_ref.py --write-cases wrote: for each width K, "K<K>.x" [M, K],
// ".q_w" I8 [N, K], ".w_scale" [N, 1], ".bias" [N], and the reference's ".x_rot", ".q_x" I8,
// ".s_x" [M, 1], ".y" [M, N].
TEST(Int8ConvRot, HostOpIsThePyTorchReference) {
  const std::shared_ptr<SafetensorsFile> f =
      SafetensorsFile::open(std::string(MOSSINFER_TEST_DATA) + "/int8_convrot_cases.safetensors");
  std::unique_ptr<Backend> be = make_host_backend();
  int cases = 0;
  for (int64_t K : {128, 192, 384}) {
    const std::string p = "K" + std::to_string(K) + ".";
    const Tensor x = f->get(p + "x"), qw = f->get(p + "q_w"), sw = f->get(p + "w_scale"), bias = f->get(p + "bias");
    const Tensor x_rot = f->get(p + "x_rot"), q_x = f->get(p + "q_x"), s_x = f->get(p + "s_x"), want = f->get(p + "y");
    const int64_t M = x.rows(), N = qw.rows();
    ASSERT_EQ(x.cols(), K);
    std::vector<float> row(static_cast<size_t>(K));
    std::vector<int8_t> q(static_cast<size_t>(K));
    for (int64_t m = 0; m < M; ++m) {
      std::memcpy(row.data(), x.row<const float>(m), size_t(K) * sizeof(float));
      convrot::rotate_groups(row.data(), K, 64);
      ASSERT_EQ(std::memcmp(row.data(), x_rot.row<const float>(m), size_t(K) * sizeof(float)), 0) << p << m;
      const float s = convrot::quantize_row(row.data(), K, q.data());
      ASSERT_EQ(s, s_x.ptr<const float>()[m]) << p << m;
      ASSERT_EQ(std::memcmp(q.data(), q_x.row<const int8_t>(m), size_t(K)), 0) << p << m;
    }
    Tensor y = host_tensor(DType::F32, {M, N});
    be->core().linear_int8(x, qw, sw, &bias, 64, y);
    expect_same_bits(y, want);
    ++cases;
  }
  EXPECT_EQ(cases, 3);
}

}  // namespace
}  // namespace moss

namespace moss {
namespace {

// comfy_quant records as ComfyUI reads them (keys flat or under "params", group 256 by default),
// and every refusal with its exit status and the thing it names.
TEST(Int8ConvRot, ComfyQuantRecordsReadAsComfyUIReadsThem) {
  EXPECT_EQ(convrot::comfy_quant_group(convrot::comfy_quant_json(64), "r"), 64);
  EXPECT_EQ(convrot::comfy_quant_group(R"({"format":"int8_tensorwise","convrot":true})", "r"), 256);
  EXPECT_EQ(convrot::comfy_quant_group(R"({"format":"int8_tensorwise","params":{"convrot":true,"convrot_groupsize":16}})", "r"), 16);
  EXPECT_EQ(convrot::comfy_quant_group(R"({"params":{"format":"int8_tensorwise","convrot":true}})", "r"), 256);
  const std::vector<std::tuple<std::string, int, std::string>> refused = {
      {R"({"format": "convrot_w4a4", "convrot_groupsize": 64})", 2, "r: quantization format 'convrot_w4a4' is not supported"},
      {R"({"format": "float8_e4m3fn"})", 2, "format 'float8_e4m3fn' is not supported"},
      {R"({"format": "asym_w4a8_int8", "convrot": true})", 2, "format 'asym_w4a8_int8' is not supported"},
      {R"({"format": "int8_tensorwise"})", 2, "r: int8_tensorwise without convrot is not supported"},
      {R"({"format": "int8_tensorwise", "convrot": false})", 2, "without convrot"},
      {R"({"format": "int8_tensorwise", "convrot": "yes"})", 2, "without convrot"},
      {R"({"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 100})", 1, "convrot_groupsize 100 is not a power of 4"},
      {R"({"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": "256"})", 1, "convrot_groupsize \"256\" is not"},
      {R"({"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 2.5})", 1, "is not a power of 4"},
      {R"({"convrot": true})", 1, "r: comfy_quant has no format"},
      {R"([1, 2])", 1, "r: comfy_quant is not a JSON object"},
      {"{\"format\": \"int8_tens", 1, "is not a JSON object"},
      {"", 1, "is not a JSON object"},
  };
  for (const auto& [record, code, message] : refused) {
    try {
      convrot::comfy_quant_group(record, "r");
      ADD_FAILURE() << "accepted " << record;
    } catch (const Error& e) {
      EXPECT_EQ(int(e.code()), code) << record;
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace moss

namespace moss {
namespace {

// What a hook (the profiler, the measuring backend's memory count) sees of the op: its name with
// the weight's shape and group, and its scratch, the quantized rows and their scales.
TEST(Int8ConvRot, HookSeesTheOpAndItsScratch) {
  struct Hook : OpHook {
    std::vector<OpCall> calls;
    bool begin(const OpCall& c) override {
      calls.push_back(c);
      return true;
    }
    void end() override {}
  } hook;
  std::unique_ptr<Backend> be = make_host_backend();
  be->core().set_hook(&hook);
  const Tensor x = random_f32({5, 192}, 1);
  Tensor y = host_tensor(DType::F32, {5, 8});
  be->core().linear_int8(x, random_i8(8, 192, 2, -127), random_f32({8}, 3), nullptr, 64, y);
  be->core().set_hook(nullptr);
  ASSERT_EQ(hook.calls.size(), 1u);
  EXPECT_EQ(hook.calls[0].name, "core.linear_int8 8x192 g64");
  EXPECT_EQ(hook.calls[0].scratch_dtype, DType::I8);
  EXPECT_EQ(hook.calls[0].scratch_dims, (std::vector<int64_t>{5, 196}));
}

}  // namespace
}  // namespace moss
