// Row-wise kernels of the core op family: RMS norm (whole rows or per-head groups), modulation,
// gated residual add, gated units, SiLU, split-half RoPE, and row gathers (embedding lookups
// and copies with f32 <-> bf16 conversion). Each computes what its host replay in
// ops/host/core_ops_host.cpp computes, in fp32, element by element in the same order (only the
// norm's sum of squares is reduced in a different order).
//
// Operands are device matrices (rows x cols, unit column stride, any row stride), f32 or bf16
// each on its own; per-column parameter vectors (norm weights, shift, scale, gate) f32 or bf16.
// Memory-bound: each thread moves 4 consecutive columns (one 16-byte f32 or 8-byte bf16 access
// when every operand's rows are aligned for it, element by element otherwise).
#pragma once

#include <cstdint>

#include "kernels/op_kinds.h"
#include "runtime/portability.h"

namespace moss {

struct RowsMatrix {
  void* data = nullptr;
  bool bf16 = false;
  int64_t rows = 0, cols = 0, ld = 0;  // ld: row stride in elements
};

struct RowsVector {
  const void* data = nullptr;  // null: absent
  bool bf16 = false;
};

// y = rms_norm(x) over runs of `group` columns, then ·w (Mul), ·(1 + w) (OnePlus) or nothing;
// w has `group` elements. y may be x.
void rows_rms_norm(const RowsMatrix& x, RowsVector w, NormWeight mode, float eps, int64_t group, const RowsMatrix& y,
                   hipStream_t stream);

// y = rms_norm(x)·w over whole rows, then y·(1 + scale) + shift per column, in one pass
// (CoreOps::norm_modulate; w, shift and scale have x.cols elements). y may be x (same dtype);
// a bf16 y is the GEMM's input, rounded once.
void rows_norm_modulate(const RowsMatrix& x, RowsVector w, float eps, RowsVector shift, RowsVector scale,
                        const RowsMatrix& y, hipStream_t stream);
// With updates (CoreOps::add_norm_modulate): the norm of s = x + d[0]·gate[0] (+ d[1]·gate[1]),
// added per column in that order as rows_add does; with `store`, s is written back into x (f32
// or bf16), otherwise x is only read. y must not be x.
struct RowsUpdates {
  RowsMatrix d[2];
  RowsVector gate[2];
  int count = 0;  // 0 .. 2
  bool store = true;
};
void rows_add_norm_modulate(const RowsMatrix& x, const RowsUpdates& updates, RowsVector w, float eps,
                            RowsVector shift, RowsVector scale, const RowsMatrix& y, hipStream_t stream);
// The same pass quantizing its fp32 rows for an INT8 layer (CoreOps::add_norm_modulate_quantized):
// the register kernel keeps each row's final fp32 values, puts them into LDS, and rotates and
// quantizes them (the activation pass's arithmetic: kernels/int8_row_regs.h, each wave reading
// its segments back into registers; kernels/int8_row_lds.h for group 1024) into q
// [x.rows, x.cols] (row stride x.cols) and q_scale [x.rows]; y is written as well where y.data is
// set. group: a power of 4, 4 to 1024, dividing x.cols. Returns false, launching nothing, where
// the register kernel does not take the shape or the alignment (rows wider than its LDS row:
// 3072 on the portable path, 8192 on NVIDIA's native one); the caller then composes the passes.
bool rows_add_norm_modulate_quantized(const RowsMatrix& x, const RowsUpdates& updates, RowsVector w, float eps,
                                      RowsVector shift, RowsVector scale, const RowsMatrix& y, int64_t group,
                                      int8_t* q, float* q_scale, hipStream_t stream);

// Per head of head_dim columns: rms_norm·w (w of head_dim elements), then the split-half
// rotation of the whole head (CoreOps::norm_rope): one wave per (row, head), the head read
// twice (statistics, then rotation) and written once. y may be x (same dtype). sin and cos:
// f32 [x.rows, >= head_dim] with row strides ld_sin and ld_cos.
void rows_norm_rope(const RowsMatrix& x, RowsVector w, float eps, int64_t head_dim, const float* sin,
                    int64_t ld_sin, const float* cos, int64_t ld_cos, const RowsMatrix& y, hipStream_t stream);

// x += d, or x += d·gate per column when gate.data is set.
void rows_add(const RowsMatrix& x, const RowsMatrix& d, RowsVector gate, hipStream_t stream);

// out = unit(a, b) (CoreOps::gated_unit); out may alias neither input.
void rows_gated_unit(GatedUnit kind, const RowsMatrix& a, const RowsMatrix& b, const RowsMatrix& out,
                     hipStream_t stream);

// The unit's fp32 values rotated and quantized in the same pass (CoreOps::gated_unit_quantized):
// the values rows_gated_unit computes, into q [a.rows, a.cols] (row stride a.cols) and q_scale
// [a.rows] by the activation pass's arithmetic (kernels/int8_row_regs.h from the values in
// registers; kernels/int8_row_lds.h for group 1024 or a width not a multiple of 16), and into out as well
// where out.data is set. group: a power of 4, 4 to 1024, dividing a.cols. Returns false,
// launching nothing, for rows wider than 8192 (the row's LDS); the caller then composes the passes.
bool rows_gated_unit_quantized(GatedUnit kind, const RowsMatrix& a, const RowsMatrix& b, const RowsMatrix& out,
                               int64_t group, int8_t* q, float* q_scale, hipStream_t stream);

// y = x·σ(x); y may be x.
void rows_silu(const RowsMatrix& x, const RowsMatrix& y, hipStream_t stream);

// In-place split-half rotation of the first rot_dim columns of each head of head_dim columns.
// sin and cos: f32 [x.rows, >= rot_dim] with row strides ld_sin and ld_cos.
void rows_rope(const RowsMatrix& x, const float* sin, int64_t ld_sin, const float* cos, int64_t ld_cos,
               int64_t head_dim, int64_t rot_dim, hipStream_t stream);

// dst row i = src row ids[i] (ids: device int32, dst.rows of them, each < src.rows; null: row i),
// converting between f32 and bf16 (round to nearest even). dst must not overlap src.
void rows_gather(const RowsMatrix& src, const int32_t* ids, const RowsMatrix& dst, hipStream_t stream);

}  // namespace moss
