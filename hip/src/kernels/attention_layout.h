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

// Both AMD schemes: Sᵀ[key][query] in C, each lane holding one query (lane%16) and half of the
// 16 keys; the other half-wave (xor 16) holds the other half, so one statistic and one exchange.
// P is the B operand ({key, query}); the schemes differ in where B's slots come from.
template <class L>
struct TransposedScheme {
  using Layout = L;
  static constexpr bool kTransposed = true;
  static constexpr int kStats = 1;
  static constexpr int kReduceMasks = 1;
  static MOSS_HOST_DEVICE constexpr int reduce_mask(int) { return 16; }
  static MOSS_HOST_DEVICE constexpr int stat(int) { return 0; }
  static constexpr int kPSlots = Layout::kSlotsB;
  static MOSS_HOST_DEVICE constexpr Elem p_operand(int lane, int j) { return Layout::b(lane, j); }  // {key, query}
};

// gfx12: lane holds keys 8h..8h+7; B slot i is the same element.
struct Gfx12Scheme : TransposedScheme<mma_layout::Gfx12> {
  static constexpr bool kPExchange = false;
  static MOSS_HOST_DEVICE constexpr int p_source_slot(int j) { return j; }
  static MOSS_HOST_DEVICE constexpr bool p_from_partner(int, int) { return false; }
};

// gfx11: lane holds keys 2i+h; the B operand wants all 16 keys in order, so B slot j is score
// slot j/2 of this lane (j%2 == h) or of lane^16 (j%2 != h).
struct Gfx11Scheme : TransposedScheme<mma_layout::Gfx11> {
  static constexpr bool kPExchange = true;
  static MOSS_HOST_DEVICE constexpr int p_source_slot(int j) { return j / 2; }
  static MOSS_HOST_DEVICE constexpr bool p_from_partner(int lane, int j) { return j % 2 != lane / 16; }
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

// The int8 QKᵀ variant (kernels/attention.hip, kInt8Qk) computes its scores on the int8 leaf
// (16x16x32, int32 C) and converts them slot for slot into a bf16-leaf fp32 accumulator, on which
// the softmax runs unchanged: that needs the int8 leaf's C map to be the bf16 leaf's (every lane,
// every slot), so Coords, stat() and the P exchange mean the same elements. Its K and Q operands
// are read as 4-byte words of consecutive d (mma_layout::slot_words_are_k_quads), from [key][d]
// and [query][d] rows, on either side (A or B) as the scheme transposes or not.
template <class L, class LI8>
constexpr bool int8_scores_in_place() {
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < L::kSlotsC; ++i)
      if (!same(L::c(lane, i), LI8::c(lane, i))) return false;
  return L::kSlotsC == LI8::kSlotsC;
}
static_assert(int8_scores_in_place<mma_layout::Nvidia, mma_layout::NvidiaI8>() &&
                  int8_scores_in_place<mma_layout::Gfx11, mma_layout::Gfx11I8>() &&
                  int8_scores_in_place<mma_layout::Gfx12, mma_layout::Gfx12I8>(),
              "attention int8 scores: the int8 leaf's accumulator map differs from the bf16 leaf's");

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
  return gemm_layout::fragment_matches(
      [](int lane, int s) { return delivered_trans(v_source, lane, s / 2, s % 2); },  // {k, n}
      [](int lane, int s) { return mma_layout::Nvidia::b(lane, s); });                // {k, n}
}

