// check_device: matrix
// The INT8 ConvRot GEMM (kernels/int8_linear.h) on the int8 matrix leaf (kernels/matrix_leaf.h,
// mma_i8: v_wmma_i32_16x16x16_iu8 on gfx11/gfx12, mma.sync m16n8k32 s8 on NVIDIA). Two kernels:
//   tiled   128x64 output tiles, 4 waves of 64x32 (4x2 leaves each); K in steps of 64 bytes
//           through two LDS stages (rows padded by 16 bytes), the next step's 16-byte chunks held
//           in registers while the current one is multiplied (AMD has no asynchronous copy; the
//           bf16 GEMM's portable pipeline, kernels/gemm_leaf.h). Needs 16-byte aligned rows:
//           k a multiple of 16 and both operands 16-byte aligned (every DiT layer).
//   direct  one wave per 32x32 tile, fragments read straight from global memory 4 bytes at a
//           time (byte by byte where the weight is not 4-byte aligned): every other shape.
// Both sum exactly in int32 and end in the same epilogue, so they give the same bits; every
// platform and kernel path (native, MOSSINFER_KERNELS=portable) runs this code, the leaf in the
// platform's spelling.
// With the gated unit (Int8GemmArgs::gated, each kernel's kGated instance) a wave's B tile holds
// hidden and gate weight rows in pairs of leaf tiles (kernels/gemm_unit_rows.h, as the bf16 leaf
// GEMM's gated epilogue): leaf tiles 2q and 2q+1 accumulate the hidden and the gate product of the
// same 16 output columns in the same lanes and slots, and the epilogue applies the unit to the two
// int8_output_values, so a tile of w rows gives half as many columns of y and no [m, 2n] product
// is written.
#include "kernels/gated_unit.h"
#include "kernels/gemm_unit_rows.h"
#include "kernels/int8_linear.h"
#include "kernels/matrix_leaf.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace {

// The host's epilogue for one product element, row `row` of x with weight row o
// (int8_output_value).
__device__ inline float int8_product_value(const Int8GemmArgs& a, int64_t row, int64_t o, int32_t acc) {
  const float bias = !a.bias.data ? 0.0f
                     : a.bias.bf16 ? to_float(static_cast<const bf16*>(a.bias.data)[o])
                                   : static_cast<const float*>(a.bias.data)[o];
  return int8_output_value(acc, a.sx[row], a.sw[o], a.bias.data != nullptr, bias);
}
// y's element, rounded once to y's dtype.
__device__ inline void store_y(const Int8GemmArgs& a, int64_t row, int64_t col, float y) {
  if (a.y.bf16) static_cast<bf16*>(a.y.data)[row * a.y.ld + col] = to_bf16(y);
  else static_cast<float*>(a.y.data)[row * a.y.ld + col] = y;
}
__device__ inline void store_int8_output(const Int8GemmArgs& a, int64_t row, int64_t col, int32_t acc) {
  if (row >= a.m || col >= a.n) return;
  store_y(a, row, col, int8_product_value(a, row, col, acc));
}
// With the gated unit: h and g, the sums of weight rows col and n + col, each to its fp32 value
// as linear_int8 writes it, then the unit on those two (gated_unit_value, the accurate functions:
// the row kernel's and so the host reference's formulas).
__device__ inline void store_int8_unit(const Int8GemmArgs& a, int64_t row, int64_t col, int32_t h, int32_t g) {
  if (row >= a.m || col >= a.n) return;
  const float hv = int8_product_value(a, row, col, h), gv = int8_product_value(a, row, a.n + col, g);
  float y;
  switch (a.unit) {
    case GatedUnit::Situ: y = gated_unit_value<GatedUnit::Situ>(hv, gv); break;
    case GatedUnit::SwiGlu: y = gated_unit_value<GatedUnit::SwiGlu>(hv, gv); break;
    default: y = gated_unit_value<GatedUnit::SigmoidGate>(hv, gv); break;
  }
  store_y(a, row, col, y);
}

// The weight row behind row r of a B tile whose first output column is n0, or -1 past w: plainly
// n0 + r; with the gated unit gemm_unit::tile_row's pairing (hidden row n0 + col or gate row
// n + n0 + col; tile rows 32q.. hold output columns n0 + 16q..).
template <bool kGated>
__device__ inline int64_t weight_row(const Int8GemmArgs& a, int64_t n0, int r) {
  if constexpr (!kGated) {
    return n0 + r < a.n ? n0 + r : -1;
  } else {
    const gemm_unit::UnitRow u = gemm_unit::tile_row(r);
    const int64_t col = n0 + u.col;
    return col < a.n ? u.half * a.n + col : -1;
  }
}
// Output columns of y a B tile of `rows` weight rows gives.
template <bool kGated>
MOSS_HOST_DEVICE constexpr int tile_cols(int rows) {
  return kGated ? rows / 2 : rows;
}

