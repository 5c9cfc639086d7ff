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

#include <cstdint>
#include <initializer_list>

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

// got(lane, slot) == want(lane, slot) for every lane and each of a fragment's 8 slots: the shape
// of every proof below and of attention_layout.h's (both sides {row, col} in one orientation).
template <class Got, class Want>
constexpr bool fragment_matches(Got got, Want want) {
  for (int lane = 0; lane < 32; ++lane)
    for (int slot = 0; slot < 8; ++slot) {
      const mma_layout::Elem g = got(lane, slot), w = want(lane, slot);
      if (g.row != w.row || g.col != w.col) return false;
    }
  return true;
}
constexpr bool a_matches_leaf() {
  return fragment_matches([](int lane, int s) { return delivered(a_source, lane, s / 2, s % 2); },  // {m, k}
                          [](int lane, int s) { return mma_layout::Nvidia::a(lane, s); });
}
constexpr bool b_matches_leaf() {
  return fragment_matches(
      [](int lane, int s) {
        const mma_layout::Elem nk = delivered(b_source, lane, s / 2, s % 2);  // {n, k}
        return mma_layout::Elem{nk.col, nk.row};
      },
      [](int lane, int s) { return mma_layout::Nvidia::b(lane, s); });  // {k, n}
}
constexpr bool c_matches_leaf() {
  return fragment_matches(
      [](int lane, int s) {
        const mma_layout::Elem e = c_element(lane, s % 4);  // accumulator s % 4 of n8 tile s / 4
        return mma_layout::Elem{e.row, e.col + 8 * (s / 4)};
      },
      [](int lane, int s) { return mma_layout::Nvidia::c(lane, s); });
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


// ==== the Hopper kernel (GemmKernel::Wgmma): 128-byte swizzled stages ==========================
// The wgmma kernel's stages are filled by the copy engine (TMA, CU_TENSOR_MAP_SWIZZLE_128B, box =
// 64 K elements x R rows) and read by wgmma through shared-memory matrix descriptors. Both sides
// are modelled here from the PTX ISA and the CUDA driver documentation, and the static_asserts
// below prove that for every (row, k) of every k16 step the element wgmma reads is the one the
// copy engine put there. The kernel uses exactly these functions to build its descriptors.
namespace sw128 {

constexpr int kBK = 64;           // K elements per stage row: 64 bf16 = 128 bytes = the swizzle span
constexpr int kRowBytes = 128;    // one stage row (one operand row, one k-step)
constexpr int kAtomRows = 8;      // the XOR pattern repeats every 8 rows ...
constexpr int kAtomBytes = 1024;  // ... = 1024 bytes; stages start at multiples of this
constexpr int kK16Bytes = 32;     // one wgmma k16 step along a row

// The 128-byte swizzle as the hardware applies it to a shared-memory byte address (both the copy
// engine and wgmma): the 16-byte chunk index (bits 4-6) is XORed with the row-in-atom index
// (bits 7-9). With 1024-aligned stages this is "chunk c of row r sits at chunk c ^ (r % 8)".
constexpr uint32_t swizzle_address(uint32_t a) { return a ^ (((a >> 7) & 7u) << 4); }

// Where the copy engine writes element k of box row `row` (k < 128 / esize: 64 bf16, or 128 int8
// for the INT8 ConvRot GEMM), for a stage at `stage` (1024-aligned): rows densely 128 bytes apart,
// the swizzle on top.
constexpr uint32_t tma_address(uint32_t stage, int row, int k, int esize = 2) {
  return swizzle_address(stage + uint32_t(row * kRowBytes + k * esize));
}

// ---- wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format", sm_90) ----
//   bits  0-13  start address >> 4      bits 16-29  leading-dimension byte offset >> 4
//   bits 32-45  stride byte offset >> 4  bits 49-51  base offset (0: stages are 1024-aligned)
//   bits 62-63  swizzle mode: 1 = 128-byte
// K-major operand with the 128-byte swizzle: the 16 k of one k16 step lie inside one 128-byte row,
// so the leading-dimension offset is unused (set to 1 as is customary); the stride offset is the
// distance between 8-row groups (core-matrix rows): 8 rows x 128 bytes = 1024.
constexpr uint64_t kSwizzle128 = 1;
constexpr uint64_t descriptor(uint32_t start_address) {
  return uint64_t((start_address & 0x3FFFFu) >> 4) | (uint64_t(1) << 16) | (uint64_t(kAtomBytes >> 4) << 32) |
         (kSwizzle128 << 62);
}

// Model of wgmma's operand fetch for a K-major operand (PTX ISA, "Shared Memory Matrix Layout",
// K-major, 128-byte swizzle): element (row, k) of the operand (row < 64 for A, < N for B; k < 16
// for bf16 k16, k < 32 for s8 k32: 32 bytes either way) is read at start + (row / 8) * SBO +
// (row % 8) * 128 + esize·k, then swizzled like every address.
constexpr uint32_t wgmma_address(uint64_t desc, int row, int k, int esize = 2) {
  const uint32_t start = uint32_t(desc & 0x3FFFu) << 4;
  const uint32_t sbo = uint32_t((desc >> 32) & 0x3FFFu) << 4;
  return swizzle_address(start + uint32_t(row / kAtomRows) * sbo + uint32_t(row % kAtomRows) * kRowBytes +
                         uint32_t(k * esize));
}

// The kernel's descriptor for k16 step kk of an operand block that starts `first_row` rows into
// a stage at `stage` (consumer c's A rows: first_row = 64c; B: 0).
constexpr uint64_t step_descriptor(uint32_t stage, int first_row, int kk) {
  return descriptor(stage + uint32_t(first_row * kRowBytes + kk * kK16Bytes));
}

// Proof: for a stage at `stage` (1024-aligned), an operand block `first_row` rows in, every
// 32-byte step kk (k16 of bf16, esize 2; k32 of int8, esize 1), row and k, wgmma reads what the
// copy engine wrote for (first_row + row, step·kk + k).
constexpr bool wgmma_reads_tma_layout(uint32_t stage, int first_row, int rows, int esize = 2) {
  const int step = kK16Bytes / esize;  // elements per instruction step
  for (int kk = 0; kk < kRowBytes / kK16Bytes; ++kk)
    for (int row = 0; row < rows; ++row)
      for (int k = 0; k < step; ++k)
        if (wgmma_address(step_descriptor(stage, first_row, kk), row, k, esize) !=
            tma_address(stage, first_row + row, step * kk + k, esize))
          return false;
  return true;
}
// The kernel's A blocks (64 rows at 0 and 64 of a stage) and B block (256 rows after 16 KiB of A),
// in stages 48 KiB apart.
static_assert(wgmma_reads_tma_layout(0, 0, 64) && wgmma_reads_tma_layout(3 * 49152, 64, 64),
              "wgmma A reads do not match the copy engine's 128-byte swizzle");
static_assert(wgmma_reads_tma_layout(16384, 0, 256) && wgmma_reads_tma_layout(2 * 49152 + 16384, 0, 256),
              "wgmma B reads do not match the copy engine's 128-byte swizzle");
// The same stages with int8 operands (kernels/gemm_wgmma_int8.h: m64nNk32 s8, 128 int8 a k-step):
// the A blocks here (one evaluation each, within clang's constexpr step limit); the 256-row B
// blocks of every stage in tests/unit/test_gemm_layout.cpp (GemmLayout.WgmmaInt8ReadsTheCopyEnginesBoxes).
static_assert(wgmma_reads_tma_layout(0, 0, 64, 1), "wgmma s8 A reads do not match the copy engine's 128-byte swizzle");
static_assert(wgmma_reads_tma_layout(3 * 49152, 64, 64, 1),
              "wgmma s8 A reads do not match the copy engine's 128-byte swizzle");

// ---- the accumulator of one m64nNk16 wgmma (PTX ISA, "Matrix fragments for wgmma .m64nNk16") ----
// Thread t of the warpgroup (warp w = t / 32, lane l) holds N/2 floats; register i is element
// row 16w + l/4 + 8 * ((i / 2) % 2), column 8 * (i / 4) + 2 * (l % 4) + i % 2: per 8 columns the
// mma.sync m16n8 C layout (c_element above), each warp owning 16 rows.
constexpr mma_layout::Elem accumulator(int thread, int i) {
  const int w = thread / 32, l = thread % 32;
  return {16 * w + l / 4 + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * (l % 4) + i % 2};
}
constexpr bool accumulator_is_bijection(int n) {
  int hits[64][256] = {};
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < n / 2; ++i) {
      const mma_layout::Elem e = accumulator(t, i);
      if (e.row < 0 || e.row >= 64 || e.col < 0 || e.col >= n) return false;
      ++hits[e.row][e.col];
    }
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < n; ++c)
      if (hits[r][c] != 1) return false;
  // Same as the mma.sync accumulator per warp and 8 columns.
  for (int l = 0; l < 32; ++l)
    for (int e = 0; e < 4; ++e)
      if (accumulator(l, e).row != c_element(l, e).row || accumulator(l, e).col != c_element(l, e).col) return false;
  return true;
}
static_assert(accumulator_is_bijection(256), "the wgmma accumulator map does not cover the 64x256 tile once");

