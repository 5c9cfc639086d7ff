// The INT8 ConvRot kernels' own source (kernels/int8_rotate.hip, kernels/int8_gemm.hip) run on the
// host through the device emulation of tests/emulation/runtime/portability.h (workgroups as host
// threads; the int8 leaf of NVIDIA, gfx11 or gfx12 by MOSS_LEAF_EMULATED_TARGET, one program
// each, modelled from the vendors' register tables), against the host op
// (CoreOps::linear_int8 of the host backend): the outputs must be bit-identical, as on a GPU
// (`moss-check kernels --filter int8`). Cases: both GEMM kernels (tiled: k a multiple of 16 and
// 16-byte aligned operands; direct: the rest, a weight at an odd address), several groups, K not
// a multiple of 64, odd M and N past the tiles, bias none / bf16 / f32, x f32 / bf16 and a column
// slice, y f32 / bf16, rows of NaN, infinity and zeros; and the gated unit in the epilogue (the
// hidden / gate pairing of the leaf tiles on each leaf layout). The kernels' logic is what this proves
// (schedules, tiles, the LDS pipeline, bounds, the epilogue's order); the AMD lane maps are
// proven by test_matrix_layouts_iu8.cpp, and the real devices by moss-check.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/portability.h"  // the emulation: tests/emulation comes first on the include path
#include "same_bits.h"

#include "kernels/int8_gemm.hip"
#include "kernels/int8_rotate.hip"
#include "ops/backend.h"
#include "tensor/tensor.h"

namespace {

using namespace moss;

struct Spec {
  int64_t m, k, n, group;
  bool x_bf16, y_bf16;
  int bias;  // 0 none, 1 f32, 2 bf16
  int64_t x_offset = 0;
  bool w_odd = false;
  bool specials = false;
};

std::string name(const Spec& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) + " g" + std::to_string(s.group) +
         (s.x_bf16 ? " x:bf16" : "") + (s.y_bf16 ? " y:bf16" : "") + (s.bias == 1 ? " +b:f32" : s.bias == 2 ? " +b:bf16" : "") +
         (s.x_offset ? " x:slice" : "") + (s.w_odd ? " w:odd" : "") + (s.specials ? " specials" : "");
}

