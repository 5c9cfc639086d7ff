// Host checks of kernels/attention_kv_map.h, the maps by which the portable attention kernel's
// threads move one key tile's K rows and Vᵀ rows into shared memory (no GPU runs here):
//   - for every tiling the kernel is built with (and the 64-key tile), the threads' pieces write
//     every element of the K tile [KT][D] and of the Vᵀ tile [Dv][KT] exactly once, inside the
//     tile's columns (never the rows' padding), from the element of K / V it belongs to (checked by
//     the key and dim each write carries, for the packed and the in-place V);
//   - an in-place V word holds dim e of the pair's first key at the lower address, of the second
//     at the higher;
//   - the same check rejects a wrong map (the test is sharp).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention_kv_map.h"

namespace {

namespace kv = moss::attention_kv_map;

struct Shape {
  int d, dv, kt, threads;
};

// The portable tilings of kernels/attention.hip (D, Dv, KT, threads), plus the 64-key tile.
const Shape kShapes[] = {{32, 32, 32, 128},   {64, 64, 32, 128},   {96, 96, 32, 128},  {128, 128, 32, 128},
                         {192, 96, 32, 128},  {256, 128, 32, 128}, {384, 128, 32, 64}, {128, 128, 64, 128},
                         {256, 128, 64, 128}, {128, 128, 64, 256}};

// One write of a bf16 element into a tile: where it lands (row, col of the shared tile) and which
// element of the source it carries (key, dim).
struct Write {
  int row, col, key, dim;
};

using PieceMap = kv::Piece (*)(int piece, int width);

// Every write the threads make for one tile. kind: 'k' (K rows), 'p' (Vᵀ from the pack, whose rows
// are dims), 'v' (Vᵀ from V in place, key pairs transposed).
std::vector<Write> tile_writes(const Shape& s, char kind, PieceMap row_map, PieceMap pair_map) {
  std::vector<Write> w;
  const int pieces = kind == 'k' ? kv::row_chunks(s.kt, s.d)
                     : kind == 'p' ? kv::row_chunks(s.dv, s.kt)
                                   : kv::v_pair_units(s.dv, s.kt);
  for (int tid = 0; tid < s.threads; ++tid)
    for (int i = 0; i < kv::per_thread(pieces, s.threads); ++i) {
      const int c = kv::piece_of(tid, i, s.threads);
      if (c >= pieces) continue;
      if (kind == 'k') {
        const kv::Piece p = row_map(c, s.d);
        for (int e = 0; e < kv::kChunkElems; ++e) w.push_back({p.row, p.col + e, p.row, p.col + e});
      } else if (kind == 'p') {
        const kv::Piece p = row_map(c, s.kt);
        for (int e = 0; e < kv::kChunkElems; ++e) w.push_back({p.row, p.col + e, p.col + e, p.row});
      } else {
        const kv::Piece p = pair_map(c, s.kt);  // keys p.row, p.row + 1; dims p.col .. + 8
        for (int e = 0; e < kv::kChunkElems; ++e)
          for (int j = 0; j < 2; ++j) w.push_back({p.col + e, p.row + j, p.row + j, p.col + e});
      }
    }
  return w;
}

// Empty when the writes cover a rows x cols tile once each with the right source element (Vᵀ
// tiles: row = dim, col = key; K: row = key, col = dim), else the first problem.
std::string coverage_error(const std::vector<Write>& writes, int rows, int cols, bool transposed) {
  std::vector<int> hits(size_t(rows) * size_t(cols), 0);
  for (const Write& w : writes) {
    if (w.row < 0 || w.row >= rows || w.col < 0 || w.col >= cols)
      return "write outside the tile at " + std::to_string(w.row) + "," + std::to_string(w.col);
    const int want_key = transposed ? w.col : w.row, want_dim = transposed ? w.row : w.col;
    if (w.key != want_key || w.dim != want_dim)
      return "element " + std::to_string(w.row) + "," + std::to_string(w.col) + " gets key " + std::to_string(w.key) +
             " dim " + std::to_string(w.dim);
    ++hits[size_t(w.row) * size_t(cols) + size_t(w.col)];
  }
  for (size_t i = 0; i < hits.size(); ++i)
    if (hits[i] != 1)
      return "element " + std::to_string(i / size_t(cols)) + "," + std::to_string(i % size_t(cols)) + " written " +
             std::to_string(hits[i]) + " times";
  return "";
}

std::string shape_name(const Shape& s) {
  return "D " + std::to_string(s.d) + " Dv " + std::to_string(s.dv) + " KT " + std::to_string(s.kt) + " threads " +
         std::to_string(s.threads);
}

TEST(AttentionKvMap, EveryTileElementWrittenOnceFromItsSource) {
  for (const Shape& s : kShapes) {
    EXPECT_EQ(coverage_error(tile_writes(s, 'k', kv::row_chunk, kv::v_pair_unit), s.kt, s.d, false), "")
        << "K, " << shape_name(s);
    EXPECT_EQ(coverage_error(tile_writes(s, 'p', kv::row_chunk, kv::v_pair_unit), s.dv, s.kt, true), "")
        << "packed Vt, " << shape_name(s);
    EXPECT_EQ(coverage_error(tile_writes(s, 'v', kv::row_chunk, kv::v_pair_unit), s.dv, s.kt, true), "")
        << "in-place Vt, " << shape_name(s);
  }
}

TEST(AttentionKvMap, PairWordsHoldDimEOfBothKeysInMemoryOrder) {
  // Two chunks of 8 distinct bf16 bit patterns (key row: 0x1000 + d, key row + 1: 0x2000 + d) as
  // the loads give them; each word, stored as bytes (little-endian, as on every GPU here), must
  // read back as Vᵀ[dim][row] = key row's dim, Vᵀ[dim][row + 1] = key row + 1's dim.
  uint32_t first[4], second[4];
  for (int i = 0; i < 4; ++i) {
    first[i] = uint32_t(0x1000 + 2 * i) | uint32_t(0x1000 + 2 * i + 1) << 16;
    second[i] = uint32_t(0x2000 + 2 * i) | uint32_t(0x2000 + 2 * i + 1) << 16;
  }
  for (int e = 0; e < kv::kChunkElems; ++e) {
    const uint32_t w = kv::v_pair_word(first, second, e);
    uint16_t halves[2];
    std::memcpy(halves, &w, sizeof w);
    EXPECT_EQ(halves[0], 0x1000 + e) << "dim " << e;
    EXPECT_EQ(halves[1], 0x2000 + e) << "dim " << e;
  }
}

// Wrong maps: pairs 4 keys apart (half the keys twice, the others never), pairs one key apart
// (overlapping), row chunks of the wrong width or overlapping.
kv::Piece pair_stride_four(int u, int kt) { return {4 * (u % (kt / 2)) % kt, u / (kt / 2) * 8}; }
kv::Piece pair_as_one_key(int u, int kt) { return {u % (kt / 2), u / (kt / 2) * 8}; }
kv::Piece rows_too_wide(int c, int width) { return {c / (width / 4), c % (width / 4) * 8}; }
kv::Piece rows_overlapping(int c, int width) { return {c / (width / 8), c % (width / 8) * 4}; }

TEST(AttentionKvMap, WrongMapsAreRejected) {
  const Shape s{128, 128, 32, 128};
  EXPECT_NE(coverage_error(tile_writes(s, 'v', kv::row_chunk, pair_stride_four), s.dv, s.kt, true), "");
  EXPECT_NE(coverage_error(tile_writes(s, 'v', kv::row_chunk, pair_as_one_key), s.dv, s.kt, true), "");
  EXPECT_NE(coverage_error(tile_writes(s, 'k', rows_too_wide, kv::v_pair_unit), s.kt, s.d, false), "");
  EXPECT_NE(coverage_error(tile_writes(s, 'k', rows_overlapping, kv::v_pair_unit), s.kt, s.d, false), "");
  EXPECT_NE(coverage_error(tile_writes(s, 'p', rows_overlapping, kv::v_pair_unit), s.dv, s.kt, true), "");
  // A wave's lanes writing a different element than they read: transposed coverage of K fails.
  EXPECT_NE(coverage_error(tile_writes(s, 'k', kv::row_chunk, kv::v_pair_unit), s.d, s.kt, true), "");
}

}  // namespace