constexpr bool p_matches_leaf() {
  return gemm_layout::fragment_matches(
      [](int lane, int s) {
        const PSource src = p_source(s / 2, s % 2);
        const Elem acc = gemm_layout::c_element(lane, src.element);  // {query, key in its n8 tile}
        return Elem{acc.row, acc.col + 8 * src.tile};
      },
      [](int lane, int s) { return mma_layout::Nvidia::a(lane, s); });  // {query, key of 16}
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

// ---- the Hopper kernel (kernels/attention_hopper.h): TMA boxes read by wgmma ---------------------
// Every operand tile is made of copy-engine boxes of 64 head dims (128 bytes) x 128 rows, written
// with the 128-byte swizzle (gemm_layout::sw128::tma_address), each 16 KiB and 1024-aligned:
//   Q  [128 queries][128 dims]  = boxes (dims 0-63, dims 64-127) at q + 16 KiB·box;
//   K  [128 keys][128 dims]     the same, per stage;
//   V  [128 keys][128 dims]     the same, per stage.
// S = Q·Kᵀ (m64n128k16, 8 k16 steps over the dims): A = consumer c's 64 query rows, B = the 128
// key rows, both K-major: step kk lies in box kk / 4 at 32 bytes · (kk % 4) into each row, exactly
// the GEMM's sw128::step_descriptor (proved there for any 1024-aligned box; re-proved below at the
// kernel's offsets). O += P·V (m64n128k16, 8 k16 steps over the keys): B = V, whose N (dims) is
// contiguous, i.e. MN-major ("transposed", imm-trans-b = 1) with the 128-byte swizzle. The PTX ISA
// ("Shared Memory Matrix Layout", canonical MN-major 128B layout ((T,8,m),(8,k)) : ((1,T,LBO),
// (8T,SBO)), T = 8 bf16 per 16 bytes) reads element (k, n) at
//   start + (n / 64)·LBO + 2·(n % 64) + 128·(k % 8) + (k / 8)·SBO,   then swizzled,
// so with LBO = the distance between the two dim boxes (16 KiB), SBO = 8 rows (1024 bytes) and the
// start advanced 16 rows (2048 bytes) per k16 step, it reads row 16kk + k, dim n of the tile.
// P stays in registers: the wgmma A fragment (PTX ISA "Matrix Fragments for wgmma .m64nNk16",
// per warp the mma.sync m16n8k16 A layout) of keys 16kk.. is the score accumulator registers
// 8kk..8kk+7 of the same thread, paired (proved below).
namespace hopper {

constexpr int kHeadDim = 128;                 // the head dim the kernel is built for
constexpr int kBoxDims = gemm_layout::sw128::kBK;  // 64 dims per box (one 128-byte swizzle span)
constexpr int kBoxes = kHeadDim / kBoxDims;   // 2 boxes per tile
constexpr int kTileRows = 128;                // queries per block, keys per K/V tile
constexpr int kBoxBytes = kTileRows * gemm_layout::sw128::kRowBytes;  // 16 KiB
constexpr int kTileBytes = kBoxes * kBoxBytes;                        // 32 KiB
constexpr int kK16Steps = kHeadDim / 16;      // QKᵀ steps over the dims
constexpr int kKeySteps = kTileRows / 16;     // PV steps over the keys

// Shared memory (from a 1024-aligned base): Q, then per stage s the K tile and the V tile.
constexpr uint32_t q_offset() { return 0; }
constexpr uint32_t k_offset(int stage) { return uint32_t(kTileBytes + 2 * stage * kTileBytes); }
constexpr uint32_t v_offset(int stage) { return k_offset(stage) + uint32_t(kTileBytes); }

// Element (row, dim) of a tile at `tile` (1024-aligned) as the copy engine writes it.
constexpr uint32_t tile_address(uint32_t tile, int row, int dim) {
  return gemm_layout::sw128::tma_address(tile + uint32_t(dim / kBoxDims * kBoxBytes), row, dim % kBoxDims);
}

// K-major descriptor of k16 step kk (dims 16kk..16kk+15) of the rows first_row.. of a Q or K tile.
constexpr uint64_t kmajor_step_descriptor(uint32_t tile, int first_row, int kk) {
  return gemm_layout::sw128::step_descriptor(tile + uint32_t(kk / 4 * kBoxBytes), first_row, kk % 4);
}

// ---- MN-major descriptor (same bit fields as sw128::descriptor, PTX ISA "Matrix Descriptor
// Format"): LBO (bits 16-29) = the offset between 64-element MN blocks, SBO (bits 32-45) = the
// offset between 8-row K groups, swizzle mode 1 (128-byte), base offset 0 (1024-aligned tiles).
constexpr uint32_t kVLeadingBytes = uint32_t(kBoxBytes);                    // dims 0-63 -> 64-127
constexpr uint32_t kVStrideBytes = uint32_t(gemm_layout::sw128::kAtomBytes);  // keys k -> k + 8
constexpr uint64_t mn_descriptor(uint32_t start_address, uint32_t leading_bytes, uint32_t stride_bytes) {
  return uint64_t((start_address & 0x3FFFFu) >> 4) | (uint64_t((leading_bytes & 0x3FFFFu) >> 4) << 16) |
         (uint64_t((stride_bytes & 0x3FFFFu) >> 4) << 32) | (gemm_layout::sw128::kSwizzle128 << 62);
}
// V's descriptor for key step kk (keys 16kk..16kk+15 of the tile at `tile`).
constexpr uint64_t v_step_descriptor(uint32_t tile, int kk) {
  return mn_descriptor(tile + uint32_t(16 * kk * gemm_layout::sw128::kRowBytes), kVLeadingBytes, kVStrideBytes);
}

// Model of wgmma's fetch of B element (k < 16, n < N) for an MN-major 128-byte-swizzled operand.
constexpr uint32_t wgmma_mn_address(uint64_t desc, int k, int n) {
  const uint32_t start = uint32_t(desc & 0x3FFFu) << 4;
  const uint32_t lbo = uint32_t((desc >> 16) & 0x3FFFu) << 4;
  const uint32_t sbo = uint32_t((desc >> 32) & 0x3FFFu) << 4;
  return gemm_layout::sw128::swizzle_address(start + uint32_t(n / kBoxDims) * lbo + uint32_t(n % kBoxDims) * 2 +
                                             uint32_t(k % 8) * gemm_layout::sw128::kRowBytes +
                                             uint32_t(k / 8) * sbo);
}

// The wgmma A fragment from registers (m64nNk16, bf16): thread t (warp w = t / 32, lane l) holds 8
// elements, slot v of them at row 16w + l/4 + 8·((v / 2) % 2), column (k) 2·(l % 4) + v % 2 +
// 8·(v / 4): per warp the mma.sync m16n8k16 A fragment (mma_layout::Nvidia::a). Register j of
// the instruction holds slots 2j (low half) and 2j + 1.
constexpr Elem a_fragment(int thread, int slot) {
  const int w = thread / 32, l = thread % 32;
  return {16 * w + l / 4 + 8 * ((slot / 2) % 2), 2 * (l % 4) + slot % 2 + 8 * (slot / 4)};
}

// The P operand of key step kk, slot v, comes from score accumulator register 8kk + v.
constexpr int p_register(int kk, int slot) { return 8 * kk + slot; }

// Accumulator register i of a thread lies in its row h = row_half(i): row accumulator(t, 0).row +
// 8h (the softmax keeps one max and one sum per h); its column is accumulator(t, i).col.
constexpr int row_half(int i) { return (i / 2) % 2; }

namespace check {

// Q and K: every k16 step, row and dim of the consumers' A blocks and the B block read what the
// copy engine wrote, in every stage.
constexpr bool kmajor_reads_tiles(uint32_t tile, int first_row, int rows) {
  for (int kk = 0; kk < kK16Steps; ++kk)
    for (int row = 0; row < rows; ++row)
      for (int k = 0; k < 16; ++k)
        if (gemm_layout::sw128::wgmma_address(kmajor_step_descriptor(tile, first_row, kk), row, k) !=
            tile_address(tile, first_row + row, 16 * kk + k))
          return false;
  return true;
}
// V: every key step, key and dim.
constexpr bool v_reads_tile(uint32_t tile) {
  for (int kk = 0; kk < kKeySteps; ++kk)
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < kHeadDim; ++n)
        if (wgmma_mn_address(v_step_descriptor(tile, kk), k, n) != tile_address(tile, 16 * kk + k, n)) return false;
  return true;
}
// The tile's addresses are a bijection onto its bytes (no two (row, dim) share an address).
constexpr bool tile_is_bijection() {
  bool seen[kTileBytes / 2] = {};
  for (int row = 0; row < kTileRows; ++row)
    for (int dim = 0; dim < kHeadDim; ++dim) {
      const uint32_t a = tile_address(0, row, dim);
      if (a % 2 != 0 || a >= uint32_t(kTileBytes) || seen[a / 2]) return false;
      seen[a / 2] = true;
    }
  return true;
}
// P: A fragment slot v of step kk is the score accumulator 8kk + v of the same thread (same row,
// key 16kk + the fragment's column); the accumulator map is the GEMM's sw128::accumulator.
constexpr bool p_matches_accumulator() {
  for (int t = 0; t < 128; ++t)
    for (int kk = 0; kk < kKeySteps; ++kk)
      for (int v = 0; v < 8; ++v) {
        const Elem acc = gemm_layout::sw128::accumulator(t, p_register(kk, v));
        const Elem a = a_fragment(t, v);
        if (acc.row != a.row || acc.col != 16 * kk + a.col) return false;
      }
  return true;
}
// The A fragment per warp is the mma.sync A fragment, and covers the 64 x 16 block once.
constexpr bool a_fragment_valid() {
  int hits[64][16] = {};
  for (int t = 0; t < 128; ++t)
    for (int v = 0; v < 8; ++v) {
      const Elem a = a_fragment(t, v);
      ++hits[a.row][a.col];
      const Elem m = mma_layout::Nvidia::a(t % 32, v);
      if (a.row != 16 * (t / 32) + m.row || a.col != m.col) return false;
    }
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 16; ++c)
      if (hits[r][c] != 1) return false;
  return true;
}

constexpr bool row_half_matches() {
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 64; ++i)
      if (gemm_layout::sw128::accumulator(t, i).row != gemm_layout::sw128::accumulator(t, 0).row + 8 * row_half(i))
        return false;
  return true;
}

