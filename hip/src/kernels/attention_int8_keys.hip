// CoreOps::quantize_keys on the device (interface: kernels/attention_int8_keys.h), two kernels:
//   means: one thread per (head, channel) walking the keys in order, as the host's loop does, so
//     the fp32 sum is the host's bit for bit (no tree, no atomics);
//   blocks: one workgroup of 8 waves per (32-key block, head): each thread takes elements of the
//     block's 32 x head_dim values, v = fl(k - mean), the block's absmax and non-finite flag
//     reduced over the workgroup (int8_row::row_scale, convrot::quantize_row's scale), then every
//     value quantized by int8_row::quantize_value (an IEEE division, half to even).
// No matrix instruction here: the attention's int8 scores are in kernels/attention.hip.
#include "kernels/attention_int8_keys.h"

#include <string>

#include "kernels/int8_row_lds.h"

namespace moss {
namespace {

// 64 threads a workgroup: the DiT's 3072 channels make 48 workgroups, spread over the CUs, each
// walking its keys with 8 loads in flight (the sum's order stays the keys').
constexpr int kMeanThreads = 64;
constexpr int kBlockThreads = 256;
constexpr int kBlockWaves = kBlockThreads / kWaveSize;

template <class T>
__global__ __launch_bounds__(kMeanThreads) void key_means_kernel(const T* __restrict__ k, int64_t ldk, int tk,
                                                                 int channels, float* __restrict__ means) {
  const int c = int(block_x()) * kMeanThreads + int(thread_x());
  if (c >= channels) return;
  float sum = 0.0f;
#pragma unroll 8
  for (int j = 0; j < tk; ++j) sum += to_float(k[int64_t(j) * ldk + c]);
  means[c] = sum / float(tk);  // IEEE division, as the host's
}

template <class T>
__global__ __launch_bounds__(kBlockThreads) void key_blocks_kernel(const T* __restrict__ k, int64_t ldk, int tk,
                                                                   int head_dim, int keys_pad,
                                                                   const float* __restrict__ means,
                                                                   int8_t* __restrict__ q, float* __restrict__ scale) {
  __shared__ float partial[2 * kBlockWaves];
  const int tid = int(thread_x()), block = int(block_x()), head = int(block_y());
  const int key0 = block * kAttentionInt8KeyBlock, values = kAttentionInt8KeyBlock * head_dim;
  const int64_t col0 = int64_t(head) * head_dim;
  // The block's values past tk are zeros: they leave the absmax as it is and quantize to 0.
  auto value = [&](int i) {
    const int key = key0 + i / head_dim, c = i % head_dim;
    return key < tk ? to_float(k[int64_t(key) * ldk + col0 + c]) - means[col0 + c] : 0.0f;
  };
  float amax = 0.0f, bad = 0.0f;
  for (int i = tid; i < values; i += kBlockThreads) {
    const float v = value(i);
    bad = finite_f(v) ? bad : 1.0f;
    amax = max_f(amax, abs_f(v));
  }
  const float s = int8_row::row_scale<kBlockWaves>(amax, bad, partial);
  int8_t* const qb = q + (int64_t(head) * keys_pad + key0) * head_dim;
  const bool finite = s == s;  // NaN: a block with a non-finite value, its q all zeros
  for (int i = tid; i < values; i += kBlockThreads) qb[i] = finite ? int8_row::quantize_value(value(i), s) : int8_t(0);
  if (tid == 0) scale[int64_t(head) * (keys_pad / kAttentionInt8KeyBlock) + block] = s;
}

}  // namespace

void attention_quantize_keys(const void* k, int64_t ldk, bool k_bf16, int tk, int heads, int head_dim,
                             int keys_pad, float* means, int8_t* q, float* scale, hipStream_t stream) {
  if (tk <= 0 || heads <= 0 || heads > 65535 || head_dim <= 0 || keys_pad < tk ||
      keys_pad % kAttentionInt8KeyBlock != 0 || ldk < int64_t(heads) * head_dim)
    throw failure("attention_quantize_keys: bad shape (tk " + std::to_string(tk) + ", heads " +
                  std::to_string(heads) + ", head dim " + std::to_string(head_dim) + ", keys padded to " +
                  std::to_string(keys_pad) + ", row stride " + std::to_string(ldk) + ")");
  const int channels = heads * head_dim;
  const dim3 mean_grid(unsigned((channels + kMeanThreads - 1) / kMeanThreads));
  const dim3 block_grid(unsigned(keys_pad / kAttentionInt8KeyBlock), unsigned(heads));
  if (k_bf16) {
    const bf16* kb = static_cast<const bf16*>(k);
    hipLaunchKernelGGL(key_means_kernel<bf16>, mean_grid, dim3(kMeanThreads), 0, stream, kb, ldk, tk, channels, means);
    MOSS_HIP_CHECK(hipGetLastError());
    hipLaunchKernelGGL(key_blocks_kernel<bf16>, block_grid, dim3(kBlockThreads), 0, stream, kb, ldk, tk, head_dim,
                       keys_pad, static_cast<const float*>(means), q, scale);
  } else {
    const float* kf = static_cast<const float*>(k);
    hipLaunchKernelGGL(key_means_kernel<float>, mean_grid, dim3(kMeanThreads), 0, stream, kf, ldk, tk, channels,
                       means);
    MOSS_HIP_CHECK(hipGetLastError());
    hipLaunchKernelGGL(key_blocks_kernel<float>, block_grid, dim3(kBlockThreads), 0, stream, kf, ldk, tk, head_dim,
                       keys_pad, static_cast<const float*>(means), q, scale);
  }
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
