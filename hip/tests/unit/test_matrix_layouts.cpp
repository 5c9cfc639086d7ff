// Host emulation of the 16x16x16 matrix leaf (kernels/matrix_layout.h), bf16 and fp16 operands
// (leaf::mma and leaf::mma<true>), since no AMD GPU can run here. 32 simulated lanes are loaded through the kernels' own index maps (the
// "software maps"), a model of each instruction written independently from the ISA tables
// (the "hardware models", docs/matrix_layouts.md sections 2-4) multiplies the
// registers, and the result is stored back through the kernels' C map. The tests prove that
// the maps compute D = A·B + C, own every element exactly once, and that the emulation is
// sharp enough to reject the classic mistakes. The A and B registers hold 16-bit words, encoded
// by the software side and decoded by the instruction's operand type, so the emulation also
// tells an fp16 instruction fed bf16 bits (or the reverse) from the right pairing.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/matrix_layout.h"
#include "matrix_leaf_emulation.h"
#include "tensor/tensor.h"

namespace {

using namespace mma_emulation;
constexpr int kTile = 16;

using Tile = std::array<std::array<double, kTile>, kTile>;  // [row][col]
using Regs = std::vector<std::vector<double>>;              // [lane][slot]

// The operands' 16-bit type: bf16 (v_wmma_f32_16x16x16_bf16, mma.sync ...bf16) or fp16
// (v_wmma_f32_16x16x16_f16, mma.sync ...f16). Each instruction's two forms read the same lane
// maps (docs/matrix_layouts.md 5): the hardware models below take the type as a parameter.
enum class Operands { Bf16, F16 };
constexpr Operands kOperandTypes[] = {Operands::Bf16, Operands::F16};
const char* operands_name(Operands t) { return t == Operands::Bf16 ? "bf16" : "f16"; }

uint16_t encode(Operands t, double v) {
  if (t == Operands::Bf16) return moss::f32_to_bf16(float(v));
  const _Float16 h = static_cast<_Float16>(float(v));
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}
double decode(Operands t, double word) {
  const uint16_t bits = uint16_t(word);
  if (t == Operands::Bf16) return moss::bf16_to_f32(bits);
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return double(h);
}

// ---- hardware models ----------------------------------------------------------------------------
// Each reads the register file as the instruction does (A and B slots: 16-bit words of type t)
// and returns D in the same register file shape as C. `error` is set when the registers break a
// precondition of the instruction.

// gfx11 (rocjitsu model, docs/matrix_layouts.md 2.2-2.5): output row m is computed by half-wave
// h = m % 2 from that half's copies of A row m and B column n; A/B must be duplicated in both halves.
Regs run_gfx11(Operands t, const Regs& a, const Regs& b, const Regs& c, std::string& error) {
  for (int r = 0; r < 16; ++r)
    for (int i = 0; i < 16; ++i)
      if (a[r][i] != a[r + 16][i] || b[r][i] != b[r + 16][i]) error = "A/B not duplicated in lanes r and r+16";
  Regs d = c;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      const int h = m % 2;
      double acc = c[16 * h + n][m / 2];  // C/D: VGPR m/2 of lane 16*(m%2) + n
      for (int k = 0; k < 16; ++k) acc += decode(t, a[16 * h + m][k]) * decode(t, b[16 * h + n][k]);
      d[16 * h + n][m / 2] = acc;
    }
  return d;
}

// gfx12 (ISA numbering, docs/matrix_layouts.md 3.2-3.4): slot i of lane l is K = 8*(i/4) + 4*(l/16) + i%4
// for both A (row l%16) and B (column l%16); D row m lives in lane 16*(m/8) + n, VGPR m%8.
Regs run_gfx12(Operands t, const Regs& a, const Regs& b, const Regs& c) {
  double A[16][16], B[16][16];
  for (int l = 0; l < kLanes; ++l)
    for (int i = 0; i < 8; ++i) {
      const int k = 8 * (i / 4) + 4 * (l / 16) + i % 4;
      A[l % 16][k] = decode(t, a[l][i]);
      B[k][l % 16] = decode(t, b[l][i]);
    }
  Regs d = c;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      double acc = c[16 * (m / 8) + n][m % 8];
      for (int k = 0; k < 16; ++k) acc += A[m][k] * B[k][n];
      d[16 * (m / 8) + n][m % 8] = acc;
    }
  return d;
}

