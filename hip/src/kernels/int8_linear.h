// The INT8 ConvRot linear's two kernels (CoreOps::linear_int8, docs/int8_convrot.md section 4 and
// "The GPU kernels"): the activation pass (int8_rotate.hip) and the int8 GEMM (int8_gemm.hip).
// Both replay the host op (ops/host/core_ops_host.cpp, tensor/int8_convrot.h) to the bit: the
// rotation and the quantization are fp32 elementwise operations in the host's order with no fma
// contraction (runtime/portability.h's mul_rn), the product is an exact int32 sum on the matrix
// units (kernels/matrix_leaf.h, mma_i8), and the epilogue is one fixed fp32 formula.
#pragma once

#include <cstdint>

#include "kernels/op_kinds.h"
#include "kernels/rows.h"
#include "runtime/portability.h"

namespace moss {

// The largest rotation group the activation pass holds in LDS (4 KiB of fp32: more waves per SIMD than a larger bound); the published
// files use 256, the tiny models 64.
constexpr int64_t kInt8MaxGroup = 1024;

// Every row r of x (f32 or bf16, any row stride) rotated by convrot::rotate_groups over groups of
// `group` columns and quantized by convrot::quantize_row: q [x.rows, x.cols] int8 (row stride
// x.cols) and scale [x.rows] f32 (NaN and a row of zeros for a row with a non-finite value).
// group: a power of 4, at most kInt8MaxGroup, dividing x.cols.
void int8_rotate_quantize(const RowsMatrix& x, int64_t group, int8_t* q, float* scale, hipStream_t stream);

struct Int8GemmArgs {
  const int8_t* qx = nullptr;  // [m, k], row stride k
  const float* sx = nullptr;   // [m]
  const int8_t* qw = nullptr;  // [n, k], row stride k (gated: [2n, k])
  const float* sw = nullptr;   // [n] (gated: [2n])
  RowsVector bias;             // [n] f32 or bf16, or none (gated: [2n])
  RowsMatrix y;                // [m, n] f32 or bf16, any row stride
  int64_t m = 0, n = 0, k = 0; // k a multiple of 4; n: y's columns
  // The gated unit in the epilogue (CoreOps::linear_int8_gated_unit): qw holds 2n rows, the hidden
  // rows 0..n-1 and the gate rows n..2n-1, and y[r][c] = gated_unit_value<unit>(h, g) of the two
  // products h (weight row c) and g (weight row n + c), each by int8_output_value with its own
  // scale and bias: the fp32 values linear_int8 would write, given to the unit in fp32.
  bool gated = false;
  GatedUnit unit = GatedUnit::Situ;
};

// y[r][o] = float(Σ_i qx[r][i]·qw[o][i]) · (sx[r]·sw[o]) (+ bias[o]), the sum in int32 (exact for
// k <= 132104), then the fp32 operations in that order (and the gated unit when asked), rounded
// once to y's dtype. The matrix leaf's kernels (every platform and kernel path); with the gated
// unit any n (the leaf tiles of a wave pair hidden and gate rows: kernels/gemm_unit_rows.h).
void int8_gemm(const Int8GemmArgs& a, hipStream_t stream);

// The same product and the same bits on NVIDIA Hopper's wgmma (s8 operands through the bf16
// GEMM's pipeline, kernels/gemm_wgmma.h with kernels/gemm_wgmma_int8.h; instantiated in
// kernels/gemm.hip). It fits on NVIDIA's native path (not MOSSINFER_KERNELS=portable) when k is a
// multiple of 16, qx and qw are 16-byte aligned (the copy engine's rule for rows and bases) and K
// spans at least 3 steps of 128 (k > 256), with no gated unit; anything else, and AMD, takes
// int8_gemm. (The unit in this kernel's epilogue was measured and not kept: on an H100 it made
// 4160x3072x16384 0.7555 ms where the plain kernel and a pass take 0.5851, the accurate unit's
// instructions running while the tensor cores idle; CoreOps::int8_unit_in_gemm_epilogue.)
bool int8_gemm_wgmma_fits(const Int8GemmArgs& a);
void int8_gemm_wgmma(const Int8GemmArgs& a, hipStream_t stream, int multiprocessors);

// The epilogue of one output element, shared by every int8 GEMM kernel, in the host op's order
// (ops/host/core_ops_host.cpp): float(acc), the two scales multiplied first, then their product,
// then + bias only where there is one (adding 0 would turn a -0 into +0), each rounded on its own
// (mul_rn: never fused into an fma). The caller rounds once to y's dtype.
__device__ inline float int8_output_value(int32_t acc, float sx, float sw, bool has_bias, float bias) {
  const float y = mul_rn(float(acc), mul_rn(sx, sw));
  return has_bias ? y + bias : y;
}

}  // namespace moss