// The pairing the gated epilogue relies on: C column c of leaf tile t accumulates B-tile row
// 16t + c, so tiles 2q and 2q+1 give output column 16q + c, hidden then gate, in every lane and
// slot of this platform's int8 layout (the emulation tests run it on all three).
constexpr bool unit_rows_pair_slots() {
  for (int q = 0; q < 2; ++q)
    for (int lane = 0; lane < kWaveSize; ++lane)
      for (int i = 0; i < leaf::LayoutI8::kSlotsC; ++i) {
        const int c = leaf::LayoutI8::c(lane, i).col;
        const gemm_unit::UnitRow h = gemm_unit::tile_row(16 * (2 * q) + c), g = gemm_unit::tile_row(16 * (2 * q + 1) + c);
        if (h.half != 0 || g.half != 1 || h.col != g.col || h.col != 16 * q + c) return false;
      }
  return true;
}
static_assert(unit_rows_pair_slots(), "the int8 leaf's gated-unit rows do not pair");

// A wave's kLM x kLN leaves: c[i][j] is rows 16i.., columns 16j.. of its 16kLM x 16kLN tile.
template <int kLM, int kLN>
struct WaveAcc {
  static constexpr int kRows = 16 * kLM, kCols = 16 * kLN;
  leaf::FragC32 c[kLM][kLN];
};
template <int kLM, int kLN>
__device__ inline void zero(WaveAcc<kLM, kLN>& acc) {
#pragma unroll
  for (int i = 0; i < kLM; ++i)
#pragma unroll
    for (int j = 0; j < kLN; ++j) leaf::zero(acc.c[i][j]);
}
// One K step of 32: a(i, m, k) and b(j, n, k) return the 4-byte words of rows 16i + m of the
// wave's x rows and 16j + n of its w rows at K k (a multiple of 4) of this step.
template <int kLM, int kLN, class GetA, class GetB>
__device__ inline void wave_step(WaveAcc<kLM, kLN>& acc, GetA a, GetB b) {
  leaf::FragA8 fa[kLM];
  leaf::FragB8 fb[kLN];
#pragma unroll
  for (int i = 0; i < kLM; ++i) leaf::load_a8(fa[i], [&](int m, int k) { return a(i, m, k); });
#pragma unroll
  for (int j = 0; j < kLN; ++j) leaf::load_b8(fb[j], [&](int n, int k) { return b(j, n, k); });
#pragma unroll
  for (int i = 0; i < kLM; ++i)
#pragma unroll
    for (int j = 0; j < kLN; ++j) leaf::mma_i8(acc.c[i][j], fa[i], fb[j]);
}
// The wave's tile of y from row m0, column n0: each leaf tile, or with the gated unit each pair
// (2q hidden, 2q + 1 gate) giving columns n0 + 16q ...
template <bool kGated, int kLM, int kLN>
__device__ inline void store_wave(const Int8GemmArgs& a, const WaveAcc<kLM, kLN>& acc, int64_t m0, int64_t n0) {
  if constexpr (!kGated) {
#pragma unroll
    for (int i = 0; i < kLM; ++i)
#pragma unroll
      for (int j = 0; j < kLN; ++j)
        leaf::store_c32(acc.c[i][j], [&](int m, int n, int32_t v) { store_int8_output(a, m0 + 16 * i + m, n0 + 16 * j + n, v); });
  } else {
    static_assert(kLN % 2 == 0, "the gated unit pairs a wave's leaf tiles");
#pragma unroll
    for (int i = 0; i < kLM; ++i)
#pragma unroll
      for (int q = 0; q < kLN / 2; ++q)
        leaf::store_c32_pair(acc.c[i][2 * q], acc.c[i][2 * q + 1], [&](int m, int n, int32_t h, int32_t g) {
          store_int8_unit(a, m0 + 16 * i + m, n0 + 16 * q + n, h, g);
        });
  }
}

// ---- direct --------------------------------------------------------------------------------------
// Four bytes of a row at k0 (a multiple of 4), as one little-endian word; zero at or past k (k is
// a multiple of 4, so a word is wholly inside or wholly outside). `aligned`: the row's base is
// 4-byte aligned (one load), else the bytes one by one.
__device__ inline int32_t load_word(const int8_t* row, int64_t k0, int64_t k, bool aligned) {
  if (k0 >= k) return 0;
  if (aligned) return *reinterpret_cast<const int32_t*>(row + k0);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(row + k0);
  return int32_t(uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24));
}

