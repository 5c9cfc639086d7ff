// check_device: matrix
// Tiled GEMM on the matrix leaf, y = x·wᵀ (+ bias); contract and summary in kernels/gemm.h.
// Three kernels share the host side (tile shapes, rasterisation, launch), one header each
// (included here only, instantiated in this translation unit):
//   kernels/gemm_leaf.h    the leaf kernel (AMD, the portable path; NVIDIA with f32 weights)
//   kernels/gemm_mma.h     the Mma kernel (NVIDIA mma.sync + ldmatrix, bf16 weights)
//   kernels/gemm_wgmma.h   the Wgmma kernel (NVIDIA Hopper), bf16; with
//   kernels/gemm_wgmma_int8.h  also int8, the INT8 ConvRot GEMM (int8_gemm_wgmma, int8_linear.h)
//   kernels/gemm_parts.h   what they share: arguments, epilogue, raster order
// This file holds the host side: tile choice, split-K, launches, gemm_resolve.
#include "kernels/gemm.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>

#include "kernels/gemm_leaf.h"
#include "kernels/gemm_mma.h"
#include "kernels/gemm_parts.h"
#include "kernels/gemm_wgmma.h"
#include "kernels/gemm_wgmma_int8.h"
#include "kernels/kernel_path.h"

namespace moss {
namespace {

// ---- host side ---------------------------------------------------------------------------------
// The product rows a transposed store writes: x's m, then zeros up to y_rows.
int64_t transposed_rows(const GemmOperands& op) { return op.y_rows > op.m ? op.y_rows : op.m; }

// Whether a row-major y takes one aligned write per column pair (KernelArgs::pair_stores).
bool pair_stores_fit(const void* y, int64_t ldy, bool bf16) {
  return ldy % 2 == 0 && reinterpret_cast<uintptr_t>(y) % (bf16 ? 4 : 8) == 0;
}

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
  a.x_rows = int(op.m);
  a.m = int(op.y_transposed ? transposed_rows(op) : op.m);
  a.n = int(op.n);
  a.k = int(op.k);
  a.splits = 1;
  a.bias_bf16 = op.bias_type == GemmType::BF16;
  a.y_bf16 = op.y_type == GemmType::BF16;
  a.pair_stores = !op.y_transposed && pair_stores_fit(op.y, op.ldy, a.y_bf16);
  a.y_transposed = op.y_transposed;
  a.run_stores = op.y_transposed && a.y_bf16 && op.ldy % 8 == 0 && reinterpret_cast<uintptr_t>(op.y) % 16 == 0;
  return a;
}

// The grid's block count for m x n in bm x bn tiles (or fewer: at most `cap`), checked against the
// launch limit.
unsigned grid_blocks(int64_t m, int64_t n, int bm, int bn, int64_t cap = 0x7fffffff) {
  const int64_t tiles = tiles_of(m, n, bm, bn);
  if (tiles > 0x7fffffff) throw failure("gemm: too many tiles (" + std::to_string(tiles) + ")");
  return unsigned(std::max<int64_t>(1, std::min(tiles, cap)));
}

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
  hipLaunchKernelGGL(kernel, dim3(grid_blocks(a.m, a.n, bm, bn)), dim3(threads), size_t(smem_bytes), stream, params...);
  MOSS_HIP_CHECK(hipGetLastError());
}

template <class Cfg, class TA, class TB, bool kConvertX, bool kUnit = false>
void launch_leaf(const GemmOperands& op, hipStream_t stream) {
  using P = Plan<Cfg, std::conditional_t<kConvertX, bf16, TA>, TB>;
  auto kernel = gemm_kernel<Cfg, TA, TB, kConvertX, kUnit>;
  static const bool opted_in = opt_in_shared_memory(kernel, P::kSmemBytes);
  (void)opted_in;
  launch_blocks(kernel, Cfg::BM, leaf_tile_cols<Cfg, kUnit>(), Cfg::kThreads, P::kSmemBytes, stream,
                kernel_args<TA, TB>(op));
}