// Runs one case on the emulated kernels and on the host op; returns the differing elements.
int64_t run_case(const Spec& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t width = s.k + s.x_offset;
  // x as the kernels see it (f32 or bf16 bits, a slice of a wider matrix) and as the host op's f32.
  std::vector<float> xv(size_t(s.m * width));
  for (float& v : xv) v = s.x_bf16 ? bf16_to_f32(f32_to_bf16(normal(rng))) : normal(rng);
  if (s.specials) {
    xv[size_t(1 * width + s.x_offset + s.k / 2)] = std::nanf("");
    xv[size_t(2 * width + s.x_offset)] = INFINITY;
    for (int64_t c = 0; c < width; ++c) xv[size_t(3 * width + c)] = 0.0f;
  }
  std::vector<uint16_t> xb(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) xb[i] = f32_to_bf16(xv[i]);
  Tensor xh = host_tensor(DType::F32, {s.m, s.k});
  for (int64_t r = 0; r < s.m; ++r) std::memcpy(xh.row<float>(r), &xv[size_t(r * width + s.x_offset)], size_t(s.k) * 4);
  // The weight (bytes, odd address on request), its scales, the bias.
  std::vector<int8_t> wbuf(size_t(s.n * s.k + 16));
  int8_t* qw = wbuf.data() + (s.w_odd ? 1 : 0);
  while (!s.w_odd && reinterpret_cast<uintptr_t>(qw) % 16) ++qw;
  std::uniform_int_distribution<int> byte(-128, 127);
  for (int64_t i = 0; i < s.n * s.k; ++i) qw[i] = int8_t(byte(rng));
  Tensor qwh = host_tensor(DType::I8, {s.n, s.k});
  std::memcpy(qwh.data, qw, size_t(s.n * s.k));
  Tensor sw = host_tensor(DType::F32, {s.n, 1});
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f);
  for (int64_t i = 0; i < s.n; ++i) sw.ptr<float>()[i] = scale(rng);
  Tensor bias = host_tensor(s.bias == 2 ? DType::BF16 : DType::F32, {s.n});
  for (int64_t i = 0; i < s.n; ++i) {
    const float v = 0.5f * normal(rng);
    if (s.bias == 2) bias.ptr<uint16_t>()[i] = f32_to_bf16(v);
    else bias.ptr<float>()[i] = v;
  }
  // The host op.
  std::unique_ptr<Backend> host = make_host_backend();
  Tensor want = host_tensor(DType::F32, {s.m, s.n});
  host->core().linear_int8(xh, qwh, sw, s.bias ? &bias : nullptr, s.group, want);
  // The kernels, as HipBackend::do_linear_int8 calls them (q_x then s_x in one buffer).
  std::vector<int8_t> scratch(size_t(s.m * s.k + 4 * s.m + 16));
  int8_t* qx = scratch.data();
  while (reinterpret_cast<uintptr_t>(qx) % 16) ++qx;
  float* sx = reinterpret_cast<float*>(qx + s.m * s.k);
  RowsMatrix xm{s.x_bf16 ? static_cast<void*>(xb.data() + s.x_offset) : static_cast<void*>(xv.data() + s.x_offset),
                s.x_bf16, s.m, s.k, width};
  int8_rotate_quantize(xm, s.group, qx, sx, nullptr);
  std::vector<float> yf(size_t(s.m * s.n), std::nanf(""));
  std::vector<uint16_t> yb(size_t(s.m * s.n), 0xFFFF);
  Int8GemmArgs a;
  a.qx = qx;
  a.sx = sx;
  a.qw = qw;
  a.sw = sw.ptr<const float>();
  if (s.bias) a.bias = RowsVector{bias.data, s.bias == 2};
  a.y = RowsMatrix{s.y_bf16 ? static_cast<void*>(yb.data()) : static_cast<void*>(yf.data()), s.y_bf16, s.m, s.n, s.n};
  a.m = s.m;
  a.n = s.n;
  a.k = s.k;
  int8_gemm(a, nullptr);
  int64_t differ = 0;
  for (int64_t i = 0; i < s.m * s.n; ++i) {
    float w = want.ptr<float>()[i];
    float got = yf[size_t(i)];
    if (s.y_bf16) {
      w = bf16_to_f32(f32_to_bf16(w));
      got = bf16_to_f32(yb[size_t(i)]);
    }
    if (!same_bits(got, w)) {
      if (differ == 0)
        ADD_FAILURE() << name(s) << ": first difference at [" << i / s.n << ", " << i % s.n << "]: got " << got
                      << ", want " << w;
      ++differ;
    }
  }
  // Unwritten outputs keep the NaN poison (counted above where the host has a number).
  EXPECT_FALSE(leaf_violation().exchange(false)) << "the emulated instruction's preconditions were broken";
  if (s.specials) {
    EXPECT_TRUE(std::isnan(want.ptr<float>()[1 * s.n])) << "the NaN row's outputs are NaN";
  }
  return differ;
}

TEST(Int8KernelsEmulated, BitIdenticalToTheHostOp) {
  const Spec specs[] = {
      {4, 4, 5, 4, false, false, 0},                         // direct: one word of K
      {11, 40, 13, 4, true, false, 1},                       // direct: K not a multiple of 16
      {5, 64, 48, 16, false, false, 1},                      // tiled, 4 groups
      {7, 48, 9, 16, true, false, 2},                        // tiled: K not a multiple of 64 (a zero chunk)
      {33, 192, 40, 64, true, true, 2},                      // the tiny model's group, 3 groups
      {17, 256, 23, 256, false, true, 1},                    // odd M and N
      {67, 128, 130, 64, true, true, 2},                     // N past two 64-column tiles
      {150, 64, 70, 16, false, true, 1},                     // M past a 128-row tile
      {20, 256, 20, 64, true, false, 0, 3},                  // x a slice at an odd offset
      {31, 128, 70, 64, true, false, 2, 0, true},            // the weight at an odd address (direct, bytes)
      {9, 256, 33, 64, false, false, 1, 0, false, true},     // NaN, infinity and zero rows
      {3, 1024, 17, 1024, true, true, 2},                    // the largest group
  };
  uint64_t seed = 49;
  for (const Spec& s : specs) {
    SCOPED_TRACE(name(s));
    EXPECT_EQ(run_case(s, ++seed), 0);
  }
}