static_assert(row_half_matches(), "attention hopper: accumulator rows are not row g and g + 8");
static_assert(k_offset(0) % gemm_layout::sw128::kAtomBytes == 0 && kBoxBytes % gemm_layout::sw128::kAtomBytes == 0,
              "attention hopper: tiles and boxes start on swizzle atoms");
static_assert(kmajor_reads_tiles(q_offset(), 0, 64) && kmajor_reads_tiles(q_offset(), 64, 64),
              "attention hopper: Q descriptors do not read the copy engine's layout");
static_assert(kmajor_reads_tiles(k_offset(0), 0, kTileRows) && kmajor_reads_tiles(k_offset(1), 0, kTileRows),
              "attention hopper: K descriptors do not read the copy engine's layout");
static_assert(v_reads_tile(v_offset(0)) && v_reads_tile(v_offset(1)),
              "attention hopper: V (MN-major) descriptors do not read the copy engine's layout");
static_assert(tile_is_bijection(), "attention hopper: tile addresses overlap");
static_assert(p_matches_accumulator(), "attention hopper: score accumulators do not form the P A fragment");
static_assert(a_fragment_valid(), "attention hopper: wgmma A fragment differs from the mma.sync A fragment");

}  // namespace check
}  // namespace hopper
}  // namespace attention_layout
}  // namespace moss
