// The lane-level frame that both host emulations of the matrix leaf share
// (test_matrix_layouts.cpp: the bf16/fp16 leaf; test_matrix_layouts_iu8.cpp: the int8 leaf):
// the software maps under test, the three hardware families, 32 simulated lanes loaded through a
// map and stored back through the C map (every output element exactly once), the ownership
// count, random integer tiles, the plain reference product and the element-wise comparison.
// What differs per leaf (the instruction models, tile shapes, value and register types) stays in
// each test; the templates here take the tile and register types as they come.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/matrix_layout.h"

namespace mma_emulation {

using moss::mma_layout::Elem;
constexpr int kLanes = 32;

using Map = Elem (*)(int lane, int slot);

struct SoftwareMaps {
  int slots_a, slots_b, slots_c;
  Map a, b, c;
};
template <class L>
SoftwareMaps maps_of() {
  return {L::kSlotsA, L::kSlotsB, L::kSlotsC, &L::a, &L::b, &L::c};
}

enum class Hardware { Gfx11, Gfx12, Nvidia };
inline const char* hardware_name(Hardware hw) {
  return hw == Hardware::Gfx11 ? "gfx11" : hw == Hardware::Gfx12 ? "gfx12" : "nvidia";
}

struct Case {
  Hardware hw;
  SoftwareMaps sw;
};
// One leaf's maps on the three families, e.g. layouts_of<Gfx11, Gfx12, Nvidia>().
template <class Gfx11Maps, class Gfx12Maps, class NvidiaMaps>
std::vector<Case> layouts_of() {
  return {{Hardware::Gfx11, maps_of<Gfx11Maps>()}, {Hardware::Gfx12, maps_of<Gfx12Maps>()},
          {Hardware::Nvidia, maps_of<NvidiaMaps>()}};
}

inline bool inside(Elem e, int rows, int cols) { return e.row >= 0 && e.row < rows && e.col >= 0 && e.col < cols; }

// The registers [lane][slot] that `map` fills from a rows x cols tile, each value as word(value)
// (what the kernel's loader writes: an encoded 16-bit word, a byte, or the value itself). A map
// pointing outside the tile sets `error` and leaves that slot 0.
template <class Value, class Tile, class Word>
std::vector<std::vector<Value>> load(Map map, int slots, const Tile& tile, int rows, int cols, Word word,
                                     std::string& error) {
  std::vector<std::vector<Value>> regs(kLanes, std::vector<Value>(size_t(slots), Value(0)));
  for (int l = 0; l < kLanes; ++l)
    for (int s = 0; s < slots; ++s) {
      const Elem e = map(l, s);
      if (!inside(e, rows, cols)) {
        error = "map points outside the tile";
        continue;
      }
      regs[l][s] = word(tile[size_t(e.row)][size_t(e.col)]);
    }
  return regs;
}

// D's registers stored through the C map (loaded through the same map before, so inside the tile)
// into `d` of rows x cols; `error` set unless every element is stored exactly once.
template <class Value, class Tile>
void store(Map map, int slots, const std::vector<std::vector<Value>>& regs, int rows, int cols, Tile& d,
           std::string& error) {
  std::vector<int> written(size_t(rows * cols), 0);
  for (int l = 0; l < kLanes; ++l)
    for (int s = 0; s < slots; ++s) {
      const Elem e = map(l, s);
      d[size_t(e.row)][size_t(e.col)] = regs[l][s];
      ++written[size_t(e.row * cols + e.col)];
    }
  for (int w : written)
    if (w != 1) error = "an output element is stored " + std::to_string(w) + " times";
}

// How many (lane, slot) pairs of lanes [lane0, lane1) hold each element of a rows x cols operand.
inline std::vector<int> owners(Map map, int slots, int lane0, int lane1, int rows, int cols) {
  std::vector<int> count(size_t(rows * cols), 0);
  for (int l = lane0; l < lane1; ++l)
    for (int s = 0; s < slots; ++s) {
      const Elem e = map(l, s);
      if (inside(e, rows, cols)) ++count[size_t(e.row * cols + e.col)];
    }
  return count;
}
inline void expect_each_owned_once(Map map, int slots, int lane0, int lane1, int rows, int cols, const char* what) {
  const std::vector<int> count = owners(map, slots, lane0, lane1, rows, cols);
  for (int i = 0; i < rows * cols; ++i)
    EXPECT_EQ(count[size_t(i)], 1) << what << " element (" << i / cols << "," << i % cols << ") lanes " << lane0 << "-"
                                   << lane1 - 1;
}

// A leaf D[m x n] = A[m x k]·B[k x n] + C: the lanes' slots hold each operand once (gfx11: A and B
// twice, one copy per half-wave).
inline void expect_fragments_fill(const Case& c, int m, int n, int k) {
  const int copies = c.hw == Hardware::Gfx11 ? 2 : 1;
  EXPECT_EQ(kLanes * c.sw.slots_a, copies * m * k);
  EXPECT_EQ(kLanes * c.sw.slots_b, copies * k * n);
  EXPECT_EQ(kLanes * c.sw.slots_c, m * n);
}
// ... and each element of C has one owner among all lanes, each of A and B one owner per copy
// (gfx11: in each half-wave).
inline void expect_each_element_owned_once(const Case& c, int m, int n, int k) {
  expect_each_owned_once(c.sw.c, c.sw.slots_c, 0, kLanes, m, n, "C");
  const int halves = c.hw == Hardware::Gfx11 ? 2 : 1;
  for (int h = 0; h < halves; ++h) {
    const int l0 = h * kLanes / halves, l1 = (h + 1) * kLanes / halves;
    expect_each_owned_once(c.sw.a, c.sw.slots_a, l0, l1, m, k, "A");
    expect_each_owned_once(c.sw.b, c.sw.slots_b, l0, l1, k, n, "B");
  }
}

// A tile of integers uniform in [lo, hi] (exact in every operand type the leaves take).
template <class Tile>
Tile random_integer_tile(std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  Tile t{};
  for (auto& row : t)
    for (auto& v : row) v = dist(rng);
  return t;
}

// The plain product A·B + C, summed in C's value type.
template <class TileA, class TileB, class TileC>
TileC reference(const TileA& A, const TileB& B, const TileC& C) {
  TileC d{};
  for (size_t m = 0; m < C.size(); ++m)
    for (size_t n = 0; n < C[m].size(); ++n) {
      auto acc = C[m][n];
      for (size_t k = 0; k < B.size(); ++k) acc += A[m][k] * B[k][n];
      d[m][n] = acc;
    }
  return d;
}

// "D[m][n] wrong" for the first element where `got` differs from `want`; empty when none does.
template <class Tile>
std::string first_difference(const Tile& got, const Tile& want) {
  for (size_t m = 0; m < want.size(); ++m)
    for (size_t n = 0; n < want[m].size(); ++n)
      if (got[m][n] != want[m][n]) return "D[" + std::to_string(m) + "][" + std::to_string(n) + "] wrong";
  return "";
}

// True when emulate(A, B, C) (an outcome with `error` and `d`) is exactly reference(A, B, C) for
// `trials` random integer tiles drawn from `seed`: A and B in [lo, hi], C in [-c_bound, c_bound].
// Otherwise false, with the emulation's error or the first wrong element in *why.
template <class TileA, class TileB, class TileC, class Emulate>
bool matches_reference(Emulate emulate, int trials, unsigned seed, int lo, int hi, int c_bound, std::string* why) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const TileA A = random_integer_tile<TileA>(rng, lo, hi);
    const TileB B = random_integer_tile<TileB>(rng, lo, hi);
    const TileC C = random_integer_tile<TileC>(rng, -c_bound, c_bound);
    const auto got = emulate(A, B, C);
    const std::string wrong = got.error.empty() ? first_difference(got.d, reference(A, B, C)) : got.error;
    if (!wrong.empty()) {
      if (why) *why = wrong;
      return false;
    }
  }
  return true;
}

}  // namespace mma_emulation
