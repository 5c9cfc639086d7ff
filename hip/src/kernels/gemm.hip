// check_device: matrix
// Tiled GEMM on the matrix leaf, y = x·wᵀ (+ bias); contract and summary in kernels/gemm.h.
// Three kernels share the host side (tile shapes, rasterisation, launch); the Wgmma kernel
// (NVIDIA Hopper) is described where it is defined, below the Mma kernel.
//
// ---- Leaf kernel (AMD; NVIDIA with f32 weights) ----
// One workgroup computes a BM x BN tile of y. K is walked in steps of BK = 32 through a ring of
// kStages shared-memory stages; each stage holds the x rows [BM][BK] and the w rows [BN][BK],
// each row padded by 8 elements. Weights (and a bf16 x) are staged as stored, a raw 16-byte copy
// (cp.async on NVIDIA); an f32 x is either rounded to bf16 on its way in (GemmStaging::Convert)
// or staged raw and rounded as fragments are read (Raw). Fragments are read from shared memory
// through the leaf's lane maps in pairs; with the padding, the NVIDIA fragment reads
// (lane = 4g + t reads row g, k = 2t: 4 or 8 bytes) hit 32 distinct banks.
// Pipelines:
//   NVIDIA  stage kt+S-1 is requested with cp.async while stage kt is multiplied (S = 3 or 4);
//           a converted x step is loaded into registers before the multiply and stored after.
//   AMD     one wave per workgroup, two stages; step kt+1 is loaded and stored to LDS before
//           step kt is multiplied. Holding it in registers across the multiply costs 64 VGPRs
//           (measured: 135 -> 217 on gfx12); the latency is hidden by the other workgroups a
//           lean kernel leaves room for.
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
// Blocks are rasterised in groups of 8 tile rows so that neighbours in launch order share
// the weight columns in L2 (both kernels).
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
#include "kernels/tile_copy.h"

namespace moss {
namespace {

using leaf::Layout;

constexpr int kPad = 8;          // elements of padding per shared-memory row
constexpr int kRasterGroup = 8;  // tile rows per raster group

// ---- the lane maps allow pair reads ----------------------------------------------------------
// Fragments are filled two slots at a time from one 4-byte (bf16) or 8-byte (f32) read, which
// needs slots 2p and 2p+1 of every lane to be neighbours in K, the first at an even K. True for
// all three leaf implementations; checked here for each, whatever the build target.
template <class L>
constexpr bool pairs_adjacent_in_k() {
  for (int lane = 0; lane < kWaveSize; ++lane) {
    for (int i = 0; i < L::kSlotsA; i += 2) {
      const mma_layout::Elem e0 = L::a(lane, i), e1 = L::a(lane, i + 1);
      if (e0.col % 2 != 0 || e1.row != e0.row || e1.col != e0.col + 1) return false;
    }
    for (int i = 0; i < L::kSlotsB; i += 2) {
      const mma_layout::Elem e0 = L::b(lane, i), e1 = L::b(lane, i + 1);
      if (e0.row % 2 != 0 || e1.col != e0.col || e1.row != e0.row + 1) return false;
    }
  }
  return true;
}
static_assert(pairs_adjacent_in_k<mma_layout::Gfx11>(), "gfx11 leaf: fragment slot pairs are not K neighbours");
static_assert(pairs_adjacent_in_k<mma_layout::Gfx12>(), "gfx12 leaf: fragment slot pairs are not K neighbours");
static_assert(pairs_adjacent_in_k<mma_layout::Nvidia>(), "NVIDIA leaf: fragment slot pairs are not K neighbours");

// ---- tile shapes -------------------------------------------------------------------------------
// kHold: the next k-step's chunks wait in registers while the current one multiplies, and go to
// shared memory after it (the portable configuration: AMD has no asynchronous global-to-LDS copy,
// so a plain copy would stall the wave on every load); otherwise they are copied asynchronously
// (cp.async on NVIDIA) into the ring of stages.
template <int kBM, int kBN, int kWarpsM_, int kWarpsN_, int kMaxStages_, int kSmemBudget_, bool kHold_ = false>
struct Tiles {
  static constexpr int BM = kBM, BN = kBN, BK = 32;
  static constexpr bool kHold = kHold_;
  static constexpr int kWarpsM = kWarpsM_, kWarpsN = kWarpsN_;
  static constexpr int kThreads = kWarpsM * kWarpsN * kWaveSize;
  static constexpr int WM = BM / kWarpsM, WN = BN / kWarpsN;  // one wave's sub-tile
  static constexpr int TM = WM / 16, TN = WN / 16;            // leaf tiles per wave
  static constexpr int kMaxStages = kMaxStages_, kSmemBudget = kSmemBudget_;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "a wave's sub-tile is made of whole leaf tiles");
};

#if MOSS_PLATFORM_NVIDIA
// 8 warps of 64x64: 32 flops per shared-memory byte read, 1 block per SM.
using LargeTiles = Tiles<128, 256, 2, 4, 4, 200 * 1024>;
// 4 warps of 64x64: 2 blocks per SM.
using MediumTiles = Tiles<128, 128, 2, 2, 4, 110 * 1024>;
// 4 warps of 32x32: many blocks for small problems (text rows, single-row modulation GEMMs).
using SmallTiles = Tiles<64, 64, 2, 2, 4, 64 * 1024>;
#endif
// The portable configurations (the AMD build's; compiled on both platforms, kernels/kernel_path.h),
// two stages, the next step held in registers (docs/amd_kernels.md has the cost model behind them):
// Wide: 4 waves of 64x32 on a 128x64 tile (43 flops per byte moved into LDS, 4 x 2 leaf tiles a
//       wave); an f32 x (converted on its way in, its chunks held as f32) or f32 weights (the VAE's
//       attention) 64x64. A 128x128 tile (4 x 4 leaf tiles a wave) fits gfx11's 256 VGPRs under
//       clang-19 but spills under ROCm 7's clang-22 (328 bytes of scratch: the shipped binary's
//       check_device.sh --binary run), as does a one-wave 32x64 tile with a held f32 x.
// Narrow: few rows (the text encoder, single-row modulation): one wave of 32x64 (32x32 with an f32
//       x or f32 weights).
using PortableWide = Tiles<128, 64, 2, 2, 2, 64 * 1024, true>;
using PortableWideF32X = Tiles<64, 64, 2, 2, 2, 64 * 1024, true>;
using PortableWideF32Weights = Tiles<64, 64, 2, 2, 2, 64 * 1024, true>;
using PortableNarrow = Tiles<32, 64, 1, 1, 2, 64 * 1024, true>;
using PortableNarrowF32X = Tiles<32, 32, 1, 1, 2, 64 * 1024, true>;
using PortableNarrowF32Weights = Tiles<32, 32, 1, 1, 2, 64 * 1024, true>;
// Wide from this many rows on: below it most of a 128-row tile would multiply zeros.
constexpr int64_t kPortableWideMinRows = 65;

// Shared-memory plan of one instantiation. SA: the element type x is staged in (bf16 when an
// f32 x is converted on its way in).
template <class Cfg, class SA, class TB>
struct Plan {
  static constexpr int kLdA = Cfg::BK + kPad, kLdB = Cfg::BK + kPad;  // elements
  static constexpr int kStageA = Cfg::BM * kLdA * int(sizeof(SA));  // bytes
  static constexpr int kStageB = Cfg::BN * kLdB * int(sizeof(TB));
  static constexpr int kStageBytes = kStageA + kStageB;
  static constexpr int kFit = Cfg::kSmemBudget / kStageBytes;
  static constexpr int kStages = kFit < 2 ? 2 : (kFit > Cfg::kMaxStages ? Cfg::kMaxStages : kFit);
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static_assert(kStageA % 16 == 0 && kStageB % 16 == 0, "stages keep 16-byte alignment");
};

// Moves ROWS x BK tiles of one operand ([rows, K], row stride ld) into shared-memory stages in
// 16-byte chunks. Each thread owns one chunk column and every (THREADS / chunks-per-row)-th row.
// Operands are packed (gemm() checks): 16-byte aligned rows and K a multiple of 8, so a chunk is
// wholly inside or wholly outside the operand; outside chunks are zeros.
//   kConvert false: chunks are copied as they are (cp.async on NVIDIA, a load and a store on
//                   AMD); load() does all the work.
//   kConvert true:  (T = float) load() fetches the chunks into registers, store() rounds them to
//                   bf16 and writes 8 bytes per chunk: the stage holds bf16.
template <class T, int ROWS, int BK, int THREADS, bool kConvert, bool kHoldRaw = false>
struct TileLoader {
  static constexpr bool kHeld = kConvert || kHoldRaw;  // chunks pass through registers
  static constexpr int kVec = 16 / int(sizeof(T));  // elements per chunk
  static constexpr int kChunksPerRow = BK / kVec;
  static constexpr int kRowsPerPass = THREADS / kChunksPerRow;
  static constexpr int kPasses = ROWS / kRowsPerPass;
  static constexpr int kLd = BK + kPad;
  using Staged = std::conditional_t<kConvert, bf16, T>;  // element type in shared memory
  static_assert(!kConvert || sizeof(T) == 4, "only f32 operands are converted");
  static_assert(BK % kVec == 0 && THREADS % kChunksPerRow == 0 && ROWS % kRowsPerPass == 0,
                "the tile splits into whole chunks per thread");