// NVIDIA (PTX ISA fragment tables for m16n8k16, docs/matrix_layouts.md 4.1), two instructions j = 0, 1
// sharing A; instruction j owns B slots and C slots 4j..4j+3 of every lane. Written from the
// register tables: register p of A holds rows g + {0,8,0,8}[p], columns 2t + {0,0,8,8}[p] + half.
Regs run_nvidia(Operands t, const Regs& a, const Regs& b, const Regs& c) {
  static const int a_row_off[4] = {0, 8, 0, 8}, a_col_off[4] = {0, 0, 8, 8};
  static const int c_row_off[4] = {0, 0, 8, 8}, c_col_off[4] = {0, 1, 0, 1};
  double A[16][16];
  for (int l = 0; l < kLanes; ++l) {
    const int g = l / 4, tq = l % 4;
    for (int p = 0; p < 4; ++p)
      for (int half = 0; half < 2; ++half) A[g + a_row_off[p]][2 * tq + a_col_off[p] + half] = decode(t, a[l][2 * p + half]);
  }
  Regs d = c;
  for (int j = 0; j < 2; ++j) {
    double B[16][8], C[16][8];
    for (int l = 0; l < kLanes; ++l) {
      const int g = l / 4, tq = l % 4;
      for (int q = 0; q < 2; ++q)
        for (int half = 0; half < 2; ++half) B[2 * tq + 8 * q + half][g] = decode(t, b[l][4 * j + 2 * q + half]);
      for (int e = 0; e < 4; ++e) C[g + c_row_off[e]][2 * tq + c_col_off[e]] = c[l][4 * j + e];
    }
    for (int l = 0; l < kLanes; ++l) {
      const int g = l / 4, tq = l % 4;
      for (int e = 0; e < 4; ++e) {
        const int m = g + c_row_off[e], n = 2 * tq + c_col_off[e];
        double acc = C[m][n];
        for (int k = 0; k < 16; ++k) acc += A[m][k] * B[k][n];
        d[l][4 * j + e] = acc;
      }
    }
  }
  return d;
}

// ---- the emulator ---------------------------------------------------------------------------------
struct Outcome {
  std::string error;  // empty when every precondition held
  Tile d{};
};

// encoded: A and B slots hold 16-bit words of that type (as the kernels' loaders write them);
// null: C, fp32 values.
Regs load(Map map, int slots, const Tile& tile, const Operands* encoded, std::string& error) {
  return mma_emulation::load<double>(
      map, slots, tile, kTile, kTile, [&](double v) { return encoded ? double(encode(*encoded, v)) : v; }, error);
}

// One instruction: the hardware and the operand type it reads.
struct Instruction {
  Hardware hw;
  Operands type = Operands::Bf16;
};

// Loads A and B (encoded as `encoded`, by default the instruction's own type) and C through the
// software maps, runs the hardware model, stores D through the C map.
Outcome emulate(Instruction ins, const SoftwareMaps& sw, const Tile& A, const Tile& B, const Tile& C,
                const Operands* encoded = nullptr) {
  Outcome out;
  const Operands enc = encoded ? *encoded : ins.type;
  const Regs a = load(sw.a, sw.slots_a, A, &enc, out.error);
  const Regs b = load(sw.b, sw.slots_b, B, &enc, out.error);
  const Regs c = load(sw.c, sw.slots_c, C, nullptr, out.error);
  if (!out.error.empty()) return out;
  const Regs d = ins.hw == Hardware::Gfx11 ? run_gfx11(ins.type, a, b, c, out.error)
                 : ins.hw == Hardware::Gfx12 ? run_gfx12(ins.type, a, b, c)
                                             : run_nvidia(ins.type, a, b, c);
  store(sw.c, sw.slots_c, d, kTile, kTile, out.d, out.error);
  return out;
}

// Values exactly representable in the operand type (fp16: 11-bit significands, most of which
// bf16's 8 bits cannot hold).
Tile random_tile(std::mt19937& rng, Operands type) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tile t{};
  for (auto& row : t)
    for (double& v : row) v = decode(type, encode(type, dist(rng)));
  return t;
}

// True when the emulated product is exactly A·B + C for `trials` random integer tiles (A and B in
// [-8, 8], C in [-64, 64]). Small integers are exact in bf16 and fp16 and every partial sum is exact
// in fp32, so the product is independent of the hardware's summation order and must match bit for bit.
bool computes_product(Instruction ins, const SoftwareMaps& sw, int trials, std::string* why = nullptr) {
  return matches_reference<Tile, Tile, Tile>(
      [&](const Tile& A, const Tile& B, const Tile& C) { return emulate(ins, sw, A, B, C); }, trials, 1234, -8, 8,
      64, why);
}

std::vector<Case> all_layouts() {
  using namespace moss::mma_layout;
  return layouts_of<Gfx11, Gfx12, Nvidia>();
}

// ---- positive tests --------------------------------------------------------------------------------
TEST(MatrixLayouts, FragmentSizesFillTheTile) {
  for (const Case& c : all_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    expect_fragments_fill(c, kTile, kTile, kTile);  // gfx11 duplicates A and B in both half-waves
  }
}

