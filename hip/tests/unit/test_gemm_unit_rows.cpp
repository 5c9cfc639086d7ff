// Host emulation of the portable GEMM's gated-unit B tile (kernels/gemm_unit_rows.h), since no GPU
// runs here. A 64-row B tile is staged the way the leaf kernel's loader does it (128 threads,
// 32 rows a pass, each thread's weight row stepping by 16 per pass), each wave's leaf tiles are
// read through the leaf's B lane map (gfx11, gfx12, NVIDIA), and every accumulator slot is traced
// to the weight row its C column multiplies. The tests prove that in every lane and slot the
// hidden tile 2q and the gate tile 2q+1 multiply weight rows col and n + col of the same output
// column, the one the epilogue writes, that the tile covers its n/2 output columns once each, and
// that a wrong map (the two halves one after the other) is rejected.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "kernels/gemm_unit_rows.h"
#include "kernels/matrix_layout.h"

namespace {

namespace mm = moss::mma_layout;
namespace gu = moss::gemm_unit;
using Map = mm::Elem (*)(int lane, int slot);
using RowMap = gu::UnitRow (*)(int r);

constexpr int kLanes = 32;
constexpr int kBN = 64;       // the portable wide tile's B rows
constexpr int kWaveCols = 2;  // its waves across N (32 tile rows each)
constexpr int kWaveRows = kBN / kWaveCols;
constexpr int kThreads = 128, kChunksPerRow = 4, kRowsPerPass = kThreads / kChunksPerRow;  // bf16, BK 32

struct Leaf {
  std::string name;
  int slots_b, slots_c;
  Map b, c;
};
template <class L>
Leaf leaf_of(const char* name) {
  return {name, L::kSlotsB, L::kSlotsC, &L::b, &L::c};
}
std::vector<Leaf> leaves() {
  return {leaf_of<mm::Gfx11>("gfx11"), leaf_of<mm::Gfx12>("gfx12"), leaf_of<mm::Nvidia>("nvidia")};
}

// The B stage as the loader fills it: stage[tile row] = the weight row it holds (-1: zeros).
// Each thread computes its first row from the map and steps by kRowsPerPass / 2 weight rows per
// pass (TileLoader's kRowStep), which the map must agree with for every pass.
std::vector<int> stage_rows(RowMap map, int n, int n0, std::string& mismatch) {
  std::vector<int> stage(kBN, -2);
  for (int tid = 0; tid < kThreads; ++tid) {
    const int first_row = tid / kChunksPerRow;
    const gu::UnitRow u = map(first_row);
    for (int p = 0; p < kBN / kRowsPerPass; ++p) {
      const int tile_row = first_row + p * kRowsPerPass;
      const int col = u.col + p * (kRowsPerPass / 2);  // the loader's stepping
      const int row = n0 + col < n ? u.half * n + n0 + col : -1;
      const gu::UnitRow direct = map(tile_row);
      const int want = n0 + direct.col < n ? direct.half * n + n0 + direct.col : -1;
      if (row != want && mismatch.empty())
        mismatch = "tile row " + std::to_string(tile_row) + ": stepped " + std::to_string(row) + ", map " +
                   std::to_string(want);
      stage[size_t(tile_row)] = row;
    }
  }
  return stage;
}

// For one leaf and map: every check the epilogue relies on; "" when all hold, else the first failure.
std::string check_pairs(const Leaf& L, RowMap map, int n, int n0) {
  std::string fail;
  const std::vector<int> stage = stage_rows(map, n, n0, fail);
  if (!fail.empty()) return fail;
  for (int r = 0; r < kBN; ++r)
    if (stage[size_t(r)] == -2) return "tile row " + std::to_string(r) + " never staged";
  std::map<std::pair<int, int>, int> written;  // (C row, output column) -> times
  for (int wave = 0; wave < kWaveCols; ++wave) {
    const int wn0 = wave * kWaveRows;
    // Leaf tile t's B matrix as the lanes load it: B[k][nn] = stage[wn0 + 16t + nn] (Bt[n][k]); a
    // column must be one weight row whatever k and lane read it.
    std::vector<std::vector<int>> col_row(2, std::vector<int>(16, -3));
    for (int t = 0; t < 2; ++t)
      for (int lane = 0; lane < kLanes; ++lane)
        for (int s = 0; s < L.slots_b; ++s) {
          const mm::Elem e = L.b(lane, s);  // {k, n}
          const int row = stage[size_t(wn0 + 16 * t + e.col)];
          int& seen = col_row[size_t(t)][size_t(e.col)];
          if (seen != -3 && seen != row) return "B column read as two rows";
          seen = row;
        }
    for (int lane = 0; lane < kLanes; ++lane)
      for (int s = 0; s < L.slots_c; ++s) {
        const mm::Elem e = L.c(lane, s);  // this slot of acc[i][0] and acc[i][1]: C[e.row][e.col]
        const int hidden = col_row[0][size_t(e.col)], gate = col_row[1][size_t(e.col)];
        const int out = n0 + gu::tile_row(wn0 + e.col).col;  // the column the epilogue writes
        const std::string at = " (wave " + std::to_string(wave) + ", lane " + std::to_string(lane) + ", slot " +
                               std::to_string(s) + ")";
        if (out >= n) {
          if (hidden != -1 || gate != -1) return "a column past n multiplies weights" + at;
          continue;
        }
        if (hidden != out) return "hidden accumulator multiplies row " + std::to_string(hidden) + ", not " +
                                  std::to_string(out) + at;
        if (gate != n + out) return "gate accumulator multiplies row " + std::to_string(gate) + ", not " +
                                    std::to_string(n + out) + at;
        ++written[{e.row, out}];
      }
  }
  const int cols = std::min(kBN / 2, n - n0);
  if (int(written.size()) != 16 * cols) return "output elements missed: " + std::to_string(written.size());
  for (const auto& w : written)
    if (w.second != 1) return "an output element written twice";
  return "";
}

TEST(GemmUnitRows, HiddenAndGateShareLanesAndSlots) {
  for (const Leaf& L : leaves())
    for (int n : {32, 64, 200, 1000})
      for (int n0 = 0; n0 < n; n0 += kBN / 2) EXPECT_EQ(check_pairs(L, gu::tile_row, n, n0), "") << L.name << " n " << n << " n0 " << n0;
}

TEST(GemmUnitRows, RaggedColumnsStageZeros) {
  // n = 40: the second tile holds 8 real columns; hidden and gate rows past them are zeros.
  for (const Leaf& L : leaves()) EXPECT_EQ(check_pairs(L, gu::tile_row, 40, 32), "") << L.name;
}

// The emulation is sharp: maps that look plausible but break the pairing are caught.
constexpr gu::UnitRow halves_one_after_other(int r) { return {r % 32, r / 32}; }  // a 0..31, then b 0..31
constexpr gu::UnitRow swapped_halves(int r) { return {16 * (r / 32) + r % 16, 1 - (r / 16) % 2}; }
constexpr gu::UnitRow shifted_gate(int r) {
  return {16 * (r / 32) + (r % 16 + (r / 16) % 2) % 16, (r / 16) % 2};  // the gate's columns rotated by one
}
TEST(GemmUnitRows, WrongMapsAreRejected) {
  for (const Leaf& L : leaves()) {
    EXPECT_NE(check_pairs(L, halves_one_after_other, 64, 0), "") << L.name;
    EXPECT_NE(check_pairs(L, swapped_halves, 64, 0), "") << L.name;
    EXPECT_NE(check_pairs(L, shifted_gate, 64, 0), "") << L.name;
  }
}

}  // namespace
