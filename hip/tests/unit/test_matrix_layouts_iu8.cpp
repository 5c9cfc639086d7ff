// Host emulation of the int8 matrix leaf (kernels/matrix_leaf.h mma_i8, lane maps Gfx11I8, Gfx12I8,
// NvidiaI8 of kernels/matrix_layout.h): the same method as test_matrix_layouts.cpp for the bf16
// leaf. 32 simulated lanes are loaded through the kernels' maps (the software side); a model of
// each instruction written from its register tables (v_wmma_i32_16x16x16_iu8 on gfx11 and gfx12 as
// AMD's Matrix Instruction Calculator gives it, mma.sync m16n8k32 s8 as the PTX ISA does;
// docs/matrix_layouts.md section 8) multiplies the registers, two
// instructions per leaf as the leaf issues them; the result is stored through the C map. Bytes are
// full-range int8 and every sum is exact, so the emulated leaf must equal the plain int32 product
// A·B + C element for element; and the emulation must reject the mistakes a kernel could make
// (mixed K numberings, unduplicated halves, swapped instruction halves, unsigned operands).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/matrix_layout.h"
#include "matrix_leaf_emulation.h"

namespace {

using namespace mma_emulation;
constexpr int kM = 16, kN = 16, kK = 32;

using TileA = std::array<std::array<int64_t, kK>, kM>;  // A[m][k]
using TileB = std::array<std::array<int64_t, kN>, kK>;  // B[k][n]
using TileC = std::array<std::array<int64_t, kN>, kM>;  // C[m][n]
using Regs = std::vector<std::vector<int64_t>>;         // [lane][slot]: bytes of A/B as 0..255, C as int32
// A register byte as the instruction reads it: signed (the leaf's flags, .s8) or unsigned.
int64_t operand(int64_t byte, bool is_signed) { return is_signed && byte >= 128 ? byte - 256 : byte; }

// ---- hardware models: one instruction each ---------------------------------------------------------
// a, b: the instruction's own slots of each lane (16 bytes on gfx11, 8 on gfx12, NVIDIA: 16 of A
// and 8 of B); c: its accumulator slots (8 on AMD, 4 on NVIDIA). Returns D in c's shape.

// gfx11 v_wmma_i32_16x16x16_iu8: byte i of lane l is K = i of row (A) / column (B) l % 16; lanes r
// and r+16 must hold the same bytes; output row m from half-wave m % 2 (the bf16 model's rocjitsu
// reading); D[m][n] in lane 16·(m%2) + n, slot m/2.
Regs run_gfx11(const Regs& a, const Regs& b, const Regs& c, bool is_signed, std::string& error) {
  for (int r = 0; r < 16; ++r)
    for (int i = 0; i < 16; ++i)
      if (a[r][i] != a[r + 16][i] || b[r][i] != b[r + 16][i]) error = "A/B not duplicated in lanes r and r+16";
  Regs d = c;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      const int h = m % 2;
      int64_t acc = c[16 * h + n][m / 2];
      for (int k = 0; k < 16; ++k) acc += operand(a[16 * h + m][k], is_signed) * operand(b[16 * h + n][k], is_signed);
      d[16 * h + n][m / 2] = acc;
    }
  return d;
}

// gfx12 v_wmma_i32_16x16x16_iu8, from AMD's Matrix Instruction Calculator (RDNA4): byte i of lane l
// is K = 8(l/16) + i of row (A) / column (B) l % 16, the contiguous numbering (unlike the bf16
// form's, docs/matrix_layouts.md 3.2); D[m][n] in lane 16·(m/8) + n, slot m % 8.
Regs run_gfx12(const Regs& a, const Regs& b, const Regs& c, bool is_signed) {
  int64_t A[16][16], B[16][16];
  for (int l = 0; l < kLanes; ++l)
    for (int i = 0; i < 8; ++i) {
      const int k = 8 * (l / 16) + i;
      A[l % 16][k] = operand(a[l][i], is_signed);
      B[k][l % 16] = operand(b[l][i], is_signed);
    }
  Regs d = c;
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      int64_t acc = c[16 * (m / 8) + n][m % 8];
      for (int k = 0; k < 16; ++k) acc += A[m][k] * B[k][n];
      d[16 * (m / 8) + n][m % 8] = acc;
    }
  return d;
}

