// The parts every GEMM kernel shares: its arguments, the epilogue (bias, conversion, bounds)
// and the rasterised order of its tiles.
// Part of kernels/gemm.hip (its only includer: the kernels are instantiated in that one
// translation unit, inside its anonymous namespace).
#pragma once

#include <cstdint>

#include "kernels/gemm.h"
#include "kernels/tile_copy.h"
#include "runtime/portability.h"

namespace moss {
namespace {

constexpr int kRasterGroup = 8;  // tile rows per raster group (the Wgmma kernel: kWgmmaRasterGroup)

// The number of bm x bn tiles of an m x n output (host: grid sizes; device: a persistent
// kernel's tile count).
__host__ __device__ inline int64_t tiles_of(int64_t m, int64_t n, int bm, int bn) {
  return ((m + bm - 1) / bm) * ((n + bn - 1) / bn);
}

template <class TA, class TB>
struct KernelArgs {
  const TA* x;
  const TB* w;
  const void* bias;
  void* y;
  int64_t ldx, ldw, ldy;
  int m, n, k;  // n: y's columns (with a gated unit, half the product's)
  int splits;  // Mma kernel: blocks per cluster sharing a tile, each a run of K (gridDim.y)
  bool bias_bf16, y_bf16;
  bool gated;       // GemmOperands::gated (the Wgmma kernel; the leaf kernel reads its own kUnit flag)
  GatedUnit unit;
  bool tma_store;   // Wgmma kernel: y written through shared memory by the copy engine
  bool pair_stores;  // y and ldy allow one aligned write per column pair (2 f32 or 2 bf16)
  // GemmOperands::y_transposed (the Leaf kernel): y[c·ldy + r]; m is then y_rows, the rows the
  // grid covers and the epilogue writes, x_rows (<= m) the rows x has: rows past it are zeros.
  bool y_transposed;
  bool run_stores;  // transposed bf16 y whose 8-row runs are 16-byte aligned (ldy % 8, base)
  int x_rows;
};

// ---- the epilogue (every kernel): bias, conversion, bounds ---------------------------------------
// bias[col] (0 without a bias); col < n.
template <class Args>
__device__ inline float bias_at(const Args& a, int col) {
  if (!a.bias) return 0.0f;
  return a.bias_bf16 ? to_float(static_cast<const bf16*>(a.bias)[col]) : static_cast<const float*>(a.bias)[col];
}
// One element, only inside y: y[row·ldy + col], or with kTransposed (the Leaf kernel,
// GemmOperands::y_transposed) y[col·ldy + row].
template <bool kTransposed = false, class Args>
__device__ inline void store_one(const Args& a, int row, int col, float v) {
  if (row >= a.m || col >= a.n) return;
  const int64_t at = kTransposed ? int64_t(col) * a.ldy + row : int64_t(row) * a.ldy + col;
  if (a.y_bf16) {
    static_cast<bf16*>(a.y)[at] = to_bf16(v);
  } else {
    static_cast<float*>(a.y)[at] = v;
  }
}
// The Mma and Wgmma kernels' accumulators come as column pairs (c, c+1) per row.
// bias[col], bias[col+1] (zeros where absent or past n):
struct BiasPair {
  float v[2];
};
template <class Args>
__device__ inline BiasPair bias_pair(const Args& a, int col) {
  BiasPair b = {{0.0f, 0.0f}};
#pragma unroll
  for (int e = 0; e < 2; ++e)
    if (col + e < a.n) b.v[e] = bias_at(a, col + e);
  return b;
}
// y[row][col] = v0, y[row][col+1] = v1, each only inside y; one
// 8-byte (f32) or 4-byte (bf16) access when y allows it.
template <class Args>
__device__ inline void store_pair(const Args& a, int row, int col, float v0, float v1) {
  if (row >= a.m || col >= a.n) return;
  const bool both = col + 1 < a.n;
  if (!both || !a.pair_stores) {
    store_one(a, row, col, v0);
    if (both) store_one(a, row, col + 1, v1);
    return;
  }
  const int64_t at = int64_t(row) * a.ldy + col;
  if (a.y_bf16) {
    *reinterpret_cast<uint32_t*>(static_cast<bf16*>(a.y) + at) = tile::pack_bf16_pair(v0, v1);
    return;
  }
  uint64_t* y = reinterpret_cast<uint64_t*>(static_cast<float*>(a.y) + at);
  *y = uint64_t(__builtin_bit_cast(uint32_t, v0)) | (uint64_t(__builtin_bit_cast(uint32_t, v1)) << 32);
}

// Origin of this block's tile in grouped raster order: blocks walk down kGroup tile rows of one
// tile column before moving right, so the blocks resident together share weight columns.
struct TileOrigin {
  int m0, n0;
};
// `pid`: the tile's number in that order (the block's, unless blocks walk several tiles).
template <int kGroup = kRasterGroup>
__device__ inline TileOrigin raster_tile(int bm, int bn, int m, int n, int pid = int(block_x())) {
  const int grid_m = (m + bm - 1) / bm, grid_n = (n + bn - 1) / bn;
  const int per_group = kGroup * grid_n;
  const int first_m = (pid / per_group) * kGroup;
  const int group_rows = grid_m - first_m < kGroup ? grid_m - first_m : kGroup;
  return {(first_m + (pid % per_group) % group_rows) * bm, ((pid % per_group) / group_rows) * bn};
}

}  // namespace
}  // namespace moss
