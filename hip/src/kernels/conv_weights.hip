// The weight packer of kernels/conv_weights.h: one thread per packed word (two input channels
// of one output channel at one tap), reading the PyTorch layout and writing the tile layout.
#include "kernels/conv_weights.h"

#include "kernels/conv2d_layout.h"

namespace moss {
namespace {


__device__ inline uint32_t pack_pair(bf16 lo_channel, bf16 hi_channel) {
  return uint32_t(bf16_bits(lo_channel)) | (uint32_t(bf16_bits(hi_channel)) << 16);
}

// kPortable: the kernel path that runs (its memory-bound block size).
template <bool kPortable>
__global__ __launch_bounds__(kMemoryBoundThreads<kPortable>) void pack_kernel(const float* __restrict__ w, int cout, int cin, int taps,
                                                        int chunks, int64_t words, bool f16,
                                                        uint32_t* __restrict__ hi, uint32_t* __restrict__ lo) {
  constexpr int kThreads = kMemoryBoundThreads<kPortable>, kBlockM = conv::kBlockM;
  const int64_t i = int64_t(block_x()) * kThreads + int64_t(thread_x());
  if (i >= words) return;
  // i = (((co_tile·chunks + chunk)·taps + tap)·kBlockM + m)·kChunkWords + stored word
  int64_t r = i / conv::kChunkWords;
  const int stored = int(i % conv::kChunkWords);
  const int m = int(r % kBlockM);
  r /= kBlockM;
  const int tap = int(r % taps);
  r /= taps;
  const int chunk = int(r % chunks);
  const int co_tile = int(r / chunks);
  const int word = conv::swizzle_word(stored, m);  // the swizzle is its own inverse
  const int co = co_tile * kBlockM + m, ci = chunk * conv::kChunk + 2 * word;
  float v[2];
#pragma unroll
  for (int e = 0; e < 2; ++e)
    v[e] = co < cout && ci + e < cin ? w[(int64_t(co) * cin + ci + e) * taps + tap] : 0.0f;
  if (f16) {
    hi[i] = conv::f16_pair(v[0], v[1]);
    return;
  }
  const bf16 h0 = to_bf16(v[0]), h1 = to_bf16(v[1]);
  hi[i] = pack_pair(h0, h1);
  if (lo) lo[i] = pack_pair(to_bf16(v[0] - to_float(h0)), to_bf16(v[1] - to_float(h1)));
}

}  // namespace

void conv_pack_weights(const float* w, int cout, int cin, int ksize, ConvPrecision precision, uint32_t* hi,
                       uint32_t* lo, hipStream_t stream) {
  if (cout <= 0 || cin <= 0 || (ksize != 1 && ksize != 3)) throw failure("conv_pack_weights: bad shape");
  if ((lo != nullptr) != (precision == ConvPrecision::Bf16x3))
    throw failure("conv_pack_weights: lo parts go with bf16x3 and only with it");
  const int64_t words = conv::packed_words(cout, cin, ksize);
  with_kernel_path([&](auto portable) {
    constexpr bool kPortable = decltype(portable)::value;
    constexpr int kThreads = kMemoryBoundThreads<kPortable>;
    const int64_t blocks = (words + kThreads - 1) / kThreads;
    hipLaunchKernelGGL(pack_kernel<kPortable>, dim3(unsigned(blocks)), dim3(kThreads), 0, stream, w, cout, cin,
                       ksize * ksize, conv::chunks(cin), words, precision == ConvPrecision::F16, hi, lo);
    MOSS_HIP_CHECK(hipGetLastError());
  });
}

}  // namespace moss