TEST(MatrixLayouts, EveryElementOwnedByExactlyOneLane) {
  for (const Case& c : all_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    expect_each_element_owned_once(c, kTile, kTile, kTile);  // gfx11: one owner per half-wave
    if (c.hw == Hardware::Gfx11) {
      // The two halves hold identical copies.
      for (int r = 0; r < 16; ++r)
        for (int s = 0; s < 16; ++s) {
          EXPECT_EQ(c.sw.a(r, s).row, c.sw.a(r + 16, s).row);
          EXPECT_EQ(c.sw.a(r, s).col, c.sw.a(r + 16, s).col);
          EXPECT_EQ(c.sw.b(r, s).row, c.sw.b(r + 16, s).row);
          EXPECT_EQ(c.sw.b(r, s).col, c.sw.b(r + 16, s).col);
        }
    }
  }
}

TEST(MatrixLayouts, ExactProductOnIntegerTiles) {
  for (const Case& c : all_layouts())
    for (Operands t : kOperandTypes) {
      SCOPED_TRACE(std::string(hardware_name(c.hw)) + " " + operands_name(t));
      std::string why;
      EXPECT_TRUE(computes_product({c.hw, t}, c.sw, 50, &why)) << why;
    }
}

TEST(MatrixLayouts, RandomTilesMatchFp64Reference) {
  std::mt19937 rng(99);
  for (const Case& c : all_layouts())
    for (Operands t : kOperandTypes) {
      SCOPED_TRACE(std::string(hardware_name(c.hw)) + " " + operands_name(t));
      for (int trial = 0; trial < 20; ++trial) {
        const Tile A = random_tile(rng, t), B = random_tile(rng, t), C = random_tile(rng, t);
        const Outcome got = emulate({c.hw, t}, c.sw, A, B, C);
        ASSERT_TRUE(got.error.empty()) << got.error;
        const Tile want = reference(A, B, C);
        for (int m = 0; m < kTile; ++m)
          for (int n = 0; n < kTile; ++n) {
            double scale = std::fabs(C[m][n]);
            for (int k = 0; k < kTile; ++k) scale += std::fabs(A[m][k] * B[k][n]);
            // The emulation sums in fp64; only the order differs from the reference.
            EXPECT_NEAR(got.d[m][n], want[m][n], 1e-12 * scale) << m << "," << n;
          }
      }
    }
}

// The fp16 tiles above are not bf16 tiles: most of their values need more than 8 significand bits
// (otherwise the fp16 rows would prove nothing beyond the bf16 ones).
TEST(MatrixLayouts, RandomF16TilesAreNotBf16Tiles) {
  std::mt19937 rng(7);
  const Tile A = random_tile(rng, Operands::F16);
  int inexact = 0;
  for (const auto& row : A)
    for (double v : row) inexact += decode(Operands::Bf16, encode(Operands::Bf16, v)) != v;
  EXPECT_GT(inexact, kTile * kTile / 2);
}

// The ISA K numbering of gfx12 is equally valid when A and B both use it (docs/matrix_layouts.md 3.3).
Elem gfx12_isa_a(int l, int i) { return {l % 16, 8 * (i / 4) + 4 * (l / 16) + i % 4}; }
Elem gfx12_isa_b(int l, int i) { return {8 * (i / 4) + 4 * (l / 16) + i % 4, l % 16}; }
TEST(MatrixLayouts, Gfx12IsaKNumberingOnBothOperandsAlsoWorks) {
  const SoftwareMaps isa{8, 8, 8, &gfx12_isa_a, &gfx12_isa_b, &moss::mma_layout::Gfx12::c};
  for (Operands t : kOperandTypes) EXPECT_TRUE(computes_product({Hardware::Gfx12, t}, isa, 20)) << operands_name(t);
}

// ---- negative tests: the emulation must catch the classic mistakes ---------------------------------
TEST(MatrixLayoutsNegative, Gfx12MixedKNumberingsFail) {
  const SoftwareMaps mixed{8, 8, 8, &moss::mma_layout::Gfx12::a, &gfx12_isa_b, &moss::mma_layout::Gfx12::c};
  for (Operands t : kOperandTypes) EXPECT_FALSE(computes_product({Hardware::Gfx12, t}, mixed, 5)) << operands_name(t);
}

Elem gfx11_c_halves_swapped(int l, int i) { return {2 * i + (1 - l / 16), l % 16}; }
TEST(MatrixLayoutsNegative, Gfx11SwappedOutputHalvesFail) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Gfx11>();
  sw.c = &gfx11_c_halves_swapped;
  for (Operands t : kOperandTypes) EXPECT_FALSE(computes_product({Hardware::Gfx11, t}, sw, 5)) << operands_name(t);
}

