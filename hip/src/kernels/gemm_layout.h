// Shared-memory layout of the NVIDIA GEMM kernel (GemmKernel::Mma in kernels/gemm.hip) and the
// ldmatrix lane maps that read it into mma.sync fragments. Plain constexpr functions, so that
//   - the static_asserts at the end prove, at every compile, that what ldmatrix delivers to each
//     lane is exactly the fragment kernels/matrix_layout.h documents for mma.sync (mma_layout::
//     Nvidia, itself proven against a model of the instruction in tests/unit/test_matrix_layouts.cpp);
//   - the host unit test (tests/unit/test_gemm_layout.cpp) checks the swizzle (a bijection, free
//     of bank conflicts for every ldmatrix phase and every staging store) and runs a tile through
//     models of ldmatrix and mma.sync written from the PTX ISA.
// Like matrix_layout.h this header compiles on the host alone (no HIP).
#pragma once

#include "kernels/matrix_layout.h"

namespace moss {
namespace gemm_layout {

// ---- stages: unpadded bf16 rows, XOR-swizzled 16-byte chunks ----------------------------------
// A stage holds `rows` x bk bf16 elements of one operand, K contiguous (x as [m][k], the weight as
// [n][k]): row r takes bk * 2 bytes, chunk c (elements 8c..8c+7) of row r lies at chunk position
// c ^ swizzle(r) of that row. One chunk is the unit of every move: a cp.async, a converted store,
// one row of an ldmatrix 8x8 matrix.
//
// Banks: 32 banks of 4 bytes, i.e. 8 chunk-wide bank groups; a chunk's group is its byte offset / 16
// modulo 8. An ldmatrix phase reads 8 consecutive rows (8-aligned) at one logical chunk c. Rows
// that share a 128-byte span (8 / cpr of them) sit at different positions inside it; the XOR
// spreads the cpr spans' rows over the remaining positions, so the 8 rows hit 8 distinct groups.
// The swizzle depends on row % 8 only, so row blocks at multiples of 8 share one pattern.
constexpr int kChunkElems = 8;   // bf16 per chunk
constexpr int kChunkBytes = 16;  // bytes per chunk
constexpr int kBankGroups = 8;   // 128 bytes of banks / 16 bytes

constexpr int chunks_per_row(int bk) { return bk / kChunkElems; }  // cpr: 2, 4 or 8 (bk 16, 32, 64)
constexpr int swizzle(int row, int cpr) { return (row / (kBankGroups / cpr)) % cpr; }

// Byte offset of logical chunk `chunk` of row `row` in a stage of bk-wide rows.
constexpr int chunk_offset(int row, int chunk, int bk) {
  const int cpr = chunks_per_row(bk);
  return row * bk * 2 + (chunk ^ swizzle(row, cpr)) * kChunkBytes;
}

// ---- ldmatrix.sync.aligned.m8n8.x4.shared.b16 -------------------------------------------------
// PTX ISA: lanes 8q..8q+7 give the addresses of rows 0..7 of matrix q (16 bytes each); register q
// of lane l receives row l / 4 of matrix q, elements 2(l % 4) and 2(l % 4) + 1 (low half first).
// A "source" names, for the lane giving an address, the row of a 16-row block and the k chunk
// (0: k 0-7, 1: k 8-15 of the k16 step) it points at.
struct RowChunk {
  int row, chunk;
};

// A fragment (A[m][k], 16x16): matrix q = rows 8(q % 2).. x k 8(q / 2).., i.e. registers
// (g, 2t) (g+8, 2t) (g, 2t+8) (g+8, 2t+8) -- mma.sync's a0..a3. Lane l points at row l % 16, chunk l / 16.
constexpr RowChunk a_source(int lane) { return {lane % 16, lane / 16}; }

// B fragments of two n8 tiles from the weight as stored, Bt[n][k] (16 n-rows x 16 k): matrix q =
// n rows 8(q / 2).. x k 8(q % 2)..; registers 0, 1 are b0, b1 of the tile n 0-7, registers 2, 3
// those of n 8-15. No transpose: a Bt row is k-contiguous as mma's "col" operand wants.
// Lane l points at n row l % 8 + 8 (l / 16), chunk (l / 8) % 2.
constexpr RowChunk b_source(int lane) { return {lane % 8 + 8 * (lane / 16), (lane / 8) % 2}; }

// What register q, half h of lane `lane` holds after an ldmatrix.x4 whose addresses follow
// `source`: {row, k} in the 16x16 block read (row = m for A, n for Bt).
template <class Source>
constexpr mma_layout::Elem delivered(Source source, int lane, int q, int h) {
  const RowChunk rc = source(kChunkElems * q + lane / 4);
  return {rc.row, kChunkElems * rc.chunk + 2 * (lane % 4) + h};
}

// Accumulator e (0..3) of one m16n8k16 product in lane `lane`: {row, col} of the 16x8 tile
// (mma.sync's c0..c3: (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)).
constexpr mma_layout::Elem c_element(int lane, int e) { return {lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2}; }

// ---- proofs against the leaf's documented NVIDIA fragments ------------------------------------
// FragA slot 2q+h = register q, half h; FragB slot 4j+e of the 16x16 B block = register 2j + e/2,
// half e%2, i.e. ldmatrix register q, half h is FragB slot 2q+h; FragC slot 4j+e = accumulator e
// of the n8 tile j.
constexpr bool a_matches_leaf() {
  for (int lane = 0; lane < 32; ++lane)
    for (int q = 0; q < 4; ++q)
      for (int h = 0; h < 2; ++h) {
        const mma_layout::Elem got = delivered(a_source, lane, q, h);
        const mma_layout::Elem want = mma_layout::Nvidia::a(lane, 2 * q + h);  // {m, k}
        if (got.row != want.row || got.col != want.col) return false;
      }
  return true;
}
constexpr bool b_matches_leaf() {
  for (int lane = 0; lane < 32; ++lane)
    for (int q = 0; q < 4; ++q)
      for (int h = 0; h < 2; ++h) {
        const mma_layout::Elem got = delivered(b_source, lane, q, h);     // {n, k}
        const mma_layout::Elem want = mma_layout::Nvidia::b(lane, 2 * q + h);  // {k, n}
        if (got.row != want.col || got.col != want.row) return false;
      }
  return true;
}
constexpr bool c_matches_leaf() {
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < 2; ++j)
      for (int e = 0; e < 4; ++e) {
        const mma_layout::Elem got = c_element(lane, e);
        const mma_layout::Elem want = mma_layout::Nvidia::c(lane, 4 * j + e);
        if (got.row != want.row || got.col + 8 * j != want.col) return false;
      }
  return true;
}
static_assert(a_matches_leaf(), "ldmatrix A map does not deliver the mma.sync A fragment");
static_assert(b_matches_leaf(), "ldmatrix B map does not deliver the mma.sync B fragments");
static_assert(c_matches_leaf(), "accumulator map differs from the leaf's C fragment");

// Every ldmatrix phase of a fragment read hits 8 distinct bank groups, for any 8-aligned block row
// and any k16 step of the stage.
constexpr bool ldmatrix_conflict_free(int bk) {
  for (int b_operand = 0; b_operand < 2; ++b_operand)
    for (int row0 = 0; row0 < 64; row0 += 16)
      for (int ks = 0; ks < bk / 16; ++ks)
        for (int q = 0; q < 4; ++q) {
          bool used[kBankGroups] = {};
          for (int l = 8 * q; l < 8 * q + 8; ++l) {
            const RowChunk rc = b_operand ? b_source(l) : a_source(l);
            const int group = (chunk_offset(row0 + rc.row, 2 * ks + rc.chunk, bk) / kChunkBytes) % kBankGroups;
            if (used[group]) return false;
            used[group] = true;
          }
        }
  return true;
}
static_assert(ldmatrix_conflict_free(32) && ldmatrix_conflict_free(64), "swizzle leaves ldmatrix bank conflicts");

}  // namespace gemm_layout
}  // namespace moss
