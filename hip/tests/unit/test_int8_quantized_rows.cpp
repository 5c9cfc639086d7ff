// The INT8 ConvRot activation ops of the host reference against their written arithmetic
// (docs/int8_convrot.md sections 2-4 and 9): rotate_quantize is convrot::rotate_groups then
// convrot::quantize_row on each fp32 row; linear_int8 from QuantizedRows is the x-taking op's
// second half (the same bits); the quantizing producers (norm_modulate_quantized,
// add_norm_modulate_quantized, gated_unit_quantized) quantize the producer's fp32 values, never
// their bf16 roundings, and write y from the same values when asked. And every refusal of a
// QuantizedRows operand that does not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "tensor/int8_convrot.h"
#include "test_support.h"

namespace moss {
namespace {

QuantizedRows host_rows(int64_t m, int64_t k, int64_t group) {
  QuantizedRows q{host_tensor(DType::I8, {m, k}), host_tensor(DType::F32, {m, 1}), group};
  // Poison: a row the op skips would keep it.
  std::memset(q.q.data, 0x55, q.q.nbytes());
  for (int64_t r = 0; r < m; ++r) q.scale.ptr<float>()[r] = -7.0f;
  return q;
}

// The written arithmetic: each row of the f32 matrix `rows` copied, rotated, quantized.
QuantizedRows expected_rows(const Tensor& rows, int64_t group) {
  const int64_t M = rows.rows(), K = rows.cols();
  QuantizedRows q = host_rows(M, K, group);
  std::vector<float> v(static_cast<size_t>(K));
  for (int64_t r = 0; r < M; ++r) {
    std::memcpy(v.data(), rows.row<const float>(r), size_t(K) * sizeof(float));
    convrot::rotate_groups(v.data(), K, group);
    q.scale.ptr<float>()[r] = convrot::quantize_row(v.data(), K, q.q.ptr<int8_t>() + r * K);
  }
  return q;
}

bool same_bits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}

// Returns the number of differing int8 values (the scales must match bit for bit).
int64_t compare_rows(const QuantizedRows& got, const QuantizedRows& want, const std::string& what) {
  EXPECT_EQ(got.group, want.group) << what;
  for (int64_t r = 0; r < want.rows(); ++r)
    EXPECT_TRUE(same_bits(got.scale.ptr<const float>()[r], want.scale.ptr<const float>()[r]))
        << what << ": scale of row " << r << ": " << got.scale.ptr<const float>()[r] << " against "
        << want.scale.ptr<const float>()[r];
  int64_t differ = 0;
  for (int64_t i = 0; i < want.q.numel(); ++i) differ += got.q.ptr<const int8_t>()[i] != want.q.ptr<const int8_t>()[i];
  return differ;
}

// Rows 1, 2, 3 of x: a NaN, an infinity, all zeros (when x has them).
void add_special_rows(Tensor& x) {
  const int64_t K = x.cols();
  if (x.rows() > 1) x.row<float>(1)[K / 2] = std::nanf("");
  if (x.rows() > 2) x.row<float>(2)[0] = -INFINITY;
  if (x.rows() > 3)
    for (int64_t c = 0; c < K; ++c) x.row<float>(3)[c] = 0.0f;
}

TEST(Int8QuantizedRows, RotateQuantizeIsTheFormatsArithmeticRowByRow) {
  std::unique_ptr<Backend> be = make_host_backend();
  // Groups 4 to 1024, one and several groups per row, odd row counts, x as a column slice.
  struct Case {
    int64_t m, k, group, offset;
  };
  for (const Case c : {Case{1, 4, 4, 0}, Case{7, 48, 16, 0}, Case{9, 192, 64, 3}, Case{5, 256, 256, 0},
                       Case{6, 1024, 256, 1}, Case{3, 2048, 1024, 0}, Case{65, 3072, 256, 0}}) {
    Tensor wide = random_normal({c.m, c.k + c.offset}, uint32_t(c.k + c.m), 2.0f);
    Tensor x = wide.slice_cols(c.offset, c.k);
    add_special_rows(x);
    QuantizedRows got = host_rows(c.m, c.k, c.group);
    be->core().rotate_quantize(x, got);
    Tensor dense = host_tensor(DType::F32, {c.m, c.k});
    be->core().copy(x, dense);
    const std::string what = std::to_string(c.m) + "x" + std::to_string(c.k) + " g" + std::to_string(c.group);
    EXPECT_EQ(compare_rows(got, expected_rows(dense, c.group), what), 0) << what;
    if (c.m > 3) {  // the non-finite rows: NaN and zeros; the zero row: the floor and zeros
      EXPECT_TRUE(std::isnan(got.scale.ptr<float>()[1]));
      EXPECT_TRUE(std::isnan(got.scale.ptr<float>()[2]));
      EXPECT_EQ(got.scale.ptr<float>()[3], convrot::kScaleFloor);
      for (int64_t i = c.k; i < 4 * c.k; ++i) EXPECT_EQ(got.q.ptr<int8_t>()[i], 0) << what << " element " << i;
    }
  }
}

TEST(Int8QuantizedRows, LinearFromQuantizedRowsIsLinearInt8sSecondHalf) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t M = 13, K = 192, N = 21, G = 64;
  Tensor x = random_normal({M, K}, 5);
  add_special_rows(x);
  const Tensor qw = random_i8(N, K, 6);
  const Tensor sw = random_normal({N, 1}, 7, 1e-2f);
  Tensor bf = random_normal({N}, 8), bb = host_tensor(DType::BF16, {N});
  for (int64_t i = 0; i < N; ++i) bb.ptr<uint16_t>()[i] = f32_to_bf16(bf.ptr<float>()[i]);
  for (const Tensor* bias : std::vector<const Tensor*>{nullptr, &bf, &bb}) {
    Tensor whole = host_tensor(DType::F32, {M, N}), halves = host_tensor(DType::F32, {M, N});
    be->core().linear_int8(x, qw, sw, bias, G, whole);
    QuantizedRows xq = host_rows(M, K, G);
    be->core().rotate_quantize(x, xq);
    be->core().linear_int8(xq, qw, sw, bias, halves);
    for (int64_t i = 0; i < M * N; ++i)
      ASSERT_TRUE(same_bits(halves.ptr<float>()[i], whole.ptr<float>()[i])) << "element " << i;
    // A row slice of the quantized rows is the same rows' product.
    Tensor part = host_tensor(DType::F32, {5, N});
    be->core().linear_int8(xq.slice_rows(4, 5), qw, sw, bias, part);
    for (int64_t i = 0; i < 5 * N; ++i) ASSERT_TRUE(same_bits(part.ptr<float>()[i], whole.ptr<float>()[4 * N + i]));
  }
}