  const T* base;  // the operand (a valid address for zero-filled chunks)
  const T* src;   // this thread's chunk column in row row0 + first_row (may lie past the end)
  int64_t ld;
  int rows_left, k_left;  // rows and columns of the operand from this thread's first chunk on
  int first_row, col;
  tile::Chunk16 held[kHeld ? kPasses : 1];

  __device__ TileLoader(const T* operand, int64_t ld_, int rows, int k, int row0, int tid)
      : base(operand), ld(ld_), first_row(tid / kChunksPerRow), col((tid % kChunksPerRow) * kVec) {
    src = base + int64_t(row0 + first_row) * ld + col;
    rows_left = rows - row0 - first_row;
    k_left = k - col;
  }

  __device__ bool inside(int p, int kt) const { return p * kRowsPerPass < rows_left && kt * BK < k_left; }
  __device__ const T* at(int p, int kt) const {
    return inside(p, kt) ? src + int64_t(p * kRowsPerPass) * ld + kt * BK : base;
  }
  __device__ Staged* slot(Staged* stage, int p) const { return stage + (first_row + p * kRowsPerPass) * kLd + col; }

  // Requests k-step kt for `stage`.
  __device__ void load(int kt, Staged* stage) {
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      if constexpr (kHeld) held[p] = tile::load_chunk_or_zero(at(p, kt), inside(p, kt));
      else tile::copy16_async_zfill(slot(stage, p), at(p, kt), inside(p, kt));
    }
  }

  // Held chunks: writes those of the last load() into `stage` (as bf16 with kConvert).
  __device__ void store(Staged* stage) const {
    if constexpr (kHoldRaw && !kConvert) {
#pragma unroll
      for (int p = 0; p < kPasses; ++p) tile::store_chunk(slot(stage, p), held[p]);
    } else if constexpr (kConvert) {
#pragma unroll
      for (int p = 0; p < kPasses; ++p) {
        const tile::Chunk16& c = held[p];
        const uint64_t packed =
            uint64_t(tile::pack_bf16_pair(__builtin_bit_cast(float, c.w[0]), __builtin_bit_cast(float, c.w[1]))) |
            (uint64_t(tile::pack_bf16_pair(__builtin_bit_cast(float, c.w[2]), __builtin_bit_cast(float, c.w[3])))
             << 32);
        *reinterpret_cast<uint64_t*>(slot(stage, p)) = packed;
      }
    }
  }
};

// Fragments from shared memory through the leaf's lane maps, two slots per read.
// a_tile: A[m][k] rows of the 16x16 block; b_tile: B stored transposed, Bt[n][k].
template <class T>
__device__ inline void load_fragment_a(leaf::FragA& f, const T* a_tile, int ld) {
  const int lane = int(lane_id());
#pragma unroll
  for (int i = 0; i < Layout::kSlotsA; i += 2) {
    const mma_layout::Elem e = Layout::a(lane, i);
    const uint32_t pair = tile::load_bf16_pair(a_tile + e.row * ld + e.col);
    __builtin_memcpy(&f.x[i], &pair, sizeof pair);
  }
}
template <class T>
__device__ inline void load_fragment_b(leaf::FragB& f, const T* bt_tile, int ld) {
  const int lane = int(lane_id());
#pragma unroll
  for (int i = 0; i < Layout::kSlotsB; i += 2) {
    const mma_layout::Elem e = Layout::b(lane, i);  // {k, n}
    const uint32_t pair = tile::load_bf16_pair(bt_tile + e.col * ld + e.row);
    __builtin_memcpy(&f.x[i], &pair, sizeof pair);
  }
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
  bool gated;       // GemmOperands::gated (Wgmma kernel only)
  GatedUnit unit;
  bool tma_store;   // Wgmma kernel: y written through shared memory by the copy engine
  bool pair_stores;  // y and ldy allow one aligned write per column pair (2 f32 or 2 bf16)
};

