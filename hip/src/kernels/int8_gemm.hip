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
#include "kernels/int8_linear.h"
#include "kernels/matrix_leaf.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace {

// The host's epilogue for one element (int8_output_value), rounded once to y's dtype.
__device__ inline void store_int8_output(const Int8GemmArgs& a, int64_t row, int64_t col, int32_t acc) {
  if (row >= a.m || col >= a.n) return;
  const float bias = !a.bias.data ? 0.0f
                     : a.bias.bf16 ? to_float(static_cast<const bf16*>(a.bias.data)[col])
                                   : static_cast<const float*>(a.bias.data)[col];
  const float y = int8_output_value(acc, a.sx[row], a.sw[col], a.bias.data != nullptr, bias);
  if (a.y.bf16) static_cast<bf16*>(a.y.data)[row * a.y.ld + col] = to_bf16(y);
  else static_cast<float*>(a.y.data)[row * a.y.ld + col] = y;
}

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
template <int kLM, int kLN>
__device__ inline void store_wave(const Int8GemmArgs& a, const WaveAcc<kLM, kLN>& acc, int64_t m0, int64_t n0) {
#pragma unroll
  for (int i = 0; i < kLM; ++i)
#pragma unroll
    for (int j = 0; j < kLN; ++j)
      leaf::store_c32(acc.c[i][j], [&](int m, int n, int32_t v) { store_int8_output(a, m0 + 16 * i + m, n0 + 16 * j + n, v); });
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

__global__ __launch_bounds__(kWorkgroupSize) void int8_gemm_direct_kernel(Int8GemmArgs a, bool x_aligned,
                                                                          bool w_aligned) {
  const int64_t m0 = int64_t(block_y()) * DirectWaveAcc::kRows, n0 = int64_t(block_x()) * DirectWaveAcc::kCols;
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
          const int64_t col = n0 + 16 * j + n;
          return col < a.n ? load_word(a.qw + col * a.k, k0 + k, a.k, w_aligned) : 0;
        });
  store_wave(a, acc, m0, n0);
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
// multiple of 16, so a chunk is wholly inside or outside). Chunk c is row c / 4, bytes 16 (c % 4).
struct Held {
  tile::Chunk16 x[kChunksX], w[kChunksW];
};
__device__ inline tile::Chunk16 load_chunk(const int8_t* base, int64_t row, int64_t rows, int64_t k, int64_t kc) {
  const bool in = row < rows && kc < k;
  return tile::load_chunk_or_zero(in ? base + row * k + kc : base, in);
}
__device__ inline void load_held(const Int8GemmArgs& a, int64_t m0, int64_t n0, int64_t k0, int tid, Held& h) {
#pragma unroll
  for (int q = 0; q < kChunksX; ++q) {
    const int c = tid + q * kTiledThreads;
    h.x[q] = load_chunk(a.qx, m0 + c / kChunksPerRow, a.m, a.k, k0 + 16 * (c % kChunksPerRow));
  }
#pragma unroll
  for (int q = 0; q < kChunksW; ++q) {
    const int c = tid + q * kTiledThreads;
    h.w[q] = load_chunk(a.qw, n0 + c / kChunksPerRow, a.n, a.k, k0 + 16 * (c % kChunksPerRow));
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

__global__ MOSS_LAUNCH_BOUNDS(kTiledThreads, 1) void int8_gemm_tiled_kernel(Int8GemmArgs a) {
  __shared__ TiledStage stage[2];
  const int tid = int(thread_x()), wave = tid / kWaveSize;
  const int wm = wave / 2, wn = wave % 2;  // the wave's quarter of the block tile
  const int64_t m0 = int64_t(block_y()) * kTileM, n0 = int64_t(block_x()) * kTileN;
  TiledWaveAcc acc;
  zero(acc);
  Held held;
  load_held(a, m0, n0, 0, tid, held);
  store_held(stage[0], tid, held);
  sync_workgroup();
  const int64_t steps = (a.k + kTileK - 1) / kTileK;
  for (int64_t kt = 0; kt < steps; ++kt) {
    const bool more = kt + 1 < steps;
    if (more) load_held(a, m0, n0, (kt + 1) * kTileK, tid, held);
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
  store_wave(a, acc, m0 + TiledWaveAcc::kRows * wm, n0 + TiledWaveAcc::kCols * wn);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void int8_gemm(const Int8GemmArgs& a, hipStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  if (a.k % 4 != 0) throw failure("int8_gemm: k " + std::to_string(a.k) + " is not a multiple of 4");
  if (a.k % 16 == 0 && aligned16(a.qx) && aligned16(a.qw)) {
    const dim3 grid(unsigned((a.n + kTileN - 1) / kTileN), unsigned((a.m + kTileM - 1) / kTileM));
    hipLaunchKernelGGL(int8_gemm_tiled_kernel, grid, dim3(kTiledThreads), 0, stream, a);
  } else {
    const bool x_aligned = reinterpret_cast<uintptr_t>(a.qx) % 4 == 0;
    const bool w_aligned = reinterpret_cast<uintptr_t>(a.qw) % 4 == 0;
    constexpr int64_t rows = DirectWaveAcc::kRows, cols = DirectWaveAcc::kCols;
    const dim3 grid(unsigned((a.n + cols - 1) / cols), unsigned((a.m + rows - 1) / rows));
    hipLaunchKernelGGL(int8_gemm_direct_kernel, grid, dim3(kWorkgroupSize), 0, stream, a, x_aligned, w_aligned);
  }
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