// The DiT's pre-GEMM passes with a quantized output: the fp32 rows of norm_modulate /
// add_norm_modulate, quantized; y from the same rows; x as add_norm_modulate leaves it.
TEST(Int8QuantizedRows, NormModulateQuantizesItsFp32Rows) {
  std::unique_ptr<Backend> be = make_host_backend();
  for (const int64_t K : {int64_t(192), int64_t(3072)}) {
    const int64_t M = 33, G = K == 192 ? 64 : 256;
    Tensor x = random_normal({M, K}, 11, 3.0f);
    add_special_rows(x);
    const Tensor w = random_normal({K}, 12), shift = random_normal({K}, 13, 0.3f), scale = random_normal({K}, 14, 0.3f);
    const Tensor d0 = random_normal({M, K}, 15), d1 = random_normal({M, K}, 16), g0 = random_normal({K}, 17),
                 g1 = random_normal({K}, 18);
    const GatedUpdates one = GatedUpdates().then(d0, g0), two = GatedUpdates().then(d0, g0).then(d1, g1);
    struct Case {
      const GatedUpdates* updates;  // null: norm_modulate_quantized
      SumTo sum;
      DType y;  // U8: no y
    };
    for (const Case c : {Case{nullptr, SumTo::X, DType::U8}, Case{nullptr, SumTo::X, DType::BF16},
                         Case{&one, SumTo::Nowhere, DType::F32}, Case{&two, SumTo::X, DType::BF16},
                         Case{&two, SumTo::Nowhere, DType::U8}}) {
      const std::string what = "K " + std::to_string(K) + (c.updates ? " updates " + std::to_string(c.updates->count) : "") +
                               (c.sum == SumTo::X ? " sum to x" : " sum nowhere") + " y " + dtype_name(c.y);
      // The reference: the unfused op into f32 rows (on copies of x), then the written arithmetic.
      Tensor x_ref = host_tensor(DType::F32, {M, K}), x_got = host_tensor(DType::F32, {M, K});
      be->core().copy(x, x_ref);
      be->core().copy(x, x_got);
      Tensor rows = host_tensor(DType::F32, {M, K});
      if (c.updates) be->core().add_norm_modulate(x_ref, *c.updates, c.sum, w, 1e-6f, shift, scale, rows);
      else be->core().norm_modulate(x_ref, w, 1e-6f, shift, scale, rows);
      QuantizedRows got = host_rows(M, K, G);
      Tensor y = host_tensor(c.y == DType::U8 ? DType::F32 : c.y, {M, K});
      Tensor* yp = c.y == DType::U8 ? nullptr : &y;
      if (c.updates) be->core().add_norm_modulate_quantized(x_got, *c.updates, c.sum, w, 1e-6f, shift, scale, got, yp);
      else be->core().norm_modulate_quantized(x_got, w, 1e-6f, shift, scale, got, yp);
      EXPECT_EQ(compare_rows(got, expected_rows(rows, G), what), 0) << what;
      for (int64_t i = 0; i < M * K; ++i)
        ASSERT_TRUE(same_bits(x_got.ptr<float>()[i], x_ref.ptr<float>()[i])) << what << ": x at " << i;
      if (yp) {
        Tensor want = host_tensor(c.y, {M, K});
        be->core().copy(rows, want);
        ASSERT_EQ(std::memcmp(y.data, want.data, y.nbytes()), 0) << what << ": y is not the rows in its dtype";
      }
      // Quantizing the rows' bf16 roundings instead would move some values by a step: the test
      // sees which rows were quantized.
      Tensor rounded = host_tensor(DType::BF16, {M, K}), back = host_tensor(DType::F32, {M, K});
      be->core().copy(rows, rounded);
      be->core().copy(rounded, back);
      QuantizedRows from_bf16 = expected_rows(back, G);
      int64_t moved = 0;
      for (int64_t i = 0; i < M * K; ++i) moved += from_bf16.q.ptr<int8_t>()[i] != got.q.ptr<int8_t>()[i];
      EXPECT_GT(moved, 0) << what << ": the bf16 roundings quantize alike; the case cannot tell them apart";
    }
  }
}

