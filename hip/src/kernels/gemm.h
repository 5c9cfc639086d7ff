// The tiled GEMM on the matrix leaf: y[M,N] = x[M,K] · w[N,K]ᵀ (+ bias[N]), bf16 operands
// (f32 operands are rounded to bf16, nearest even), fp32 accumulation.
// This is CoreOps::linear on the HIP backend (ops/hip/core_ops_hip.hip).
//
// Three kernels (kernels/gemm.hip has the details):
//   Wgmma (NVIDIA Hopper, sm_90a; the default there for bf16 x and w, K a multiple of 64 and at
//         least 192, and enough rows to fill the GPU) 128x256 tiles, a producer warpgroup feeding
//         64-wide k-steps through the copy engine (TMA, 128-byte swizzle) into 4 shared-memory
//         stages, two consumer warpgroups multiplying them with wgmma.mma_async m64n256k16,
//         mbarrier handshakes; persistent (one block per multiprocessor walks its tiles, the stages
//         running on from one tile to the next while the last one's output is stored, the next
//         tile's first steps of one column half under the store of the other).
// The other two walk K in steps of 32 through a ring of shared-memory stages, each wave owning a
// (BM/warps_m) x (BN/warps_n) sub-tile of the block's BM x BN tile of y:
//   Mma   (NVIDIA, bf16 weights; the default there) unpadded XOR-swizzled bf16 stages filled by
//         cp.async (an f32 x is rounded to bf16 on its way in, through registers), fragments read
//         with ldmatrix.x4 straight into the mma.sync layout (kernels/gemm_layout.h), the next
//         k16 step's fragments read while the current one multiplies, one barrier per stage,
//         8 warps of 64x64 on 128x256 tiles;
//   Leaf  (NVIDIA's for f32 weights, and, as Portable, AMD's kernel) operands staged as stored in rows padded by 8 elements, fragments read
//         through the leaf's lane maps (kernels/matrix_layout.h). Portable (kernels/kernel_path.h,
//         docs/amd_kernels.md): 128x64 tiles of 4 wave32s, or one wave of 32x64 for few rows, two
//         stages, the next k-step held in registers while the current one multiplies.
// Few rows (the text encoder, M = 10..128): the Mma kernel on 64x128 tiles, K split among the
// blocks of a thread-block cluster (GemmPlan::split) whose partial tiles are summed through
// distributed shared memory in a fixed order: the weights stream through enough blocks to keep
// HBM busy, bit-reproducibly, with no workspace.
// All three share one epilogue: bias, then the store (converted to y's dtype); the Wgmma kernel
// stores through shared memory and the copy engine when y allows it. The Leaf kernel (Portable
// included) can store the product transposed (GemmOperands::y_transposed): on gfx12, whose
// accumulators give each lane 8 consecutive rows of one column, as one 16-byte store per
// accumulator, where the row-major store takes 8. The Wgmma kernel and the
// Portable kernel's wide tiles can apply a gated unit to the product's two halves in their
// epilogue (GemmOperands::gated; the Portable kernel stages hidden and gate weight rows side by
// side in its B tile, kernels/gemm_unit_rows.h, so a 128x64 tile yields 32 columns of y).
#pragma once

#include <cstdint>

#include "kernels/op_kinds.h"
#include "runtime/portability.h"

