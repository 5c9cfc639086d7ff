// Host emulation of the fp8 matrix leaf (kernels/matrix_leaf.h mma_f8, lane maps Gfx12F8 and
// NvidiaF8 of kernels/matrix_layout.h), the method of test_matrix_layouts_iu8.cpp with e4m3 data.
// The software side loads 32 simulated lanes through the kernels' maps, encoding each value as its
// e4m3 code (kernels/fp8_e4m3.h); the hardware side is a model of each fp8 instruction written from
// its own register table, not from the int8 leaf's:
//   gfx12  v_wmma_f32_16x16x16_fp8_fp8, AMD's Matrix Instruction Calculator (RDNA4, register to
//          element): A row lane % 16, K 8*(lane/16) + 4*GPR + byte; B likewise with the column;
//          D row 8*(lane/16) + GPR, column lane % 16;
//   NVIDIA mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32, CUTLASS CuTe's SM89 MMA_Traits
//          layouts (thread, value) -> element, evaluated as written there (shapes and strides below).
// Two instructions per leaf as mma_f8 issues them. Every product of two e4m3 values and every sum
// of 32 of them (plus C, itself an e4m3 value) is exact in double, so the emulated leaf must equal
// the plain product element for element; and the emulation must reject the mistakes a kernel could
// make: mixed K numberings, the instruction halves swapped, and bytes that the instruction reads as
// another type (the iu8 form's int8, the fp8_bf8 form's e5m2).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/fp8_e4m3.h"
#include "kernels/matrix_layout.h"
#include "matrix_leaf_emulation.h"

