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
#pragma once

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
}  // namespace attention_layout
}  // namespace moss
