// The Wgmma GEMM kernel (NVIDIA Hopper, sm_90a), one pipeline for two element types: bf16
// (GemmKernel::Wgmma, WgmmaBf16 below) and int8 (the INT8 ConvRot linear's GEMM, WgmmaInt8 in
// kernels/gemm_wgmma_int8.h). Its design in brief, the rules ptxas holds it to and how a change
// to it is measured: docs/nvidia_kernels.md.
// Part of kernels/gemm.hip (its only includer: the kernels are instantiated in that one
// translation unit, inside its anonymous namespace).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/gated_unit.h"
#include "kernels/gemm_hopper.h"
#include "kernels/gemm_parts.h"

namespace moss {
namespace {

#if MOSS_PLATFORM_NVIDIA
// ==== the Wgmma kernel (NVIDIA Hopper, sm_90a) ===================================================
// Why: mma.sync tops out near half of the H200's bf16 peak (fragments through registers, one warp's
// 64x64 per instruction stream); wgmma lets one warpgroup multiply a 64x256x16 block straight from
// shared memory while the copy engine (TMA) fills the next stages.
// One block per SM, persistent: it computes the 128x256 tiles of y numbered block, block + grid,
// block + 2·grid, ... (raster order: gemm_parts.h's raster_tile, groups of kWgmmaRasterGroup tile
// rows), with 3 warpgroups (384 threads):
//   - warpgroup 0, the producer: gives up registers (setmaxnreg), and one thread walks K in steps
//     of 64, tile after tile, for each step waiting until the stage's slot is free (`empty`
//     barrier), announcing its bytes on the `full` barrier and asking the copy engine for the x
//     box [128 rows][64 k] and the w box [256 rows][64 k]; boxes past M or N arrive as zeros. The
//     stage ring runs on across tiles, so the next tile's first stages load while the consumers
//     store the last one;
//   - warpgroups 1, 2, the consumers, rows 64c..64c+63 of the tile: wait for a stage (`full`),
//     issue four m64n256k16 wgmmas (k16 steps; A = their 64 x rows, B = all 256 w rows) as one
//     group, and keep that group in flight while waiting for the previous one, whose stage they
//     then release (`empty`: one arrival per consumer warp, in k-step order, once no group in
//     flight reads it). 128 fp32 accumulators per thread.
//     The epilogue stores the tile's two column halves in turn, and the next tile's first
//     kSplitSteps k-steps of half 0 (m64n128k16 on those registers alone) run while half 1
//     leaves; then its first steps of half 1, then whole steps again. So the tensor cores work
//     through half of the epilogue, where before they idled through all of it (both consumers
//     store at once: the cooperative kernel's per-tile cost, bench/NOTES.md, eleventh session).
//     Every output element still sums the same k16 products in the same order.
// Why persistent: with one block per tile, every tile paid the block's start, the ring's first
// fill and the wait for its stores in series with its products; now they overlap the tiles next
// to them (H200: q/k/v/o 702 -> 729 TFLOP/s alone, the 1024 step's GEMMs 121.3 -> 117.3 ms).
// Stages: S of 48 KiB (x 16 KiB + w 32 KiB), 1024-byte aligned, 128-byte swizzled exactly as
// gemm_layout::sw128 models (the descriptors come from there too). A k-step is 128 bytes of a row
// (64 bf16, 128 int8: the element traits below); K must give at least kWgmmaMinSteps of them
// (bf16: K a multiple of 64; int8: a last partial step reads zeros past K, which add nothing).
// The epilogue adds the bias and, when y's rows are 16-byte aligned, writes the tile through
// shared memory as swizzled 128-byte x 64-row boxes that the copy engine stores (clipped at the M
// and N tails; fewer, asynchronous writes than the registers' 4- or 8-byte ones: 0.255 -> 0.234 ms
// for the DiT's q/k/v/o GEMMs in a step). Each consumer has its own 16 KiB for that (two boxes),
// apart from the stages, and fills it chunk by chunk (128 bf16 or 64 f32 columns), each chunk
// once the copy engine has read the one before; the stores run on while the next tile multiplies.
// Otherwise it writes column pairs from registers, masked.
// Gated-unit epilogue (GemmOperands::gated): the tile covers y's columns n0..n0+127, and its B
// block is four boxes of 64 w rows: a's rows n0.., b's rows n + n0.., a's rows n0 + 64.., b's
// rows n + n0 + 64.. (gemm_layout::sw128::boxes_match_one_box), so each column half of the tile
// holds a and b of 64 columns of y: accumulator columns 128h + c and 128h + 64 + c are a and b of
// y's column n0 + 64h + c, held by one thread (accumulator_halves_pair), the unit is applied in
// registers, y gets half the bytes, and no [M, 2n] product is written and read back.
struct WgmmaTiles {
  static constexpr int BM = 128, BN = 256, BK = gemm_layout::sw128::kBK, kStages = 4;
  // A tile's first k-steps issued per column half (above): two cover the other half's stores.
  static constexpr int kSplitSteps = 2;
  static constexpr int kGatedBoxRows = 64;  // w box rows with the gated unit (a, b, a, b)
  static constexpr int kConsumers = BM / 64;  // one warpgroup per 64 rows (wgmma's M)
  static constexpr int kWarpgroup = 128;
  static constexpr int kThreads = (kConsumers + 1) * kWarpgroup;
  static constexpr int kStageA = BM * gemm_layout::sw128::kRowBytes;
  static constexpr int kStageB = BN * gemm_layout::sw128::kRowBytes;
  static constexpr int kStageBytes = kStageA + kStageB;
  // A consumer's output staging: kStoreBoxes boxes of 64 rows x 128 bytes.
  static constexpr int kStoreBoxes = 2, kStoreBoxBytes = 64 * gemm_layout::sw128::kRowBytes;
  static constexpr int kStoreBytes = kConsumers * kStoreBoxes * kStoreBoxBytes;
  static constexpr int kBarrierBytes = 2 * kStages * 8;
  // Slack to align the stages to 1024 bytes (dynamic shared memory is only 16-byte aligned).
  static constexpr int kSmemBytes =
      kStages * kStageBytes + kStoreBytes + kBarrierBytes + gemm_layout::sw128::kAtomBytes;
  // Registers per thread after setmaxnreg: the producer needs a handful, a consumer 128
  // accumulators and its addresses. The block starts at 65536 / 384 = 168 (launch bounds).
  static constexpr int kProducerRegs = 40, kConsumerRegs = 232;
  static constexpr int kAccumulators = 64 * BN / kWarpgroup;
  // One column half's registers: 64h.. hold columns 128h.. (gemm_layout::sw128::accumulator_halves_pair).
  static constexpr int kHalfRegs = kAccumulators / 2;
  static_assert(BN == 256, "the consumers issue m64n256k16");
  static_assert(kStageA % gemm_layout::sw128::kAtomBytes == 0 && kStageB % gemm_layout::sw128::kAtomBytes == 0 &&
                    kStoreBoxBytes % gemm_layout::sw128::kAtomBytes == 0,
                "every stage, operand box and store box starts on a swizzle atom");
  static_assert(kSmemBytes <= 227 * 1024, "stages exceed the H200's 227 KiB of shared memory per block");
  static_assert(hopper::register_budgets_fit(kWarpgroup, kProducerRegs, kWarpgroup * kConsumers, kConsumerRegs),
                "setmaxnreg budgets must add up to the block's registers exactly");
};
// Tile rows per raster group (gemm_parts.h's raster_tile). The 132 tiles that run at once then
// span about 16 tile rows x 8 columns: with w's block of a tile twice x's, the fewest bytes per
// wave, and the DiT's gated and ffn_down weights (100 and 50 MB, more than L2) are swept about 4
// times from HBM per GEMM instead of 8. H200, against the other kernels' 8 (bench/NOTES.md, tenth
// session): the step -0.4 to -0.8% at 1024 and -0.8 to -1.2% at 1456, within noise at 512; the
// latents unchanged (the same tiles, in another order). The Mma and Leaf kernels (the text
// encoder's few rows, the VAE, AMD) keep 8: not measured there.
constexpr int kWgmmaRasterGroup = 16;
constexpr int kWgmmaKMultiple = WgmmaTiles::BK;
// The fewest k-steps: a tile's first split steps and at least one whole step (see the consumers).
constexpr int kWgmmaMinSteps = WgmmaTiles::kSplitSteps + 1;
constexpr int kWgmmaMinK = kWgmmaMinSteps * WgmmaTiles::BK;  // 192 bf16
constexpr int kWgmmaUnitCols = WgmmaTiles::BN / 2;  // y's columns per tile with a gated unit
// y's columns per tile.
__host__ __device__ constexpr int wgmma_tile_cols(bool gated) { return gated ? kWgmmaUnitCols : WgmmaTiles::BN; }
static_assert(kWgmmaUnitCols == 2 * WgmmaTiles::kGatedBoxRows, "a gated tile's y columns are two a boxes");

// The Wgmma kernel's epilogues hand each column pair of a consumer's 64-row block to put(row,
// col, v0, v1), row 0..63 and col relative to the tile's first column of y, for the tile's
// columns lo <= col < hi (in the caller's unrolled chunk loops both are constants: the column
// tests fold away).
// The plain epilogue: y's columns 0..255 of the tile, bias added.
template <class Put>
__device__ __forceinline__ void wgmma_epilogue(const KernelArgs<bf16, bf16>& args, const float (&acc)[128], int t, int n0,
                                               int lo, int hi, Put put) {
  namespace sw = gemm_layout::sw128;
#pragma unroll
  for (int j = 0; j < WgmmaTiles::BN / 8; ++j) {
    if (8 * j < lo || 8 * j >= hi) continue;  // accumulator columns 8j .. 8j + 7
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
// 0.727 ms against 0.619 + 0.110). y's columns 64h + c (h: the column half) come from
// accumulator columns 128h + c (a) and 128h + 64 + c (b): registers 64h + i and 64h + i + 32.
template <GatedUnit kUnit, class Put>
__device__ __forceinline__ void wgmma_gated_epilogue(const KernelArgs<bf16, bf16>& args, const float (&acc)[128], int t,
                                                     int n0, int lo, int hi, Put put) {
  namespace sw = gemm_layout::sw128;
  constexpr int kHalfRegs = WgmmaTiles::kHalfRegs;
  constexpr int kB = kHalfRegs / 2;  // b's registers are kB after a's
  constexpr int kGroups = kB / 4;    // 8-column groups of y per half
#pragma unroll
  for (int j = 0; j < 2 * kGroups; ++j) {
    if (8 * j < lo || 8 * j >= hi) continue;
    const int base = kHalfRegs * (j / kGroups) + 4 * (j % kGroups);  // a's registers of y's columns 8j..
    const int col = 8 * j + sw::accumulator(t, 0).col;
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
      const int i = base + 2 * h;
      put(sw::accumulator(t, i).row, col, gated_unit_value<kUnit, true>(acc[i] + ba[0], acc[i + kB] + bb[0]),
          gated_unit_value<kUnit, true>(acc[i + 1] + ba[1], acc[i + kB + 1] + bb[1]));
    }
  }
}
template <bool kGated, class Put>
__device__ __forceinline__ void wgmma_any_epilogue(const KernelArgs<bf16, bf16>& args, const float (&acc)[128], int t,
                                                   int n0, int lo, int hi, Put put) {
  if constexpr (!kGated) {
    wgmma_epilogue(args, acc, t, n0, lo, hi, put);
  } else {
    switch (args.unit) {
      case GatedUnit::Situ: wgmma_gated_epilogue<GatedUnit::Situ>(args, acc, t, n0, lo, hi, put); break;
      case GatedUnit::SwiGlu: wgmma_gated_epilogue<GatedUnit::SwiGlu>(args, acc, t, n0, lo, hi, put); break;
      default: wgmma_gated_epilogue<GatedUnit::SigmoidGate>(args, acc, t, n0, lo, hi, put); break;
    }
  }
}

// ---- the element traits ----------------------------------------------------------------------
// The pipeline (stages, descriptors, barriers, the stores of the epilogue) counts K in 128-byte
// steps of 4 instructions of 32 bytes each, so it serves any element whose wgmma reads 32 bytes of
// a row per instruction. An Op names what differs:
//   Acc      the accumulator element: float, or int32_t for s32 (the same registers and fragment
//            layout, gemm_layout::sw128::accumulator)
//   Args     the kernel's arguments: KernelArgs or a struct extending it (m, n, k, y, bias, flags)
//   kStepK   operand elements per 128-byte k-step (the copy engine's box width, in the tensor
//            map's unit)
//   kGates   whether the gated-unit epilogue exists (args.gated is then read)
//   whole(acc, a, b)                 one 32-byte instruction step over all 256 columns, adding
//   half<kFirst>(acc, a, b, accumulate) one over a column half (registers kFirst..kFirst + 63);
//                                    accumulate 0 overwrites them
//   epilogue<kGated>(args, acc, t, row0, n0, lo, hi, put)  put(row, col, v0, v1) for each column
//                                    pair of y in the tile's columns [lo, hi) (row0: the consumer's
//                                    first row of y, n0: the tile's first column)
// The bf16 GEMM (GemmKernel::Wgmma): m64n256k16 / m64n128k16, f32, bias and the gated unit.
struct WgmmaBf16 {
  using Acc = float;
  using Args = KernelArgs<bf16, bf16>;
  static constexpr int kStepK = WgmmaTiles::BK;
  static constexpr bool kGates = true;
  __device__ __forceinline__ static void whole(float (&acc)[128], uint64_t a, uint64_t b) { gemm_hopper::wgmma_m64n256k16(acc, a, b); }
  template <int kFirst>
  __device__ __forceinline__ static void half(float (&acc)[128], uint64_t a, uint64_t b, int accumulate) {
    gemm_hopper::wgmma_m64n128k16<kFirst>(acc, a, b, accumulate);
  }
  template <bool kGated, class Put>
  __device__ __forceinline__ static void epilogue(const Args& args, const float (&acc)[128], int t, int row0, int n0,
                                                  int lo, int hi, Put put) {
    wgmma_any_epilogue<kGated>(args, acc, t, n0, lo, hi, put);
  }
};

// y's columns [kLo, kHi) of a consumer's 64 rows of the tile at (row0, n0) through its store boxes
// at `boxes` (see WgmmaTiles), kEsize bytes per element of y: chunk by chunk, each written once
// the copy engine has read the previous one (thread 0 issues and awaits the stores; named barrier
// `barrier` holds the warpgroup's other threads). The boxes are swizzled as the copy engine reads
// them, which also keeps the writes conflict-free: a warp's 8 rows land in 8 different 16-byte
// chunks.
template <class Op, int kEsize, bool kGated, int kLo, int kHi>
__device__ __forceinline__ void wgmma_store_cols(const gemm_hopper::TensorMap* y_map, const typename Op::Args& args,
                                                 const typename Op::Acc (&acc)[128], int t, int row0, int n0,
                                                 uint32_t boxes, int barrier) {
  namespace hw = gemm_hopper;
  namespace sw = gemm_layout::sw128;
  using Cfg = WgmmaTiles;
  constexpr int kBoxCols = sw::kRowBytes / kEsize, kChunkCols = Cfg::kStoreBoxes * kBoxCols;
  constexpr int kChunks = (kHi - kLo + kChunkCols - 1) / kChunkCols;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int lo = kLo + c * kChunkCols, hi = lo + kChunkCols < kHi ? lo + kChunkCols : kHi;
    if (t == 0) hw::tma_store_wait_read();  // the boxes are free again
    hw::named_barrier(barrier, Cfg::kWarpgroup);
    Op::template epilogue<kGated>(args, acc, t, row0, n0, lo, hi, [&](int row, int col, float v0, float v1) {
      const uint32_t byte = uint32_t((col - lo) * kEsize);
      const uint32_t box = boxes + (byte / sw::kRowBytes) * uint32_t(Cfg::kStoreBoxBytes);
      const uint32_t at = sw::swizzle_address(box + uint32_t(row * sw::kRowBytes) + byte % sw::kRowBytes);
      if (kEsize == 2) hw::store_shared_b32(at, tile::pack_bf16_pair(v0, v1));
      else hw::store_shared_v2f32(at, v0, v1);
    });
    hw::fence_async_shared();
    hw::named_barrier(barrier, Cfg::kWarpgroup);
    if (t == 0) {
      for (int b = 0; b < Cfg::kStoreBoxes; ++b) {
        const int col = lo + b * kBoxCols;
        if (col < hi && n0 + col < args.n)
          hw::tma_store_2d(y_map, boxes + uint32_t(b * Cfg::kStoreBoxBytes), n0 + col, row0);
      }
      hw::tma_store_commit();
    }
  }
}

// y's columns [kLo, kHi) of a consumer's 64 rows of the tile: through the store boxes, or from
// registers as column pairs (masked) when y's rows are not aligned for the copy engine.
template <class Op, bool kGated, int kLo, int kHi>
__device__ __forceinline__ void wgmma_store_range(const gemm_hopper::TensorMap* y_map, const typename Op::Args& args,
                                                  const typename Op::Acc (&acc)[128], int t, int row0, int n0,
                                                  uint32_t boxes, int barrier) {
  if (!args.tma_store) {
    const auto put = [&](int row, int col, float v0, float v1) { store_pair(args, row0 + row, n0 + col, v0, v1); };
    Op::template epilogue<kGated>(args, acc, t, row0, n0, kLo, kHi, put);
  } else if (args.y_bf16) {
    wgmma_store_cols<Op, 2, kGated, kLo, kHi>(y_map, args, acc, t, row0, n0, boxes, barrier);
  } else {
    wgmma_store_cols<Op, 4, kGated, kLo, kHi>(y_map, args, acc, t, row0, n0, boxes, barrier);
  }
}

// Column half kHalf of a consumer's 64 rows of the tile (y's columns 0..127 or 128..255; 0..63 or
// 64..127 with the gated unit) to y.
template <class Op, int kHalf>
__device__ __forceinline__ void wgmma_store_half(const gemm_hopper::TensorMap* y_map, const typename Op::Args& args,
                                                 const typename Op::Acc (&acc)[128], int t, int row0, int n0,
                                                 uint32_t boxes, int barrier) {
  constexpr int kP = WgmmaTiles::BN / 2, kG = kWgmmaUnitCols / 2;  // a half's y columns: plain, gated
  if constexpr (Op::kGates) {
    if (args.gated) {
      wgmma_store_range<Op, true, kHalf * kG, (kHalf + 1) * kG>(y_map, args, acc, t, row0, n0, boxes, barrier);
      return;
    }
  }
  wgmma_store_range<Op, false, kHalf * kP, (kHalf + 1) * kP>(y_map, args, acc, t, row0, n0, boxes, barrier);
}

// Op: the element traits (WgmmaBf16, WgmmaInt8). x_map and w_map read x and w in boxes of one
// k-step (Op::kStepK elements); y_map writes y when args.tma_store.
template <class Op>
__global__ __launch_bounds__(WgmmaTiles::kThreads, 1) void gemm_wgmma_kernel(
    const MOSS_GRID_CONSTANT gemm_hopper::TensorMap x_map, const MOSS_GRID_CONSTANT gemm_hopper::TensorMap w_map,
    const MOSS_GRID_CONSTANT gemm_hopper::TensorMap y_map, typename Op::Args args) {
#if MOSS_DEVICE_SM90A
  namespace hw = gemm_hopper;
  namespace sw = gemm_layout::sw128;
  using Cfg = WgmmaTiles;
  constexpr int S = Cfg::kStages;
  extern __shared__ tile::Chunk16 gemm_smem[];
  const uint32_t smem = hw::shared_address(gemm_smem);
  const uint32_t stages = (smem + sw::kAtomBytes - 1) & ~uint32_t(sw::kAtomBytes - 1);
  auto stage_a = [&](int s) { return stages + uint32_t(s * Cfg::kStageBytes); };
  auto stage_b = [&](int s) { return stages + uint32_t(s * Cfg::kStageBytes + Cfg::kStageA); };
  const uint32_t store_boxes = stages + uint32_t(S * Cfg::kStageBytes);
  const uint32_t barriers = store_boxes + uint32_t(Cfg::kStoreBytes);
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

  const int tile_cols = wgmma_tile_cols(args.gated);
  const int tiles = int(tiles_of(args.m, args.n, Cfg::BM, tile_cols));  // the host checked it fits
  const int first = int(block_x()), stride = hw::grid_blocks_x();
  const int ktiles = args.k / Op::kStepK;  // whole k-steps (the host checked kWgmmaMinSteps)
  const int warpgroup = tid / Cfg::kWarpgroup;
  if (warpgroup == 0) {
    // ---- producer ----
    hw::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid == 0) {
      hw::prefetch_tensor_map(&x_map);
      hw::prefetch_tensor_map(&w_map);
      int it = 0;  // k-steps loaded so far, over all of this block's tiles
      for (int tile = first; tile < tiles; tile += stride) {
        const TileOrigin origin = raster_tile<kWgmmaRasterGroup>(Cfg::BM, tile_cols, args.m, args.n, tile);
        for (int kt = 0; kt < ktiles; ++kt, ++it) {
          const int s = it % S;
          // Use u = it / S of slot s: wait for the consumers' release of use u - 1 (the u-th
          // completion of its empty barrier, parity (u - 1) & 1); the first S uses find it free.
          if (it >= S) hw::mbarrier_wait(empty(s), uint32_t((it / S + 1) & 1));
          hw::mbarrier_arrive_expect_tx(full(s), uint32_t(Cfg::kStageBytes));
          hw::tma_load_2d(stage_a(s), &x_map, kt * Op::kStepK, origin.m0, full(s));
          // A runtime test for every Op (the int8 GEMM's args.gated is false), not `if constexpr`
          // on Op::kGates: with this branch compiled out, ptxas (CUDA 13.0) serialized the int8
          // kernel's wgmmas ("insufficient register resources"), and a bf16 kernel without it too.
          if (!args.gated) {
            hw::tma_load_2d(stage_b(s), &w_map, kt * Op::kStepK, origin.n0, full(s));
          } else {  // boxes of 64 w rows: a's n0.., b's n + n0.., a's n0 + 64.., b's n + n0 + 64..
            for (int q = 0; q < 4; ++q)
              hw::tma_load_2d(stage_b(s) + uint32_t(q * Cfg::kGatedBoxRows * sw::kRowBytes), &w_map, kt * Op::kStepK,
                              (q % 2) * args.n + origin.n0 + (q / 2) * Cfg::kGatedBoxRows, full(s));
          }
        }
      }
    }
  } else {
    // ---- consumers ----
    hw::setmaxnreg_inc<Cfg::kConsumerRegs>();
    const int consumer = warpgroup - 1;
    const int t = tid % Cfg::kWarpgroup;
    const bool releases = t % kWaveSize == 0;  // lane 0 of each warp releases stages
    const uint32_t boxes = store_boxes + uint32_t(consumer * Cfg::kStoreBoxes * Cfg::kStoreBoxBytes);
    typename Op::Acc acc[Cfg::kAccumulators];
    // Stages are released in k-step order (over all of this block's tiles), each once every group
    // that reads it has retired (groups retire in issue order).
    int released = 0;
    const auto release_through = [&](int end) {
      for (; released < end; ++released)
        if (releases) hw::mbarrier_arrive(empty(released % S));
    };
    const auto wait_landed = [&](int it) { hw::mbarrier_wait(full(it % S), uint32_t((it / S) & 1)); };
    const auto descriptor_a = [&](int s, int kk) { return sw::step_descriptor(stage_a(s), 64 * consumer, kk); };
    const auto descriptor_b = [&](int s, int h, int kk) { return sw::step_descriptor(stage_b(s), Cfg::BN / 2 * h, kk); };
    // One group: k-step it, both column halves (four m64n256 instructions).
    const auto issue_whole = [&](int it) {
      wait_landed(it);
      hw::wgmma_fence();
      const int s = it % S;
#pragma unroll
      for (int kk = 0; kk < sw::kRowBytes / sw::kK16Bytes; ++kk) Op::whole(acc, descriptor_a(s, kk), descriptor_b(s, 0, kk));
      hw::wgmma_commit();
    };
    // One group: a tile's first kSplitSteps k-steps (from it0) of column half h alone (B rows
    // 128h..). Its first product overwrites the half: no zeroing touches those registers, which
    // ptxas would count as an access to accumulators in flight.
    const auto issue_first_half = [&](auto half, int it0) {
      constexpr int h = decltype(half)::value;
      for (int i = 0; i < Cfg::kSplitSteps; ++i) wait_landed(it0 + i);
      hw::wgmma_fence();
#pragma unroll
      for (int i = 0; i < Cfg::kSplitSteps; ++i) {
        const int s = (it0 + i) % S;
#pragma unroll
        for (int kk = 0; kk < sw::kRowBytes / sw::kK16Bytes; ++kk)
          Op::template half<Cfg::kHalfRegs * h>(acc, descriptor_a(s, kk), descriptor_b(s, h, kk),
                                                i == 0 && kk == 0 ? 0 : 1);
      }
      hw::wgmma_commit();
    };
    using Half0 = std::integral_constant<int, 0>;
    using Half1 = std::integral_constant<int, 1>;
    // Control flow that ptxas can follow with products in flight (else it serializes every
    // wgmma of the kernel): the tile loop runs from one tile's first split steps
    // (already issued) to the next's, so every path back to its head has issued them, and the
    // whole steps run at least once (kWgmmaMinK), so no path skips them.
    if (first >= tiles) return;
    issue_first_half(Half0{}, 0);
    issue_first_half(Half1{}, 0);
    for (int tile = first, it = 0;; tile += stride, it += ktiles) {  // it: this tile's first k-step
      const TileOrigin origin = raster_tile<kWgmmaRasterGroup>(Cfg::BM, tile_cols, args.m, args.n, tile);
      // Whole k-steps: each group stays in flight while the previous one retires.
      int kt = Cfg::kSplitSteps;
      // The half-0 group has long finished (issued before half 1 left); retiring it here keeps
      // ptxas's wgmma pipeline whole: an m64n256k16 chained onto both halves' groups in flight
      // makes it serialize every wgmma ("insufficient register resources", CUDA 13).
      hw::wgmma_wait<1>();
#pragma unroll 1
      do {
        issue_whole(it + kt);
        hw::wgmma_wait<1>();
        release_through(it + kt);
      } while (++kt < ktiles);
      const int next = it + ktiles;  // the next tile's first k-step
      hw::wgmma_wait<0>();
      release_through(next);
      hw::fence_accumulators(acc);

      // Epilogue: register 4j + 2h + e of thread t is row accumulator(t, .).row, column 8j + 2(t % 4)
      // + e of this consumer's 64 x 256 block (gemm_layout::sw128::accumulator).
      const int row0 = origin.m0 + 64 * consumer;
      wgmma_store_half<Op, 0>(&y_map, args, acc, t, row0, origin.n0, boxes, 2 + consumer);
      if (tile + stride >= tiles) {
        wgmma_store_half<Op, 1>(&y_map, args, acc, t, row0, origin.n0, boxes, 2 + consumer);
        break;
      }
      // The next tile's first steps of half 0 run while half 1 leaves, then those of half 1.
      issue_first_half(Half0{}, next);
      wgmma_store_half<Op, 1>(&y_map, args, acc, t, row0, origin.n0, boxes, 2 + consumer);
      issue_first_half(Half1{}, next);
    }
    if (t == 0) hw::tma_store_wait_read();  // the block's shared memory outlives the last stores' reads
  }
#else
  // Built for a target without wgmma (CMakeLists insists on sm_90a): never launched there.
  gemm_hopper::unsupported_target();
#endif
}
#endif  // MOSS_PLATFORM_NVIDIA

}  // namespace
}  // namespace moss
