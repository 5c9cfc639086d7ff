// The leaf GEMM kernel (GemmKernel::Leaf, and GemmKernel::Portable: what AMD runs), its tile
// shapes and its global-to-shared loaders.
// Part of kernels/gemm.hip (its only includer: the kernels are instantiated in that one
// translation unit, inside its anonymous namespace).
//
// ---- Leaf kernel (AMD; NVIDIA with f32 weights) ----
// One workgroup computes a BM x BN tile of y. K is walked in steps of BK = 32 through a ring of
// kStages shared-memory stages; each stage holds the x rows [BM][BK] and the w rows [BN][BK],
// each row padded by 8 elements. Weights (and a bf16 x) are staged as stored, a raw 16-byte copy
// (cp.async on NVIDIA; f32 weights are rounded as the fragments are read); an f32 x is rounded to
// bf16 on its way in, through registers. Fragments are read from shared memory
// through the leaf's lane maps in pairs; with the padding, the NVIDIA fragment reads
// (lane = 4g + t reads row g, k = 2t: 4 or 8 bytes) hit 32 distinct banks.
// Pipelines:
//   NVIDIA  stage kt+S-1 is requested with cp.async while stage kt is multiplied (S = 3 or 4);
//           a converted x step is loaded into registers before the multiply and stored after.
//   AMD     (the portable configurations below) two stages; the next k-step's chunks are
//           loaded into registers before step kt multiplies and stored to LDS after it (kHold:
//           AMD has no asynchronous global-to-LDS copy). The wide tile has 4 waves of 64x32
//           (docs/amd_kernels.md says why several waves).
// Gated unit (kUnit; GemmOperands::gated, the DiT's FFN up-projection): the B tile holds, for
// every 16 output columns, 16 hidden weight rows then the 16 matching gate rows
// (kernels/gemm_unit_rows.h has the map), so each wave's leaf tiles pair up (hidden, gate) in the
// same lanes and slots and the epilogue writes unit(a + bias[c], b + bias[n + c]) straight from
// the fp32 accumulators: a 128x64 tile yields 128x32 of y, and the [M, 2n] product is never
// written nor read back by a separate gated_unit pass. The wide tiles with bf16 weights only
// (gemm_fuses_unit in gemm.hip says which plans fuse).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/gated_unit.h"
#include "kernels/gemm_parts.h"
#include "kernels/gemm_unit_rows.h"
#include "kernels/matrix_leaf.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace {

using leaf::Layout;

constexpr int kPad = 8;          // elements of padding per shared-memory row

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