// NVIDIA mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32, from the PTX register tables: A register
// p (bytes 4p..4p+3) is row g + {0,8,0,8}[p], columns 4t + {0,0,16,16}[p] + byte; B register q
// (bytes 4q..) is K 4t + 16q + byte of column g; c_e is row g + 8(e/2), column 2t + e%2.
Regs run_nvidia(const Regs& a, const Regs& b, const Regs& c, bool is_signed) {
  static const int a_row_off[4] = {0, 8, 0, 8}, a_col_off[4] = {0, 0, 16, 16};
  int64_t A[16][32], B[32][8], C[16][8];
  for (int l = 0; l < kLanes; ++l) {
    const int g = l / 4, t = l % 4;
    for (int p = 0; p < 4; ++p)
      for (int e = 0; e < 4; ++e) A[g + a_row_off[p]][4 * t + a_col_off[p] + e] = operand(a[l][4 * p + e], is_signed);
    for (int q = 0; q < 2; ++q)
      for (int e = 0; e < 4; ++e) B[4 * t + 16 * q + e][g] = operand(b[l][4 * q + e], is_signed);
    for (int e = 0; e < 4; ++e) C[g + 8 * (e / 2)][2 * t + e % 2] = c[l][e];
  }
  Regs d = c;
  for (int l = 0; l < kLanes; ++l) {
    const int g = l / 4, t = l % 4;
    for (int e = 0; e < 4; ++e) {
      const int m = g + 8 * (e / 2), n = 2 * t + e % 2;
      int64_t acc = C[m][n];
      for (int k = 0; k < 32; ++k) acc += A[m][k] * B[k][n];
      d[l][e] = acc;
    }
  }
  return d;
}

// Slots [first, first + count) of every lane.
Regs slots(const Regs& r, int first, int count) {
  Regs out(kLanes);
  for (int l = 0; l < kLanes; ++l) out[l].assign(r[l].begin() + first, r[l].begin() + first + count);
  return out;
}
void put_slots(Regs& r, int first, const Regs& part) {
  for (int l = 0; l < kLanes; ++l)
    for (size_t s = 0; s < part[l].size(); ++s) r[l][first + s] = part[l][s];
}

// The leaf as mma_i8 issues it: AMD, instruction j on A and B slots of K half j, C chained; NVIDIA,
// instruction j on all of A, B slots 8j.., C slots 4j...
Regs run_leaf(Hardware hw, const Regs& a, const Regs& b, const Regs& c, bool is_signed, std::string& error) {
  Regs d = c;
  for (int j = 0; j < 2; ++j) {
    if (hw == Hardware::Gfx11) d = run_gfx11(slots(a, 16 * j, 16), slots(b, 16 * j, 16), d, is_signed, error);
    else if (hw == Hardware::Gfx12) d = run_gfx12(slots(a, 8 * j, 8), slots(b, 8 * j, 8), d, is_signed);
    else put_slots(d, 4 * j, run_nvidia(a, slots(b, 8 * j, 8), slots(c, 4 * j, 4), is_signed));
  }
  return d;
}

// ---- the emulator ---------------------------------------------------------------------------------
// A and B: the byte the loader's word holds; C: the int32 value.
template <class Tile>
Regs load(Map map, int slots_n, const Tile& tile, int rows, int cols, bool as_byte, std::string& error) {
  return mma_emulation::load<int64_t>(
      map, slots_n, tile, rows, cols, [&](int64_t v) { return as_byte ? int64_t(uint8_t(int8_t(v))) : v; }, error);
}

struct Outcome {
  std::string error;
  TileC d{};
};

