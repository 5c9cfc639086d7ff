// The host reference of P.V in fp8's values (CoreOps::quantize_values_fp8; ops/core_ops.h):
// - against the arithmetic written out here from the definition (amax over the keys, s = max(amax /
//   448, 1e-30) by IEEE division, each code the e4m3 of v / s, zeros past the keys), over key counts
//   below, at and past a multiple of the padding, rows of one value, of zeros, with a NaN or an
//   infinity, and values spanning e4m3's subnormals to its top;
// - properties the kernels rely on: the row's largest |v| gets code ±448 exactly, every code
//   decodes times s to within e4m3's half step of v, and padding is zero whatever vt holds there;
// - every class of bad operand refused by the public op, naming it.
// The GPU kernel is compared with this body at tolerance 0 by `moss-check kernels --family dit
// --filter fp8` (tools/check/cases/fp8_values_cases.h).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/fp8_e4m3.h"
#include "ops/backend.h"
#include "test_support.h"

namespace moss {
namespace {

CoreOps::Fp8Values values_for(int64_t rows, int64_t keys) {
  const int64_t pad = CoreOps::transposed_v_keys(keys);
  return {host_tensor(DType::U8, {rows, pad}), host_tensor(DType::F32, {rows, 1}), keys};
}

// Vᵀ [rows, pad] of random values whose magnitudes span 2^-12 .. 2^6 (so the codes reach e4m3's
// subnormals), `junk` in the padding columns (the op must not read them).
Tensor random_vt(int64_t rows, int64_t keys, uint32_t seed, float junk = 0.0f) {
  const int64_t pad = CoreOps::transposed_v_keys(keys);
  Tensor vt = host_tensor(DType::F32, {rows, pad});
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-12, 6);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < pad; ++j) vt.ptr<float>()[r * pad + j] = j < keys ? std::ldexp(normal(rng), exponent(rng)) : junk;
  return vt;
}

struct Expected {
  std::vector<uint8_t> codes;
  std::vector<float> scale;
};
Expected expected(const Tensor& vt, int64_t keys) {
  const int64_t rows = vt.rows(), pad = vt.cols();
  Expected e{std::vector<uint8_t>(size_t(rows * pad), 0), std::vector<float>(size_t(rows))};
  for (int64_t r = 0; r < rows; ++r) {
    const float* v = vt.ptr<const float>() + r * pad;
    float amax = 0.0f;
    bool finite = true;
    for (int64_t j = 0; j < keys; ++j) {
      finite = finite && std::isfinite(v[j]);
      amax = std::max(amax, std::fabs(v[j]));
    }
    if (!finite) {
      e.scale[size_t(r)] = NAN;
      continue;
    }
    const float s = std::max(amax / 448.0f, 1e-30f);
    e.scale[size_t(r)] = s;
    for (int64_t j = 0; j < keys; ++j) e.codes[size_t(r * pad + j)] = e4m3::from_f32(v[j] / s);
  }
  return e;
}

void expect_matches(const CoreOps::Fp8Values& got, const Expected& want) {
  for (size_t r = 0; r < want.scale.size(); ++r) {
    const float g = got.scale.ptr<const float>()[r], w = want.scale[r];
    if (std::isnan(w)) EXPECT_TRUE(std::isnan(g)) << "row " << r;
    else EXPECT_EQ(g, w) << "row " << r;
  }
  const int64_t n = got.codes.numel();
  int64_t differ = 0;
  for (int64_t i = 0; i < n; ++i) differ += got.codes.ptr<const uint8_t>()[i] != want.codes[size_t(i)];
  EXPECT_EQ(differ, 0);
}

TEST(Fp8Values, HostBodyIsTheDefinitionOverKeyCounts) {
  auto be = make_host_backend();
  for (int64_t keys : {1, 5, 63, 64, 65, 200, 4160}) {
    SCOPED_TRACE(keys);
    const int64_t rows = keys > 1000 ? 8 : 24;
    const Tensor vt = random_vt(rows, keys, uint32_t(keys), keys % 2 ? 7.0f : 0.0f);
    CoreOps::Fp8Values out = values_for(rows, keys);
    be->core().quantize_values_fp8(vt, keys, out);
    expect_matches(out, expected(vt, keys));
  }
}

