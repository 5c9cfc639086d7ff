// Which 16-byte pieces of one key tile each thread of the portable attention kernel moves into
// shared memory (kernels/attention.hip, KvTileLoader), as plain constexpr index maps so that the
// host test tests/unit/test_attention_kv_map.cpp can prove, with no GPU, that every element of the
// K tile and of the Vᵀ tile is written exactly once and nothing else is.
//
// Tile shapes (per workgroup, per key tile of KT keys): K [KT][D] (key rows, D dims), Vᵀ [Dv][KT]
// (one row per output dimension, keys contiguous: the P·V product's operand wants the keys as its
// reduction index). A "chunk" is 8 bf16 = 16 bytes, the unit of every copy.
//   K: chunk c (0 <= c < KT·D/8) is key c / (D/8), dims (c % (D/8))·8 .. +8; source and
//      destination are both [key][d] rows, so a chunk is one 16-byte load and one 16-byte store.
//   Vᵀ from packed V ([d][key] in global memory, attention_pack): chunk c is dim c / (KT/8),
//      keys (c % (KT/8))·8 .. +8 (a plain row copy, as K).
//   Vᵀ from V in place ([key][d] activation rows, no pack): unit u (0 <= u < Dv·KT/16) is the key
//      pair 2·(u % (KT/2)), +1 and the dims (u / (KT/2))·8 .. +8: two 16-byte loads (one per key)
//      whose bf16 pairs, interleaved, are 8 32-bit words, one per dim row of Vᵀ, at key column
//      2·pair. Consecutive units (consecutive lanes) take consecutive key pairs, so a wave's 32-bit
//      stores fall in consecutive words of a Vᵀ row: at most 2-way bank conflicts for KT = 32
//      (lanes 16 apart sit 8 Vᵀ rows of (KT+8)/2 words apart, 160 words ≡ 0 mod 32), none for 64.
#pragma once

#include <cstdint>

#ifndef MOSS_HOST_DEVICE
#define MOSS_HOST_DEVICE
#endif

namespace moss {
namespace attention_kv_map {

// A 16-byte piece of a row-major tile: row, and first column (a multiple of 8 elements).
struct Piece {
  int row, col;
};

constexpr int kChunkElems = 8;

// K chunk c of a [kt][d] tile (also Vᵀ chunk c of a packed [dv][kt] tile: rows dv, width kt).
MOSS_HOST_DEVICE constexpr Piece row_chunk(int c, int width) {
  return {c / (width / kChunkElems), c % (width / kChunkElems) * kChunkElems};
}
MOSS_HOST_DEVICE constexpr int row_chunks(int rows, int width) { return rows * width / kChunkElems; }

// In-place V unit u of a KT-key tile: row = the first key of its pair (even), col = its first dim.
// It covers Vᵀ[col + i][row + j] for i < 8, j < 2.
MOSS_HOST_DEVICE constexpr Piece v_pair_unit(int u, int kt) { return {2 * (u % (kt / 2)), u / (kt / 2) * kChunkElems}; }
MOSS_HOST_DEVICE constexpr int v_pair_units(int dv, int kt) { return dv * kt / (2 * kChunkElems); }

// The 32-bit word an in-place V unit stores at Vᵀ[col + e][row .. row + 1]: dim e of key row (the
// chunk `first`, 4 words of 8 bf16, element 2i in word i's low half) in the low half, which is the
// lower address (little-endian), and dim e of key row + 1 (`second`) in the high half.
MOSS_HOST_DEVICE constexpr uint32_t v_pair_word(const uint32_t (&first)[4], const uint32_t (&second)[4], int e) {
  const int shift = 16 * (e % 2);
  return ((first[e / 2] >> shift) & 0xffffu) | ((second[e / 2] >> shift) & 0xffffu) << 16;
}

// Pieces thread `tid` of `threads` moves: pieces tid, tid + threads, ... below `count`; the loaders
// loop i over per_thread(count, threads) and skip piece(tid, i) >= count.
MOSS_HOST_DEVICE constexpr int per_thread(int count, int threads) { return (count + threads - 1) / threads; }
MOSS_HOST_DEVICE constexpr int piece_of(int tid, int i, int threads) { return tid + i * threads; }

}  // namespace attention_kv_map
}  // namespace moss