Outcome emulate(Hardware hw, const SoftwareMaps& sw, const TileA& A, const TileB& B, const TileC& C,
                bool is_signed = true) {
  Outcome out;
  const Regs a = load(sw.a, sw.slots_a, A, kM, kK, true, out.error);
  const Regs b = load(sw.b, sw.slots_b, B, kK, kN, true, out.error);
  const Regs c = load(sw.c, sw.slots_c, C, kM, kN, false, out.error);
  if (!out.error.empty()) return out;
  const Regs d = run_leaf(hw, a, b, c, is_signed, out.error);
  store(sw.c, sw.slots_c, d, kM, kN, out.d, out.error);
  return out;
}

// True when the emulated leaf equals the plain int32 product (`reference`, in int64 here: the sums
// fit int32 by far) for `trials` random tiles of full-range bytes and C in [-2^20, 2^20].
bool computes_product(Hardware hw, const SoftwareMaps& sw, int trials, std::string* why = nullptr,
                      bool is_signed = true) {
  return matches_reference<TileA, TileB, TileC>(
      [&](const TileA& A, const TileB& B, const TileC& C) { return emulate(hw, sw, A, B, C, is_signed); }, trials,
      4321, -128, 127, 1 << 20, why);
}

std::vector<Case> all_layouts() {
  using namespace moss::mma_layout;
  return layouts_of<Gfx11I8, Gfx12I8, NvidiaI8>();
}

// ---- positive tests --------------------------------------------------------------------------------
TEST(MatrixLayoutsIu8, FragmentSizesFillTheTile) {
  for (const Case& c : all_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    expect_fragments_fill(c, kM, kN, kK);
  }
}

TEST(MatrixLayoutsIu8, EveryElementOwnedByExactlyOneLane) {
  for (const Case& c : all_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    expect_each_element_owned_once(c, kM, kN, kK);
  }
}

TEST(MatrixLayoutsIu8, LeafEqualsPlainInt32ProductOnFullRangeBytes) {
  for (const Case& c : all_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    std::string why;
    EXPECT_TRUE(computes_product(c.hw, c.sw, 50, &why)) << why;
  }
}

// Extremes: every byte -128 (A) against -128 / 127 (B), the largest magnitudes a sum of 32 takes.
TEST(MatrixLayoutsIu8, ExtremeBytesExact) {
  for (const Case& c : all_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    TileA A{};
    TileB B{};
    TileC C{};
    for (auto& r : A) r.fill(-128);
    for (int k = 0; k < kK; ++k)
      for (int n = 0; n < kN; ++n) B[size_t(k)][size_t(n)] = n % 2 ? 127 : -128;
    const Outcome got = emulate(c.hw, c.sw, A, B, C);
    ASSERT_TRUE(got.error.empty()) << got.error;
    EXPECT_EQ(got.d, reference(A, B, C));
    EXPECT_EQ(got.d[0][0], 32 * 128 * 128);
    EXPECT_EQ(got.d[0][1], -32 * 128 * 127);
  }
}

// Any K numbering shared by A and B gives A·B (the hardware pairs A and B bytes position by
// position, docs/matrix_layouts.md 3.3): the bf16 form's interleaved numbering on both operands.
Elem gfx12_kappa_a(int l, int i) { return {l % 16, 16 * (i / 8) + 8 * ((i % 8) / 4) + 4 * (l / 16) + i % 4}; }
Elem gfx12_kappa_b(int l, int i) { return {16 * (i / 8) + 8 * ((i % 8) / 4) + 4 * (l / 16) + i % 4, l % 16}; }
TEST(MatrixLayoutsIu8, Gfx12AnotherSharedKNumberingAlsoWorks) {
  const SoftwareMaps other{16, 16, 8, &gfx12_kappa_a, &gfx12_kappa_b, &moss::mma_layout::Gfx12I8::c};
  EXPECT_TRUE(computes_product(Hardware::Gfx12, other, 20));
}