namespace moss {

enum class GemmType : uint8_t { F32, BF16 };

// Device pointers; row strides in elements (unit column stride). Any M, N >= 1; K >= 1 a
// multiple of kGemmKMultiple. x and w must be packed (gemm_packed): the kernel moves them in
// aligned 16-byte chunks. ops/hip copies other operands into packed scratch first.
struct GemmOperands {
  const void* x = nullptr;  // [M, K]
  GemmType x_type = GemmType::F32;
  int64_t ldx = 0;
  const void* w = nullptr;  // [N, K] (PyTorch [out, in])
  GemmType w_type = GemmType::BF16;
  int64_t ldw = 0;
  const void* bias = nullptr;  // [N] or null
  GemmType bias_type = GemmType::F32;
  void* y = nullptr;  // [M, N]; must not overlap x or w
  GemmType y_type = GemmType::F32;
  int64_t ldy = 0;
  // The gated-unit epilogue (CoreOps::linear_gated_unit; the Wgmma kernel and the Portable wide
  // tiles with bf16 weights, see gemm_fuses_unit): w has 2n rows, the product's columns [a | b]
  // (a from rows 0..n-1, b from rows n..2n-1, bias likewise 2n long), and y [M, n] receives
  // gated_unit(unit, a, b), computed from the fp32 accumulators (never rounded to bf16 between
  // the product and the unit). Wgmma uses the fast tanh/exp, Portable the accurate ones.
  // n here is y's width.
  bool gated = false;
  GatedUnit unit = GatedUnit::Situ;
  // y transposed (CoreOps::linear_transposed; the Leaf and Portable kernels, gemm_resolve picks
  // one): the product's column c is y's row c, element (r, c) at y[c·ldy + r], and the product's
  // rows from m up to y_rows (past x's last row) are written as zeros: the zero-padded Vᵀ an
  // attention kernel reads (kernels/attention.h). No gated unit. y_rows 0: m.
  bool y_transposed = false;
  int64_t y_rows = 0;
  int64_t m = 0, n = 0, k = 0;
};

constexpr int64_t kGemmKMultiple = 8;

// 16-byte aligned base and a row stride of whole 16-byte units.
inline bool gemm_packed(const void* p, int64_t ld, GemmType t) {
  const uint64_t elem = t == GemmType::F32 ? 4 : 2;
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && (uint64_t(ld) * elem) % 16 == 0;
}

// Tile shape. Auto picks by problem size (the largest shape that still gives every
// multiprocessor a block); the others exist so the kernel check can time each shape. The
// Portable kernel has two: Medium (its wide 4-wave tile) and any other (its narrow one-wave tile).
// Skinny (NVIDIA Mma kernel): 64x128 tiles for few rows (the text encoder's M = 10..128), meant
// to be split along K (GemmPlan::split) so that the weights stream through enough blocks.
enum class GemmTiles { Auto, Large, Medium, Small, Skinny };

// Which kernel (see the top of this file). Auto on NVIDIA: Wgmma when gemm_wgmma_fits and its
// 128x256 tiles number at least half the multiprocessors, else Mma when the weights are bf16,
// else Leaf. A request the problem or platform cannot take resolves as Auto would without it
// (Wgmma: to Mma or Leaf; Mma on AMD or with f32 weights: to Leaf; Leaf on NVIDIA with bf16
// weights: to Mma, which replaced it there).
// Every kernel stages a bf16 x as it is and an f32 x rounded to bf16 on its way in, through
// registers (shared memory then holds bf16: half the bytes for the fragment reads, no rounding in
// the inner loop); f32 weights are staged as stored and rounded as the fragments are read.
// Portable: the AMD build's kernel and tiles (the Leaf kernel on its wave32 configuration); every
// request resolves to it on AMD, and on NVIDIA under MOSSINFER_KERNELS=portable (kernels/kernel_path.h).
enum class GemmKernel { Auto, Mma, Leaf, Wgmma, Portable };

// split (Mma kernel, NVIDIA): K is divided among `split` blocks (1, 2, 4 or 8) of a thread-block
// cluster that share one tile of y; each multiplies its run of k-steps, and the partial tiles are
// summed through distributed shared memory in rank order (0, 1, ..., split-1), so the result is
// the same bits on every run, with no workspace. 0 = Auto: split only when the tiles alone leave
// the GPU short of blocks (few rows, weight-bound). Other kernels ignore it (resolved to 1).
struct GemmPlan {
  GemmTiles tiles = GemmTiles::Auto;
  GemmKernel kernel = GemmKernel::Auto;
  int split = 0;
};
constexpr int kGemmMaxSplit = 8;  // the portable cluster size

// "128x256/8w", ... (AMD: its own shape; the Wgmma kernel: its one shape, whatever t says).
// The split is not part of the name (reports add "k/N").
const char* gemm_tiles_name(GemmTiles t, GemmKernel k = GemmKernel::Auto);
const char* gemm_kernel_name(GemmKernel k);  // "wgmma", "mma", "leaf", "portable"

// The Wgmma kernel can take this problem: NVIDIA, bf16 x and w, K a multiple of 64 and at least
// 192 (a tile's first two k-steps by column halves, then at least one whole step), and, with the
// gated-unit epilogue, n a multiple of 128 (a tile's a and b rows of w must not straddle a and
// b). Operand alignment is gemm()'s own requirement, not checked here.
bool gemm_wgmma_fits(const GemmOperands& op);

// Launches on `stream`; `multiprocessors` (SMs / CUs) steers the Auto choices. Throws
// moss::failure on a bad shape or a failed launch.
void gemm(const GemmOperands& op, hipStream_t stream, int multiprocessors, GemmPlan plan = {});

// Whether gemm(op, ..., plan) applies op's gated unit in its epilogue (the Wgmma kernel resolved
// for op and plan, or the Portable kernel on its wide tiles with bf16 weights: not with f32
// weights nor on the narrow one-wave tile that Auto picks below kPortableWideMinRows rows);
// otherwise the caller computes the product and the unit apart. The one place that choice is made.
bool gemm_fuses_unit(const GemmOperands& op, int multiprocessors, GemmPlan plan = {});

// What gemm() runs for this problem and request (Auto resolved; for reports).
GemmPlan gemm_resolve(const GemmOperands& op, int multiprocessors, GemmPlan plan = {});
GemmTiles gemm_auto_tiles(int64_t m, int64_t n, int multiprocessors);
// Auto's split for the Mma kernel with these tiles (1 = none).
int gemm_auto_split(int64_t m, int64_t n, int64_t k, GemmTiles tiles, int multiprocessors);

}  // namespace moss
