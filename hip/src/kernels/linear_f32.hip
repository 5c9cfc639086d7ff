#include "kernels/linear_f32.h"

namespace moss {
namespace {

constexpr int kTile = 32;  // output tile kTile x kTile, K staged kTile at a time

// One wave per 32x32 output tile: lane t owns output column n0 + t for all 32 rows, so its 32
// accumulators stay in registers; x's tile is read by all lanes at once (broadcast) and w's
// rows are padded by one to keep the lanes on distinct banks. Each output is one fp32 sum over
// k = 0..K-1 in order, like the host replay.
__global__ __launch_bounds__(kWorkgroupSize) void linear_f32_kernel(LinearF32Args a) {
  __shared__ float xs[kTile][kTile];
  __shared__ float ws[kTile][kTile + 1];
  const int lane = int(thread_x());
  const int64_t m0 = int64_t(block_y()) * kTile, n0 = int64_t(block_x()) * kTile;
  float acc[kTile];
  for (int r = 0; r < kTile; ++r) acc[r] = 0.0f;
  for (int64_t k0 = 0; k0 < a.k; k0 += kTile) {
    for (int r = 0; r < kTile; ++r) {
      const int64_t row = m0 + r, col = k0 + lane;
      xs[r][lane] = row < a.m && col < a.k ? a.x[row * a.ldx + col] : 0.0f;
      const int64_t wrow = n0 + r;
      ws[r][lane] = wrow < a.n && col < a.k ? a.w[wrow * a.ldw + col] : 0.0f;
    }
    sync_workgroup();
    const int kn = int(a.k - k0 < kTile ? a.k - k0 : kTile);
    for (int kk = 0; kk < kn; ++kk) {
      const float wv = ws[lane][kk];
      for (int r = 0; r < kTile; ++r) acc[r] = __builtin_fmaf(xs[r][kk], wv, acc[r]);
    }
    sync_workgroup();
  }
  const int64_t col = n0 + lane;
  if (col >= a.n) return;
  const float b = a.bias ? a.bias[col] : 0.0f;
  for (int r = 0; r < kTile; ++r) {
    const int64_t row = m0 + r;
    if (row < a.m) a.y[row * a.ldy + col] = a.bias ? acc[r] + b : acc[r];
  }
}

}  // namespace

void linear_f32(const LinearF32Args& a, hipStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  const dim3 grid(unsigned((a.n + kTile - 1) / kTile), unsigned((a.m + kTile - 1) / kTile));
  hipLaunchKernelGGL(linear_f32_kernel, grid, dim3(kWorkgroupSize), 0, stream, a);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
