// The Mma GEMM kernel (GemmKernel::Mma, NVIDIA, bf16 weights) and its swizzled loader.
// Part of kernels/gemm.hip (its only includer: the kernels are instantiated in that one
// translation unit, inside its anonymous namespace).
//
// ---- Mma kernel (NVIDIA, bf16 weights) ----
// Why: the leaf kernel's fragment reads are one 4-byte shared load per register (64 loads per
// 64 mma.sync for a 64x64 wave tile per k-step) and measured 28-34% of the H200's bf16 peak.
// Here every operand sits in shared memory as bf16 in unpadded 64-byte rows whose 16-byte chunks
// are XOR-swizzled (kernels/gemm_layout.h), so that one ldmatrix.x4 reads a whole 16x16 A
// fragment or the B fragments of two n8 tiles (16 loads per 64 mma.sync) without bank conflicts.
//   - Stages: S = 4 of BK = 32 (x rows [BM][32] then w rows [BN][32], bf16). Weights and a bf16 x
//     come by cp.async, S-1 steps ahead. An f32 x is fetched into registers S-1 steps ahead and
//     rounded and stored to its stage one step later (its loads have a whole k-step to land; the
//     registers for one step are 16 per thread at 128x256).
//   - One barrier per stage, before the last k16 step of stage kt (whose fragments are already in
//     registers): after it stage kt+1 is visible to all, and every wave is done with stage kt's
//     slot, which the first k16 step of stage kt+1 refills with step kt+S.
//   - Fragments of the next k16 step (possibly the first of the next stage, right after the
//     barrier) are read while the current one multiplies: A blocks into a second buffer before
//     the products, each B block as soon as its products are issued (a second B buffer would
//     cost 16 registers that the 128x256 and 128x128 shapes do not have to spare).
//   - Epilogue from registers: each lane holds column pairs, stored as one 8-byte (f32) or 4-byte
//     (bf16) write when y allows it, bias added on the way.
// Blocks are rasterised in groups of kRasterGroup tile rows (gemm_parts.h) so that neighbours in
// launch order share the weight columns in L2 (both kernels).
#include "kernels/gemm.h"

#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>

#include "kernels/gated_unit.h"
#include "kernels/gemm_hopper.h"
#include "kernels/gemm_nvidia.h"
#include "kernels/kernel_path.h"
#include "kernels/matrix_leaf.h"
#pragma once

#include <cstdint>

#include "kernels/gemm_nvidia.h"
#include "kernels/gemm_parts.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace {

#if MOSS_PLATFORM_NVIDIA
// Tile shapes of the Mma kernel; BK = 32 (64-byte rows: 4 chunks), S stages.
template <int kBM, int kBN, int kWarpsM_, int kWarpsN_, int kStages_>
struct MmaTiles {
  static constexpr int BM = kBM, BN = kBN, BK = 32, kStages = kStages_;
  static constexpr int kWarpsM = kWarpsM_, kWarpsN = kWarpsN_;
  static constexpr int kThreads = kWarpsM * kWarpsN * kWaveSize;
  static constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;  // one warp's sub-tile
  static constexpr int MI = WM / 16;                          // A fragments (16 rows) per warp
  static constexpr int NJ = WN / 16;                          // B ldmatrix.x4 per warp (2 n8 tiles each)
  static constexpr int KS = BK / 16;                          // k16 steps per stage
  static constexpr int kRowBytes = BK * 2;
  static constexpr int kStageA = BM * kRowBytes, kStageB = BN * kRowBytes;
  static constexpr int kStageBytes = kStageA + kStageB;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  // Split-K: the block's partial tile in f32 rows of BN + 8 (the padding spreads a warp's pair
  // writes over the banks), in the stages' memory once the k-loop is done.
  static constexpr int kPartialLd = BN + 8;
  static constexpr int kSplitSmemBytes = BM * kPartialLd * 4 > kSmemBytes ? BM * kPartialLd * 4 : kSmemBytes;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "a warp's sub-tile is made of whole 16x16 blocks");
  static_assert(KS % 2 == 0, "fragment buffers alternate per k16 step: buffer = ks % 2 needs an even KS");
  static_assert(kStages >= 3, "a converted x step is stored one step after it was fetched, S-2 steps ahead");
};
// 8 warps of 64x64: 32 flops per shared-memory byte read, one block per SM (96 KiB).
using MmaLarge = MmaTiles<128, 256, 2, 4, 4>;
// 4 warps of 64x64: two blocks per SM.
using MmaMedium = MmaTiles<128, 128, 2, 2, 4>;
// 4 warps of 32x32: many blocks for small problems.
using MmaSmall = MmaTiles<64, 64, 2, 2, 4>;
// 4 warps of 32x64: few rows (text encoder), split along K so the weights stream through enough
// blocks; 128 columns per block halve the re-reads of x next to 64.
using MmaSkinny = MmaTiles<64, 128, 2, 2, 4>;