// ---- the epilogue (every kernel): bias, conversion, bounds ---------------------------------------
// bias[col] (0 without a bias); col < n.
template <class Args>
__device__ inline float bias_at(const Args& a, int col) {
  if (!a.bias) return 0.0f;
  return a.bias_bf16 ? to_float(static_cast<const bf16*>(a.bias)[col]) : static_cast<const float*>(a.bias)[col];
}
// One element, only inside y.
template <class Args>
__device__ inline void store_one(const Args& a, int row, int col, float v) {
  if (row >= a.m || col >= a.n) return;
  const int64_t at = int64_t(row) * a.ldy + col;
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

// Origin of this block's tile in grouped raster order: blocks walk down kRasterGroup tile rows
// of one tile column before moving right, so the blocks resident together share weight columns.
struct TileOrigin {
  int m0, n0;
};
__device__ inline TileOrigin raster_tile(int bm, int bn, int m, int n) {
  const int grid_m = (m + bm - 1) / bm, grid_n = (n + bn - 1) / bn;
  const int pid = int(block_x());
  const int per_group = kRasterGroup * grid_n;
  const int first_m = (pid / per_group) * kRasterGroup;
  const int group_rows = grid_m - first_m < kRasterGroup ? grid_m - first_m : kRasterGroup;
  return {(first_m + (pid % per_group) % group_rows) * bm, ((pid % per_group) / group_rows) * bn};
}

template <class Cfg, class TA, class TB, bool kConvertX>
__global__ __launch_bounds__(Cfg::kThreads) void gemm_kernel(KernelArgs<TA, TB> args) {
  using LoaderA = TileLoader<TA, Cfg::BM, Cfg::BK, Cfg::kThreads, kConvertX, Cfg::kHold>;
  using LoaderB = TileLoader<TB, Cfg::BN, Cfg::BK, Cfg::kThreads, false, Cfg::kHold>;
  using SA = typename LoaderA::Staged;
  using SB = typename LoaderB::Staged;
  using P = Plan<Cfg, SA, SB>;
  constexpr int S = P::kStages;
  extern __shared__ tile::Chunk16 gemm_smem[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(gemm_smem);

  const int m = args.m, n = args.n, k = args.k;
  const TileOrigin origin = raster_tile(Cfg::BM, Cfg::BN, m, n);
  const int m0 = origin.m0, n0 = origin.n0;

  const int tid = int(thread_x());
  const int warp = tid / kWaveSize;
  const int wm0 = (warp / Cfg::kWarpsN) * Cfg::WM, wn0 = (warp % Cfg::kWarpsN) * Cfg::WN;

  LoaderA load_a(args.x, args.ldx, m, k, m0, tid);
  LoaderB load_b(args.w, args.ldw, n, k, n0, tid);
  auto stage_a = [&](int s) { return reinterpret_cast<SA*>(smem + s * P::kStageBytes); };
  auto stage_b = [&](int s) { return reinterpret_cast<SB*>(smem + s * P::kStageBytes + P::kStageA); };

  leaf::FragC acc[Cfg::TM][Cfg::TN];
#pragma unroll
  for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::TN; ++j) leaf::zero(acc[i][j]);

  const int ktiles = (k + Cfg::BK - 1) / Cfg::BK;
  // Prologue: steps 0..S-2 in flight (one commit group each, possibly empty).
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < ktiles) {
      load_a.load(s, stage_a(s));
      load_b.load(s, stage_b(s));
      load_a.store(stage_a(s));
      load_b.store(stage_b(s));
    }
    tile::commit_copies();
  }

  for (int kt = 0; kt < ktiles; ++kt) {
    // Step kt has landed for this thread; the barrier makes it visible to all and ends every
    // wave's reads of step kt-1, whose stage the next request reuses.
    tile::wait_copies<S - 2>();
    sync_workgroup();
    const int next = kt + S - 1;
    const bool more = next < ktiles;
    if (more) {
      load_a.load(next, stage_a(next % S));
      load_b.load(next, stage_b(next % S));
    }
    tile::commit_copies();

    const SA* as = stage_a(kt % S);
    const SB* bs = stage_b(kt % S);
#pragma unroll
    for (int ks = 0; ks < Cfg::BK; ks += 16) {
      // All A fragments of the wave's rows, then one B fragment at a time (fewer live registers).
      leaf::FragA fa[Cfg::TM];
#pragma unroll
      for (int i = 0; i < Cfg::TM; ++i) load_fragment_a(fa[i], as + (wm0 + 16 * i) * P::kLdA + ks, P::kLdA);
#pragma unroll
      for (int j = 0; j < Cfg::TN; ++j) {
        leaf::FragB fb;
        load_fragment_b(fb, bs + (wn0 + 16 * j) * P::kLdB + ks, P::kLdB);
#pragma unroll
        for (int i = 0; i < Cfg::TM; ++i) leaf::mma(acc[i][j], fa[i], fb);
      }
    }
    // Held chunks go to shared memory only now: their loads had the multiply to land. Stage
    // next % S was last read in step kt-1, which every wave finished before this step's barrier.
    if (more) {
      load_a.store(stage_a(next % S));
      load_b.store(stage_b(next % S));
    }
  }
  tile::wait_copies<0>();

  // Epilogue: every element of the tile inside y written once (store_one).
#pragma unroll
  for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::TN; ++j) {
      const int rb = m0 + wm0 + 16 * i, cb = n0 + wn0 + 16 * j;
      leaf::store_c(acc[i][j], [&](int r, int c, float v) {
        const int row = rb + r, col = cb + c;
        if (row < m && col < n) store_one(args, row, col, v + bias_at(args, col));
      });
    }
}

// ==== the Mma kernel (NVIDIA) ====================================================================
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

