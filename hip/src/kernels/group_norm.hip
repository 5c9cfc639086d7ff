// Group-norm statistics in two passes (kernels/group_norm.h). A group of NCHW channels is one
// contiguous span (up to 12.6 M values at 2048x2048), split into slices, one block each:
//   1. partial_sum:   fp32 sums per thread (four interleaved accumulators), combined per block
//                     in double -> sum[g][slice]
//   2. partial_sqdev: the group mean from the partial sums (double), then fp32 sums of
//                     (x − mean)² -> sq[g][slice]
//   3. finalize:      mean and variance in double from the partials -> stats[g]
// Each thread adds at most a few hundred values in fp32, so the partial sums keep fp32 accuracy;
// everything above a thread's sum is double. Memory bound: two reads of the map.
#include "kernels/group_norm.h"

#include "kernels/kernel_path.h"

namespace moss {
namespace {

// Threads per block: T, a template parameter of every kernel (kMemoryBoundThreads of the path).
constexpr int kMaxSlices = 512;
constexpr int64_t kValuesPerThread = 32;  // a slice holds at least this many values per thread

// Sum of one value per thread, every thread gets the result; `s` holds kThreads doubles.
template <int kThreads>
__device__ inline double block_sum(double v, double* s) {
  const int t = int(thread_x());
  s[t] = v;
  sync_workgroup();
#pragma unroll
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    sync_workgroup();
  }
  const double r = s[0];
  sync_workgroup();  // s may be reused right after
  return r;
}

// Σ over the slice [begin, end) of f(x[i]), fp32 per thread, four accumulators for ILP.
template <int kThreads, class F>
__device__ inline float thread_sum(const float* __restrict__ x, int64_t begin, int64_t end, F f) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  int64_t i = begin + int64_t(thread_x());
  for (; i + 3 * kThreads < end; i += 4 * kThreads) {
    s0 += f(x[i]);
    s1 += f(x[i + kThreads]);
    s2 += f(x[i + 2 * kThreads]);
    s3 += f(x[i + 3 * kThreads]);
  }
  for (; i < end; i += kThreads) s0 += f(x[i]);
  return (s0 + s1) + (s2 + s3);
}

// The group's mean from its slices' partial sums (every thread gets it).
template <int kThreads>
__device__ inline double group_mean(const double* __restrict__ sums, int slices, double inv_span, double* s) {
  double v = 0.0;
  for (int i = int(thread_x()); i < slices; i += kThreads) v += sums[i];
  return block_sum<kThreads>(v, s) * inv_span;
}

template <int kThreads>
__global__ __launch_bounds__(kThreads) void partial_sum_kernel(const float* __restrict__ x, int64_t span,
                                                               int64_t per_slice, int slices,
                                                               double* __restrict__ sums) {
  __shared__ double s[kThreads];
  const int slice = int(block_x()), g = int(block_y());
  const float* xg = x + int64_t(g) * span;
  const int64_t begin = int64_t(slice) * per_slice, end = begin + per_slice < span ? begin + per_slice : span;
  const double total = block_sum<kThreads>(double(thread_sum<kThreads>(xg, begin, end, [](float v) { return v; })), s);
  if (thread_x() == 0) sums[g * slices + slice] = total;
}

template <int kThreads>
__global__ __launch_bounds__(kThreads) void partial_sqdev_kernel(const float* __restrict__ x, int64_t span,
                                                                 int64_t per_slice, int slices, double inv_span,
                                                                 const double* __restrict__ sums,
                                                                 double* __restrict__ sqdevs) {
  __shared__ double s[kThreads];
  const int slice = int(block_x()), g = int(block_y());
  const float mean = float(group_mean<kThreads>(sums + g * slices, slices, inv_span, s));
  const float* xg = x + int64_t(g) * span;
  const int64_t begin = int64_t(slice) * per_slice, end = begin + per_slice < span ? begin + per_slice : span;
  const float part = thread_sum<kThreads>(xg, begin, end, [mean](float v) {
    const float d = v - mean;
    return d * d;
  });
  const double total = block_sum<kThreads>(double(part), s);
  if (thread_x() == 0) sqdevs[g * slices + slice] = total;
}