// Moves ROWS x BK tiles of one operand ([rows, K], row stride ld, packed) into swizzled bf16
// stages, one k-step per call, in order (step 0, 1, 2, ...). Thread tid owns chunk column
// c = tid % cpr of rows tid / cpr + p * kRowsPerPass (one chunk = 8 elements; K is a multiple of 8,
// so a chunk is wholly inside or outside the operand: outside chunks are zeros).
//   bf16: copy() moves a chunk with cp.async (16 bytes, no registers).
//   f32:  fetch() loads a chunk's 8 floats into registers (two 16-byte loads); store() rounds
//         them to bf16 and writes the 16-byte chunk.
template <class T, int ROWS, int BK, int THREADS>
struct SwizzledLoader {
  static constexpr bool kConvert = std::is_same<T, float>::value;
  static constexpr int kCpr = gemm_layout::chunks_per_row(BK);
  static constexpr int kRowsPerPass = THREADS / kCpr;
  static constexpr int kPasses = ROWS / kRowsPerPass;
  static constexpr int kPassBytes = kRowsPerPass * BK * 2;
  static_assert(THREADS % kCpr == 0 && ROWS % kRowsPerPass == 0, "the tile splits into whole passes");
  static_assert(kRowsPerPass % gemm_layout::kBankGroups == 0, "every pass of a thread has the same swizzle");
  static_assert(kPasses <= 32, "pass mask");

  const T* base;  // the operand (a valid address for zero-filled chunks)
  const T* src;   // this thread's chunk of pass 0 in the next step (may lie past the end)
  int64_t pass_stride;  // elements from one pass's row to the next
  uint32_t rows_inside;  // bit p: the row of pass p lies inside the operand
  int k_left;           // operand columns from this thread's chunk of the next step on
  int dst;              // byte offset of this thread's pass-0 chunk in a stage
  tile::Chunk16 held[kConvert ? 2 * kPasses : 1];

  __device__ SwizzledLoader(const T* operand, int64_t ld, int rows, int k, int row0, int tid)
      : base(operand), pass_stride(int64_t(kRowsPerPass) * ld) {
    const int row = tid / kCpr, chunk = tid % kCpr;
    src = base + int64_t(row0 + row) * ld + chunk * gemm_layout::kChunkElems;
    rows_inside = 0;
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
      if (row0 + row + p * kRowsPerPass < rows) rows_inside |= 1u << p;
    k_left = k - chunk * gemm_layout::kChunkElems;
    dst = gemm_layout::chunk_offset(row, chunk, BK);
  }

  __device__ bool inside(int p) const { return ((rows_inside >> p) & 1u) != 0 && k_left > 0; }
  __device__ const T* at(int p) const { return inside(p) ? src + p * pass_stride : base; }
  __device__ void advance() {
    src += BK;
    k_left -= BK;
  }

  // Requests the next step into `stage` (bf16).
  __device__ void copy(unsigned char* stage) {
#pragma unroll
    for (int p = 0; p < kPasses; ++p) tile::copy16_async_zfill(stage + dst + p * kPassBytes, at(p), inside(p));
    advance();
  }

  // Loads the next step into registers (f32).
  __device__ void fetch() {
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const T* s = at(p);
      const bool in = inside(p);
      held[2 * p] = tile::load_chunk_or_zero(s, in);
      held[2 * p + 1] = tile::load_chunk_or_zero(s + 4, in);  // 4 floats per 16-byte load
    }
    advance();
  }

  // Rounds the fetched step to bf16 and writes it into `stage`.
  __device__ void store(unsigned char* stage) const {
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const tile::Chunk16 &lo = held[2 * p], &hi = held[2 * p + 1];
      auto pair = [](uint32_t a, uint32_t b) {
        return tile::pack_bf16_pair(__builtin_bit_cast(float, a), __builtin_bit_cast(float, b));
      };
      const tile::Chunk16 out = {{pair(lo.w[0], lo.w[1]), pair(lo.w[2], lo.w[3]), pair(hi.w[0], hi.w[1]),
                                  pair(hi.w[2], hi.w[3])}};
      tile::store_chunk(stage + dst + p * kPassBytes, out);
    }
  }
};