// ==== the Wgmma kernel (NVIDIA Hopper, sm_90a) ===================================================
// Why: mma.sync tops out near half of the H200's bf16 peak (fragments through registers, one warp's
// 64x64 per instruction stream); wgmma lets one warpgroup multiply a 64x256x16 block straight from
// shared memory while the copy engine (TMA) fills the next stages.
// One block computes a 128x256 tile of y with 3 warpgroups (384 threads, one block per SM):
//   - warpgroup 0, the producer: gives up registers (setmaxnreg), and one thread walks K in steps
//     of 64, for each step waiting until the stage's slot is free (`empty` barrier), announcing
//     its bytes on the `full` barrier and asking the copy engine for the x box [128 rows][64 k]
//     and the w box [256 rows][64 k]; boxes past M or N arrive as zeros;
//   - warpgroups 1, 2, the consumers, rows 64c..64c+63 of the tile: wait for a stage (`full`),
//     issue four m64n256k16 wgmmas (k16 steps; A = their 64 x rows, B = all 256 w rows) as one
//     group, and keep that group in flight while waiting for the previous one, whose stage they
//     then release (`empty`: one arrival per consumer warp). 128 fp32 accumulators per thread.
// Stages: S of 48 KiB (x 16 KiB + w 32 KiB), 1024-byte aligned, 128-byte swizzled exactly as
// gemm_layout::sw128 models (the descriptors come from there too). K must be a multiple of 64.
// The epilogue adds the bias and, when y's rows are 16-byte aligned, writes the tile into the
// idle stages as swizzled 128-byte boxes that the copy engine stores (clipped at the M and N
// tails; fewer, asynchronous writes than the registers' 4- or 8-byte ones: 0.255 -> 0.234 ms for
// the DiT's q/k/v/o GEMMs in a step); otherwise it writes column pairs from registers, masked.
// Gated-unit epilogue (GemmOperands::gated): the tile covers y's columns n0..n0+127, and its B
// block is two boxes of 128 w rows, a's rows n0.. and b's rows n + n0.. (gemm_layout::sw128::
// split_box_matches_one_box): accumulator columns c and c + 128 are a and b of y's column n0 + c,
// held by one thread (accumulator_halves_pair), so the unit is applied in registers and y gets
// half the bytes, and no [M, 2n] product is written and read back.
struct WgmmaTiles {
  static constexpr int BM = 128, BN = 256, BK = gemm_layout::sw128::kBK, kStages = 4;
  static constexpr int kConsumers = BM / 64;  // one warpgroup per 64 rows (wgmma's M)
  static constexpr int kWarpgroup = 128;
  static constexpr int kThreads = (kConsumers + 1) * kWarpgroup;
  static constexpr int kStageA = BM * gemm_layout::sw128::kRowBytes;
  static constexpr int kStageB = BN * gemm_layout::sw128::kRowBytes;
  static constexpr int kStageBytes = kStageA + kStageB;
  static constexpr int kBarrierBytes = 2 * kStages * 8;
  // Slack to align the stages to 1024 bytes (dynamic shared memory is only 16-byte aligned).
  static constexpr int kSmemBytes = kStages * kStageBytes + kBarrierBytes + gemm_layout::sw128::kAtomBytes;
  // Registers per thread after setmaxnreg: the producer needs a handful, a consumer 128
  // accumulators and its addresses. The block starts at 65536 / 384 = 168 (launch bounds).
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static constexpr int kAccumulators = 64 * BN / kWarpgroup;
  static_assert(BN == 256, "the consumers issue m64n256k16");
  static_assert(kStageA % gemm_layout::sw128::kAtomBytes == 0 && kStageB % gemm_layout::sw128::kAtomBytes == 0,
                "every stage and operand box starts on a swizzle atom");
  static_assert(kSmemBytes <= 227 * 1024, "stages exceed the H200's 227 KiB of shared memory per block");
  static_assert(hopper::register_budgets_fit(kWarpgroup, kProducerRegs, kWarpgroup * kConsumers, kConsumerRegs),
                "setmaxnreg budgets must add up to the block's registers exactly");
};
constexpr int kWgmmaKMultiple = WgmmaTiles::BK;
constexpr int kWgmmaUnitCols = WgmmaTiles::BN / 2;  // y's columns per tile with a gated unit

// The Wgmma kernel's epilogues hand each column pair of a consumer's 64-row block to put(row,
// col, v0, v1), row 0..63 and col relative to the tile's first column of y.
// The plain epilogue: y's columns 0..255 of the tile, bias added.
template <class Put>
__device__ __forceinline__ void wgmma_epilogue(const KernelArgs<bf16, bf16>& args, const float (&acc)[128], int t, int n0,
                                               Put put) {
  namespace sw = gemm_layout::sw128;
#pragma unroll
  for (int j = 0; j < WgmmaTiles::BN / 8; ++j) {
    const int col = sw::accumulator(t, 4 * j).col;
    const BiasPair bias = bias_pair(args, n0 + col);
#pragma unroll
    for (int h = 0; h < 2; ++h)
      put(sw::accumulator(t, 4 * j + 2 * h).row, col, acc[4 * j + 2 * h] + bias.v[0], acc[4 * j + 2 * h + 1] + bias.v[1]);
  }
}
// The gated-unit epilogue (see WgmmaTiles): y's columns n0 + c, c < 128, get unit(a + bias[n0 +
// c], b + bias[n + n0 + c]), with the fast tanh and exp (gated_unit_value's kFast): with the
// accurate ones the epilogue cost as much as a separate gated_unit pass (H200, 4160x3072x16384:
// 0.727 ms against 0.619 + 0.110).
template <GatedUnit kUnit, class Put>
__device__ __forceinline__ void wgmma_gated_epilogue(const KernelArgs<bf16, bf16>& args, const float (&acc)[128], int t,
                                                     int n0, Put put) {
  namespace sw = gemm_layout::sw128;
  constexpr int kHalf = WgmmaTiles::kAccumulators / 2;  // registers of a; b's are kHalf further on
#pragma unroll
  for (int j = 0; j < kHalf / 4; ++j) {
    const int col = sw::accumulator(t, 4 * j).col;
    float ba[2] = {0.0f, 0.0f}, bb[2] = {0.0f, 0.0f};
    if (args.bias) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        ba[e] = bias_at(args, n0 + col + e);
        bb[e] = bias_at(args, args.n + n0 + col + e);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = 4 * j + 2 * h;
      put(sw::accumulator(t, i).row, col, gated_unit_value<kUnit, true>(acc[i] + ba[0], acc[i + kHalf] + bb[0]),
          gated_unit_value<kUnit, true>(acc[i + 1] + ba[1], acc[i + kHalf + 1] + bb[1]));
    }
  }
}
template <class Put>
__device__ __forceinline__ void wgmma_any_epilogue(const KernelArgs<bf16, bf16>& args, const float (&acc)[128], int t,
                                                   int n0, Put put) {
  if (!args.gated) return wgmma_epilogue(args, acc, t, n0, put);
  switch (args.unit) {
    case GatedUnit::Situ: wgmma_gated_epilogue<GatedUnit::Situ>(args, acc, t, n0, put); break;
    case GatedUnit::SwiGlu: wgmma_gated_epilogue<GatedUnit::SwiGlu>(args, acc, t, n0, put); break;
    default: wgmma_gated_epilogue<GatedUnit::SigmoidGate>(args, acc, t, n0, put); break;
  }
}