TEST(Int8QuantizedRows, GatedUnitQuantizesItsFp32Values) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t M = 19, F = 384, G = 64;
  Tensor a = random_normal({M, 2 * F}, 21, 4.0f);
  add_special_rows(a);
  const Tensor hidden = a.slice_cols(0, F), gate = a.slice_cols(F, F);
  for (const GatedUnit kind : {GatedUnit::Situ, GatedUnit::SwiGlu, GatedUnit::SigmoidGate}) {
    Tensor unit = host_tensor(DType::F32, {M, F});
    be->core().gated_unit(kind, hidden, gate, unit);
    QuantizedRows got = host_rows(M, F, G);
    be->core().gated_unit_quantized(kind, hidden, gate, got);
    EXPECT_EQ(compare_rows(got, expected_rows(unit, G), "gated unit"), 0) << int(kind);
    // With out (bf16): the same rows, out the unit's values rounded once.
    QuantizedRows again = host_rows(M, F, G);
    Tensor out = host_tensor(DType::BF16, {M, F}), want = host_tensor(DType::BF16, {M, F});
    be->core().gated_unit_quantized(kind, hidden, gate, again, &out);
    EXPECT_EQ(compare_rows(again, got, "gated unit with out"), 0) << int(kind);
    be->core().copy(unit, want);
    EXPECT_EQ(std::memcmp(out.data, want.data, out.nbytes()), 0) << int(kind);
  }
}

