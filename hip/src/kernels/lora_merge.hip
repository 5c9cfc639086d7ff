// The LoRA merge (kernels/lora_merge.h; the arithmetic is ops/lora_ops.h's). One-wave workgroups:
// lane t owns column q = 32·block_y + t of an 8-row tile, so a low-rank product reads down's row
// k once per 8 outputs (coalesced across the lanes) and up's values as one broadcast per wave.
// Memory-bound at low rank: W is read and written once, whatever the number of deltas.
#include "kernels/lora_merge.h"

namespace moss {
namespace {

constexpr int kRows = 8;

// f32 -> bf16 bits, round to nearest even, NaN kept quiet: tensor/tensor.h's f32_to_bf16.
__device__ inline uint16_t bf16_bits_rne(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// Rows p0 .. p0 + n - 1 (n <= kRows) of column q of a factor into v: the stored values, or the
// sums s = s + a[p, k]·b[k, q] over k ascending from 0.0f, each product and sum rounded apart.
// Rows past n repeat row n - 1 (in bounds; their values are never stored).
__device__ inline void factor_rows(const LoraFactorArgs& f, int64_t p0, int n, int64_t q, float (&v)[kRows]) {
  const float* rows[kRows];
  const int64_t width = f.b ? f.rank : f.cols;
#pragma unroll
  for (int j = 0; j < kRows; ++j) rows[j] = f.a + (p0 + (j < n ? j : n - 1)) * width;
  if (!f.b) {
#pragma unroll
    for (int j = 0; j < kRows; ++j) v[j] = rows[j][q];
    return;
  }
#pragma unroll
  for (int j = 0; j < kRows; ++j) v[j] = 0.0f;
  for (int64_t k = 0; k < f.rank; ++k) {
    const float bk = f.b[k * f.cols + q];
#pragma unroll
    for (int j = 0; j < kRows; ++j) v[j] = add_rn(v[j], mul_rn(rows[j][k], bk));
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
  const int64_t q = int64_t(block_y()) * kWaveSize + thread_x();
  const int64_t o0 = int64_t(block_x()) * kRows;
  if (q >= a.cols) return;  // no barrier follows
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
      factor_rows(d.f1, r0, n, q, v);
      if (d.form == kLoraHadamard) {
        float v2[kRows];
        factor_rows(d.f2, r0, n, q, v2);
#pragma unroll
        for (int j = 0; j < kRows; ++j) v[j] = mul_rn(v[j], v2[j]);
      }
    }
#pragma unroll
    for (int j = 0; j < kRows; ++j) x[j] = add_rn(x[j], mul_rn(d.coef, v[j]));
  }
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
