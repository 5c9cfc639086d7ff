// How the flash-attention kernel (kernels/attention.hip) lays its two products on the matrix leaf,
// per platform, and compile-time proofs that the register tricks it relies on hold for the lane
// layouts of kernels/matrix_layout.h. Plain constexpr code: it compiles on the host too, and every
// build checks all three schemes (static_asserts at the bottom), whatever it targets.
//
// Orientation. NVIDIA computes S = Q·Kᵀ and O = P·V: the m16n8k16 accumulator layout IS the A
// layout, so P feeds the second product straight from the score registers, and each lane holds
// two query rows (g, g+8) whose softmax statistics are reduced over the 4 lanes of a quad.
// AMD computes the transposes, Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·Pᵀ: the WMMA accumulator holds one column
// per lane, so with queries as columns every lane owns exactly one query row (lane % 16), its
// statistics reduce over the two half-waves, and Pᵀ is the B operand of the second product --
// slot for slot on gfx12, with one half-wave exchange on gfx11 (whose B holds all 16 K values).
//
// In both orientations the operands are read from tiles whose reduction index is contiguous:
// Q [query][d], K [key][d] and Vᵀ [dim][key], which is what the pair loader needs (slots 2p and
// 2p+1 of every A and B fragment are neighbours along K; checked below).
//
// The NVIDIA flash kernel (kernels/attention_flash_nvidia.h) reads its fragments with ldmatrix
// from XOR-swizzled tiles instead; its maps and their proofs are namespace flash below.
#pragma once

#include "kernels/gemm_layout.h"
#include "kernels/matrix_layout.h"