// The gated unit in the GEMM's epilogue (CoreOps::linear_int8_gated_unit; Int8GemmArgs::gated):
// the kernels pair hidden and gate weight rows in a wave's leaf tiles (kernels/gemm_unit_rows.h),
// on this program's leaf layout, and must give the host op's bits (linear_int8, then the unit in
// fp32: the emulation's tanh and exp are the host's). Both kernels (tiled: k a multiple of 16,
// aligned; direct: k % 16 != 0 or a weight at an odd address), F odd and past a block's 32 (tiled)
// or a wave's 16 (direct) columns, M past a tile, every unit, bias none / f32 / bf16, NaN,
// infinity and zero rows.
struct GatedSpec {
  int64_t m, k, f, group;
  GatedUnit unit;
  int bias;  // 0 none, 1 f32, 2 bf16
  bool w_odd = false;
  bool specials = false;
};

int64_t run_gated_case(const GatedSpec& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const int64_t n = 2 * s.f;
  Tensor xh = host_tensor(DType::F32, {s.m, s.k});
  for (int64_t i = 0; i < s.m * s.k; ++i) xh.ptr<float>()[i] = normal(rng);
  if (s.specials) {
    xh.row<float>(1)[s.k / 2] = std::nanf("");
    xh.row<float>(2)[0] = INFINITY;
    for (int64_t c = 0; c < s.k; ++c) xh.row<float>(3)[c] = 0.0f;
  }
  std::unique_ptr<Backend> host = make_host_backend();
  QuantizedRows xq{host_tensor(DType::I8, {s.m, s.k}), host_tensor(DType::F32, {s.m, 1}), s.group};
  host->core().rotate_quantize(xh, xq);
  std::vector<int8_t> wbuf(size_t(n * s.k + 16));
  int8_t* qw = wbuf.data() + (s.w_odd ? 1 : 0);
  while (!s.w_odd && reinterpret_cast<uintptr_t>(qw) % 16) ++qw;
  std::uniform_int_distribution<int> byte(-128, 127);
  for (int64_t i = 0; i < n * s.k; ++i) qw[i] = int8_t(byte(rng));
  Tensor qwh = host_tensor(DType::I8, {n, s.k});
  std::memcpy(qwh.data, qw, size_t(n * s.k));
  Tensor sw = host_tensor(DType::F32, {n});
  std::uniform_real_distribution<float> scale(1e-3f, 2e-2f);
  for (int64_t i = 0; i < n; ++i) sw.ptr<float>()[i] = scale(rng);
  Tensor bias = host_tensor(s.bias == 2 ? DType::BF16 : DType::F32, {n});
  for (int64_t i = 0; i < n; ++i) {
    const float v = 0.5f * normal(rng);
    if (s.bias == 2) bias.ptr<uint16_t>()[i] = f32_to_bf16(v);
    else bias.ptr<float>()[i] = v;
  }
  Tensor want = host_tensor(DType::F32, {s.m, s.f});
  host->core().linear_int8_gated_unit(s.unit, xq, qwh, sw, s.bias ? &bias : nullptr, want);
  // The kernels, as HipBackend's linear_int8_gated_unit calls them (q_x 16-byte aligned, as the
  // backend's tensors are).
  std::vector<int8_t> qbuf(size_t(s.m * s.k + 16));
  int8_t* qx = qbuf.data();
  while (reinterpret_cast<uintptr_t>(qx) % 16) ++qx;
  std::memcpy(qx, xq.q.data, size_t(s.m * s.k));
  std::vector<float> y(size_t(s.m * s.f), std::nanf(""));
  Int8GemmArgs a;
  a.qx = qx;
  a.sx = xq.scale.ptr<const float>();
  a.qw = qw;
  a.sw = sw.ptr<const float>();
  if (s.bias) a.bias = RowsVector{bias.data, s.bias == 2};
  a.y = RowsMatrix{y.data(), false, s.m, s.f, s.f};
  a.m = s.m;
  a.n = s.f;
  a.k = s.k;
  a.gated = true;
  a.unit = s.unit;
  int8_gemm(a, nullptr);
  int64_t differ = 0;
  for (int64_t i = 0; i < s.m * s.f; ++i)
    if (!same_bits(y[size_t(i)], want.ptr<float>()[i])) {
      if (differ == 0)
        ADD_FAILURE() << "first difference at [" << i / s.f << ", " << i % s.f << "]: got " << y[size_t(i)] << ", want "
                      << want.ptr<float>()[i];
      ++differ;
    }
  EXPECT_FALSE(leaf_violation().exchange(false)) << "the emulated instruction's preconditions were broken";
  if (s.specials) {
    EXPECT_TRUE(std::isnan(want.ptr<float>()[1 * s.f])) << "the NaN row's outputs are NaN";
  }
  return differ;
}