// The configurations for op's dtypes, an f32 x converted to bf16 as it is staged: Cfg for bf16 x
// bf16, CfgF32X for an f32 x on bf16 weights, CfgF32W for f32 weights.
template <class Cfg, class CfgF32X, class CfgF32W>
void launch_leaf_for_dtypes(const GemmOperands& op, hipStream_t stream) {
  const bool xb = op.x_type == GemmType::BF16, wb = op.w_type == GemmType::BF16;
  if (xb && wb) launch_leaf<Cfg, bf16, bf16, false>(op, stream);
  else if (wb) launch_leaf<CfgF32X, float, bf16, true>(op, stream);
  else if (xb) launch_leaf<CfgF32W, bf16, float, false>(op, stream);
  else launch_leaf<CfgF32W, float, float, true>(op, stream);
}

// The portable kernel with the gated unit in its epilogue: the wide tiles with bf16 weights only
// (portable_fuses_unit), where the B loader's 128 threads cover 32 rows a pass (gemm_unit_rows.h).
void launch_portable(const GemmOperands& op, bool wide, hipStream_t stream) {
  if (op.gated) {
    if (op.x_type == GemmType::BF16) launch_leaf<PortableWide, bf16, bf16, false, true>(op, stream);
    else launch_leaf<PortableWideF32X, float, bf16, true, true>(op, stream);
  } else if (wide) {
    launch_leaf_for_dtypes<PortableWide, PortableWideF32X, PortableWideF32Weights>(op, stream);
  } else {
    launch_leaf_for_dtypes<PortableNarrow, PortableNarrowF32X, PortableNarrowF32Weights>(op, stream);
  }
}

// Whether the resolved plan applies op's gated unit in its epilogue: the Wgmma kernel (n a multiple
// of 128, gemm_wgmma_fits), or the Portable kernel's wide tiles (at least kPortableWideMinRows rows
// under Auto) with bf16 weights, any n. Not fused: the narrow portable tile (few rows: its one wave
// stages 8 rows a pass, not whole hidden/gate pairs), f32 weights (their loader stages 16 rows a
// pass), the Mma and Leaf kernels (the caller then runs the product and CoreOps::gated_unit apart).
bool plan_fuses_unit(const GemmOperands& op, const GemmPlan& resolved) {
  if (!op.gated) return false;
  if (resolved.kernel == GemmKernel::Wgmma) return true;
  return resolved.kernel == GemmKernel::Portable && resolved.tiles == GemmTiles::Medium &&
         op.w_type == GemmType::BF16;
}

