// Row-wise kernels of the text-encoder op family (see text_rows.h). Elementwise kernels give one
// thread an output element; the two norms give one wave a (row, group) run, the lanes striding
// over its columns (coalesced), a wave_sum for the statistic and a second pass that rereads the
// run (from cache) to write it, which also makes y == x safe. On AMD a workgroup is one wave; on
// NVIDIA a block holds several warps (more resident threads per SM for these memory-bound loops).
#include "kernels/text_rows.h"

#include <type_traits>

#include "kernels/gated_unit.h"
#include "kernels/kernel_path.h"

namespace moss {
namespace {

// Launch shapes: kP (every kernel's template parameter) is the portable path (AMD's; one wave per
// workgroup, kernels/kernel_path.h), else NVIDIA's native one.
template <bool kP>
constexpr int kNormWaves = kP ? 1 : 8;
template <bool kP>
constexpr int kNormThreads = kNormWaves<kP> * kWaveSize;

// The host replay's formulas, with accurate exp (not fast_exp): these are fp32 kernels held to
// 1e-5 of the host.
__device__ inline float silu_exact(float x) { return x * sigmoid_exact(x); }

// log(1 + e) accurate for small e. AMD has no device math library in this build (builtins only),
// so it uses the classic correction log(u) · e / (u − 1) with u = 1 + e, which cancels the
// rounding of u (Goldberg 1991, theorem 4).
// The portable path (kP) computes it so on NVIDIA too.
template <bool kP>
__device__ inline float log1p_accurate(float e) {
#if MOSS_PLATFORM_NVIDIA
  if constexpr (!kP) return log1pf(e);
#endif
  const float u = 1.0f + e;
  return u == 1.0f ? e : log_f(u) * (e / (u - 1.0f));
}
// torch.nn.functional.softplus, beta 1, threshold 20.
template <bool kP>
__device__ inline float softplus(float x) { return x > 20.0f ? x : log1p_accurate<kP>(exp_f(x)); }

template <bool kP, class P>
__global__ __launch_bounds__(kMemoryBoundThreads<kP>) void conv1d_silu_kernel(const float* __restrict__ x, int64_t ldx,
                                                                    const P* __restrict__ w, int64_t ldw,
                                                                    float* __restrict__ y, int64_t ldy, int rows,
                                                                    int channels, int taps) {
  const int64_t idx = int64_t(block_x()) * kMemoryBoundThreads<kP> + thread_x();
  if (idx >= int64_t(rows) * channels) return;
  const int t = int(idx / channels), c = int(idx % channels);
  // Taps in the host's order, j = 0 (oldest) .. taps−1 (the current row); rows before 0 add nothing.
  float acc = 0.0f;
  for (int j = 0; j < taps; ++j) {
    const int src = t - (taps - 1) + j;
    if (src >= 0) acc += to_float(w[int64_t(c) * ldw + j]) * x[int64_t(src) * ldx + c];
  }
  y[int64_t(t) * ldy + c] = silu_exact(acc);
}

template <bool kP, class PA, class PD>
__global__ __launch_bounds__(kMemoryBoundThreads<kP>) void gates_kernel(const float* __restrict__ a, int64_t lda,
                                                              const float* __restrict__ b, int64_t ldb,
                                                              const PA* __restrict__ a_log, const PD* __restrict__ dt_bias,
                                                              float* __restrict__ g, int64_t ldg, float* __restrict__ beta,
                                                              int64_t ldbeta, int rows, int heads) {
  const int64_t idx = int64_t(block_x()) * kMemoryBoundThreads<kP> + thread_x();
  if (idx >= int64_t(rows) * heads) return;
  const int t = int(idx / heads), h = int(idx % heads);
  const float neg_a = -exp_f(to_float(a_log[h]));
  g[int64_t(t) * ldg + h] = neg_a * softplus<kP>(a[int64_t(t) * lda + h] + to_float(dt_bias[h]));
  beta[int64_t(t) * ldbeta + h] = sigmoid_exact(b[int64_t(t) * ldb + h]);
}

// Σ x² over one (row, group) run, every lane gets it.
__device__ inline float run_sum_squares(const float* xr, int group) {
  float ss = 0.0f;
  for (int c = int(lane_id()); c < group; c += kWaveSize) ss += xr[c] * xr[c];
  return wave_sum(ss);
}

template <bool kP>
__global__ __launch_bounds__(kNormThreads<kP>) void l2_norm_kernel(const float* x, int64_t ldx, float* y, int64_t ldy,
                                                                int rows, int groups, int group, float eps) {
  const int64_t item = int64_t(block_x()) * kNormWaves<kP> + thread_x() / kWaveSize;
  if (item >= int64_t(rows) * groups) return;  // wave-uniform
  const int r = int(item / groups), g0 = int(item % groups) * group;
  const float* xr = x + int64_t(r) * ldx + g0;
  float* yr = y + int64_t(r) * ldy + g0;
  const float inv = 1.0f / sqrt_f(run_sum_squares(xr, group) + eps);
  for (int c = int(lane_id()); c < group; c += kWaveSize) yr[c] = xr[c] * inv;
}

template <bool kP, class P>
__global__ __launch_bounds__(kNormThreads<kP>) void gated_rms_norm_kernel(const float* __restrict__ x, int64_t ldx,
                                                                       const float* __restrict__ z, int64_t ldz,
                                                                       const P* __restrict__ w, float* __restrict__ y,
                                                                       int64_t ldy, int rows, int groups, int group,
                                                                       float eps) {
  const int64_t item = int64_t(block_x()) * kNormWaves<kP> + thread_x() / kWaveSize;
  if (item >= int64_t(rows) * groups) return;  // wave-uniform
  const int r = int(item / groups), g0 = int(item % groups) * group;
  const float* xr = x + int64_t(r) * ldx + g0;
  const float* zr = z + int64_t(r) * ldz + g0;
  float* yr = y + int64_t(r) * ldy + g0;
  const float inv = 1.0f / sqrt_f(run_sum_squares(xr, group) / float(group) + eps);
  for (int c = int(lane_id()); c < group; c += kWaveSize) yr[c] = to_float(w[c]) * (xr[c] * inv) * silu_exact(zr[c]);
}

unsigned blocks_for(int64_t items, int per_block) { return unsigned((items + per_block - 1) / per_block); }

}  // namespace

template <class P>
void text_causal_conv1d_silu(const float* x, int64_t ldx, const P* w, int64_t ldw, float* y, int64_t ldy, int rows,
                             int channels, int taps, hipStream_t stream) {
  if (rows <= 0 || channels <= 0) return;
  with_kernel_path([&](auto path) {
    constexpr bool kP = decltype(path)::value;
    auto kernel = conv1d_silu_kernel<kP, P>;
    hipLaunchKernelGGL(kernel, dim3(blocks_for(int64_t(rows) * channels, kMemoryBoundThreads<kP>)), dim3(kMemoryBoundThreads<kP>),
                       0, stream, x, ldx, w, ldw, y, ldy, rows, channels, taps);
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

template <class PA, class PD>
void text_deltanet_gates(const float* a, int64_t lda, const float* b, int64_t ldb, const PA* a_log, const PD* dt_bias,
                         float* g, int64_t ldg, float* beta, int64_t ldbeta, int rows, int heads, hipStream_t stream) {
  if (rows <= 0 || heads <= 0) return;
  with_kernel_path([&](auto path) {
    constexpr bool kP = decltype(path)::value;
    auto kernel = gates_kernel<kP, PA, PD>;
    hipLaunchKernelGGL(kernel, dim3(blocks_for(int64_t(rows) * heads, kMemoryBoundThreads<kP>)), dim3(kMemoryBoundThreads<kP>), 0,
                       stream, a, lda, b, ldb, a_log, dt_bias, g, ldg, beta, ldbeta, rows, heads);
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

void text_l2_norm(const float* x, int64_t ldx, float* y, int64_t ldy, int rows, int cols, int group, float eps,
                  hipStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int groups = cols / group;
  with_kernel_path([&](auto path) {
    constexpr bool kP = decltype(path)::value;
    hipLaunchKernelGGL(l2_norm_kernel<kP>, dim3(blocks_for(int64_t(rows) * groups, kNormWaves<kP>)),
                       dim3(kNormThreads<kP>), 0, stream, x, ldx, y, ldy, rows, groups, group, eps);
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

template <class P>
void text_gated_rms_norm(const float* x, int64_t ldx, const float* z, int64_t ldz, const P* w, float* y, int64_t ldy,
                         int rows, int cols, int group, float eps, hipStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const int groups = cols / group;
  with_kernel_path([&](auto path) {
    constexpr bool kP = decltype(path)::value;
    auto kernel = gated_rms_norm_kernel<kP, P>;
    hipLaunchKernelGGL(kernel, dim3(blocks_for(int64_t(rows) * groups, kNormWaves<kP>)), dim3(kNormThreads<kP>), 0,
                       stream, x, ldx, z, ldz, w, y, ldy, rows, groups, group, eps);
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

// The parameter dtypes checkpoints use: f32 and bf16.
#define MOSS_TEXT_ROWS_INSTANTIATE(P)                                                                               \
  template void text_causal_conv1d_silu<P>(const float*, int64_t, const P*, int64_t, float*, int64_t, int, int, int, \
                                           hipStream_t);                                                            \
  template void text_gated_rms_norm<P>(const float*, int64_t, const float*, int64_t, const P*, float*, int64_t, int, \
                                       int, int, float, hipStream_t);
#define MOSS_TEXT_GATES_INSTANTIATE(PA, PD)                                                                         \
  template void text_deltanet_gates<PA, PD>(const float*, int64_t, const float*, int64_t, const PA*, const PD*,      \
                                            float*, int64_t, float*, int64_t, int, int, hipStream_t);
MOSS_TEXT_ROWS_INSTANTIATE(float)
MOSS_TEXT_ROWS_INSTANTIATE(bf16)
MOSS_TEXT_GATES_INSTANTIATE(float, float)
MOSS_TEXT_GATES_INSTANTIATE(float, bf16)
MOSS_TEXT_GATES_INSTANTIATE(bf16, float)
MOSS_TEXT_GATES_INSTANTIATE(bf16, bf16)
#undef MOSS_TEXT_ROWS_INSTANTIATE
#undef MOSS_TEXT_GATES_INSTANTIATE

}  // namespace moss
