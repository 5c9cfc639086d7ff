// The quantizing norm kernel's own source (kernels/rows.hip's norm_modulate register kernel with
// the rotation and quantization of kernels/int8_row_regs.h, or kernels/int8_row_lds.h for group
// 1024 and widths not a multiple of 16; rows_add_norm_modulate_quantized) run
// on the host through the device emulation of tests/emulation/runtime/portability.h (workgroups
// as host threads with real barriers and lane exchanges), on the launch path the program runs
// (NVIDIA's native four waves a row; under MOSSINFER_KERNELS=portable AMD's one wave, ctest runs
// both). The contract moss-check checks on a GPU: the quantized rows are exactly the host's
// rotate_quantize of the kernel's own fp32 rows (asked for as an f32 y in the same launch), those
// rows are the host's norm within 1e-5, a launch with a bf16 y or none gives the same quantized
// rows, a stored sum is the host's, and a row wider than the kernel's LDS row is declined (the
// caller composes the passes). The same for the gated unit's row kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/portability.h"  // the emulation: tests/emulation comes first on the include path
#include "same_bits.h"

#include "kernels/rows.hip"
#include "ops/backend.h"
#include "tensor/tensor.h"

namespace {

using namespace moss;

struct Case {
  int64_t m, k, group;
  int updates;  // 0, 1 (f32 d) or 2 (bf16 d, as the DiT's)
  bool store;
};

std::string name(const Case& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.k) + " g" + std::to_string(c.group) + " updates " +
         std::to_string(c.updates) + (c.store ? " stored" : "");
}

void run_case(const Case& c, uint64_t seed) {
  SCOPED_TRACE(name(c));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t n = c.m * c.k;
  auto values = [&](int64_t count, float sd) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float& f : v) f = sd * normal(rng);
    return v;
  };
  std::vector<float> x = values(n, 2.0f), w = values(c.k, 0.5f), shift = values(c.k, 0.5f), scale = values(c.k, 0.5f);
  std::vector<float> gate[2] = {values(c.k, 0.5f), values(c.k, 0.5f)};
  x[size_t(1 * c.k + c.k / 2)] = std::nanf("");  // row 1: a NaN; row 2: an infinity
  x[size_t(2 * c.k)] = -INFINITY;
  // The updates as the kernel reads them (two: bf16 bits; one: f32) and as the host adds them.
  std::vector<float> d[2] = {values(n, 1.0f), values(n, 1.0f)};
  std::vector<uint16_t> d_bits[2];
  for (int i = 0; i < 2; ++i) {
    d_bits[i].resize(size_t(n));
    for (int64_t j = 0; j < n; ++j) {
      d_bits[i][size_t(j)] = f32_to_bf16(d[i][size_t(j)]);
      if (c.updates == 2) d[i][size_t(j)] = bf16_to_f32(d_bits[i][size_t(j)]);
    }
  }
  // The host: the unfused op into f32 rows (x updated on its copy when stored).
  std::unique_ptr<Backend> host = make_host_backend();
  Tensor xh = host_tensor(DType::F32, {c.m, c.k}), rows_h = host_tensor(DType::F32, {c.m, c.k});
  std::memcpy(xh.data, x.data(), size_t(n) * 4);
  auto vec_tensor = [&](std::vector<float>& v) { return Tensor(v.data(), DType::F32, {c.k}); };
  const Tensor wt = vec_tensor(w), sht = vec_tensor(shift), sct = vec_tensor(scale);
  const Tensor gt[2] = {vec_tensor(gate[0]), vec_tensor(gate[1])};
  const Tensor dt[2] = {Tensor(d[0].data(), DType::F32, {c.m, c.k}), Tensor(d[1].data(), DType::F32, {c.m, c.k})};
  GatedUpdates gu;
  for (int i = 0; i < c.updates; ++i) gu.then(dt[i], gt[i]);
  if (c.updates) host->core().add_norm_modulate(xh, gu, c.store ? SumTo::X : SumTo::Nowhere, wt, 1e-6f, sht, sct, rows_h);
  else host->core().norm_modulate(xh, wt, 1e-6f, sht, sct, rows_h);

  // The kernel, twice: with an f32 y (its fp32 rows), then with a bf16 y.
  RowsUpdates u;
  u.count = c.updates;
  u.store = c.store && c.updates > 0;
  for (int i = 0; i < c.updates; ++i) {
    u.d[i] = c.updates == 2 ? RowsMatrix{d_bits[i].data(), true, c.m, c.k, c.k} : RowsMatrix{d[i].data(), false, c.m, c.k, c.k};
    u.gate[i] = RowsVector{gate[i].data(), false};
  }
  const RowsVector wv{w.data(), false}, shv{shift.data(), false}, scv{scale.data(), false};
  std::vector<float> x1 = x, y1(size_t(n), std::nanf(""));
  std::vector<int8_t> q1(size_t(n), 0x55), q2(size_t(n), 0x55);
  std::vector<float> s1(size_t(c.m), -7.0f), s2(size_t(c.m), -7.0f);
  ASSERT_TRUE(rows_add_norm_modulate_quantized(RowsMatrix{x1.data(), false, c.m, c.k, c.k}, u, wv, 1e-6f, shv, scv,
                                               RowsMatrix{y1.data(), false, c.m, c.k, c.k}, c.group, q1.data(), s1.data(),
                                               nullptr));
  std::vector<float> x2 = x;
  std::vector<uint16_t> y2(size_t(n), 0xFFFF);
  ASSERT_TRUE(rows_add_norm_modulate_quantized(RowsMatrix{x2.data(), false, c.m, c.k, c.k}, u, wv, 1e-6f, shv, scv,
                                               RowsMatrix{y2.data(), true, c.m, c.k, c.k}, c.group, q2.data(), s2.data(),
                                               nullptr));
  // The quantized rows: the host's rotate_quantize of the kernel's own rows, bit for bit.
  Tensor rows_k = Tensor(y1.data(), DType::F32, {c.m, c.k});
  QuantizedRows want{host_tensor(DType::I8, {c.m, c.k}), host_tensor(DType::F32, {c.m, 1}), c.group};
  host->core().rotate_quantize(rows_k, want);
  int64_t differ = 0;
  for (int64_t i = 0; i < n; ++i) differ += q1[size_t(i)] != want.q.ptr<int8_t>()[i] || q2[size_t(i)] != q1[size_t(i)];
  EXPECT_EQ(differ, 0);
  for (int64_t r = 0; r < c.m; ++r) {
    EXPECT_TRUE(same_bits(s1[size_t(r)], want.scale.ptr<float>()[r])) << "row " << r;
    EXPECT_TRUE(same_bits(s2[size_t(r)], s1[size_t(r)])) << "row " << r;
  }
  EXPECT_TRUE(std::isnan(s1[1]) && std::isnan(s1[2])) << "the non-finite rows' scales are NaN";
  // The rows against the host's norm (the sum of squares in another order: relative L2 1e-5 over
  // the finite rows), y in bf16 their rounding, x as the host left it.
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = y1[size_t(i)], b = rows_h.ptr<float>()[i];
    if (i / c.k == 1 || i / c.k == 2) {  // all NaN; NaN at the infinity and the shift elsewhere (inv 0)
      ASSERT_TRUE(same_bits(a, b)) << "element " << i << ": " << a << " against " << b;
      continue;
    }
    num += (double(a) - b) * (double(a) - b);
    den += double(b) * b;
    ASSERT_EQ(y2[size_t(i)], f32_to_bf16(a)) << "bf16 y at " << i;
    ASSERT_TRUE(same_bits(x1[size_t(i)], xh.ptr<float>()[i])) << "x at " << i;
  }
  EXPECT_LE(std::sqrt(num / den), 1e-5);
}