template <class Cfg, class TA>
__global__ __launch_bounds__(Cfg::kThreads, 1) void gemm_mma_kernel(KernelArgs<TA, bf16> args) {
  using LoaderA = SwizzledLoader<TA, Cfg::BM, Cfg::BK, Cfg::kThreads>;
  using LoaderB = SwizzledLoader<bf16, Cfg::BN, Cfg::BK, Cfg::kThreads>;
  constexpr bool kConvert = LoaderA::kConvert;
  constexpr int S = Cfg::kStages, KS = Cfg::KS, MI = Cfg::MI, NJ = Cfg::NJ;
  extern __shared__ tile::Chunk16 gemm_smem[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(gemm_smem);
  const uint32_t smem_address = gemm_nv::shared_address(smem);
  // The slot of k-step kt: x rows, then (kStageA bytes on) w rows.
  auto stage_a = [&](int kt) { return smem + (kt % S) * Cfg::kStageBytes; };
  auto stage_b = [&](int kt) { return smem + (kt % S) * Cfg::kStageBytes + Cfg::kStageA; };

  const int m = args.m, n = args.n, k = args.k;
  const TileOrigin origin = raster_tile(Cfg::BM, Cfg::BN, m, n);
  const int m0 = origin.m0, n0 = origin.n0;
  const int tid = int(thread_x()), lane = int(lane_id());
  const int warp = tid / kWaveSize;
  const int wm0 = (warp / Cfg::kWarpsN) * Cfg::WM, wn0 = (warp % Cfg::kWarpsN) * Cfg::WN;

  // Split-K (args.splits blocks per cluster, block_y its rank): this block's run of k-steps
  // [kt0, kt1) of the whole K; the loaders start at column k0 = kt0·BK and see K - k0 columns.
  const int split = int(block_y());
  const int ktiles_all = (k + Cfg::BK - 1) / Cfg::BK;
  const int kt0 = int(int64_t(split) * ktiles_all / args.splits);
  const int kt1 = int(int64_t(split + 1) * ktiles_all / args.splits);
  const int k0 = kt0 * Cfg::BK;
  LoaderA load_a(args.x + k0, args.ldx, m, k - k0, m0, tid);
  LoaderB load_b(args.w + k0, args.ldw, n, k - k0, n0, tid);

  // This lane's ldmatrix addresses in a stage, per k16 step: A block i and B block j add
  // 16 rows each (a multiple of 8 rows: the swizzle is unchanged).
  uint32_t a_at[KS], b_at[KS];
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    const gemm_layout::RowChunk ra = gemm_layout::a_source(lane), rb = gemm_layout::b_source(lane);
    a_at[ks] = uint32_t(gemm_layout::chunk_offset(wm0 + ra.row, 2 * ks + ra.chunk, Cfg::BK));
    b_at[ks] = uint32_t(Cfg::kStageA + gemm_layout::chunk_offset(wn0 + rb.row, 2 * ks + rb.chunk, Cfg::BK));
  }
  constexpr uint32_t kBlockBytes = 16 * Cfg::kRowBytes;

  float acc[MI][2 * NJ][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < 2 * NJ; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Fragments: A blocks double-buffered (fa[b][i], b = k16 step % 2: the next step's are read
  // while this step's multiply), B blocks single (fb[j], the two n8 tiles of B block j, reloaded
  // for the next step as soon as this step's products with it are issued: 16 registers fewer).
  uint32_t fa[2][MI][4], fb[NJ][4];
  auto load_a_fragments = [&](int buf, int kt, int ks) {
    const uint32_t s = smem_address + uint32_t((kt % S) * Cfg::kStageBytes) + a_at[ks];
#pragma unroll
    for (int i = 0; i < MI; ++i) gemm_nv::ldmatrix_x4(fa[buf][i], s + i * kBlockBytes);
  };
  auto load_b_fragment = [&](int j, int kt, int ks) {
    gemm_nv::ldmatrix_x4(fb[j], smem_address + uint32_t((kt % S) * Cfg::kStageBytes) + b_at[ks] + j * kBlockBytes);
  };

  const int ktiles = kt1 - kt0;  // >= 1: the host never splits finer than the k-steps
  // Prologue: steps 0..S-2 requested, one commit group each (possibly empty). A converted x is
  // stored at once, except step S-2, which stays in registers: the loop stores step kt+S-2 at
  // the start of step kt.
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < ktiles) {
      load_b.copy(stage_b(s));
      if constexpr (kConvert) {
        load_a.fetch();
        if (s < S - 2) load_a.store(stage_a(s));
      } else {
        load_a.copy(stage_a(s));
      }
    }
    tile::commit_copies();
  }
  tile::wait_copies<S - 2>();
  sync_workgroup();
  load_a_fragments(0, 0, 0);
#pragma unroll
  for (int j = 0; j < NJ; ++j) load_b_fragment(j, 0, 0);

  for (int kt = 0; kt < ktiles; ++kt) {
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      if (ks == KS - 1) {
        // Step kt+1 has landed for this thread; the barrier makes it visible to all, and ends
        // every wave's reads of stage kt (its last fragments were read at the previous k16 step).
        tile::wait_copies<S - 2>();
        sync_workgroup();
      }
      // The next k16 step: the next one of this stage, or the first of the next stage (visible
      // since the barrier above); none after the last.
      const bool more = ks < KS - 1 || kt + 1 < ktiles;
      const int next_kt = ks < KS - 1 ? kt : kt + 1, next_ks = (ks + 1) % KS;
      if (more) load_a_fragments((ks + 1) % 2, next_kt, next_ks);
      const int b = ks % 2;
#pragma unroll
      for (int j = 0; j < NJ; ++j) {
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          gemm_nv::mma_16816(acc[i][2 * j], fa[b][i], fb[j][0], fb[j][1]);
          gemm_nv::mma_16816(acc[i][2 * j + 1], fa[b][i], fb[j][2], fb[j][3]);
        }
        if (more) load_b_fragment(j, next_kt, next_ks);
        if (ks == 0 && j == 0) {
          // The slot of step kt-1 is free (barrier of step kt-1): request step kt+S-1 into it. A
          // converted x step fetched one step ago is stored now (slot of step kt-2, also free).
          const int next = kt + S - 1;
          if constexpr (kConvert) {
            if (next - 1 < ktiles) load_a.store(stage_a(next - 1));
          }
          if (next < ktiles) {
            load_b.copy(stage_b(next));
            if constexpr (kConvert) load_a.fetch();
            else load_a.copy(stage_a(next));
          }
          tile::commit_copies();
        }
      }
    }
  }
  tile::wait_copies<0>();

  // Epilogue: lane holds, per 16x8 tile, columns c, c+1 (c = 2 * (lane % 4)) of rows g and g+8
  // (gemm_layout::c_element); bias added, every element of the tile inside y written once.
  const int g = lane / 4, c2 = 2 * (lane % 4);
  if (args.splits > 1) {
    // Split-K: every block of the cluster parks its partial tile in its own shared memory (the
    // stages: all copies have landed and, after the barrier, every warp is done reading them);
    // then each block sums a share of the tile's rows over the cluster's blocks in rank order
    // (the same bits on every run) and finishes it.
    sync_workgroup();
    float* part = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int j = 0; j < 2 * NJ; ++j)
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float* at = part + (wm0 + 16 * i + g + 8 * h) * Cfg::kPartialLd + wn0 + 8 * j + c2;
          *reinterpret_cast<uint64_t*>(at) = uint64_t(__builtin_bit_cast(uint32_t, acc[i][j][2 * h])) |
                                             (uint64_t(__builtin_bit_cast(uint32_t, acc[i][j][2 * h + 1])) << 32);
        }
    gemm_nv::cluster_sync();
    constexpr int kPairsPerRow = Cfg::BN / 2;
    const int rows = m - m0 < Cfg::BM ? m - m0 : Cfg::BM;
    const int pairs = rows * kPairsPerRow;
    const int first = split * pairs / args.splits, last = (split + 1) * pairs / args.splits;
    const uint32_t part_address = gemm_nv::shared_address(part);
    for (int p = first + tid; p < last; p += Cfg::kThreads) {
      const int r = p / kPairsPerRow, c = 2 * (p % kPairsPerRow);
      const uint32_t at = part_address + uint32_t((r * Cfg::kPartialLd + c) * 4);
      float v0, v1;
      gemm_nv::load_cluster_pair(v0, v1, gemm_nv::cluster_address(at, 0));
      for (int s = 1; s < args.splits; ++s) {
        float p0, p1;
        gemm_nv::load_cluster_pair(p0, p1, gemm_nv::cluster_address(at, uint32_t(s)));
        v0 += p0;
        v1 += p1;
      }
      const BiasPair bias = bias_pair(args, n0 + c);
      store_pair(args, m0 + r, n0 + c, v0 + bias.v[0], v1 + bias.v[1]);
    }
    gemm_nv::cluster_sync();  // no block leaves while another still reads its partial tile
    return;
  }
#pragma unroll
  for (int j = 0; j < 2 * NJ; ++j) {
    const int col = n0 + wn0 + 8 * j + c2;
    const BiasPair bias = bias_pair(args, col);
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        store_pair(args, m0 + wm0 + 16 * i + g + 8 * h, col, acc[i][j][2 * h] + bias.v[0],
                   acc[i][j][2 * h + 1] + bias.v[1]);
  }
}
#endif  // MOSS_PLATFORM_NVIDIA

}  // namespace
}  // namespace moss