template <int kThreads>
__global__ __launch_bounds__(kThreads) void finalize_kernel(const double* __restrict__ sums,
                                                            const double* __restrict__ sqdevs, int slices,
                                                            double inv_span, float eps, float* __restrict__ stats) {
  __shared__ double s[kThreads];
  const int g = int(block_x());
  const double mean = group_mean<kThreads>(sums + g * slices, slices, inv_span, s);
  const double var = group_mean<kThreads>(sqdevs + g * slices, slices, inv_span, s);
  if (thread_x() == 0) {
    stats[2 * g] = float(mean);
    stats[2 * g + 1] = 1.0f / sqrt_f(float(var) + eps);
  }
}

template <int kThreads>
__global__ __launch_bounds__(kThreads) void channels_kernel(const float* __restrict__ stats,
                                                            const float* __restrict__ gamma,
                                                            const float* __restrict__ beta, int channels,
                                                            int per_group, ChannelNorm* __restrict__ out) {
  const int c = int(block_x()) * kThreads + int(thread_x());
  if (c >= channels) return;
  const int g = c / per_group;
  ChannelNorm n;
  n.mean = stats[2 * g];
  n.scale = stats[2 * g + 1] * gamma[c];
  n.shift = beta[c];
  n.unused = 0.0f;
  out[c] = n;
}

struct Slicing {
  int slices;
  int64_t per_slice;
};

Slicing slicing(int64_t span, int threads) {
  const int64_t min_per_slice = threads * kValuesPerThread;
  int64_t slices = (span + min_per_slice - 1) / min_per_slice;
  if (slices > kMaxSlices) slices = kMaxSlices;
  if (slices < 1) slices = 1;
  return {int(slices), (span + slices - 1) / slices};
}

// The threads per block of the configuration that runs.
int threads_now() {
  return kernel_path_value([](auto portable) { return kMemoryBoundThreads<decltype(portable)::value>; });
}

}  // namespace

size_t group_norm_stats_scratch_bytes(int64_t span, int groups) {
  return 2 * size_t(groups) * size_t(slicing(span, threads_now()).slices) * sizeof(double);
}

void group_norm_stats(const float* x, int64_t span, int groups, float eps, float* stats, void* scratch,
                      hipStream_t stream) {
  if (span <= 0 || groups <= 0) throw failure("group_norm_stats: empty group");
  with_kernel_path([&](auto portable) {
    constexpr int T = kMemoryBoundThreads<decltype(portable)::value>;
    const Slicing sl = slicing(span, T);
    double* sums = static_cast<double*>(scratch);
    double* sqdevs = sums + int64_t(groups) * sl.slices;
    const double inv_span = 1.0 / double(span);
    const dim3 grid(unsigned(sl.slices), unsigned(groups));
    hipLaunchKernelGGL(partial_sum_kernel<T>, grid, dim3(T), 0, stream, x, span, sl.per_slice, sl.slices, sums);
    MOSS_HIP_CHECK(hipGetLastError());
    hipLaunchKernelGGL(partial_sqdev_kernel<T>, grid, dim3(T), 0, stream, x, span, sl.per_slice, sl.slices, inv_span,
                       static_cast<const double*>(sums), sqdevs);
    MOSS_HIP_CHECK(hipGetLastError());
    hipLaunchKernelGGL(finalize_kernel<T>, dim3(unsigned(groups)), dim3(T), 0, stream,
                       static_cast<const double*>(sums), static_cast<const double*>(sqdevs), sl.slices, inv_span, eps,
                       stats);
    MOSS_HIP_CHECK(hipGetLastError());
  });
}

void group_norm_channels(const float* stats, const float* gamma, const float* beta, int channels, int groups,
                         ChannelNorm* out, hipStream_t stream) {
  if (channels <= 0 || groups <= 0 || channels % groups != 0)
    throw failure("group_norm_channels: " + std::to_string(groups) + " groups do not divide " +
                  std::to_string(channels) + " channels");
  with_kernel_path([&](auto portable) {
    constexpr int T = kMemoryBoundThreads<decltype(portable)::value>;
    hipLaunchKernelGGL(channels_kernel<T>, dim3(unsigned((channels + T - 1) / T)), dim3(T), 0, stream, stats, gamma,
                       beta, channels, channels / groups, out);
    MOSS_HIP_CHECK(hipGetLastError());
  });
}

}  // namespace moss