using DirectWaveAcc = WaveAcc<2, 2>;  // the direct kernel: one wave, a 32x32 tile

template <bool kGated>
__global__ __launch_bounds__(kWorkgroupSize) void int8_gemm_direct_kernel(Int8GemmArgs a, bool x_aligned,
                                                                          bool w_aligned) {
  const int64_t m0 = int64_t(block_y()) * DirectWaveAcc::kRows;
  const int64_t n0 = int64_t(block_x()) * tile_cols<kGated>(DirectWaveAcc::kCols);  // y's first column
  DirectWaveAcc acc;
  zero(acc);
  for (int64_t k0 = 0; k0 < a.k; k0 += leaf::kLeafK8)
    wave_step(
        acc,
        [&](int i, int m, int k) {
          const int64_t row = m0 + 16 * i + m;
          return row < a.m ? load_word(a.qx + row * a.k, k0 + k, a.k, x_aligned) : 0;
        },
        [&](int j, int n, int k) {
          const int64_t row = weight_row<kGated>(a, n0, 16 * j + n);
          return row >= 0 ? load_word(a.qw + row * a.k, k0 + k, a.k, w_aligned) : 0;
        });
  store_wave<kGated>(a, acc, m0, n0);
}

// ---- tiled ---------------------------------------------------------------------------------------
// The block: 4 waves in 2 x 2, each a 64x32 tile (4x2 leaves), so 128 rows of x by 64 of w; the
// bf16 GEMM's wide tile (docs/amd_kernels.md: a 128x64 tile of 4 waves moves twice the flops per
// byte into LDS of a one-wave tile), here with 64 bytes of K a stage.
constexpr int kTileM = 128, kTileN = 64;
constexpr int kTileK = 64;               // bytes of K per stage
constexpr int kRowBytes = kTileK + 16;   // an LDS row, padded (16-byte aligned: 80)
constexpr int kTiledThreads = 4 * kWaveSize;
constexpr int kChunksPerRow = kTileK / 16;
constexpr int kChunksX = kTileM * kChunksPerRow / kTiledThreads;  // per thread and stage
constexpr int kChunksW = kTileN * kChunksPerRow / kTiledThreads;
using TiledWaveAcc = WaveAcc<4, 2>;
static_assert(2 * TiledWaveAcc::kRows == kTileM && 2 * TiledWaveAcc::kCols == kTileN, "2 x 2 waves tile the block");
static_assert(kChunksX * kTiledThreads == kTileM * kChunksPerRow && kChunksW * kTiledThreads == kTileN * kChunksPerRow,
              "the chunks of a stage split evenly over the threads");

struct TiledStage {
  alignas(16) int8_t x[kTileM][kRowBytes];
  alignas(16) int8_t w[kTileN][kRowBytes];
};

// This thread's chunks of step k0 of both operands, into registers (zeros past m, n or k: k is a
// multiple of 16, so a chunk is wholly inside or outside). Chunk c is tile row c / 4, bytes 16
// (c % 4); the w tile's rows are weight_row's (n0: the block's first column of y).
struct Held {
  tile::Chunk16 x[kChunksX], w[kChunksW];
};
// row: the operand's row, -1 for none (zeros).
__device__ inline tile::Chunk16 load_chunk(const int8_t* base, int64_t row, int64_t k, int64_t kc) {
  const bool in = row >= 0 && kc < k;
  return tile::load_chunk_or_zero(in ? base + row * k + kc : base, in);
}
template <bool kGated>
__device__ inline void load_held(const Int8GemmArgs& a, int64_t m0, int64_t n0, int64_t k0, int tid, Held& h) {
#pragma unroll
  for (int q = 0; q < kChunksX; ++q) {
    const int c = tid + q * kTiledThreads;
    const int64_t row = m0 + c / kChunksPerRow;
    h.x[q] = load_chunk(a.qx, row < a.m ? row : -1, a.k, k0 + 16 * (c % kChunksPerRow));
  }
#pragma unroll
  for (int q = 0; q < kChunksW; ++q) {
    const int c = tid + q * kTiledThreads;
    h.w[q] = load_chunk(a.qw, weight_row<kGated>(a, n0, c / kChunksPerRow), a.k, k0 + 16 * (c % kChunksPerRow));
  }
}
__device__ inline void store_held(TiledStage& s, int tid, const Held& h) {
#pragma unroll
  for (int q = 0; q < kChunksX; ++q) {
    const int c = tid + q * kTiledThreads;
    tile::store_chunk(&s.x[c / kChunksPerRow][16 * (c % kChunksPerRow)], h.x[q]);
  }
#pragma unroll
  for (int q = 0; q < kChunksW; ++q) {
    const int c = tid + q * kTiledThreads;
    tile::store_chunk(&s.w[c / kChunksPerRow][16 * (c % kChunksPerRow)], h.w[q]);
  }
}