namespace {

using namespace mma_emulation;
constexpr int kM = 16, kN = 16, kK = 32;

using TileA = std::array<std::array<double, kK>, kM>;  // A[m][k]
using TileB = std::array<std::array<double, kN>, kK>;  // B[k][n]
using TileC = std::array<std::array<double, kN>, kM>;  // C[m][n]
using Regs = std::vector<std::vector<double>>;         // [lane][slot]: A/B codes 0..255, C fp32 values

// How the instruction reads an operand byte.
enum class Reads { E4m3, E5m2, Int8 };
double read(uint8_t code, Reads as) {
  if (as == Reads::E4m3) return moss::e4m3::to_f32(code);
  if (as == Reads::Int8) return double(int8_t(code));
  // OCP E5M2: bias 15, 2 mantissa bits, subnormals at exponent 0 (no NaN among the codes used here).
  const int e = (code >> 2) & 31, m = code & 3;
  const double v = e == 0 ? std::ldexp(m, -16) : std::ldexp(4 + m, e - 17);
  return code & 0x80 ? -v : v;
}

// ---- hardware models: one instruction each ---------------------------------------------------------
// gfx12 v_wmma_f32_16x16x16_fp8_fp8: a, b hold the instruction's 8 bytes per lane (2 VGPRs), c its 8
// fp32 per lane.
Regs run_gfx12(const Regs& a, const Regs& b, const Regs& c, Reads as) {
  double A[16][16], B[16][16];
  for (int l = 0; l < kLanes; ++l)
    for (int gpr = 0; gpr < 2; ++gpr)
      for (int byte = 0; byte < 4; ++byte) {
        const int k = 8 * (l / 16) + 4 * gpr + byte;
        A[l % 16][k] = read(uint8_t(a[l][4 * gpr + byte]), as);
        B[k][l % 16] = read(uint8_t(b[l][4 * gpr + byte]), as);
      }
  Regs d = c;
  for (int l = 0; l < kLanes; ++l)
    for (int gpr = 0; gpr < 8; ++gpr) {
      const int m = 8 * (l / 16) + gpr, n = l % 16;
      double acc = c[l][gpr];
      for (int k = 0; k < 16; ++k) acc += A[m][k] * B[k][n];
      d[l][gpr] = acc;
    }
  return d;
}

// A CuTe layout ((4, 8), (v...)) : ((s0, s1), (w...)) evaluated at thread (lane) and value index:
// the offset into a column-major matrix of `rows` rows, returned as {row, col}.
template <size_t kValueModes>
Elem cute(int lane, int value, int s0, int s1, const std::array<int, kValueModes>& vshape,
          const std::array<int, kValueModes>& vstride, int rows) {
  int offset = (lane % 4) * s0 + (lane / 4) * s1;
  for (size_t i = 0; i < kValueModes; ++i) {
    offset += (value % vshape[i]) * vstride[i];
    value /= vshape[i];
  }
  return {offset % rows, offset / rows};
}
// CUTLASS cute::MMA_Traits<SM89_16x8x32_F32F8F8F32_TN> (the e4m3 x e4m3 -> f32 atom):
//   ALayout ((4,8),(4,2,2)) : ((64,1),(16,8,256)) over A (M 16 x K 32)
//   BLayout ((4,8),(4,2))   : ((32,1),(8,128))    over B^T (N 8 x K 32)
//   CLayout SM80_16x8_Row = ((4,8),(2,2)) : ((32,1),(16,8)) over C (M 16 x N 8)
Elem sm89_a(int lane, int v) { return cute<3>(lane, v, 64, 1, {4, 2, 2}, {16, 8, 256}, 16); }  // {m, k}
Elem sm89_b(int lane, int v) { return cute<2>(lane, v, 32, 1, {4, 2}, {8, 128}, 8); }         // {n, k}
Elem sm89_c(int lane, int v) { return cute<2>(lane, v, 32, 1, {2, 2}, {16, 8}, 16); }         // {m, n}

// NVIDIA m16n8k32 e4m3: a the 16 bytes of A per lane, b the instruction's 8 bytes of B, c its 4 fp32.
Regs run_nvidia(const Regs& a, const Regs& b, const Regs& c, Reads as) {
  double A[16][32], B[32][8], C[16][8];
  for (int l = 0; l < kLanes; ++l) {
    for (int v = 0; v < 16; ++v) {
      const Elem e = sm89_a(l, v);
      A[e.row][e.col] = read(uint8_t(a[l][v]), as);
    }
    for (int v = 0; v < 8; ++v) {
      const Elem e = sm89_b(l, v);
      B[e.col][e.row] = read(uint8_t(b[l][v]), as);
    }
    for (int v = 0; v < 4; ++v) {
      const Elem e = sm89_c(l, v);
      C[e.row][e.col] = c[l][v];
    }
  }
  Regs d = c;
  for (int l = 0; l < kLanes; ++l)
    for (int v = 0; v < 4; ++v) {
      const Elem e = sm89_c(l, v);
      double acc = C[e.row][e.col];
      for (int k = 0; k < 32; ++k) acc += A[e.row][k] * B[k][e.col];
      d[l][v] = acc;
    }
  return d;
}

Regs slots(const Regs& r, int first, int count) {
  Regs out(kLanes);
  for (int l = 0; l < kLanes; ++l) out[l].assign(r[l].begin() + first, r[l].begin() + first + count);
  return out;
}
void put_slots(Regs& r, int first, const Regs& part) {
  for (int l = 0; l < kLanes; ++l)
    for (size_t s = 0; s < part[l].size(); ++s) r[l][first + s] = part[l][s];
}

// The leaf as mma_f8 issues it: gfx12, instruction j on A and B slots 8j.. (K half j), C chained;
// NVIDIA, instruction j on all of A, B slots 8j.., C slots 4j...
Regs run_leaf(Hardware hw, const Regs& a, const Regs& b, const Regs& c, Reads as) {
  Regs d = c;
  for (int j = 0; j < 2; ++j) {
    if (hw == Hardware::Gfx12) d = run_gfx12(slots(a, 8 * j, 8), slots(b, 8 * j, 8), d, as);
    else put_slots(d, 4 * j, run_nvidia(a, slots(b, 8 * j, 8), slots(c, 4 * j, 4), as));
  }
  return d;
}

// ---- the emulator ---------------------------------------------------------------------------------
struct Outcome {
  std::string error;
  TileC d{};
};

// A and B are loaded as the codes the kernels write (the one conversion); C as values.
Outcome emulate(Hardware hw, const SoftwareMaps& sw, const TileA& A, const TileB& B, const TileC& C,
                Reads as = Reads::E4m3) {
  Outcome out;
  auto code = [](double v) { return double(moss::e4m3::from_f32(float(v))); };
  const Regs a = mma_emulation::load<double>(sw.a, sw.slots_a, A, kM, kK, code, out.error);
  const Regs b = mma_emulation::load<double>(sw.b, sw.slots_b, B, kK, kN, code, out.error);
  const Regs c = mma_emulation::load<double>(sw.c, sw.slots_c, C, kM, kN, [](double v) { return v; }, out.error);
  if (!out.error.empty()) return out;
  store(sw.c, sw.slots_c, run_leaf(hw, a, b, c, as), kM, kN, out.d, out.error);
  return out;
}

// Integer tiles: A and B in [-16, 16] (exact in e4m3), C in [-4096, 4096].
bool computes_product(Hardware hw, const SoftwareMaps& sw, int trials, std::string* why = nullptr,
                      Reads as = Reads::E4m3) {
  return matches_reference<TileA, TileB, TileC>(
      [&](const TileA& A, const TileB& B, const TileC& C) { return emulate(hw, sw, A, B, C, as); }, trials, 8,
      -16, 16, 4096, why);
}

std::vector<Case> fp8_layouts() {
  using namespace moss::mma_layout;
  return {{Hardware::Gfx12, maps_of<Gfx12F8>()}, {Hardware::Nvidia, maps_of<NvidiaF8>()}};
}

// ---- positive tests --------------------------------------------------------------------------------
TEST(MatrixLayoutsFp8, FragmentSizesFillTheTile) {
  for (const Case& c : fp8_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    expect_fragments_fill(c, kM, kN, kK);
  }
}

TEST(MatrixLayoutsFp8, EveryElementOwnedByExactlyOneLane) {
  for (const Case& c : fp8_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    expect_each_element_owned_once(c, kM, kN, kK);
  }
}

TEST(MatrixLayoutsFp8, LeafEqualsThePlainProductOnIntegerTiles) {
  for (const Case& c : fp8_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    std::string why;
    EXPECT_TRUE(computes_product(c.hw, c.sw, 50, &why)) << why;
  }
}

// Every finite code of both signs (subnormals to 448) in A and B, C an e4m3 value: the sums are exact
// in double, so the emulated leaf equals the product exactly.
TEST(MatrixLayoutsFp8, LeafEqualsThePlainProductOverEveryFiniteCode) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> code(0, 255);
  auto value = [&] {
    int c;
    do c = code(rng);
    while ((c & 0x7f) == 0x7f);
    return double(moss::e4m3::to_f32(uint8_t(c)));
  };
  for (const Case& c : fp8_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    for (int trial = 0; trial < 20; ++trial) {
      TileA A{};
      TileB B{};
      TileC C{};
      for (auto& r : A) for (double& v : r) v = value();
      for (auto& r : B) for (double& v : r) v = value();
      for (auto& r : C) for (double& v : r) v = value();
      const Outcome got = emulate(c.hw, c.sw, A, B, C);
      ASSERT_TRUE(got.error.empty()) << got.error;
      ASSERT_EQ(first_difference(got.d, reference(A, B, C)), "");
    }
  }
}

