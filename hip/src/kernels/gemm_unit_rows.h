// The B-tile row map of the portable GEMM's gated-unit epilogue (GemmOperands::gated on the leaf
// kernel, kernels/gemm_leaf.h).
//
// With a gated unit w has 2n rows: the hidden half a (rows 0..n-1) and the gate half b (rows
// n..2n-1), and y[row][c] = unit(a[row][c], b[row][c]). The leaf kernel stages its B tile (BN rows
// of w) so that each wave's leaf tiles come in pairs (2q, 2q+1) of 16 tile rows each: tile 2q
// holds 16 hidden rows, tile 2q+1 the gate rows of the same 16 output columns, in the same order.
// Both accumulators then hold the same output elements in the same lanes and slots (one C layout
// for both), and the epilogue combines acc[i][2q] and acc[i][2q+1] slot by slot, with no exchange
// between lanes. A tile of BN weight rows thus yields BN/2 output columns:
//
//   tile row r  ->  output column  16 * (r / 32) + r % 16   (from the tile's first output column)
//                   half           (r / 16) % 2              (0: hidden, row col; 1: gate, row n + col)
//
//   r:       0..15   16..31   32..47   48..63  ...
//   column:  0..15    0..15   16..31   16..31
//   half:    a        b       a        b
//
// This needs a wave's first tile row to sit on a multiple of 32 (its sub-tile an even number of
// leaf tiles wide) and the loader's rows per pass to be a multiple of 32 (so one thread's rows
// step by 16 weight rows from pass to pass); the kernel checks both at compile time, and
// tests/unit/test_gemm_unit_rows.cpp proves the pairing against the gfx11, gfx12 and NVIDIA leaf
// layouts. Plain constexpr so that the host test compiles it without HIP.
#pragma once

#ifndef MOSS_HOST_DEVICE
#define MOSS_HOST_DEVICE
#endif

namespace moss {
namespace gemm_unit {

constexpr int kPairRows = 32;  // tile rows per (hidden, gate) pair of leaf tiles

struct UnitRow {
  int col;   // output column, from the tile's first output column
  int half;  // 0: the hidden half a (weight row col), 1: the gate half b (weight row n + col)
};

MOSS_HOST_DEVICE constexpr UnitRow tile_row(int r) { return {16 * (r / kPairRows) + r % 16, (r / 16) % 2}; }

}  // namespace gemm_unit
}  // namespace moss