// The contiguous-halves D layout that older diagrams show (rows 0-7 / 8-15) is wrong on gfx11.
TEST(MatrixLayoutsNegative, Gfx12OutputLayoutOnGfx11Fails) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Gfx11>();
  sw.c = &moss::mma_layout::Gfx12::c;
  for (Operands t : kOperandTypes) EXPECT_FALSE(computes_product({Hardware::Gfx11, t}, sw, 5)) << operands_name(t);
}

// gfx11 needs identical copies of A in lanes r and r+16; a gfx12-style split of K is refused.
Elem gfx11_a_split_k(int l, int i) { return {l % 16, (8 * (l / 16) + i) % 16}; }
TEST(MatrixLayoutsNegative, Gfx11UnduplicatedOperandFails) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Gfx11>();
  sw.a = &gfx11_a_split_k;
  for (Operands t : kOperandTypes) {
    std::string why;
    EXPECT_FALSE(computes_product({Hardware::Gfx11, t}, sw, 5, &why)) << operands_name(t);
    EXPECT_NE(why.find("duplicated"), std::string::npos) << why;
  }
}

// Taking the half-wave from the wrong lane bit (the kind of slip a flat block id instead of the
// lane produces, docs/matrix_layouts.md 1.3) must fail.
Elem gfx12_a_wrong_half(int l, int i) { return {l % 16, 8 * ((l / 8) % 2) + i}; }
TEST(MatrixLayoutsNegative, Gfx12WrongHalfWaveFails) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Gfx12>();
  sw.a = &gfx12_a_wrong_half;
  for (Operands t : kOperandTypes) EXPECT_FALSE(computes_product({Hardware::Gfx12, t}, sw, 5)) << operands_name(t);
}

Elem nvidia_b_column_from_t(int l, int i) {
  return {2 * (l % 4) + (i % 4) % 2 + 8 * ((i % 4) / 2), 8 * (i / 4) + 2 * (l % 4) + (l / 4) % 2};
}
TEST(MatrixLayoutsNegative, NvidiaWrongBColumnFails) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Nvidia>();
  sw.b = &nvidia_b_column_from_t;
  for (Operands t : kOperandTypes) EXPECT_FALSE(computes_product({Hardware::Nvidia, t}, sw, 5)) << operands_name(t);
}

// Swapping the two instructions' B halves without swapping C gives the columns in the wrong place.
Elem nvidia_b_halves_swapped(int l, int i) {
  const Elem e = moss::mma_layout::Nvidia::b(l, i);
  return {e.row, (e.col + 8) % 16};
}
TEST(MatrixLayoutsNegative, NvidiaSwappedInstructionHalvesFail) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Nvidia>();
  sw.b = &nvidia_b_halves_swapped;
  for (Operands t : kOperandTypes) EXPECT_FALSE(computes_product({Hardware::Nvidia, t}, sw, 5)) << operands_name(t);
}

// The kernel must run the instruction of the type its loaders wrote: fp16 words multiplied by the
// bf16 instruction (a conv staging fp16 but calling leaf::mma instead of leaf::mma<true>), or bf16
// words by the fp16 one, give a wrong product on every platform.
TEST(MatrixLayoutsNegative, OperandTypeMismatchFails) {
  std::mt19937 rng(5);
  for (const Case& c : all_layouts())
    for (Operands t : kOperandTypes) {
      const Operands other = t == Operands::Bf16 ? Operands::F16 : Operands::Bf16;
      SCOPED_TRACE(std::string(hardware_name(c.hw)) + ": " + operands_name(other) + " words on the " +
                   operands_name(t) + " instruction");
      const Tile A = random_integer_tile<Tile>(rng, -8, 8), B = random_integer_tile<Tile>(rng, -8, 8);
      const Tile C = random_integer_tile<Tile>(rng, -64, 64);
      const Outcome got = emulate({c.hw, t}, c.sw, A, B, C, &other);
      ASSERT_TRUE(got.error.empty()) << got.error;
      EXPECT_NE(got.d, reference(A, B, C));
    }
}

// The layouts are constexpr: the kernels evaluate them at compile time.
static_assert(moss::mma_layout::Gfx11::c(17, 3).row == 7, "gfx11 C: slot 3 of lane 17 is row 7");
static_assert(moss::mma_layout::Gfx12::c(17, 3).row == 11, "gfx12 C: slot 3 of lane 17 is row 11");
static_assert(moss::mma_layout::Nvidia::c(5, 6).col == 8 + 2 + 0, "nvidia C: slot 6 of lane 5 is column 10");

}  // namespace