// ---- negative tests --------------------------------------------------------------------------------
TEST(MatrixLayoutsIu8Negative, Gfx12MixedKNumberingsFail) {
  const SoftwareMaps mixed{16, 16, 8, &moss::mma_layout::Gfx12I8::a, &gfx12_kappa_b, &moss::mma_layout::Gfx12I8::c};
  EXPECT_FALSE(computes_product(Hardware::Gfx12, mixed, 5));
}

Elem gfx11_a_split_k(int l, int i) { return {l % 16, 16 * (i / 16) + (8 * (l / 16) + i) % 16}; }
TEST(MatrixLayoutsIu8Negative, Gfx11UnduplicatedOperandFails) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Gfx11I8>();
  sw.a = &gfx11_a_split_k;
  std::string why;
  EXPECT_FALSE(computes_product(Hardware::Gfx11, sw, 5, &why));
  EXPECT_NE(why.find("duplicated"), std::string::npos) << why;
}

Elem gfx12_a_wrong_half(int l, int i) { return {l % 16, 16 * (i / 8) + 8 * ((l / 8) % 2) + i % 8}; }
TEST(MatrixLayoutsIu8Negative, Gfx12WrongHalfWaveFails) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Gfx12I8>();
  sw.a = &gfx12_a_wrong_half;
  EXPECT_FALSE(computes_product(Hardware::Gfx12, sw, 5));
}

// The AMD leaf's two instructions take K halves; feeding them swapped halves of A only is wrong.
Elem gfx11_a_halves_swapped(int l, int i) { return {l % 16, (i + 16) % 32}; }
TEST(MatrixLayoutsIu8Negative, Gfx11SwappedKHalvesOfOneOperandFail) {
  SoftwareMaps sw = maps_of<moss::mma_layout::Gfx11I8>();
  sw.a = &gfx11_a_halves_swapped;
  EXPECT_FALSE(computes_product(Hardware::Gfx11, sw, 5));
}

Elem nvidia_b_halves_swapped(int l, int i) {
  const Elem e = moss::mma_layout::NvidiaI8::b(l, i);
  return {e.row, (e.col + 8) % 16};
}
TEST(MatrixLayoutsIu8Negative, NvidiaSwappedInstructionHalvesFail) {
  SoftwareMaps sw = maps_of<moss::mma_layout::NvidiaI8>();
  sw.b = &nvidia_b_halves_swapped;
  EXPECT_FALSE(computes_product(Hardware::Nvidia, sw, 5));
}

// A's registers in the other order (register 1 holding row g's second K half instead of row g+8's
// first, as a tile numbering its words along K first would) is a different tile: the order matters.
Elem nvidia_a_k_before_rows(int l, int i) {
  return {l / 4 + 8 * (i / 8), 4 * (l % 4) + 16 * ((i / 4) % 2) + i % 4};
}
TEST(MatrixLayoutsIu8Negative, NvidiaARegisterOrderMatters) {
  SoftwareMaps sw = maps_of<moss::mma_layout::NvidiaI8>();
  sw.a = &nvidia_a_k_before_rows;
  EXPECT_FALSE(computes_product(Hardware::Nvidia, sw, 5));
}

// The instructions must be told the bytes are signed (the leaf's flags, .s8): read as unsigned, a
// negative byte is 256 too large.
TEST(MatrixLayoutsIu8Negative, UnsignedOperandsFail) {
  for (const Case& c : all_layouts()) {
    SCOPED_TRACE(hardware_name(c.hw));
    EXPECT_FALSE(computes_product(c.hw, c.sw, 5, nullptr, false));
  }
}

// The loaders' word property (matrix_layout.h, static_asserted for the three leaf maps) is sharp: a
// map that interleaves K fails it.
struct Interleaved {
  static constexpr int kSlotsA = 16, kSlotsB = 16;
  static constexpr Elem a(int lane, int i) { return {lane % 16, 2 * i + lane / 16}; }
  static constexpr Elem b(int lane, int i) { return {2 * i + lane / 16, lane % 16}; }
};
static_assert(!moss::mma_layout::slot_words_are_k_quads<Interleaved>(), "an interleaved K map has no K quads");

}  // namespace