__global__ __launch_bounds__(WgmmaTiles::kThreads, 1) void gemm_wgmma_kernel(
    const MOSS_GRID_CONSTANT gemm_hopper::TensorMap x_map, const MOSS_GRID_CONSTANT gemm_hopper::TensorMap w_map,
    const MOSS_GRID_CONSTANT gemm_hopper::TensorMap y_map, KernelArgs<bf16, bf16> args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  namespace hw = gemm_hopper;
  namespace sw = gemm_layout::sw128;
  using Cfg = WgmmaTiles;
  constexpr int S = Cfg::kStages;
  extern __shared__ tile::Chunk16 gemm_smem[];
  const uint32_t smem = hw::shared_address(gemm_smem);
  const uint32_t stages = (smem + sw::kAtomBytes - 1) & ~uint32_t(sw::kAtomBytes - 1);
  auto stage_a = [&](int s) { return stages + uint32_t(s * Cfg::kStageBytes); };
  auto stage_b = [&](int s) { return stages + uint32_t(s * Cfg::kStageBytes + Cfg::kStageA); };
  const uint32_t barriers = stages + uint32_t(S * Cfg::kStageBytes);
  auto full = [&](int s) { return barriers + uint32_t(8 * s); };         // stage s has landed
  auto empty = [&](int s) { return barriers + uint32_t(8 * (S + s)); };  // stage s has been read

  const int tid = int(thread_x());
  if (tid == 0) {
    for (int s = 0; s < S; ++s) {
      hw::mbarrier_init(full(s), 1);                     // the producer's arrive_expect_tx (+ bytes)
      hw::mbarrier_init(empty(s), Cfg::kConsumers * 4);  // lane 0 of every consumer warp
    }
    hw::fence_barrier_init();
  }
  sync_workgroup();

  const TileOrigin origin = raster_tile(Cfg::BM, args.gated ? kWgmmaUnitCols : Cfg::BN, args.m, args.n);
  const int ktiles = args.k / Cfg::BK;
  const int warpgroup = tid / Cfg::kWarpgroup;
  if (warpgroup == 0) {
    // ---- producer ----
    hw::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid == 0) {
      hw::prefetch_tensor_map(&x_map);
      hw::prefetch_tensor_map(&w_map);
      for (int kt = 0; kt < ktiles; ++kt) {
        const int s = kt % S;
        // Use u = kt / S of slot s: wait for the consumers' release of use u - 1 (the u-th
        // completion of its empty barrier, parity (u - 1) & 1); the first S uses find it free.
        if (kt >= S) hw::mbarrier_wait(empty(s), uint32_t((kt / S + 1) & 1));
        hw::mbarrier_arrive_expect_tx(full(s), uint32_t(Cfg::kStageBytes));
        hw::tma_load_2d(stage_a(s), &x_map, kt * Cfg::BK, origin.m0, full(s));
        hw::tma_load_2d(stage_b(s), &w_map, kt * Cfg::BK, origin.n0, full(s));
        if (args.gated)  // b's 128 rows after a's (the w map's box is 128 rows)
          hw::tma_load_2d(stage_b(s) + uint32_t(kWgmmaUnitCols * sw::kRowBytes), &w_map, kt * Cfg::BK,
                          args.n + origin.n0, full(s));
      }
    }
  } else {
    // ---- consumers ----
    hw::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int consumer = warpgroup - 1;
    const int t = tid % Cfg::kWarpgroup;
    float acc[Cfg::kAccumulators];
#pragma unroll
    for (int i = 0; i < Cfg::kAccumulators; ++i) acc[i] = 0.0f;
    hw::fence_accumulators(acc);
    for (int kt = 0; kt < ktiles; ++kt) {
      const int s = kt % S;
      hw::mbarrier_wait(full(s), uint32_t((kt / S) & 1));  // use kt / S of slot s has landed
      hw::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < Cfg::BK / 16; ++kk)
        hw::wgmma_m64n256k16(acc, sw::step_descriptor(stage_a(s), 64 * consumer, kk),
                             sw::step_descriptor(stage_b(s), 0, kk));
      hw::wgmma_commit();
      // This step's group stays in flight; the previous one is done, so its stage is free.
      hw::wgmma_wait<1>();
      if (kt > 0 && t % kWaveSize == 0) hw::mbarrier_arrive(empty((kt - 1) % S));
    }
    hw::wgmma_wait<0>();
    hw::fence_accumulators(acc);

    // Epilogue: register 4j + 2h + e of thread t is row accumulator(t, .).row, column 8j + 2(t % 4)
    // + e of this consumer's 64 x 256 block (gemm_layout::sw128::accumulator).
    const int row0 = origin.m0 + 64 * consumer;
    if (!args.tma_store) {
      wgmma_any_epilogue(args, acc, t, origin.n0, [&](int row, int col, float v0, float v1) {
        store_pair(args, row0 + row, origin.n0 + col, v0, v1);
      });
    } else {
      // Through shared memory: each consumer writes its 64 rows into its own region of the (now
      // idle) stages as output boxes of 128 bytes x 64 rows, swizzled as the copy engine reads
      // them (conflict-free: a warp's 8 rows land in 8 different 16-byte chunks), and one thread
      // hands the boxes to the copy engine, which clips them at the M and N tails.
      const int esize = args.y_bf16 ? 2 : 4;
      const uint32_t region = stages + uint32_t(consumer * 64 * 1024);
      hw::named_barrier(1, Cfg::kConsumers * Cfg::kWarpgroup);  // neither consumer reads a stage any more
      wgmma_any_epilogue(args, acc, t, origin.n0, [&](int row, int col, float v0, float v1) {
        const uint32_t byte = uint32_t(col * esize);
        const uint32_t box = region + (byte / sw::kRowBytes) * uint32_t(64 * sw::kRowBytes);
        const uint32_t at = sw::swizzle_address(box + uint32_t(row * sw::kRowBytes) + byte % sw::kRowBytes);
        if (args.y_bf16) hw::store_shared_b32(at, tile::pack_bf16_pair(v0, v1));
        else hw::store_shared_v2f32(at, v0, v1);
      });
      hw::fence_async_shared();
      hw::named_barrier(2 + consumer, Cfg::kWarpgroup);
      if (t == 0) {
        const int cols = args.gated ? kWgmmaUnitCols : Cfg::BN, box_cols = sw::kRowBytes / esize;
        for (int b = 0; b * box_cols < cols && origin.n0 + b * box_cols < args.n; ++b)
          hw::tma_store_2d(&y_map, region + uint32_t(b * 64 * sw::kRowBytes), origin.n0 + b * box_cols, row0);
        hw::tma_store_commit_and_wait_read();
      }
    }
  }