TEST(Int8RowsEmulated, QuantizingNormIsTheActivationPassOnItsOwnRows) {
  const Case cases[] = {
      {5, 192, 64, 0, false},     // norm_modulate_quantized, the tiny model's width
      {4, 260, 4, 1, true},       // a partial last chunk, f32 d, the sum stored
      {4, 1024, 1024, 1, false},  // the largest group; the sum not stored (norm2)
      {4, 3072, 256, 2, true},    // the DiT's norm1: two bf16 updates stored
      {4, 1536, 16, 1, false},    // group 16: the register rotation without lane swaps
  };
  uint64_t seed = 77;
  for (const Case& c : cases) run_case(c, ++seed);
}

// The unit's row kernel: its values (out, f32) rows_gated_unit's bit for bit, the quantized rows
// the host's rotate_quantize of them, a second launch with a bf16 out the same rows and out their
// rounding; rows wider than its LDS row (8192) declined. Both of its paths: the register pass
// (a, b and out read and written 4 columns at a time) and the LDS stages (a row stride that
// breaks those accesses, a width not a multiple of 16).
TEST(Int8RowsEmulated, QuantizingUnitIsTheActivationPassOnItsOwnValues) {
  std::unique_ptr<Backend> host = make_host_backend();
  uint64_t seed = 99;
  struct Shape {
    int64_t k, group, pad;  // a and b: rows of k values, row stride k + pad
  };
  for (const GatedUnit kind : {GatedUnit::Situ, GatedUnit::SwiGlu}) {
    for (const Shape sh : {Shape{384, 64, 0}, Shape{8192, 256, 0}, Shape{384, 64, 1}, Shape{1028, 4, 0}}) {
      const int64_t m = 3, k = sh.k, n = m * k, group = sh.group, ld = k + sh.pad;
      SCOPED_TRACE(std::to_string(k) + " ld+" + std::to_string(sh.pad));
      std::mt19937_64 rng(++seed);
      std::normal_distribution<float> normal(0.0f, 3.0f);
      std::vector<float> a(static_cast<size_t>(m * ld)), b(static_cast<size_t>(m * ld));
      for (float& f : a) f = normal(rng);
      for (float& f : b) f = normal(rng);
      a[size_t(ld + 5)] = std::nanf("");  // row 1: a NaN
      const RowsMatrix am{a.data(), false, m, k, ld}, bm{b.data(), false, m, k, ld};
      std::vector<float> unit(size_t(n), 0.0f), out(size_t(n), std::nanf(""));
      rows_gated_unit(kind, am, bm, RowsMatrix{unit.data(), false, m, k, k}, nullptr);
      std::vector<int8_t> q1(size_t(n), 0x55), q2(size_t(n), 0x55);
      std::vector<float> s1(size_t(m), -7.0f), s2(size_t(m), -7.0f);
      ASSERT_TRUE(rows_gated_unit_quantized(kind, am, bm, RowsMatrix{out.data(), false, m, k, k}, group, q1.data(),
                                            s1.data(), nullptr));
      std::vector<uint16_t> out_bf16(size_t(n), 0xFFFF);
      ASSERT_TRUE(rows_gated_unit_quantized(kind, am, bm, RowsMatrix{out_bf16.data(), true, m, k, k}, group, q2.data(),
                                            s2.data(), nullptr));
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(same_bits(out[size_t(i)], unit[size_t(i)])) << "element " << i;
        ASSERT_EQ(out_bf16[size_t(i)], f32_to_bf16(out[size_t(i)])) << "element " << i;
      }
      QuantizedRows want{host_tensor(DType::I8, {m, k}), host_tensor(DType::F32, {m, 1}), group};
      host->core().rotate_quantize(Tensor(out.data(), DType::F32, {m, k}), want);
      int64_t differ = 0;
      for (int64_t i = 0; i < n; ++i) differ += q1[size_t(i)] != want.q.ptr<int8_t>()[i] || q2[size_t(i)] != q1[size_t(i)];
      EXPECT_EQ(differ, 0);
      for (int64_t r = 0; r < m; ++r) {
        EXPECT_TRUE(same_bits(s1[size_t(r)], want.scale.ptr<float>()[r])) << "row " << r;
        EXPECT_TRUE(same_bits(s2[size_t(r)], s1[size_t(r)])) << "row " << r;
      }
      EXPECT_TRUE(std::isnan(s1[1]));
    }
  }
  std::vector<float> wide(size_t(8196), 1.0f);
  std::vector<int8_t> q(size_t(8196), 0x55);
  float s = -7.0f;
  const RowsMatrix wm{wide.data(), false, 1, 8196, 8196};
  EXPECT_FALSE(rows_gated_unit_quantized(GatedUnit::Situ, wm, wm, RowsMatrix{}, 4, q.data(), &s, nullptr));
  EXPECT_EQ(q[0], 0x55);
}