TEST(Int8KernelsEmulated, GatedUnitBitIdenticalToTheHostOp) {
  const GatedUnit situ = GatedUnit::Situ;
  const GatedSpec specs[] = {
      {5, 64, 16, 16, situ, 0},                                  // tiled: one wave pair's 16 columns
      {67, 192, 40, 64, situ, 2},                                // tiled: F past a block's 32 columns
      {150, 256, 21, 64, GatedUnit::SwiGlu, 1},                  // tiled: F odd, M past a 128-row tile
      {33, 128, 70, 64, GatedUnit::SigmoidGate, 2},              // tiled: three blocks of columns, the last partial
      {11, 40, 19, 4, situ, 1},                                  // direct: K not a multiple of 16, F odd
      {40, 96, 33, 16, situ, 0, true},                           // direct: the weight at an odd address, F past 32
      {9, 256, 24, 64, situ, 1, false, true},                    // tiled: NaN, infinity and zero rows
  };
  uint64_t seed = 4949;
  for (const GatedSpec& s : specs) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x2*" + std::to_string(s.f) + " g" +
                 std::to_string(s.group) + " unit " + std::to_string(int(s.unit)) + " bias " + std::to_string(s.bias) +
                 (s.w_odd ? " w:odd" : "") + (s.specials ? " specials" : ""));
    EXPECT_EQ(run_gated_case(s, ++seed), 0);
  }
}