// The INT8 linear with the gated unit on its product's halves (the DiT's ffn_up_gate): out is
// the unit, in fp32, of linear_int8's fp32 outputs, written out here from its definition (the
// int32 sums of the quantized rows, float(A)·(s_x·s_w) then + bias, then the unit's formula of
// CoreOps::gated_unit), bit for bit; the same as the two ops in sequence; a row slice of the
// quantized rows gives those rows' outputs. F odd (21), every unit, bias none / f32 / bf16, rows
// of NaN, infinity and zeros.
TEST(Int8QuantizedRows, LinearInt8GatedUnitIsLinearInt8ThenTheUnit) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t M = 13, K = 192, F = 21, G = 64;
  Tensor x = random_normal({M, K}, 41, 3.0f);
  add_special_rows(x);
  QuantizedRows xq = host_rows(M, K, G);
  be->core().rotate_quantize(x, xq);
  const Tensor qw = random_i8(2 * F, K, 42);
  const Tensor sw = random_normal({2 * F, 1}, 43, 2e-2f);
  Tensor bf = random_normal({2 * F}, 44), bb = host_tensor(DType::BF16, {2 * F});
  for (int64_t i = 0; i < 2 * F; ++i) bb.ptr<uint16_t>()[i] = f32_to_bf16(bf.ptr<float>()[i]);
  const auto sigmoid = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
  for (const GatedUnit kind : {GatedUnit::Situ, GatedUnit::SwiGlu, GatedUnit::SigmoidGate}) {
    for (const Tensor* bias : std::vector<const Tensor*>{nullptr, &bf, &bb}) {
      const std::string what = "unit " + std::to_string(int(kind)) + (bias ? " bias " + std::string(dtype_name(bias->dtype)) : "");
      Tensor got = host_tensor(DType::F32, {M, F});
      be->core().linear_int8_gated_unit(kind, xq, qw, sw, bias, got);
      // Its definition, element by element.
      const auto product = [&](int64_t r, int64_t o) {
        int32_t acc = 0;
        for (int64_t i = 0; i < K; ++i) acc += int32_t(xq.q.ptr<int8_t>()[r * K + i]) * int32_t(qw.ptr<int8_t>()[o * K + i]);
        const float v = float(acc) * (xq.scale.ptr<float>()[r] * sw.ptr<float>()[o]);
        if (!bias) return v;
        return v + (bias->dtype == DType::BF16 ? bf16_to_f32(bias->ptr<uint16_t>()[o]) : bias->ptr<float>()[o]);
      };
      int64_t differ = 0;
      for (int64_t r = 0; r < M; ++r)
        for (int64_t c = 0; c < F; ++c) {
          const float a = product(r, c), g = product(r, F + c);
          float want = 0.0f;
          if (kind == GatedUnit::Situ) want = (4.0f * std::tanh(g / 4.0f) * sigmoid(g)) * (25.0f * std::tanh(a / 25.0f));
          else if (kind == GatedUnit::SwiGlu) want = a * sigmoid(a) * g;
          else want = a * sigmoid(g);
          differ += !same_bits(got.row<float>(r)[c], want);
        }
      EXPECT_EQ(differ, 0) << what;
      // The two ops in sequence: the same bits.
      Tensor t = host_tensor(DType::F32, {M, 2 * F}), unit = host_tensor(DType::F32, {M, F});
      be->core().linear_int8(xq, qw, sw, bias, t);
      be->core().gated_unit(kind, t.slice_cols(0, F), t.slice_cols(F, F), unit);
      for (int64_t i = 0; i < M * F; ++i)
        ASSERT_TRUE(same_bits(got.ptr<float>()[i], unit.ptr<float>()[i])) << what << " element " << i;
      // The NaN and infinity rows (1, 2) give NaN outputs, the zero row (3) the unit of the bias.
      EXPECT_TRUE(std::isnan(got.row<float>(1)[0]) && std::isnan(got.row<float>(2)[F - 1])) << what;
      Tensor part = host_tensor(DType::F32, {5, F});
      be->core().linear_int8_gated_unit(kind, xq.slice_rows(6, 5), qw, sw, bias, part);
      for (int64_t i = 0; i < 5 * F; ++i) ASSERT_TRUE(same_bits(part.ptr<float>()[i], got.ptr<float>()[6 * F + i])) << what;
    }
  }
}