// ---- the gated unit's tile rows pair hidden and gate accumulators -----------------------------
// Slot i of lane l of leaf tile t accumulates C column L::c(l, i).col, i.e. B-tile row 16t + that
// column. With gemm_unit::tile_row, tiles 2q and 2q+1 must give the same output column, hidden
// then gate, in every lane and slot (tests/unit/test_gemm_unit_rows.cpp emulates the loads too).
template <class L>
constexpr bool unit_rows_pair_slots() {
  for (int q = 0; q < 4; ++q)
    for (int lane = 0; lane < kWaveSize; ++lane)
      for (int i = 0; i < L::kSlotsC; ++i) {
        const int c = L::c(lane, i).col;
        const gemm_unit::UnitRow a = gemm_unit::tile_row(16 * (2 * q) + c), b = gemm_unit::tile_row(16 * (2 * q + 1) + c);
        if (a.half != 0 || b.half != 1 || a.col != b.col || a.col != 16 * q + c) return false;
      }
  return true;
}
static_assert(unit_rows_pair_slots<mma_layout::Gfx11>(), "gfx11 leaf: gated-unit rows do not pair");
static_assert(unit_rows_pair_slots<mma_layout::Gfx12>(), "gfx12 leaf: gated-unit rows do not pair");
static_assert(unit_rows_pair_slots<mma_layout::Nvidia>(), "NVIDIA leaf: gated-unit rows do not pair");

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
//   kUnitRows:      (the weights with a gated unit) tile row r holds weight row
//                   half·rows + row0 + col of gemm_unit::tile_row(r) (kernels/gemm_unit_rows.h):
//                   `rows` is y's width n, row0 the tile's first output column, the operand has
//                   2·rows rows; a row whose column lies past n is zeros.
template <class T, int ROWS, int BK, int THREADS, bool kConvert, bool kHoldRaw = false, bool kUnitRows = false>
struct TileLoader {
  static constexpr bool kHeld = kConvert || kHoldRaw;  // chunks pass through registers
  static constexpr int kVec = 16 / int(sizeof(T));  // elements per chunk
  static constexpr int kChunksPerRow = BK / kVec;
  static constexpr int kRowsPerPass = THREADS / kChunksPerRow;
  static constexpr int kPasses = ROWS / kRowsPerPass;
  static constexpr int kLd = BK + kPad;
  // Operand rows from one pass to the next: with kUnitRows a thread's tile rows step by whole
  // (hidden, gate) pairs, i.e. by half as many weight rows of one half.
  static constexpr int kRowStep = kUnitRows ? kRowsPerPass / 2 : kRowsPerPass;
  static_assert(!kUnitRows || kRowsPerPass % gemm_unit::kPairRows == 0,
                "gated unit: a thread's tile rows keep their place in the (hidden, gate) pairs");
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
    if constexpr (kUnitRows) {
      const gemm_unit::UnitRow u = gemm_unit::tile_row(first_row);
      src = base + (int64_t(u.half) * rows + row0 + u.col) * ld + col;
      rows_left = rows - row0 - u.col;
    } else {
      src = base + int64_t(row0 + first_row) * ld + col;
      rows_left = rows - row0 - first_row;
    }
    k_left = k - col;
  }

  __device__ bool inside(int p, int kt) const { return p * kRowStep < rows_left && kt * BK < k_left; }
  __device__ const T* at(int p, int kt) const {
    return inside(p, kt) ? src + int64_t(p * kRowStep) * ld + kt * BK : base;
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
  leaf::for_each_slot<leaf::Operand::A, 2>([&](int i, mma_layout::Elem e) {
    const uint32_t pair = tile::load_bf16_pair(a_tile + e.row * ld + e.col);
    __builtin_memcpy(&f.x[i], &pair, sizeof pair);
  });
}
template <class T>
__device__ inline void load_fragment_b(leaf::FragB& f, const T* bt_tile, int ld) {
  leaf::for_each_slot<leaf::Operand::B, 2>([&](int i, mma_layout::Elem e) {  // e = {k, n}
    const uint32_t pair = tile::load_bf16_pair(bt_tile + e.col * ld + e.row);
    __builtin_memcpy(&f.x[i], &pair, sizeof pair);
  });
}

// y's columns per tile: BN, or BN/2 with the gated unit (a hidden and a gate row per column).
template <class Cfg, bool kUnit>
__host__ __device__ constexpr int leaf_tile_cols() {
  return kUnit ? Cfg::BN / 2 : Cfg::BN;
}

// The gated-unit epilogue: acc[i][2q] (hidden) and acc[i][2q+1] (gate) hold the same output
// elements slot by slot (kernels/gemm_unit_rows.h), so each lane writes
// y[row][col] = unit(a + bias[col], b + bias[n + col]) once per element, computed from the fp32
// accumulators (the product is never rounded to bf16 on the way), with the accurate tanh and exp
// (gated_unit_value's kFast false): the same formulas as the row kernel and the host reference.
// Their cost, on the order of 100 instructions per output (32 outputs a lane on the wide tile),
// is small beside the 2K multiply-adds behind each output (K = 3072 in the DiT's FFN); not
// measured on a Radeon, where the fast ones would be the lever if it showed.
template <GatedUnit kKind, class Cfg, class Args>
__device__ inline void leaf_unit_epilogue(const Args& args, const leaf::FragC (&acc)[Cfg::TM][Cfg::TN], int m0, int n0,
                                          int wm0, int wn0) {
#pragma unroll
  for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::TN; j += 2) {
      const int rb = m0 + wm0 + 16 * i, tile_row = wn0 + 16 * j;
      leaf::store_c_pair(acc[i][j], acc[i][j + 1], [&](int r, int c, float a, float b) {
        const int row = rb + r, col = n0 + gemm_unit::tile_row(tile_row + c).col;
        if (row < args.m && col < args.n)
          store_one(args, row, col, gated_unit_value<kKind>(a + bias_at(args, col), b + bias_at(args, args.n + col)));
      });
    }
}