// The activation pass alone (CoreOps::rotate_quantize's kernels) against the host op's quantized
// rows, bit for bit: its three kernels (the register pass: groups 4 to 256, widths a multiple of
// 16, rows read 16 bytes at a time where aligned or value by value, whole and partial segments
// of 512, one and several per wave; the LDS stages: group 1024 and other widths; the wave per
// row past 8192), each LDS row size at and past its bound, f32 and bf16 x with a row stride,
// NaN / infinity / zero rows. The pass holds no matrix leaf, so one of the three programs runs
// it (NVIDIA's: the leaf's target changes nothing here).
TEST(Int8KernelsEmulated, RotateQuantizeBitIdenticalToTheHostOp) {
  if (MOSS_LEAF_EMULATED_TARGET != 0) GTEST_SKIP() << "the activation pass runs in int8_kernels_emulated_nvidia";
  struct Case {
    int64_t m, k, group;
    bool bf16;
    int64_t pad = 3;  // the row stride is k + pad: 3 breaks the 16-byte loads, 0 and 8 keep them
  };
  std::unique_ptr<Backend> host = make_host_backend();
  uint64_t seed = 4900;
  for (const Case c : {Case{4, 4, 4, false}, Case{5, 192, 64, true}, Case{4, 3072, 256, true},
                       Case{4, 4096, 1024, false}, Case{4, 4100, 4, true}, Case{4, 8192, 256, false},
                       Case{4, 8196, 4, false},
                       // the register pass with 16-byte loads: the DiT's o input (bf16) and
                       // ffn_down's (f32), half a segment past 4096, groups 4 and 16, a bf16 stride
                       Case{4, 3072, 256, true, 0}, Case{4, 8192, 256, false, 0}, Case{4, 4352, 256, false, 0},
                       Case{4, 1024, 4, false, 0}, Case{4, 1536, 16, true, 8}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + " g" + std::to_string(c.group) + " ld+" +
                 std::to_string(c.pad));
    std::mt19937_64 rng(++seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    const int64_t ld = c.k + c.pad;
    std::vector<float> xv(size_t(c.m * ld));
    for (float& v : xv) v = c.bf16 ? bf16_to_f32(f32_to_bf16(normal(rng))) : normal(rng);
    xv[size_t(1 * ld + c.k / 2)] = std::nanf("");
    xv[size_t(2 * ld)] = -INFINITY;
    for (int64_t i = 0; i < c.k; ++i) xv[size_t(3 * ld + i)] = 0.0f;
    std::vector<uint16_t> xb(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) xb[i] = f32_to_bf16(xv[i]);
    Tensor xh = host_tensor(DType::F32, {c.m, c.k});
    for (int64_t r = 0; r < c.m; ++r) std::memcpy(xh.row<float>(r), &xv[size_t(r * ld)], size_t(c.k) * 4);
    QuantizedRows want{host_tensor(DType::I8, {c.m, c.k}), host_tensor(DType::F32, {c.m, 1}), c.group};
    host->core().rotate_quantize(xh, want);
    std::vector<int8_t> q(size_t(c.m * c.k), 0x55);
    std::vector<float> s(size_t(c.m), -7.0f);
    const RowsMatrix xm{c.bf16 ? static_cast<void*>(xb.data()) : static_cast<void*>(xv.data()), c.bf16, c.m, c.k, ld};
    if (c.pad != 3) {
      ASSERT_EQ(reinterpret_cast<uintptr_t>(xm.data) % 16, 0u) << "the 16-byte loads' case";
    }
    int8_rotate_quantize(xm, c.group, q.data(), s.data(), nullptr);
    int64_t differ = 0;
    for (int64_t i = 0; i < c.m * c.k; ++i) differ += q[size_t(i)] != want.q.ptr<int8_t>()[i];
    EXPECT_EQ(differ, 0);
    for (int64_t r = 0; r < c.m; ++r) EXPECT_TRUE(same_bits(s[size_t(r)], want.scale.ptr<float>()[r])) << "row " << r;
  }
}

// The comparison is sharp: a weight scale changed by one ulp after the host ran changes outputs.
TEST(Int8KernelsEmulated, OneUlpOfOneScaleIsSeen) {
  // Runs the tiled kernel on a case, then compares against the host op given a perturbed scale.
  const Spec s{8, 64, 16, 16, false, false, 0};
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xv(size_t(s.m * s.k));
  for (float& v : xv) v = normal(rng);
  Tensor xh = host_tensor(DType::F32, {s.m, s.k});
  std::memcpy(xh.data, xv.data(), xv.size() * 4);
  Tensor qwh = host_tensor(DType::I8, {s.n, s.k});
  for (int64_t i = 0; i < s.n * s.k; ++i) qwh.ptr<int8_t>()[i] = int8_t(int(rng() % 256) - 128);
  Tensor sw = host_tensor(DType::F32, {s.n});
  for (int64_t i = 0; i < s.n; ++i) sw.ptr<float>()[i] = 0.01f;
  std::vector<int8_t> scratch(size_t(s.m * s.k + 4 * s.m + 16));
  int8_t* qx = scratch.data();
  while (reinterpret_cast<uintptr_t>(qx) % 16) ++qx;
  float* sx = reinterpret_cast<float*>(qx + s.m * s.k);
  int8_rotate_quantize(RowsMatrix{xv.data(), false, s.m, s.k, s.k}, s.group, qx, sx, nullptr);
  std::vector<float> y(size_t(s.m * s.n));
  Int8GemmArgs a;
  a.qx = qx;
  a.sx = sx;
  a.qw = qwh.ptr<const int8_t>();
  a.sw = sw.ptr<const float>();
  a.y = RowsMatrix{y.data(), false, s.m, s.n, s.n};
  a.m = s.m;
  a.n = s.n;
  a.k = s.k;
  int8_gemm(a, nullptr);
  sw.ptr<float>()[5] = std::nextafter(0.01f, 1.0f);
  std::unique_ptr<Backend> host = make_host_backend();
  Tensor want = host_tensor(DType::F32, {s.m, s.n});
  host->core().linear_int8(xh, qwh, sw, nullptr, s.group, want);
  int64_t differ = 0;
  for (int64_t i = 0; i < s.m * s.n; ++i) differ += !same_bits(y[size_t(i)], want.ptr<float>()[i]);
  EXPECT_GT(differ, 0);
  for (int64_t r = 0; r < s.m; ++r)
    for (int64_t c = 0; c < s.n; ++c)
      if (c != 5) {
        EXPECT_TRUE(same_bits(y[size_t(r * s.n + c)], want.ptr<float>()[r * s.n + c]));
      }
}

}  // namespace