// Every operand of linear_int8_gated_unit that does not fit is refused by name, before any work.
TEST(Int8QuantizedRows, LinearInt8GatedUnitRefusesShapesByName) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t M = 4, K = 192, F = 8;
  const Tensor x = random_normal({M, K}, 51);
  QuantizedRows xq = host_rows(M, K, 64);
  be->core().rotate_quantize(x, xq);
  const Tensor qw = random_i8(2 * F, K, 52), sw = random_normal({2 * F}, 53), bias = random_normal({2 * F}, 54);
  const auto refusal = [&](const QuantizedRows& q, const Tensor& w, const Tensor& s, const Tensor* b, Tensor out) {
    const float poison = -7.0f;
    if (out.dtype == DType::F32 && out.contiguous())
      for (int64_t i = 0; i < out.numel(); ++i) out.ptr<float>()[i] = poison;
    try {
      be->core().linear_int8_gated_unit(GatedUnit::Situ, q, w, s, b, out);
    } catch (const std::invalid_argument& e) {
      // Nothing written before the refusal.
      if (out.dtype == DType::F32 && out.contiguous()) {
        for (int64_t i = 0; i < out.numel(); ++i) EXPECT_EQ(out.ptr<float>()[i], poison);
      }
      return std::string(e.what());
    }
    return std::string("no refusal");
  };
  const auto f32 = [](int64_t r, int64_t c) { return host_tensor(DType::F32, {r, c}); };
  EXPECT_EQ(refusal(xq, qw, sw, &bias, f32(M, F)), "no refusal");
  // An odd row count of w: no hidden / gate halves.
  EXPECT_NE(refusal(xq, random_i8(2 * F + 1, K, 55), random_normal({2 * F + 1}, 56), nullptr, f32(M, F))
                .find("linear_int8_gated_unit: weight [17, 192] has an odd number of rows"),
            std::string::npos);
  // w_scale of another size or dtype.
  EXPECT_NE(refusal(xq, qw, random_normal({2 * F - 1}, 57), nullptr, f32(M, F)).find("weight_scale [15] F32 is not F32 [N]"),
            std::string::npos);
  EXPECT_NE(refusal(xq, qw, random_normal({F}, 58), nullptr, f32(M, F)).find("weight_scale [8]"), std::string::npos);
  EXPECT_NE(refusal(xq, qw, host_tensor(DType::BF16, {2 * F}), nullptr, f32(M, F)).find("weight_scale [16] BF16"),
            std::string::npos);
  // out of another shape or dtype: [M, 2F] (the product's), [M, F + 1], [M + 1, F], bf16.
  for (const Tensor& out : {f32(M, 2 * F), f32(M, F + 1), f32(M + 1, F)})
    EXPECT_NE(refusal(xq, qw, sw, nullptr, out).find("out " + out.shape_str() + " F32 is not F32 [4, 8]"), std::string::npos)
        << out.shape_str();
  EXPECT_NE(refusal(xq, qw, sw, nullptr, host_tensor(DType::BF16, {M, F})).find("out [4, 8] BF16 is not F32 [4, 8]"),
            std::string::npos);
  // The bias: F elements (one half's) instead of 2F.
  const Tensor half_bias = random_normal({F}, 59);
  EXPECT_NE(refusal(xq, qw, sw, &half_bias, f32(M, F)).find("bias [8] is not [16]"), std::string::npos);
  // The weight: another width, another dtype.
  EXPECT_NE(refusal(xq, random_i8(2 * F, K + 4, 60), sw, nullptr, f32(M, F)).find("weight [16, 196] does not match x"),
            std::string::npos);
  EXPECT_NE(refusal(xq, host_tensor(DType::BF16, {2 * F, K}), sw, nullptr, f32(M, F)).find("weight must be I8"),
            std::string::npos);
  // The quantized rows: a group that does not divide K, a scale of another count.
  QuantizedRows q = xq;
  q.group = 256;
  EXPECT_NE(refusal(q, qw, sw, nullptr, f32(M, F)).find("group size 256"), std::string::npos);
  q = xq;
  q.scale = host_tensor(DType::F32, {M + 1, 1});
  EXPECT_NE(refusal(q, qw, sw, nullptr, f32(M, F)).find("scale [5, 1] F32 is not contiguous F32 [4, 1]"),
            std::string::npos);
}