// Wave wn's B rows are tile rows 32wn.. (TiledWaveAcc::kCols = 32 = gemm_unit::kPairRows: with the
// gated unit, output columns n0 + 16wn ..).
static_assert(TiledWaveAcc::kCols == gemm_unit::kPairRows, "a wave's B rows are one (hidden, gate) pair of leaf tiles");
template <bool kGated>
__global__ MOSS_LAUNCH_BOUNDS(kTiledThreads, 1) void int8_gemm_tiled_kernel(Int8GemmArgs a) {
  __shared__ TiledStage stage[2];
  const int tid = int(thread_x()), wave = tid / kWaveSize;
  const int wm = wave / 2, wn = wave % 2;  // the wave's quarter of the block tile
  const int64_t m0 = int64_t(block_y()) * kTileM, n0 = int64_t(block_x()) * tile_cols<kGated>(kTileN);
  TiledWaveAcc acc;
  zero(acc);
  Held held;
  load_held<kGated>(a, m0, n0, 0, tid, held);
  store_held(stage[0], tid, held);
  sync_workgroup();
  const int64_t steps = (a.k + kTileK - 1) / kTileK;
  for (int64_t kt = 0; kt < steps; ++kt) {
    const bool more = kt + 1 < steps;
    if (more) load_held<kGated>(a, m0, n0, (kt + 1) * kTileK, tid, held);
    const TiledStage& s = stage[kt % 2];
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += leaf::kLeafK8)
      wave_step(
          acc,
          [&](int i, int m, int k) {
            return *reinterpret_cast<const int32_t*>(&s.x[TiledWaveAcc::kRows * wm + 16 * i + m][kk + k]);
          },
          [&](int j, int n, int k) {
            return *reinterpret_cast<const int32_t*>(&s.w[TiledWaveAcc::kCols * wn + 16 * j + n][kk + k]);
          });
    // The other stage was last read in step kt - 1, which every wave finished before the barrier
    // that ended it; the barrier below publishes the stores before step kt + 1 reads them.
    if (more) store_held(stage[(kt + 1) % 2], tid, held);
    sync_workgroup();
  }
  store_wave<kGated>(a, acc, m0 + TiledWaveAcc::kRows * wm, n0 + tile_cols<kGated>(TiledWaveAcc::kCols) * wn);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <bool kGated>
void launch_int8_gemm(const Int8GemmArgs& a, hipStream_t stream) {
  if (a.k % 16 == 0 && aligned16(a.qx) && aligned16(a.qw)) {  // (the gate rows then too: k % 16 == 0)
    constexpr int64_t cols = tile_cols<kGated>(kTileN);
    const dim3 grid(unsigned((a.n + cols - 1) / cols), unsigned((a.m + kTileM - 1) / kTileM));
    hipLaunchKernelGGL(int8_gemm_tiled_kernel<kGated>, grid, dim3(kTiledThreads), 0, stream, a);
  } else {
    const bool x_aligned = reinterpret_cast<uintptr_t>(a.qx) % 4 == 0;
    const bool w_aligned = reinterpret_cast<uintptr_t>(a.qw) % 4 == 0;
    constexpr int64_t rows = DirectWaveAcc::kRows, cols = tile_cols<kGated>(DirectWaveAcc::kCols);
    const dim3 grid(unsigned((a.n + cols - 1) / cols), unsigned((a.m + rows - 1) / rows));
    hipLaunchKernelGGL(int8_gemm_direct_kernel<kGated>, grid, dim3(kWorkgroupSize), 0, stream, a, x_aligned,
                       w_aligned);
  }
}

}  // namespace

void int8_gemm(const Int8GemmArgs& a, hipStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  if (a.k % 4 != 0) throw failure("int8_gemm: k " + std::to_string(a.k) + " is not a multiple of 4");
  if (a.gated) launch_int8_gemm<true>(a, stream);
  else launch_int8_gemm<false>(a, stream);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