// The fp8 maps are the int8 leaf's: the models above, written from the fp8 instructions' own tables,
// accept exactly the byte positions the int8 leaf's models do (test_matrix_layouts_iu8.cpp).
static_assert(std::is_same<moss::mma_layout::Gfx12F8, moss::mma_layout::Gfx12I8>::value &&
                  std::is_same<moss::mma_layout::NvidiaF8, moss::mma_layout::NvidiaI8>::value,
              "fp8 maps: the int8 leaf's");

// ---- negative tests --------------------------------------------------------------------------------
// The bf16 form's interleaved K numbering on B alone (A contiguous) pairs the wrong K.
Elem gfx12_interleaved_b(int l, int i) { return {16 * (i / 8) + 8 * ((i % 8) / 4) + 4 * (l / 16) + i % 4, l % 16}; }
TEST(MatrixLayoutsFp8Negative, Gfx12MixedKNumberingsFail) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Gfx12F8>();
  sw.b = &gfx12_interleaved_b;
  EXPECT_FALSE(computes_product(Hardware::Gfx12, sw, 5));
}

Elem nvidia_b_halves_swapped(int l, int i) {
  const Elem e = moss::mma_layout::NvidiaF8::b(l, i);
  return {e.row, (e.col + 8) % 16};
}
TEST(MatrixLayoutsFp8Negative, NvidiaSwappedInstructionHalvesFail) {
  SoftwareMaps sw = maps_of<moss::mma_layout::NvidiaF8>();
  sw.b = &nvidia_b_halves_swapped;
  EXPECT_FALSE(computes_product(Hardware::Nvidia, sw, 5));
}

// The m16n8k16 (bf16) A map instead of m16n8k32's is a different tile.
Elem nvidia_a_k_before_rows(int l, int i) { return {l / 4 + 8 * (i / 8), 4 * (l % 4) + 16 * ((i / 4) % 2) + i % 4}; }
TEST(MatrixLayoutsFp8Negative, NvidiaARegisterOrderMatters) {
  SoftwareMaps sw = maps_of<moss::mma_layout::NvidiaF8>();
  sw.a = &nvidia_a_k_before_rows;
  EXPECT_FALSE(computes_product(Hardware::Nvidia, sw, 5));
}

// e4m3 codes fed to an instruction of another operand type (the iu8 form, the e5m2 forms) give a
// wrong product on both platforms: the kernel must issue the e4m3 x e4m3 instruction.
TEST(MatrixLayoutsFp8Negative, CodesReadAsAnotherTypeFail) {
  for (const Case& c : fp8_layouts())
    for (Reads other : {Reads::Int8, Reads::E5m2}) {
      SCOPED_TRACE(std::string(hardware_name(c.hw)) + (other == Reads::Int8 ? " int8" : " e5m2"));
      EXPECT_FALSE(computes_product(c.hw, c.sw, 5, nullptr, other));
    }
}

// The models are sharp about the codes: a tile of 448s and smallest subnormals gives the extremes.
TEST(MatrixLayoutsFp8, ExtremeCodesExact) {
  for (const Case& c : fp8_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    TileA A{};
    TileB B{};
    TileC C{};
    for (auto& r : A) r.fill(448.0);
    for (int k = 0; k < kK; ++k)
      for (int n = 0; n < kN; ++n) B[size_t(k)][size_t(n)] = n % 2 ? -448.0 : std::ldexp(1.0, -9);
    const Outcome got = emulate(c.hw, c.sw, A, B, C);
    ASSERT_TRUE(got.error.empty()) << got.error;
    EXPECT_EQ(got.d[0][1], -32.0 * 448 * 448);
    EXPECT_EQ(got.d[3][0], 32.0 * 448 * std::ldexp(1.0, -9));
  }
}

}  // namespace