#if MOSS_PLATFORM_NVIDIA
// A split launch: grid (tiles, splits), clusters of (1, splits) blocks, the blocks of one tile.
template <class Kernel, class Args>
void launch_clusters(Kernel kernel, int bm, int bn, int splits, int threads, int smem_bytes, hipStream_t stream,
                     const Args& args) {
  nvidia::launch_in_clusters(kernel, grid_blocks(args.m, args.n, bm, bn), unsigned(splits), unsigned(threads),
                             size_t(smem_bytes), stream, args,
                             "gemm: split-K cluster launch (" + std::to_string(splits) + " blocks)");
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

// y as the Wgmma kernel writes it: through the copy engine when y's rows allow it (16-byte
// aligned; args.tma_store), else from registers, and the map is then never read (`unused`).
template <class Args>
gemm_hopper::TensorMap wgmma_store_map(Args& args, const gemm_hopper::TensorMap& unused) {
  const int esize = args.y_bf16 ? 2 : 4;
  args.tma_store = reinterpret_cast<uintptr_t>(args.y) % 16 == 0 && (args.ldy * esize) % 16 == 0;
  return args.tma_store ? gemm_hopper::store_tensor_map(args.y, args.y_bf16, args.m, args.n, args.ldy, 64) : unused;
}

// Persistent: one block per multiprocessor (or per tile, when there are fewer), each walking its
// share of the tiles (see WgmmaTiles).
template <class Op>
void launch_wgmma_kernel(const gemm_hopper::TensorMap& x_map, const gemm_hopper::TensorMap& w_map,
                         const gemm_hopper::TensorMap& y_map, const typename Op::Args& args, hipStream_t stream,
                         int multiprocessors) {
  using Cfg = WgmmaTiles;
  static const bool opted_in = opt_in_shared_memory(gemm_wgmma_kernel<Op>, Cfg::kSmemBytes);
  (void)opted_in;
  const unsigned blocks = grid_blocks(args.m, args.n, Cfg::BM, wgmma_tile_cols(args.gated), multiprocessors);
  hipLaunchKernelGGL(gemm_wgmma_kernel<Op>, dim3(blocks), dim3(Cfg::kThreads), size_t(Cfg::kSmemBytes), stream, x_map,
                     w_map, y_map, args);
  MOSS_HIP_CHECK(hipGetLastError());
}

// The tensor maps describe x and w as the copy engine will read them (boxes of one k-step).
void launch_wgmma(const GemmOperands& op, hipStream_t stream, int multiprocessors) {
  using Cfg = WgmmaTiles;
  const gemm_hopper::TensorMap x_map = gemm_hopper::kmajor_tensor_map(op.x, op.m, op.k, op.ldx, Cfg::BM);
  // With a gated unit w has 2n rows, read in boxes of 64 (a's and b's rows of each column half).
  const gemm_hopper::TensorMap w_map =
      op.gated ? gemm_hopper::kmajor_tensor_map(op.w, 2 * op.n, op.k, op.ldw, Cfg::kGatedBoxRows)
               : gemm_hopper::kmajor_tensor_map(op.w, op.n, op.k, op.ldw, Cfg::BN);
  KernelArgs<bf16, bf16> args = kernel_args<bf16, bf16>(op);
  const gemm_hopper::TensorMap y_map = wgmma_store_map(args, x_map);
  launch_wgmma_kernel<WgmmaBf16>(x_map, w_map, y_map, args, stream, multiprocessors);
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
  return !portable_kernels() && op.x_type == GemmType::BF16 && op.w_type == GemmType::BF16 &&
         op.k % kWgmmaKMultiple == 0 && op.k >= kWgmmaMinK && (!op.gated || op.n % kWgmmaUnitCols == 0);
#else
  (void)op;
  return false;
#endif
}

bool gemm_fuses_unit(const GemmOperands& op, int multiprocessors, GemmPlan plan) {
  return plan_fuses_unit(op, gemm_resolve(op, multiprocessors, plan));
}

GemmPlan gemm_resolve(const GemmOperands& op, int multiprocessors, GemmPlan plan) {
  // A transposed y is the Leaf kernel's epilogue alone (on NVIDIA outside the portable path: the
  // Leaf kernel's own tiles, which DiT runs never take: they ask for it only where the portable
  // attention reads Vᵀ, CoreOps::attention_reads_transposed_v).
  if (op.y_transposed && !portable_kernels() && plan.kernel != GemmKernel::Portable) {
    plan.kernel = GemmKernel::Leaf;
    if (plan.tiles == GemmTiles::Auto) plan.tiles = gemm_auto_tiles(op.m, op.n, multiprocessors);
    if (plan.tiles == GemmTiles::Skinny) plan.tiles = GemmTiles::Small;
    plan.split = 1;
    return plan;
  }
  if (portable_kernels() || plan.kernel == GemmKernel::Portable) {
    // Two shapes: Medium is the wide 4-wave tile, Small the narrow one-wave tile (Auto: by rows).
    // An f32 x is converted on its way in (the chunks pass through registers anyway).
    plan.kernel = GemmKernel::Portable;
    if (plan.tiles == GemmTiles::Auto) plan.tiles = op.m >= kPortableWideMinRows ? GemmTiles::Medium : GemmTiles::Small;
    if (plan.tiles != GemmTiles::Medium) plan.tiles = GemmTiles::Small;
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
    plan.split = 1;
    return plan;
  }
  plan.kernel = mma_possible ? GemmKernel::Mma : GemmKernel::Leaf;  // on NVIDIA the Leaf kernel serves f32 weights only
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
  if (op.ldx < op.k || op.ldw < op.k || op.ldy < (op.y_transposed ? transposed_rows(op) : op.n))
    throw failure("gemm: a row stride is shorter than its row (ldx " + std::to_string(op.ldx) + ", ldw " +
                  std::to_string(op.ldw) + ", ldy " + std::to_string(op.ldy) + ")");
  if (op.y_transposed && (op.gated || op.y_rows > limit))
    throw failure("gemm: a transposed y takes no gated unit and at most 2^31-1 rows");
  plan = gemm_resolve(op, multiprocessors, plan);
  if (op.gated && !plan_fuses_unit(op, plan))
    throw failure(std::string("gemm: the gated-unit epilogue needs the wgmma kernel or the portable wide tiles with "
                              "bf16 weights, not ") + gemm_kernel_name(plan.kernel) + " " +
                  gemm_tiles_name(plan.tiles, plan.kernel) + " (see gemm_fuses_unit)");
  if (plan.kernel == GemmKernel::Portable) return launch_portable(op, plan.tiles == GemmTiles::Medium, stream);
#if MOSS_PLATFORM_NVIDIA
  if (plan.kernel == GemmKernel::Wgmma) {
    launch_wgmma(op, stream, multiprocessors);
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
    case GemmTiles::Large: launch_leaf_for_dtypes<LargeTiles, LargeTiles, LargeTiles>(op, stream); break;
    case GemmTiles::Medium: launch_leaf_for_dtypes<MediumTiles, MediumTiles, MediumTiles>(op, stream); break;
    default: launch_leaf_for_dtypes<SmallTiles, SmallTiles, SmallTiles>(op, stream); break;
  }
#endif
}

// ---- the INT8 ConvRot GEMM on the Wgmma kernel (kernels/int8_linear.h) ----------------------------
bool int8_gemm_wgmma_fits(const Int8GemmArgs& a) {
#if MOSS_PLATFORM_NVIDIA
  const auto aligned16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const int64_t limit = 0x7fffffff, steps = (a.k + WgmmaInt8::kStepK - 1) / WgmmaInt8::kStepK;
  return !portable_kernels() && !a.gated && a.k % 16 == 0 && aligned16(a.qx) && aligned16(a.qw) && steps >= kWgmmaMinSteps &&
         a.m <= limit && a.n <= limit && a.k <= limit;
#else
  (void)a;
  return false;
#endif
}

void int8_gemm_wgmma(const Int8GemmArgs& a, hipStream_t stream, int multiprocessors) {
  if (!int8_gemm_wgmma_fits(a))
    throw failure("int8_gemm_wgmma: " + std::to_string(a.m) + "x" + std::to_string(a.k) + "x" + std::to_string(a.n) +
                  " does not fit the wgmma kernel (NVIDIA native path, k a multiple of 16 above 256, 16-byte aligned "
                  "operands, no gated unit: int8_gemm_wgmma_fits)");
  if (a.m == 0 || a.n == 0) return;
#if MOSS_PLATFORM_NVIDIA
  using Cfg = WgmmaTiles;
  // q_x and q_w are packed [rows, k] bytes (row stride k), read in boxes of one 128-byte k-step.
  const gemm_hopper::TensorMap x_map =
      gemm_hopper::kmajor_tensor_map(a.qx, a.m, a.k, a.k, Cfg::BM, gemm_hopper::TmaElement::Byte);
  const gemm_hopper::TensorMap w_map =
      gemm_hopper::kmajor_tensor_map(a.qw, a.n, a.k, a.k, Cfg::BN, gemm_hopper::TmaElement::Byte);
  Int8WgmmaArgs args = {};
  args.x = a.qx;
  args.w = a.qw;
  args.sx = a.sx;
  args.sw = a.sw;
  args.bias = a.bias.data;
  args.bias_bf16 = a.bias.bf16;
  args.y = a.y.data;
  args.y_bf16 = a.y.bf16;
  args.ldx = args.ldw = a.k;
  args.ldy = a.y.ld;
  args.m = args.x_rows = int(a.m);
  args.n = int(a.n);
  // The kernel walks args.k / kStepK whole k-steps: K rounded up to a whole step, whose bytes past
  // the real K (the tensor maps' width) the copy engine reads as zeros, adding nothing to the sums.
  args.k = int((a.k + WgmmaInt8::kStepK - 1) / WgmmaInt8::kStepK * WgmmaInt8::kStepK);
  args.splits = 1;
  args.gated = args.y_transposed = args.run_stores = false;
  args.pair_stores = pair_stores_fit(a.y.data, a.y.ld, a.y.bf16);
  const gemm_hopper::TensorMap y_map = wgmma_store_map(args, x_map);
  launch_wgmma_kernel<WgmmaInt8>(x_map, w_map, y_map, args, stream, multiprocessors);
#else
  (void)stream;
  (void)multiprocessors;
#endif
}

}  // namespace moss