TEST(Fp8Values, SpecialRows) {
  auto be = make_host_backend();
  const int64_t keys = 70, rows = 6, pad = CoreOps::transposed_v_keys(keys);
  Tensor vt = random_vt(rows, keys, 3, 99.0f);
  float* v = vt.ptr<float>();
  for (int64_t j = 0; j < keys; ++j) v[0 * pad + j] = 0.0f;            // all zeros: the floor
  v[1 * pad + 17] = NAN;                                                // a NaN: scale NaN, codes 0
  v[2 * pad + 69] = -INFINITY;                                          // an infinity (the last key)
  for (int64_t j = 0; j < keys; ++j) v[3 * pad + j] = -2.5f;            // one value: every code -448
  for (int64_t j = 0; j < keys; ++j) v[4 * pad + j] = j == 9 ? 3e38f : 1e-30f;  // huge amax: tiny ones vanish
  CoreOps::Fp8Values out = values_for(rows, keys);
  be->core().quantize_values_fp8(vt, keys, out);
  expect_matches(out, expected(vt, keys));
  const float* s = out.scale.ptr<const float>();
  const uint8_t* c = out.codes.ptr<const uint8_t>();
  EXPECT_EQ(s[0], 1e-30f);
  EXPECT_TRUE(std::isnan(s[1]) && std::isnan(s[2]));
  for (int64_t j = 0; j < pad; ++j) {
    EXPECT_EQ(c[0 * pad + j], 0);
    EXPECT_EQ(c[1 * pad + j], 0);
    EXPECT_EQ(c[2 * pad + j], 0);
    EXPECT_EQ(c[3 * pad + j], j < keys ? 0xfe : 0);
    EXPECT_EQ(c[4 * pad + j], j == 9 ? 0x7e : 0);
  }
  EXPECT_EQ(s[3], 2.5f / 448.0f);
}

TEST(Fp8Values, CodesReproduceTheValuesWithinHalfAStep) {
  auto be = make_host_backend();
  const int64_t keys = 300, rows = 16, pad = CoreOps::transposed_v_keys(keys);
  const Tensor vt = random_vt(rows, keys, 5, -3.0f);
  CoreOps::Fp8Values out = values_for(rows, keys);
  be->core().quantize_values_fp8(vt, keys, out);
  for (int64_t r = 0; r < rows; ++r) {
    const float s = out.scale.ptr<const float>()[r];
    int top = 0;
    for (int64_t j = 0; j < keys; ++j) {
      const uint8_t code = out.codes.ptr<const uint8_t>()[r * pad + j];
      const double v = vt.ptr<const float>()[r * pad + j], got = double(e4m3::to_f32(code)) * s;
      top += (code & 0x7f) == 0x7e;
      // e4m3's relative half step is 2^-4 for normals; below 2^-6 · s the step is 2^-9 · s.
      EXPECT_LE(std::fabs(got - v), std::max(std::fabs(v) * 0x1p-4, 0x1p-10 * s) * (1 + 1e-6)) << r << "," << j;
    }
    EXPECT_GE(top, 1) << "row " << r << ": the largest |v| is code 448";
    for (int64_t j = keys; j < pad; ++j) EXPECT_EQ(out.codes.ptr<const uint8_t>()[r * pad + j], 0);
  }
}

TEST(Fp8Values, BadOperandsAreRefusedByName) {
  auto be = make_host_backend();
  CoreOps& ops = be->core();
  const int64_t keys = 40, rows = 16, pad = CoreOps::transposed_v_keys(keys);
  const Tensor vt = random_vt(rows, keys, 1);
  auto refused = [&](const char* what, auto&& fn, const std::string& words) {
    try {
      fn();
      ADD_FAILURE() << what << ": not refused";
    } catch (const std::exception& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("quantize_values_fp8: "), std::string::npos) << what << ": " << msg;
      EXPECT_NE(msg.find(words), std::string::npos) << what << ": " << msg;
    }
  };
  using V = CoreOps::Fp8Values;
  const std::vector<std::tuple<const char*, V, std::string>> bad = {
      {"codes dtype", {host_tensor(DType::I8, {rows, pad}), host_tensor(DType::F32, {rows, 1}), keys}, "codes"},
      {"codes rows", {host_tensor(DType::U8, {rows - 1, pad}), host_tensor(DType::F32, {rows, 1}), keys}, "codes"},
      {"codes unpadded", {host_tensor(DType::U8, {rows, keys}), host_tensor(DType::F32, {rows, 1}), keys}, "codes"},
      {"scale count", {host_tensor(DType::U8, {rows, pad}), host_tensor(DType::F32, {rows + 1, 1}), keys}, "scale"},
      {"scale dtype", {host_tensor(DType::U8, {rows, pad}), host_tensor(DType::BF16, {rows, 1}), keys}, "scale"},
      {"keys", {host_tensor(DType::U8, {rows, pad}), host_tensor(DType::F32, {rows, 1}), keys - 1}, "keys"},
      {"places", {host_tensor(DType::U8, {rows, pad}), Tensor(nullptr, DType::F32, {rows, 1}, Where::Device), keys},
       "different places"},
  };
  for (const auto& [what, v0, words] : bad) {
    V v = v0;
    refused(what, [&] { ops.quantize_values_fp8(vt, keys, v); }, words);
  }
  V good = values_for(rows, keys);
  refused("no keys", [&] { ops.quantize_values_fp8(vt, 0, good); }, "keys must be positive");
  refused("vt unpadded", [&] { ops.quantize_values_fp8(host_tensor(DType::F32, {rows, keys}), keys, good); }, "vt");
  refused("vt keys", [&] { ops.quantize_values_fp8(vt, keys + 64, good); }, "vt");
  refused("vt dtype", [&] { ops.quantize_values_fp8(host_tensor(DType::BF16, {rows, pad}), keys, good); }, "vt must be f32");
  ops.quantize_values_fp8(vt, keys, good);  // and the good operands pass
}

}  // namespace
}  // namespace moss