#else
  // Built for a target without wgmma (CMakeLists insists on sm_90a): never launched there.
  gemm_hopper::unsupported_target();
#endif
}
#endif  // MOSS_PLATFORM_NVIDIA

// ---- host side ---------------------------------------------------------------------------------
template <class TA, class TB>
KernelArgs<TA, TB> kernel_args(const GemmOperands& op) {
  KernelArgs<TA, TB> a;
  a.x = static_cast<const TA*>(op.x);
  a.w = static_cast<const TB*>(op.w);
  a.bias = op.bias;
  a.y = op.y;
  a.ldx = op.ldx;
  a.ldw = op.ldw;
  a.ldy = op.ldy;
  a.gated = op.gated;
  a.unit = op.unit;
  a.tma_store = false;
  a.m = int(op.m);
  a.n = int(op.n);
  a.k = int(op.k);
  a.splits = 1;
  a.bias_bf16 = op.bias_type == GemmType::BF16;
  a.y_bf16 = op.y_type == GemmType::BF16;
  const uintptr_t pair_bytes = a.y_bf16 ? 4 : 8;
  a.pair_stores = op.ldy % 2 == 0 && reinterpret_cast<uintptr_t>(op.y) % pair_bytes == 0;
  return a;
}

int64_t tiles_of(int64_t m, int64_t n, int bm, int bn) { return ((m + bm - 1) / bm) * ((n + bn - 1) / bn); }

// A kernel above 48 KiB of dynamic shared memory must opt in first (NVIDIA). Callers keep the
// result in a function-local static, so this runs once per kernel (thread-safe initialisation).
template <class Kernel>
bool opt_in_shared_memory(Kernel kernel, int smem_bytes) {
#if MOSS_PLATFORM_NVIDIA
  MOSS_HIP_CHECK(hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
#else
  (void)kernel;
  (void)smem_bytes;
#endif
  return true;
}

// One block per tile of y; `params` are the kernel's parameters, the KernelArgs last.
template <class Kernel, class... Params>
void launch_blocks(Kernel kernel, int bm, int bn, int threads, int smem_bytes, hipStream_t stream,
                   const Params&... params) {
  const auto& a = std::get<sizeof...(Params) - 1>(std::tie(params...));
  const int64_t blocks = tiles_of(a.m, a.n, bm, bn);
  if (blocks > 0x7fffffff) throw failure("gemm: too many tiles (" + std::to_string(blocks) + ")");
  hipLaunchKernelGGL(kernel, dim3(unsigned(blocks)), dim3(threads), size_t(smem_bytes), stream, params...);
  MOSS_HIP_CHECK(hipGetLastError());
}

template <class Cfg, class TA, class TB, bool kConvertX>
void launch_leaf(const GemmOperands& op, hipStream_t stream) {
  using P = Plan<Cfg, std::conditional_t<kConvertX, bf16, TA>, TB>;
  auto kernel = gemm_kernel<Cfg, TA, TB, kConvertX>;
  static const bool opted_in = opt_in_shared_memory(kernel, P::kSmemBytes);
  (void)opted_in;
  launch_blocks(kernel, Cfg::BM, Cfg::BN, Cfg::kThreads, P::kSmemBytes, stream, kernel_args<TA, TB>(op));
}

// The portable configurations for op's dtypes (an f32 x is always converted).
void launch_portable(const GemmOperands& op, bool wide, hipStream_t stream) {
  const bool xb = op.x_type == GemmType::BF16, wb = op.w_type == GemmType::BF16;
  if (wide) {
    if (xb && wb) launch_leaf<PortableWide, bf16, bf16, false>(op, stream);
    else if (wb) launch_leaf<PortableWideF32X, float, bf16, true>(op, stream);
    else if (xb) launch_leaf<PortableWideF32Weights, bf16, float, false>(op, stream);
    else launch_leaf<PortableWideF32Weights, float, float, true>(op, stream);
    return;
  }
  if (xb && wb) launch_leaf<PortableNarrow, bf16, bf16, false>(op, stream);
  else if (wb) launch_leaf<PortableNarrowF32X, float, bf16, true>(op, stream);
  else if (xb) launch_leaf<PortableNarrowF32Weights, bf16, float, false>(op, stream);
  else launch_leaf<PortableNarrowF32Weights, float, float, true>(op, stream);
}

#if MOSS_PLATFORM_NVIDIA
// Cfg serves bf16 weights, CfgF32W f32 weights; `convert` applies to an f32 x.
template <class Cfg, class CfgF32W = Cfg>
void launch_leaf_typed(const GemmOperands& op, bool convert, hipStream_t stream) {
  const bool xb = op.x_type == GemmType::BF16, wb = op.w_type == GemmType::BF16;
  if (!xb && convert) {
    if (wb) launch_leaf<Cfg, float, bf16, true>(op, stream);
    else launch_leaf<CfgF32W, float, float, true>(op, stream);
    return;
  }
  if (xb && wb) launch_leaf<Cfg, bf16, bf16, false>(op, stream);
  else if (xb) launch_leaf<CfgF32W, bf16, float, false>(op, stream);
  else if (wb) launch_leaf<Cfg, float, bf16, false>(op, stream);
  else launch_leaf<CfgF32W, float, float, false>(op, stream);
}

// A split launch: grid (tiles, splits), clusters of (1, splits) blocks, the blocks of one tile.
template <class Kernel, class Args>
void launch_clusters(Kernel kernel, int bm, int bn, int splits, int threads, int smem_bytes, hipStream_t stream,
                     const Args& args) {
  const int64_t blocks = tiles_of(args.m, args.n, bm, bn);
  if (blocks > 0x7fffffff) throw failure("gemm: too many tiles (" + std::to_string(blocks) + ")");
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(unsigned(blocks), unsigned(splits), 1);
  config.blockDim = dim3(unsigned(threads), 1, 1);
  config.dynamicSmemBytes = size_t(smem_bytes);
  config.stream = stream;
  cudaLaunchAttribute cluster[1] = {};
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = 1;
  cluster[0].val.clusterDim.y = unsigned(splits);
  cluster[0].val.clusterDim.z = 1;
  config.attrs = cluster;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, args);
  if (e != cudaSuccess)
    throw failure(std::string("gemm: split-K cluster launch (") + std::to_string(splits) + " blocks) failed: " +
                  cudaGetErrorString(e));
}