// The transposed epilogue (GemmOperands::y_transposed): the block's column c is y's row c, and
// rows past x's (args.x_rows) are zeros, the padding an attention's Vᵀ wants. Where a lane's slots
// are one column's consecutive rows (gfx12, mma_layout::c_slots_are_column_runs) and y's runs are
// aligned, the lane writes its 8 rows as one 16-byte store (the row-major epilogue needs 8 stores
// there); elsewhere, and for a run that crosses y's last row, one element at a time.
template <class Args>
__device__ inline void leaf_transposed_store(const Args& args, const leaf::FragC& acc, int rb, int cb) {
  auto value = [&](int row, int col, float v) { return row < args.x_rows ? v + bias_at(args, col) : 0.0f; };
  if constexpr (mma_layout::c_slots_are_column_runs<leaf::Layout>()) {
    const mma_layout::Elem e = leaf::Layout::c(int(lane_id()), 0);
    const int row = rb + e.row, col = cb + e.col;
    if (args.run_stores && col < args.n && row + leaf::Layout::kSlotsC <= args.m) {
      static_assert(leaf::Layout::kSlotsC == 8, "a run is one 16-byte chunk of bf16");
      tile::Chunk16 run;
#pragma unroll
      for (int p = 0; p < 4; ++p)
        run.w[p] = tile::pack_bf16_pair(value(row + 2 * p, col, acc.x[2 * p]),
                                        value(row + 2 * p + 1, col, acc.x[2 * p + 1]));
      tile::store_chunk(static_cast<bf16*>(args.y) + int64_t(col) * args.ldy + row, run);
      return;
    }
  }
  leaf::store_c(acc, [&](int r, int c, float v) { store_one<true>(args, rb + r, cb + c, value(rb + r, cb + c, v)); });
}

// kUnit: the gated-unit epilogue (GemmOperands::gated; w has 2n rows, see gemm_unit_rows.h).
template <class Cfg, class TA, class TB, bool kConvertX, bool kUnit = false>
__global__ __launch_bounds__(Cfg::kThreads) void gemm_kernel(KernelArgs<TA, TB> args) {
  static_assert(!kUnit || Cfg::TN % 2 == 0, "gated unit: a wave's leaf tiles come in (hidden, gate) pairs");
  using LoaderA = TileLoader<TA, Cfg::BM, Cfg::BK, Cfg::kThreads, kConvertX, Cfg::kHold>;
  using LoaderB = TileLoader<TB, Cfg::BN, Cfg::BK, Cfg::kThreads, false, Cfg::kHold, kUnit>;
  using SA = typename LoaderA::Staged;
  using SB = typename LoaderB::Staged;
  using P = Plan<Cfg, SA, SB>;
  constexpr int S = P::kStages;
  extern __shared__ tile::Chunk16 gemm_smem[];
  unsigned char* smem = reinterpret_cast<unsigned char*>(gemm_smem);

  const int m = args.m, n = args.n, k = args.k;
  // n0: the tile's first column of y (of the product without a unit).
  const TileOrigin origin = raster_tile(Cfg::BM, leaf_tile_cols<Cfg, kUnit>(), m, n);
  const int m0 = origin.m0, n0 = origin.n0;

  const int tid = int(thread_x());
  const int warp = tid / kWaveSize;
  const int wm0 = (warp / Cfg::kWarpsN) * Cfg::WM, wn0 = (warp % Cfg::kWarpsN) * Cfg::WN;

  LoaderA load_a(args.x, args.ldx, args.x_rows, k, m0, tid);
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
  if constexpr (kUnit) {
    // WN even in leaf tiles (asserted above) puts every wave's first tile row on a pair boundary.
    switch (args.unit) {
      case GatedUnit::Situ: leaf_unit_epilogue<GatedUnit::Situ, Cfg>(args, acc, m0, n0, wm0, wn0); break;
      case GatedUnit::SwiGlu: leaf_unit_epilogue<GatedUnit::SwiGlu, Cfg>(args, acc, m0, n0, wm0, wn0); break;
      default: leaf_unit_epilogue<GatedUnit::SigmoidGate, Cfg>(args, acc, m0, n0, wm0, wn0); break;
    }
  } else if (args.y_transposed) {
#pragma unroll
    for (int i = 0; i < Cfg::TM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::TN; ++j) leaf_transposed_store(args, acc[i][j], m0 + wm0 + 16 * i, n0 + wn0 + 16 * j);
  } else {
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
}

}  // namespace
}  // namespace moss
