// Kernels of kernels/vae_layout.h. The map <-> token moves are transposes through a 32x32
// shared-memory tile (one padding column: no bank conflicts), so both the NCHW side (along
// pixels) and the token side (along channels) are read and written coalesced.
#include "kernels/vae_layout.h"

#include "kernels/kernel_path.h"

namespace moss {
namespace {

// Threads per block: T, a template parameter of every kernel (kMemoryBoundThreads of the path).
constexpr int kTile = 32;  // channels x pixels per block; T / kTile tile rows are handled at once

template <int kThreads>
__global__ __launch_bounds__(kThreads) void unpatchify_kernel(const float* __restrict__ packed,
                                                              const float* __restrict__ mean,
                                                              const float* __restrict__ var, float eps, int channels,
                                                              int h, int w, int patch, float* __restrict__ out) {
  const int64_t o = int64_t(block_x()) * kThreads + int64_t(thread_x());
  const int64_t width = int64_t(w) * patch, height = int64_t(h) * patch;
  if (o >= int64_t(channels) * height * width) return;
  const int x = int(o % width), y = int((o / width) % height), c = int(o / (width * height));
  const int i = y / patch, dy = y % patch, j = x / patch, dx = x % patch;
  const int k = patch * patch * c + patch * dy + dx;
  const float sd = sqrt_f(var[k] + eps);
  out[o] = packed[(int64_t(k) * h + i) * w + j] * sd + mean[k];
}

// One block's kTile x kTile square of a transpose between the channel-major map ([channel][pixel])
// and token rows ([pixel][channel]). Each side visits its elements with the lane along that side's
// contiguous axis. visit(r, c, p) for every element of the square inside the map; r is the tile
// row this thread handles.
template <int kThreads>
struct TransposeSquare {
  static constexpr int kRowStep = kThreads / kTile;
  const int lane, first, c0;
  const int64_t p0;
  const int channels;
  const int64_t pixels;
  __device__ TransposeSquare(int channels_, int64_t pixels_)
      : lane(int(thread_x()) % kTile), first(int(thread_x()) / kTile), c0(int(block_y()) * kTile),
        p0(int64_t(block_x()) * kTile), channels(channels_), pixels(pixels_) {}

  // kMapSide: row r of the square is channel c0 + r, the lane walks pixels (the map's contiguous
  // axis); else row r is pixel p0 + r and the lane walks channels (the tokens').
  template <bool kMapSide, class Visit>
  __device__ void visit_side(Visit visit) const {
    for (int r = first; r < kTile; r += kRowStep) {
      const int c = c0 + (kMapSide ? r : lane);
      const int64_t p = p0 + (kMapSide ? lane : r);
      if (c < channels && p < pixels) visit(r, c, p);
    }
  }
  template <class Visit>
  __device__ void map_side(Visit visit) const { visit_side<true>(visit); }
  template <class Visit>
  __device__ void token_side(Visit visit) const { visit_side<false>(visit); }
};

template <int kThreads>
__global__ __launch_bounds__(kThreads) void map_to_tokens_kernel(const float* __restrict__ x, int channels,
                                                                 int64_t pixels, const ChannelNorm* __restrict__ norm,
                                                                 bool silu, float* __restrict__ tokens, int64_t ld) {
  __shared__ float tile[kTile][kTile + 1];  // [channel][pixel]
  const TransposeSquare<kThreads> sq(channels, pixels);
  sq.map_side([&](int r, int c, int64_t p) {
    float v = x[int64_t(c) * pixels + p];
    if (norm) {
      const ChannelNorm n = norm[c];
      v = (v - n.mean) * n.scale + n.shift;
      if (silu) v = v * sigmoid_f(v);
    }
    tile[r][sq.lane] = v;
  });
  sync_workgroup();
  sq.token_side([&](int r, int c, int64_t p) { tokens[p * ld + c] = tile[sq.lane][r]; });
}

template <int kThreads>
__global__ __launch_bounds__(kThreads) void add_tokens_kernel(float* __restrict__ x, int channels, int64_t pixels,
                                                              const float* __restrict__ tokens, int64_t ld) {
  __shared__ float tile[kTile][kTile + 1];  // [channel][pixel]
  const TransposeSquare<kThreads> sq(channels, pixels);
  sq.token_side([&](int r, int c, int64_t p) { tile[sq.lane][r] = tokens[p * ld + c]; });
  sync_workgroup();
  sq.map_side([&](int r, int c, int64_t p) { x[int64_t(c) * pixels + p] += tile[r][sq.lane]; });
}

dim3 transpose_grid(int channels, int64_t pixels) {
  const int64_t px_tiles = (pixels + kTile - 1) / kTile;
  if (px_tiles > int64_t(0x7fffffff)) throw failure("VAE token move: map too large");
  return dim3(unsigned(px_tiles), unsigned((channels + kTile - 1) / kTile));
}

}  // namespace

void batch_norm_unpatchify(const float* packed, const float* running_mean, const float* running_var, float eps,
                           int channels, int h, int w, int patch, float* out, hipStream_t stream) {
  if (channels <= 0 || h <= 0 || w <= 0 || patch <= 0) throw failure("batch_norm_unpatchify: empty shape");
  const int64_t total = int64_t(channels) * h * w * patch * patch;
  with_kernel_path([&](auto portable) {
    constexpr int T = kMemoryBoundThreads<decltype(portable)::value>;
    const int64_t blocks = (total + T - 1) / T;
    if (blocks > int64_t(0x7fffffff)) throw failure("batch_norm_unpatchify: latent too large");
    hipLaunchKernelGGL(unpatchify_kernel<T>, dim3(unsigned(blocks)), dim3(T), 0, stream, packed, running_mean,
                       running_var, eps, channels, h, w, patch, out);
    MOSS_HIP_CHECK(hipGetLastError());
  });
}

void map_to_tokens(const float* x, int channels, int64_t pixels, const ChannelNorm* norm, bool silu, float* tokens,
                   int64_t ld, hipStream_t stream) {
  if (channels <= 0 || pixels <= 0 || ld < channels) throw failure("map_to_tokens: bad shape");
  with_kernel_path([&](auto portable) {
    constexpr int T = kMemoryBoundThreads<decltype(portable)::value>;
    hipLaunchKernelGGL(map_to_tokens_kernel<T>, transpose_grid(channels, pixels), dim3(T), 0, stream, x, channels,
                       pixels, norm, silu, tokens, ld);
    MOSS_HIP_CHECK(hipGetLastError());
  });
}

void add_tokens_to_map(float* x, int channels, int64_t pixels, const float* tokens, int64_t ld, hipStream_t stream) {
  if (channels <= 0 || pixels <= 0 || ld < channels) throw failure("add_tokens_to_map: bad shape");
  with_kernel_path([&](auto portable) {
    constexpr int T = kMemoryBoundThreads<decltype(portable)::value>;
    hipLaunchKernelGGL(add_tokens_kernel<T>, transpose_grid(channels, pixels), dim3(T), 0, stream, x, channels, pixels,
                       tokens, ld);
    MOSS_HIP_CHECK(hipGetLastError());
  });
}

}  // namespace moss