template <class Cfg, class TA>
void launch_mma(const GemmOperands& op, int splits, hipStream_t stream) {
  auto kernel = gemm_mma_kernel<Cfg, TA>;
  static const bool opted_in = opt_in_shared_memory(kernel, Cfg::kSplitSmemBytes);
  (void)opted_in;
  KernelArgs<TA, bf16> args = kernel_args<TA, bf16>(op);
  if (splits <= 1) {
    launch_blocks(kernel, Cfg::BM, Cfg::BN, Cfg::kThreads, Cfg::kSmemBytes, stream, args);
    return;
  }
  args.splits = splits;
  launch_clusters(kernel, Cfg::BM, Cfg::BN, splits, Cfg::kThreads, Cfg::kSplitSmemBytes, stream, args);
}

template <class Cfg>
void launch_mma_typed(const GemmOperands& op, int splits, hipStream_t stream) {
  if (op.x_type == GemmType::BF16) launch_mma<Cfg, bf16>(op, splits, stream);
  else launch_mma<Cfg, float>(op, splits, stream);
}

// The tensor maps describe x and w as the copy engine will read them (boxes of one k-step).
void launch_wgmma(const GemmOperands& op, hipStream_t stream) {
  using Cfg = WgmmaTiles;
  static const bool opted_in = opt_in_shared_memory(gemm_wgmma_kernel, Cfg::kSmemBytes);
  (void)opted_in;
  const gemm_hopper::TensorMap x_map = gemm_hopper::kmajor_tensor_map(op.x, op.m, op.k, op.ldx, Cfg::BM);
  // With a gated unit w has 2n rows, read in boxes of 128 (a's and b's halves of a tile).
  const gemm_hopper::TensorMap w_map = op.gated
                                           ? gemm_hopper::kmajor_tensor_map(op.w, 2 * op.n, op.k, op.ldw, kWgmmaUnitCols)
                                           : gemm_hopper::kmajor_tensor_map(op.w, op.n, op.k, op.ldw, Cfg::BN);
  // The output through the copy engine when y's rows allow it (16-byte aligned); else from registers.
  KernelArgs<bf16, bf16> args = kernel_args<bf16, bf16>(op);
  const int esize = op.y_type == GemmType::BF16 ? 2 : 4;
  args.tma_store = reinterpret_cast<uintptr_t>(op.y) % 16 == 0 && (op.ldy * esize) % 16 == 0;
  const gemm_hopper::TensorMap y_map =
      args.tma_store ? gemm_hopper::store_tensor_map(op.y, esize == 2, op.m, op.n, op.ldy, 64) : x_map;
  launch_blocks(gemm_wgmma_kernel, Cfg::BM, op.gated ? kWgmmaUnitCols : Cfg::BN, Cfg::kThreads, Cfg::kSmemBytes,
                stream, x_map, w_map, y_map, args);
}
#endif

}  // namespace

const char* gemm_tiles_name(GemmTiles t, GemmKernel k) {
  if (k == GemmKernel::Portable || !kPlatformNvidia)
    return t == GemmTiles::Medium ? "128x64/4w (64x64 with f32 x or f32 weights)"
                                  : "32x64/1w (32x32 with f32 x or f32 weights)";
  if (k == GemmKernel::Wgmma) return "128x256/2+1wg";  // its one shape: 2 consumer warpgroups + the producer
  switch (t) {
    case GemmTiles::Large: return "128x256/8w";
    case GemmTiles::Medium: return "128x128/4w";
    case GemmTiles::Small: return "64x64/4w";
    case GemmTiles::Skinny: return "64x128/4w";
    default: return "auto";
  }
}

const char* gemm_staging_name(GemmStaging s) {
  switch (s) {
    case GemmStaging::Convert: return "convert";
    case GemmStaging::Raw: return "raw";
    default: return "auto";
  }
}

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::Wgmma: return "wgmma";
    case GemmKernel::Mma: return "mma";
    case GemmKernel::Leaf: return "leaf";
    case GemmKernel::Portable: return "portable";
    default: return "auto";
  }
}

GemmTiles gemm_auto_tiles(int64_t m, int64_t n, int multiprocessors) {
  // The largest tile that still gives every multiprocessor a block: bigger tiles read less
  // shared memory per flop, but a grid smaller than the device leaves multiprocessors idle.
  if (tiles_of(m, n, 128, 256) >= multiprocessors) return GemmTiles::Large;
  if (tiles_of(m, n, 128, 128) >= multiprocessors) return GemmTiles::Medium;
  // Few rows (at most two 64-row tiles): 128-column tiles read x half as often as 64-column ones,
  // and the split along K (gemm_auto_split) supplies the blocks.
  if (m <= 128) return GemmTiles::Skinny;
  return GemmTiles::Small;
}

namespace {
void tile_shape(GemmTiles t, int& bm, int& bn) {
  switch (t) {
    case GemmTiles::Large: bm = 128, bn = 256; break;
    case GemmTiles::Medium: bm = 128, bn = 128; break;
    case GemmTiles::Skinny: bm = 64, bn = 128; break;
    default: bm = 64, bn = 64; break;
  }
}
constexpr int kMinStepsPerSplit = 4;  // a split shorter than this spends more on its pipeline fill
constexpr int kMmaBK = 32;
}  // namespace

int gemm_auto_split(int64_t m, int64_t n, int64_t k, GemmTiles tiles, int multiprocessors) {
  // Weight-bound shapes stream the weights once; keeping HBM busy needs about two blocks of
  // cp.async stages in flight per multiprocessor. Split K until the tiles give that many blocks.
  int bm = 64, bn = 64;
  tile_shape(tiles, bm, bn);
  const int64_t t = tiles_of(m, n, bm, bn), ksteps = (k + kMmaBK - 1) / kMmaBK;
  if (t >= multiprocessors) return 1;
  int split = 1;
  while (split < kGemmMaxSplit && t * split < 2 * int64_t(multiprocessors) && ksteps >= 2 * split * kMinStepsPerSplit)
    split *= 2;
  return split;
}

