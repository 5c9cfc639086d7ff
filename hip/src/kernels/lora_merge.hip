// The LoRA merge (kernels/lora_merge.h; the arithmetic is ops/lora_ops.h's). One-wave workgroups:
// lane t owns column q = 32·block_y + t of an 8-row tile, so a low-rank product reads down's row
// k once per 8 outputs (coalesced across the lanes) and up's 8 values of k from LDS (a broadcast).
// W is read and written once, whatever the number of deltas.
#include "kernels/lora_merge.h"

namespace moss {
namespace {

constexpr int kRows = 8;    // rows of a tile (a lane owns one column of them)
constexpr int kChunk = 32;  // k values of a product's rows staged in LDS at a time (one per lane)

// f32 -> bf16 bits, round to nearest even, NaN kept quiet: tensor/tensor.h's f32_to_bf16.
__device__ inline uint16_t bf16_bits_rne(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// Rows p0 .. p0 + n - 1 (n <= kRows) of column q of a factor into v: the stored values, or the
// sums s = s + a[p, k]·b[k, q] over k ascending from 0.0f, each product and sum rounded apart.
// Rows past n repeat row n - 1 (in bounds; their values are never stored). A product's rows of
// `a` go through LDS a chunk of kChunk k at a time (each lane loads one k of every row,
// coalesced; then every lane reads the chunk's 8 values of a k at once), so the k loop issues one
// vector load (b's row k) and the 8 products and sums. Every lane of the wave calls this alike
// (its barriers).
__device__ inline void factor_rows(const LoraFactorArgs& f, int64_t p0, int n, int64_t q, int lane,
                                   float (&up)[kChunk][kRows], float (&v)[kRows]) {
  const int64_t width = f.b ? f.rank : f.cols;
  const float* rows[kRows];
#pragma unroll
  for (int j = 0; j < kRows; ++j) rows[j] = f.a + (p0 + (j < n ? j : n - 1)) * width;
  if (!f.b) {
#pragma unroll
    for (int j = 0; j < kRows; ++j) v[j] = rows[j][q];
    return;
  }
#pragma unroll
  for (int j = 0; j < kRows; ++j) v[j] = 0.0f;
  for (int64_t k0 = 0; k0 < f.rank; k0 += kChunk) {
    const int kn = f.rank - k0 < kChunk ? int(f.rank - k0) : kChunk;
    sync_workgroup();  // the last chunk's reads are done
    if (lane < kn) {
#pragma unroll
      for (int j = 0; j < kRows; ++j) up[lane][j] = rows[j][k0 + lane];
    }
    sync_workgroup();
    const float* bk = f.b + k0 * f.cols + q;
    for (int kk = 0; kk < kn; ++kk, bk += f.cols) {
      const float b = *bk;
#pragma unroll
      for (int j = 0; j < kRows; ++j) v[j] = add_rn(v[j], mul_rn(up[kk][j], b));
    }
  }
}

// One value of a factor (the LoKr's Kronecker product reads both at other indices per row).
__device__ inline float factor_value(const LoraFactorArgs& f, int64_t p, int64_t q) {
  if (!f.b) return f.a[p * f.cols + q];
  float s = 0.0f;
  for (int64_t k = 0; k < f.rank; ++k) s = add_rn(s, mul_rn(f.a[p * f.rank + k], f.b[k * f.cols + q]));
  return s;
}

__global__ __launch_bounds__(kWorkgroupSize) void lora_merge_kernel(LoraMergeArgs a) {
  alignas(16) __shared__ float up[kChunk][kRows];
  const int lane = int(thread_x());
  // Lanes past the last column compute on the last column (the barriers want every lane) and
  // store nothing.
  const int64_t column = int64_t(block_y()) * kWaveSize + lane;
  const bool live = column < a.cols;
  const int64_t q = live ? column : a.cols - 1;
  const int64_t o0 = int64_t(block_x()) * kRows;
  const int n = a.rows - o0 < kRows ? int(a.rows - o0) : kRows;
  float x[kRows];
#pragma unroll
  for (int j = 0; j < kRows; ++j) {
    const int64_t at = (o0 + (j < n ? j : n - 1)) * a.cols + q;
    x[j] = a.w_bf16 ? to_float(static_cast<const bf16*>(a.w)[at]) : static_cast<const float*>(a.w)[at];
  }
  for (int32_t t = 0; t < a.count; ++t) {
    const LoraDeltaArgs& d = a.deltas[t];
    const int64_t r0 = d.row0 + o0;
    float v[kRows];
    if (d.form == kLoraKronecker) {
      const int64_t c = d.f2.rows, dd = d.f2.cols;
#pragma unroll
      for (int j = 0; j < kRows; ++j) {
        const int64_t r = r0 + (j < n ? j : n - 1);
        v[j] = mul_rn(factor_value(d.f1, r / c, q / dd), factor_value(d.f2, r % c, q % dd));
      }
    } else {
      factor_rows(d.f1, r0, n, q, lane, up, v);
      if (d.form == kLoraHadamard) {
        float v2[kRows];
        factor_rows(d.f2, r0, n, q, lane, up, v2);
#pragma unroll
        for (int j = 0; j < kRows; ++j) v[j] = mul_rn(v[j], v2[j]);
      }
    }
#pragma unroll
    for (int j = 0; j < kRows; ++j) x[j] = add_rn(x[j], mul_rn(d.coef, v[j]));
  }
  if (!live) return;
#pragma unroll
  for (int j = 0; j < kRows; ++j) {
    if (j >= n) break;
    const int64_t at = (o0 + j) * a.cols + q;
    if (a.w_bf16) static_cast<bf16*>(a.w)[at] = bf16_from_bits(bf16_bits_rne(x[j]));
    else static_cast<float*>(a.w)[at] = x[j];
  }
}

}  // namespace

void lora_merge(const LoraMergeArgs& a, hipStream_t stream) {
  if (a.rows == 0 || a.cols == 0) return;
  const dim3 grid(unsigned((a.rows + kRows - 1) / kRows), unsigned((a.cols + kWaveSize - 1) / kWaveSize));
  hipLaunchKernelGGL(lora_merge_kernel, grid, dim3(kWorkgroupSize), 0, stream, a);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