TEST(Int8QuantizedRows, RefusesRowsThatDoNotFitByName) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t M = 4, K = 192;
  const Tensor x = random_normal({M, K}, 31);
  const Tensor w = random_normal({K}, 32), v = random_normal({K}, 33);
  const Tensor qw = random_i8(8, K, 34), sw = random_normal({8}, 35);
  auto refusal = [&](QuantizedRows q, int which) {
    try {
      Tensor y = host_tensor(DType::F32, {M, 8});
      switch (which) {
        case 0: be->core().rotate_quantize(x, q); break;
        case 1: be->core().norm_modulate_quantized(x, w, 1e-6f, v, v, q, nullptr); break;
        case 2: be->core().gated_unit_quantized(GatedUnit::Situ, x, x, q); break;
        default: be->core().linear_int8(q, qw, sw, nullptr, y); break;
      }
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no refusal");
  };
  const QuantizedRows good = host_rows(M, K, 64);
  for (int op = 0; op < 4; ++op) {
    QuantizedRows q = good;
    q.group = 128;  // not a power of 4
    EXPECT_NE(refusal(q, op).find("group size 128 is not a power of 4 dividing the width 192"), std::string::npos) << op;
    q.group = 256;  // does not divide 192
    EXPECT_NE(refusal(q, op).find("group size 256"), std::string::npos) << op;
    q = good;
    q.q = host_tensor(DType::U8, {M, K});
    EXPECT_NE(refusal(q, op).find("are not contiguous I8 [4, 192]"), std::string::npos) << op;
    q = good;
    q.q = host_tensor(DType::I8, {M, 2 * K}).slice_cols(0, K);  // not contiguous
    EXPECT_NE(refusal(q, op).find("are not contiguous I8"), std::string::npos) << op;
    if (op < 3) {  // the producers: rows of another count
      q = good;
      q.q = host_tensor(DType::I8, {M + 1, K});
      EXPECT_NE(refusal(q, op).find("are not contiguous I8 [4, 192]"), std::string::npos) << op;
    }
    q = good;
    q.scale = host_tensor(DType::F32, {M + 1, 1});
    EXPECT_NE(refusal(q, op).find("scale [5, 1] F32 is not contiguous F32 [4, 1]"), std::string::npos) << op;
    q = good;
    q.scale = host_tensor(DType::BF16, {M, 1});
    EXPECT_NE(refusal(q, op).find("scale [4, 1] BF16"), std::string::npos) << op;
  }
  // The product: a weight of another width or dtype, y of another shape.
  Tensor y = host_tensor(DType::F32, {M, 8});
  EXPECT_THROW(be->core().linear_int8(good, random_i8(8, K + 4, 1), sw, nullptr, y), std::invalid_argument);
  EXPECT_THROW(be->core().linear_int8(good, host_tensor(DType::BF16, {8, K}), sw, nullptr, y), std::invalid_argument);
  Tensor y_bad = host_tensor(DType::F32, {M + 1, 8});
  EXPECT_THROW(be->core().linear_int8(good, qw, sw, nullptr, y_bad), std::invalid_argument);
  // A producer's y of another shape, and y that is x.
  QuantizedRows q = good;
  Tensor y_wide = host_tensor(DType::F32, {M, K + 1});
  EXPECT_THROW(be->core().norm_modulate_quantized(x, w, 1e-6f, v, v, q, &y_wide), std::invalid_argument);
  Tensor xs = random_normal({M, K}, 36);
  const Tensor d = random_normal({M, K}, 37);
  EXPECT_THROW(be->core().add_norm_modulate_quantized(xs, GatedUpdates().then(d, v), SumTo::X, w, 1e-6f, v, v, q, &xs),
               std::invalid_argument);
}

}  // namespace
}  // namespace moss