bool gemm_wgmma_fits(const GemmOperands& op) {
#if MOSS_PLATFORM_NVIDIA
  return !portable_kernels() && op.x_type == GemmType::BF16 && op.w_type == GemmType::BF16 && op.k % kWgmmaKMultiple == 0 &&
         (!op.gated || op.n % kWgmmaUnitCols == 0);
#else
  (void)op;
  return false;
#endif
}

bool gemm_fuses_unit(const GemmOperands& op, int multiprocessors) {
  return op.gated && gemm_resolve(op, multiprocessors).kernel == GemmKernel::Wgmma;
}

GemmPlan gemm_resolve(const GemmOperands& op, int multiprocessors, GemmPlan plan) {
  if (portable_kernels() || plan.kernel == GemmKernel::Portable) {
    // Two shapes: Medium is the wide 4-wave tile, Small the narrow one-wave tile (Auto: by rows).
    // An f32 x is converted on its way in (the chunks pass through registers anyway).
    plan.kernel = GemmKernel::Portable;
    if (plan.tiles == GemmTiles::Auto) plan.tiles = op.m >= kPortableWideMinRows ? GemmTiles::Medium : GemmTiles::Small;
    if (plan.tiles != GemmTiles::Medium) plan.tiles = GemmTiles::Small;
    plan.staging = op.x_type == GemmType::F32 ? GemmStaging::Convert : GemmStaging::Raw;
    plan.split = 1;
    return plan;
  }
  const bool mma_possible = kPlatformNvidia && op.w_type == GemmType::BF16;
  const bool wgmma_possible = gemm_wgmma_fits(op);
  // Auto takes wgmma once its 128x256 tiles fill at least half the multiprocessors (one block
  // each): below that (text rows, single-row GEMMs) the Mma kernel's smaller tiles spread better.
  // (With a gated unit the product is 2n wide: tiles_of(m, n, 128, 128) of them.)
  const int64_t product_cols = op.gated ? 2 * op.n : op.n;
  if (plan.kernel == GemmKernel::Auto && wgmma_possible && 2 * tiles_of(op.m, product_cols, 128, 256) >= multiprocessors)
    plan.kernel = GemmKernel::Wgmma;
  if (plan.kernel == GemmKernel::Wgmma && !wgmma_possible) plan.kernel = GemmKernel::Auto;
  if (plan.kernel == GemmKernel::Wgmma) {
    plan.tiles = GemmTiles::Large;
    plan.staging = GemmStaging::Raw;
    plan.split = 1;
    return plan;
  }
  if (plan.kernel == GemmKernel::Auto || !mma_possible) plan.kernel = mma_possible ? GemmKernel::Mma : GemmKernel::Leaf;
  if (plan.tiles == GemmTiles::Auto) plan.tiles = gemm_auto_tiles(op.m, op.n, multiprocessors);
  if (plan.kernel == GemmKernel::Leaf && plan.tiles == GemmTiles::Skinny) plan.tiles = GemmTiles::Small;
  if (plan.kernel != GemmKernel::Mma) {
    plan.split = 1;
  } else {
    // A requested split is rounded down to a power of two the k-steps can feed (at least one each).
    const int64_t ksteps = (op.k + kMmaBK - 1) / kMmaBK;
    if (plan.split == 0) plan.split = gemm_auto_split(op.m, op.n, op.k, plan.tiles, multiprocessors);
    int split = 1;
    while (2 * split <= plan.split && 2 * split <= kGemmMaxSplit && 2 * split <= ksteps) split *= 2;
    plan.split = split;
  }
  if (plan.staging == GemmStaging::Auto) plan.staging = kPlatformNvidia ? GemmStaging::Convert : GemmStaging::Raw;
  if (plan.kernel == GemmKernel::Mma) plan.staging = GemmStaging::Convert;  // the only way it stages an f32 x
  if (op.x_type == GemmType::BF16 || !kPlatformNvidia) plan.staging = GemmStaging::Raw;
  return plan;
}

void gemm(const GemmOperands& op, hipStream_t stream, int multiprocessors, GemmPlan plan) {
  const int64_t limit = 0x7fffffff;
  if (op.m < 1 || op.n < 1 || op.k < 1 || op.m > limit || op.n > limit || op.k > limit)
    throw failure("gemm: shape " + std::to_string(op.m) + "x" + std::to_string(op.n) + "x" + std::to_string(op.k) +
                  " is empty or too large");
  if (!op.x || !op.w || !op.y) throw failure("gemm: null operand");
  if (op.k % kGemmKMultiple != 0 || !gemm_packed(op.x, op.ldx, op.x_type) || !gemm_packed(op.w, op.ldw, op.w_type))
    throw failure("gemm: operands must be packed (16-byte aligned rows, K a multiple of 8); got K " +
                  std::to_string(op.k) + ", ldx " + std::to_string(op.ldx) + ", ldw " + std::to_string(op.ldw));
  if (op.ldx < op.k || op.ldw < op.k || op.ldy < op.n)
    throw failure("gemm: a row stride is shorter than its row (ldx " + std::to_string(op.ldx) + ", ldw " +
                  std::to_string(op.ldw) + ", ldy " + std::to_string(op.ldy) + ")");
  plan = gemm_resolve(op, multiprocessors, plan);
  if (op.gated && plan.kernel != GemmKernel::Wgmma)
    throw failure("gemm: the gated-unit epilogue needs the wgmma kernel (see gemm_fuses_unit)");
  if (plan.kernel == GemmKernel::Portable) return launch_portable(op, plan.tiles == GemmTiles::Medium, stream);
#if MOSS_PLATFORM_NVIDIA
  const bool convert = plan.staging == GemmStaging::Convert;
  if (plan.kernel == GemmKernel::Wgmma) {
    launch_wgmma(op, stream);
    return;
  }
  if (plan.kernel == GemmKernel::Mma) {
    switch (plan.tiles) {
      case GemmTiles::Large: launch_mma_typed<MmaLarge>(op, plan.split, stream); break;
      case GemmTiles::Medium: launch_mma_typed<MmaMedium>(op, plan.split, stream); break;
      case GemmTiles::Skinny: launch_mma_typed<MmaSkinny>(op, plan.split, stream); break;
      default: launch_mma_typed<MmaSmall>(op, plan.split, stream); break;
    }
    return;
  }
  switch (plan.tiles) {
    case GemmTiles::Large: launch_leaf_typed<LargeTiles>(op, convert, stream); break;
    case GemmTiles::Medium: launch_leaf_typed<MediumTiles>(op, convert, stream); break;
    default: launch_leaf_typed<SmallTiles>(op, convert, stream); break;
  }
#endif
}

}  // namespace moss