// Register i + N/4 of a thread is register i's element N/2 columns on, same row. With N = 256
// that makes registers 64.. an m64n128 fragment of columns 128.. (the kernel multiplies the two
// halves of a tile separately around its epilogue, m64n128k16 each); with N = 128, inside each
// half, it pairs the gated unit's a column c with its b column c + 64, held by one thread.
constexpr bool accumulator_halves_pair(int n) {
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < n / 4; ++i) {
      const mma_layout::Elem a = accumulator(t, i), b = accumulator(t, i + n / 4);
      if (b.row != a.row || b.col != a.col + n / 2) return false;
    }
  return true;
}
static_assert(accumulator_halves_pair(256), "registers 64.. are not the m64n128 fragment of columns 128..");
static_assert(accumulator_halves_pair(128), "a thread does not hold both a and b of its gated-unit columns");

// With the gated-unit epilogue the B block arrives as boxes of `box_rows` rows (a's, b's, a's, b's
// rows of 64 each): box j, written j·box_rows rows into the block, must land where those rows of
// one box would, so the descriptors and the proof above still hold.
constexpr bool boxes_match_one_box(uint32_t block, int rows, int box_rows) {
  for (int j = 1; j < rows / box_rows; ++j) {
    const uint32_t box = block + uint32_t(j * box_rows * kRowBytes);
    for (int row = 0; row < box_rows; ++row)
      for (int k = 0; k < kBK; ++k)
        if (tma_address(box, row, k) != tma_address(block, j * box_rows + row, k)) return false;
  }
  return true;
}
static_assert(boxes_match_one_box(16384, 256, 64) && boxes_match_one_box(3 * 49152 + 16384, 256, 64),
              "the B block's four 64-row boxes do not compose one 256-row box");

}  // namespace sw128

}  // namespace gemm_layout
}  // namespace moss