namespace moss {
namespace attention_layout {

using mma_layout::Elem;

// NVIDIA: S[query][key] in C; statistics of rows g (slots 0,1,4,5) and g+8 (slots 2,3,6,7).
struct NvidiaScheme {
  using Layout = mma_layout::Nvidia;
  static constexpr bool kTransposed = false;
  static constexpr int kStats = 2;
  static constexpr int kReduceMasks = 2;  // xor 1, xor 2: the quad of lanes sharing g
  static MOSS_HOST_DEVICE constexpr int reduce_mask(int n) { return n == 0 ? 1 : 2; }
  static MOSS_HOST_DEVICE constexpr int stat(int slot) { return (slot % 4) / 2; }
  // P as the A operand: slot j is score slot j of this lane.
  static constexpr int kPSlots = Layout::kSlotsA;
  static constexpr bool kPExchange = false;
  static MOSS_HOST_DEVICE constexpr int p_source_slot(int j) { return j; }
  static MOSS_HOST_DEVICE constexpr bool p_from_partner(int, int) { return false; }
  static MOSS_HOST_DEVICE constexpr Elem p_operand(int lane, int j) { return Layout::a(lane, j); }  // {query, key}
};

// gfx12: Sᵀ[key][query] in C: lane holds query lane%16, keys 8h..8h+7; B slot i is the same element.
struct Gfx12Scheme {
  using Layout = mma_layout::Gfx12;
  static constexpr bool kTransposed = true;
  static constexpr int kStats = 1;
  static constexpr int kReduceMasks = 1;  // xor 16: the other half-wave holds the other 8 keys
  static MOSS_HOST_DEVICE constexpr int reduce_mask(int) { return 16; }
  static MOSS_HOST_DEVICE constexpr int stat(int) { return 0; }
  static constexpr int kPSlots = Layout::kSlotsB;
  static constexpr bool kPExchange = false;
  static MOSS_HOST_DEVICE constexpr int p_source_slot(int j) { return j; }
  static MOSS_HOST_DEVICE constexpr bool p_from_partner(int, int) { return false; }
  static MOSS_HOST_DEVICE constexpr Elem p_operand(int lane, int j) { return Layout::b(lane, j); }  // {key, query}
};

// gfx11: Sᵀ in C: lane holds query lane%16 and keys 2i+h; the B operand wants all 16 keys in
// order, so B slot j is score slot j/2 of this lane (j%2 == h) or of lane^16 (j%2 != h).
struct Gfx11Scheme {
  using Layout = mma_layout::Gfx11;
  static constexpr bool kTransposed = true;
  static constexpr int kStats = 1;
  static constexpr int kReduceMasks = 1;
  static MOSS_HOST_DEVICE constexpr int reduce_mask(int) { return 16; }
  static MOSS_HOST_DEVICE constexpr int stat(int) { return 0; }
  static constexpr int kPSlots = Layout::kSlotsB;
  static constexpr bool kPExchange = true;
  static MOSS_HOST_DEVICE constexpr int p_source_slot(int j) { return j / 2; }
  static MOSS_HOST_DEVICE constexpr bool p_from_partner(int lane, int j) { return j % 2 != lane / 16; }
  static MOSS_HOST_DEVICE constexpr Elem p_operand(int lane, int j) { return Layout::b(lane, j); }
};

// Coordinates of accumulator slots in query/key (scores) and query/dim (output) terms; both
// products put queries on the same side, so one pair of functions serves both.
template <class S>
struct Coords {
  // Query row (0..15) of accumulator slot i of lane.
  static MOSS_HOST_DEVICE constexpr int query(int lane, int i) {
    return S::kTransposed ? S::Layout::c(lane, i).col : S::Layout::c(lane, i).row;
  }
  // Key (scores) or output dimension (output) of accumulator slot i of lane, 0..15.
  static MOSS_HOST_DEVICE constexpr int other(int lane, int i) {
    return S::kTransposed ? S::Layout::c(lane, i).row : S::Layout::c(lane, i).col;
  }
};

// ---- compile-time proofs -------------------------------------------------------------------------
namespace check {

constexpr bool same(Elem a, Elem b) { return a.row == b.row && a.col == b.col; }

// Slots 2p and 2p+1 of every A and B fragment are neighbours along K, the first at an even K
// (one aligned 32-bit read of a K-contiguous bf16 tile fills both).
template <class L>
constexpr bool pairs_contiguous() {
  for (int lane = 0; lane < 32; ++lane) {
    for (int p = 0; 2 * p + 1 < L::kSlotsA; ++p) {
      const Elem e = L::a(lane, 2 * p), f = L::a(lane, 2 * p + 1);
      if (e.col % 2 != 0 || f.row != e.row || f.col != e.col + 1) return false;
    }
    for (int p = 0; 2 * p + 1 < L::kSlotsB; ++p) {
      const Elem e = L::b(lane, 2 * p), f = L::b(lane, 2 * p + 1);
      if (e.row % 2 != 0 || f.col != e.col || f.row != e.row + 1) return false;
    }
  }
  return true;
}

// Each statistic slot names one query row per lane, shared by its reduction partners, and the
// partners' slots of that statistic cover the 16 keys exactly once.
template <class S>
constexpr bool statistics_consistent() {
  using C = Coords<S>;
  const int partners = 1 << S::kReduceMasks;
  for (int lane = 0; lane < 32; ++lane) {
    for (int st = 0; st < S::kStats; ++st) {
      int query = -1, seen[16] = {};
      for (int x = 0; x < partners; ++x) {
        int other = lane;
        for (int n = 0; n < S::kReduceMasks; ++n)
          if (x & (1 << n)) other ^= S::reduce_mask(n);
        for (int i = 0; i < S::Layout::kSlotsC; ++i) {
          if (S::stat(i) != st) continue;
          const int q = C::query(other, i);
          if (query < 0) query = q;
          if (q != query) return false;
          seen[C::other(other, i)]++;
        }
      }
      for (int key = 0; key < 16; ++key)
        if (seen[key] != 1) return false;
    }
  }
  return true;
}

// P operand slot j of lane is the score element the scheme says it takes.
template <class S>
constexpr bool p_operand_matches() {
  for (int lane = 0; lane < 32; ++lane)
    for (int j = 0; j < S::kPSlots; ++j) {
      const int src = S::p_from_partner(lane, j) ? lane ^ 16 : lane;
      if (!S::kPExchange && src != lane) return false;
      if (!same(S::p_operand(lane, j), S::Layout::c(src, S::p_source_slot(j)))) return false;
    }
  return true;
}

template <class S>
constexpr bool valid() {
  return pairs_contiguous<typename S::Layout>() && statistics_consistent<S>() && p_operand_matches<S>();
}

static_assert(valid<NvidiaScheme>(), "attention: NVIDIA scheme does not match the m16n8k16 layouts");
static_assert(valid<Gfx11Scheme>(), "attention: gfx11 scheme does not match the WMMA layouts");
static_assert(valid<Gfx12Scheme>(), "attention: gfx12 scheme does not match the WMMA layouts");

}  // namespace check

// ---- the NVIDIA flash kernel: ldmatrix from swizzled tiles, P kept in registers ------------------
// Q [query][d], K [key][d] and V [key][d] tiles, bf16, D elements per row, no padding: 16-byte
// chunk c of row r sits at chunk position c ^ (r % 8) of that row. Every ldmatrix phase reads 8
// rows r0..r0+7 (r0 a multiple of 8) at one logical chunk: with rows a multiple of 128 bytes long,
// the XOR puts them in 8 distinct 16-byte bank groups (proved below).
//   S = Q·Kᵀ:  Q is the A operand (gemm_layout::a_source), K as stored is Bᵀ (gemm_layout::
//              b_source), both proved there against the mma.sync fragments.
//   O = P·V:   V [key][d] is B [k][n] with n contiguous: ldmatrix.trans delivers it (v_source).
//   P:         the score accumulators of n8 tiles 2j, 2j+1 are, as bf16 pairs, the A fragment of
//              keys 16j..16j+15 (p_source).
namespace flash {

constexpr int kChunkBytes = 16;

// Byte offset of logical chunk `chunk` of row `row` in a tile of rows of d bf16 (d % 64 == 0).
constexpr int offset(int row, int chunk, int d) { return row * d * 2 + (chunk ^ (row % 8)) * kChunkBytes; }

// The kernel's address form: a lane's row offset with its swizzled chunk (0 or 1) folded in, then
// XORed with 32·c2 for the chunk pair c2 (chunks 2·c2, 2·c2 + 1); one XOR per ldmatrix, no table of
// per-chunk offsets held in registers. Equal to offset() (proved below).
constexpr int lane_offset(int row, int chunk01, int d) { return row * d * 2 + (chunk01 ^ (row % 8)) * kChunkBytes; }
constexpr int pair_xor(int c2) { return 2 * c2 * kChunkBytes; }

// V through ldmatrix.trans: lanes 8q..8q+7 address rows (keys) 8(q % 2).. at chunk (dims) q / 2 of a
// 16-key x 16-dim block; registers 0, 1 are b0, b1 of the dims 0-7 tile, 2, 3 those of dims 8-15.
constexpr gemm_layout::RowChunk v_source(int lane) { return {lane % 8 + 8 * ((lane / 8) % 2), lane / 16}; }

// ldmatrix .trans: register q, half h of lane l holds element (l / 4) of the row given by lane
// 8q + 2(l % 4) + h, i.e. {k = that row (key), n = its chunk's first column + l / 4 (dim)}.
template <class Source>
constexpr Elem delivered_trans(Source source, int lane, int q, int h) {
  const gemm_layout::RowChunk rc = source(8 * q + 2 * (lane % 4) + h);
  return {rc.row, gemm_layout::kChunkElems * rc.chunk + lane / 4};
}

// P: A register q, half h of keys 16j.. is accumulator element e = 2(q % 2) + h of score n8 tile
// 2j + q / 2 (gemm_layout::c_element numbering).
struct PSource {
  int tile, element;  // n8 tile offset (0 or 1) within the 16 keys, accumulator element 0..3
};
constexpr PSource p_source(int q, int h) { return {q / 2, 2 * (q % 2) + h}; }

namespace check {

constexpr bool v_matches_leaf() {
  for (int lane = 0; lane < 32; ++lane)
    for (int q = 0; q < 4; ++q)
      for (int h = 0; h < 2; ++h) {
        const Elem got = delivered_trans(v_source, lane, q, h);        // {k, n}
        const Elem want = mma_layout::Nvidia::b(lane, 2 * q + h);     // {k, n}
        if (got.row != want.row || got.col != want.col) return false;
      }
  return true;
}

constexpr bool p_matches_leaf() {
  for (int lane = 0; lane < 32; ++lane)
    for (int q = 0; q < 4; ++q)
      for (int h = 0; h < 2; ++h) {
        const PSource src = p_source(q, h);
        const Elem acc = gemm_layout::c_element(lane, src.element);  // {query, key in its n8 tile}
        const Elem want = mma_layout::Nvidia::a(lane, 2 * q + h);     // {query, key of 16}
        if (acc.row != want.row || acc.col + 8 * src.tile != want.col) return false;
      }
  return true;
}

// Each 8-lane phase of an ldmatrix.x4 with the given source map hits 8 distinct bank groups, for
// every 16-row block and chunk pair of a d-wide tile.
template <class Source>
constexpr bool conflict_free(Source source, int d) {
  for (int row0 = 0; row0 < 64; row0 += 16)
    for (int c2 = 0; c2 < d / 16; ++c2)
      for (int q = 0; q < 4; ++q) {
        bool used[8] = {};
        for (int l = 8 * q; l < 8 * q + 8; ++l) {
          const gemm_layout::RowChunk rc = source(l);
          const int group = (offset(row0 + rc.row, 2 * c2 + rc.chunk, d) / kChunkBytes) % 8;
          if (used[group]) return false;
          used[group] = true;
        }
      }
  return true;
}

constexpr bool xor_form_matches(int d) {
  for (int row = 0; row < 128; ++row)
    for (int b = 0; b < 2; ++b)
      for (int c2 = 0; c2 < d / 16; ++c2)
        if ((lane_offset(row, b, d) ^ pair_xor(c2)) != offset(row, 2 * c2 + b, d)) return false;
  return true;
}
static_assert(xor_form_matches(64) && xor_form_matches(128), "flash attention: XOR address form differs from offset()");

// The per-lane swizzle shortcut of the kernel: every row a lane addresses is lane % 8 modulo 8.
template <class Source>
constexpr bool rows_follow_lane(Source source) {
  for (int l = 0; l < 32; ++l)
    if (source(l).row % 8 != l % 8) return false;
  return true;
}

static_assert(v_matches_leaf(), "flash attention: ldmatrix.trans map does not deliver the PV B fragment");
static_assert(p_matches_leaf(), "flash attention: score accumulators do not form the P A fragment");
static_assert(conflict_free(gemm_layout::a_source, 64) && conflict_free(gemm_layout::a_source, 128) &&
                  conflict_free(gemm_layout::b_source, 64) && conflict_free(gemm_layout::b_source, 128) &&
                  conflict_free(v_source, 64) && conflict_free(v_source, 128),
              "flash attention: swizzle leaves ldmatrix bank conflicts");
static_assert(rows_follow_lane(gemm_layout::a_source) && rows_follow_lane(gemm_layout::b_source) &&
                  rows_follow_lane(v_source),
              "flash attention: a lane's rows are not lane % 8 modulo 8");

}  // namespace check
}  // namespace flash
}  // namespace attention_layout
}  // namespace moss
