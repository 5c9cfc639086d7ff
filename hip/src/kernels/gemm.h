// The tiled GEMM on the matrix leaf: y[M,N] = x[M,K] · w[N,K]ᵀ (+ bias[N]), bf16 operands
// (f32 operands are rounded to bf16, nearest even, as the fragments are read), fp32 accumulation.
// This is CoreOps::linear on the HIP backend (ops/hip/core_ops_hip.hip).
//
// Design (kernels/gemm.hip has the details):
//   - a workgroup computes a BM x BN tile of y, walking K in steps of 32 through a ring of
//     shared-memory stages; operands are staged as they are stored (f32 or bf16, 16-byte
//     chunks, rows padded by 8 elements so fragment reads are free of bank conflicts);
//   - each wave owns a (BM/warps_m) x (BN/warps_n) sub-tile, i.e. TM x TN leaf tiles, and reads
//     its fragments from shared memory through the leaf's lane maps (kernels/matrix_layout.h);
//   - NVIDIA: 8 or 4 warps per block, cp.async copies 2-3 k-steps ahead; AMD: one wave32 per
//     workgroup (product contract), the next k-step is held in registers while the current
//     one is multiplied.
#pragma once

#include <cstdint>

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
  int64_t m = 0, n = 0, k = 0;
};

constexpr int64_t kGemmKMultiple = 8;

// 16-byte aligned base and a row stride of whole 16-byte units.
inline bool gemm_packed(const void* p, int64_t ld, GemmType t) {
  const uint64_t elem = t == GemmType::F32 ? 4 : 2;
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && (uint64_t(ld) * elem) % 16 == 0;
}

// Tile shape. Auto picks by problem size (Large when it fills the device, else Small); the
// others exist so the kernel check can time each shape. AMD builds have one shape (a single
// wave per workgroup) and ignore the request.
enum class GemmTiles { Auto, Large, Medium, Small };
const char* gemm_tiles_name(GemmTiles t);  // "auto", "128x256", "128x128", "64x64" (AMD: its own)

// Launches on `stream`; `multiprocessors` (SMs / CUs) steers the Auto choice. Throws
// moss::failure on a bad shape or a failed launch.
void gemm(const GemmOperands& op, hipStream_t stream, int multiprocessors, GemmTiles tiles = GemmTiles::Auto);

// The shape Auto would choose for this problem (for reports).
GemmTiles gemm_auto_tiles(int64_t m, int64_t n, int multiprocessors);

}  // namespace moss
