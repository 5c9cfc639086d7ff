// The Wgmma GEMM kernel (GemmKernel::Wgmma, NVIDIA Hopper, sm_90a).
// Part of kernels/gemm.hip (its only includer: the kernels are instantiated in that one
// translation unit, inside its anonymous namespace).
#pragma once

#include <cstdint>

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
//     then release (`empty`: one arrival per consumer warp; the tile's last stage once its group
//     is done). 128 fp32 accumulators per thread.
// Why persistent: with one block per tile, every tile paid the block's start, the ring's first
// fill and the wait for its stores in series with its products; now they overlap the tiles next
// to them (H200: q/k/v/o 702 -> 729 TFLOP/s alone, the 1024 step's GEMMs 121.3 -> 117.3 ms). The
// epilogue's own work still stalls the tensor cores (both consumers store at once): cuBLAS's
// kernels ran at 715 TFLOP/s in the step against ours' 650 before this (bench/NOTES.md).
// Stages: S of 48 KiB (x 16 KiB + w 32 KiB), 1024-byte aligned, 128-byte swizzled exactly as
// gemm_layout::sw128 models (the descriptors come from there too). K must be a multiple of 64.
// The epilogue adds the bias and, when y's rows are 16-byte aligned, writes the tile through
// shared memory as swizzled 128-byte x 64-row boxes that the copy engine stores (clipped at the M
// and N tails; fewer, asynchronous writes than the registers' 4- or 8-byte ones: 0.255 -> 0.234 ms
// for the DiT's q/k/v/o GEMMs in a step). Each consumer has its own 16 KiB for that (two boxes),
// apart from the stages, and fills it chunk by chunk (128 bf16 or 64 f32 columns), each chunk
// once the copy engine has read the one before; the stores run on while the next tile multiplies.
// Otherwise it writes column pairs from registers, masked.
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
constexpr int kWgmmaUnitCols = WgmmaTiles::BN / 2;  // y's columns per tile with a gated unit
// y's columns per tile.
__host__ __device__ constexpr int wgmma_tile_cols(bool gated) { return gated ? kWgmmaUnitCols : WgmmaTiles::BN; }

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
// 0.727 ms against 0.619 + 0.110).
template <GatedUnit kUnit, class Put>
__device__ __forceinline__ void wgmma_gated_epilogue(const KernelArgs<bf16, bf16>& args, const float (&acc)[128], int t,
                                                     int n0, int lo, int hi, Put put) {
  namespace sw = gemm_layout::sw128;
  constexpr int kHalf = WgmmaTiles::kAccumulators / 2;  // registers of a; b's are kHalf further on
#pragma unroll
  for (int j = 0; j < kHalf / 4; ++j) {
    if (8 * j < lo || 8 * j >= hi) continue;
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
                                                   int n0, int lo, int hi, Put put) {
  if (!args.gated) return wgmma_epilogue(args, acc, t, n0, lo, hi, put);
  switch (args.unit) {
    case GatedUnit::Situ: wgmma_gated_epilogue<GatedUnit::Situ>(args, acc, t, n0, lo, hi, put); break;
    case GatedUnit::SwiGlu: wgmma_gated_epilogue<GatedUnit::SwiGlu>(args, acc, t, n0, lo, hi, put); break;
    default: wgmma_gated_epilogue<GatedUnit::SigmoidGate>(args, acc, t, n0, lo, hi, put); break;
  }
}

// A consumer's 64 rows of the tile at (row0, n0) through its store boxes at `boxes` to y (see
// WgmmaTiles), kEsize bytes per element of y: chunk by chunk, each written once the copy engine
// has read the previous one (thread 0 issues and awaits the stores; named barrier `barrier`
// holds the warpgroup's other threads). The boxes are swizzled as the copy engine reads them,
// which also keeps the writes conflict-free: a warp's 8 rows land in 8 different 16-byte chunks.
template <int kEsize>
__device__ __forceinline__ void wgmma_store_tile(const gemm_hopper::TensorMap* y_map, const KernelArgs<bf16, bf16>& args,
                                                 const float (&acc)[128], int t, int row0, int n0, uint32_t boxes,
                                                 int barrier) {
  namespace hw = gemm_hopper;
  namespace sw = gemm_layout::sw128;
  using Cfg = WgmmaTiles;
  constexpr int kBoxCols = sw::kRowBytes / kEsize, kChunkCols = Cfg::kStoreBoxes * kBoxCols;
  const int cols = wgmma_tile_cols(args.gated);
#pragma unroll
  for (int c = 0; c < Cfg::BN / kChunkCols; ++c) {
    const int lo = c * kChunkCols;
    if (lo >= cols) break;
    if (t == 0) hw::tma_store_wait_read();  // the boxes are free again
    hw::named_barrier(barrier, Cfg::kWarpgroup);
    wgmma_any_epilogue(args, acc, t, n0, lo, lo + kChunkCols, [&](int row, int col, float v0, float v1) {
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
        if (col < cols && n0 + col < args.n)
          hw::tma_store_2d(y_map, boxes + uint32_t(b * Cfg::kStoreBoxBytes), n0 + col, row0);
      }
      hw::tma_store_commit();
    }
  }
}

__global__ __launch_bounds__(WgmmaTiles::kThreads, 1) void gemm_wgmma_kernel(
    const MOSS_GRID_CONSTANT gemm_hopper::TensorMap x_map, const MOSS_GRID_CONSTANT gemm_hopper::TensorMap w_map,
    const MOSS_GRID_CONSTANT gemm_hopper::TensorMap y_map, KernelArgs<bf16, bf16> args) {
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
  const int ktiles = args.k / Cfg::BK;
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
          hw::tma_load_2d(stage_a(s), &x_map, kt * Cfg::BK, origin.m0, full(s));
          hw::tma_load_2d(stage_b(s), &w_map, kt * Cfg::BK, origin.n0, full(s));
          if (args.gated)  // b's 128 rows after a's (the w map's box is 128 rows)
            hw::tma_load_2d(stage_b(s) + uint32_t(kWgmmaUnitCols * sw::kRowBytes), &w_map, kt * Cfg::BK,
                            args.n + origin.n0, full(s));
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
    float acc[Cfg::kAccumulators];
    int it = 0;  // k-steps consumed so far, over all of this block's tiles
    for (int tile = first; tile < tiles; tile += stride) {
      const TileOrigin origin = raster_tile<kWgmmaRasterGroup>(Cfg::BM, tile_cols, args.m, args.n, tile);
#pragma unroll
      for (int i = 0; i < Cfg::kAccumulators; ++i) acc[i] = 0.0f;
      hw::fence_accumulators(acc);
      for (int kt = 0; kt < ktiles; ++kt, ++it) {
        const int s = it % S;
        hw::mbarrier_wait(full(s), uint32_t((it / S) & 1));  // use it / S of slot s has landed
        hw::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < Cfg::BK / 16; ++kk)
          hw::wgmma_m64n256k16(acc, sw::step_descriptor(stage_a(s), 64 * consumer, kk),
                               sw::step_descriptor(stage_b(s), 0, kk));
        hw::wgmma_commit();
        // This step's group stays in flight; the previous one is done, so its stage is free.
        hw::wgmma_wait<1>();
        if (kt > 0 && releases) hw::mbarrier_arrive(empty((it - 1) % S));
      }
      hw::wgmma_wait<0>();
      hw::fence_accumulators(acc);
      if (releases) hw::mbarrier_arrive(empty((it - 1) % S));  // the tile's last stage: the next tile's

      // Epilogue: register 4j + 2h + e of thread t is row accumulator(t, .).row, column 8j + 2(t % 4)
      // + e of this consumer's 64 x 256 block (gemm_layout::sw128::accumulator).
      const int row0 = origin.m0 + 64 * consumer;
      if (!args.tma_store) {
        wgmma_any_epilogue(args, acc, t, origin.n0, 0, Cfg::BN, [&](int row, int col, float v0, float v1) {
          store_pair(args, row0 + row, origin.n0 + col, v0, v1);
        });
      } else if (args.y_bf16) {
        wgmma_store_tile<2>(&y_map, args, acc, t, row0, origin.n0, boxes, 2 + consumer);
      } else {
        wgmma_store_tile<4>(&y_map, args, acc, t, row0, origin.n0, boxes, 2 + consumer);
      }
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