// Rows wider than the kernel's LDS row, and misaligned ones, are declined: nothing is launched
// and the caller composes the passes.
TEST(Int8RowsEmulated, DeclinesRowsItCannotHold) {
  const bool portable = !kPlatformNvidia || portable_kernels();
  const int64_t k = portable ? 3072 + 256 : 8192 + 256;  // past the LDS row: 3072 (one wave), 8192 (four)
  std::vector<float> x(size_t(2 * k), 1.0f), y(size_t(2 * k), 0.0f), v(size_t(k), 0.5f);
  std::vector<int8_t> q(size_t(2 * k), 0x55);
  std::vector<float> s(2, -7.0f);
  const RowsVector vv{v.data(), false};
  EXPECT_FALSE(rows_add_norm_modulate_quantized(RowsMatrix{x.data(), false, 2, k, k}, RowsUpdates{}, vv, 1e-6f, vv, vv,
                                                RowsMatrix{y.data(), false, 2, k, k}, 256, q.data(), s.data(), nullptr));
  EXPECT_EQ(q[0], 0x55);
  EXPECT_EQ(s[0], -7.0f);
  // A row stride that breaks the 16-byte alignment.
  EXPECT_FALSE(rows_add_norm_modulate_quantized(RowsMatrix{x.data() + 1, false, 2, 256, k}, RowsUpdates{}, vv, 1e-6f,
                                                vv, vv, RowsMatrix{}, 256, q.data(), s.data(), nullptr));
}

}  // namespace
