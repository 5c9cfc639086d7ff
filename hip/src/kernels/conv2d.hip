// check_device: matrix
// The implicit-GEMM convolution of kernels/conv2d.h. One block: kBlockM output channels x
// kBlockRows output rows x 16 output columns. Per K-step (16 input channels):
//   1. issue the block's packed weights for all taps (16-byte chunks; cp.async on NVIDIA),
//   2. stage the input patch: each thread takes pixels of the (kBlockRows + k − 1) x (16 + k − 1)
//      window, reads the 16 channels (coalesced across threads along the row), applies padding,
//      upsampling, group norm and SiLU, rounds to the operand type (bf16 hi, and lo for the split
//      product; or fp16) and writes each pixel as two 16-byte vectors,
//   3. for each tap (ky, kx): leaf A = weights [co][ci] of that tap, leaf B = patch pixels
//      shifted by (ky, kx) [ci][pixel]; each warp multiplies its kTilesM x kTilesN leaf tiles.
//      Walked column tap by column tap: for one kx the A fragments of all k rows of taps are
//      held, and each staged patch row's B fragment is read once and used by every (output
//      row j, ky) pair with j + ky = that patch row: (kTilesN + k − 1) B reads per kx instead
//      of kTilesN·k (shared-memory reads, not the tensor cores, bounded the first version).
// Portable path (one plane): double-buffered, the next K-step staged while this one multiplies,
// one barrier per K-step. NVIDIA's native path and the split product: single-buffered (two
// barriers per K-step; several blocks per multiprocessor hide the staging).
#include "kernels/conv2d.h"

#include "kernels/conv2d_layout.h"
#include "kernels/split_leaf.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace {

using conv::kChunk;
using conv::kChunkWords;
using conv::kTileW;

// The block shape of one precision on one kernel path (conv2d_layout.h: the N side may differ
// per precision).
template <ConvPrecision P, bool kPortable>
struct BlockShape {
  static constexpr bool kSplit = P == ConvPrecision::Bf16x3;
  static constexpr int kWarpsM = conv::kWarpsM, kBlockM = conv::kBlockM;
  static constexpr int kWarpsN = conv::warps_n<kPortable>(kSplit);
  static constexpr int kThreads = kWarpsM * kWarpsN * kWaveSize;
  static constexpr int kBlockRows = kWarpsN * conv::kTilesN;  // output rows per block
  // Shared-memory buffers of the staged operands: the portable one-plane block stages the next
  // K-step while it multiplies the current one (one barrier per K-step, conv2d_layout.h); the
  // split product's two planes, and NVIDIA's native 16-row block, fit only single-buffered in the
  // 48 KiB of static shared memory.
  static constexpr int kBuffers = kPortable && !kSplit ? 2 : 1;
  // Blocks per multiprocessor the registers must allow (native, 8 warps: two blocks, so that one
  // block's staging overlaps the other's products; at most 128 registers per thread).
  static constexpr int kMinBlocks = !kPortable && !kSplit ? 2 : 1;
};

// The fragment loaders below read slots 2p and 2p+1 as one bf16 pair: they must be neighbours
// in K at the same row (A) / column (B) with an even first K, on every platform's layout.
constexpr bool slot_pairs_are_k_neighbours() {
  for (int lane = 0; lane < kWaveSize; ++lane) {
    for (int p = 0; 2 * p + 1 < leaf::Layout::kSlotsA; ++p) {
      const mma_layout::Elem e0 = leaf::Layout::a(lane, 2 * p), e1 = leaf::Layout::a(lane, 2 * p + 1);
      if (e1.row != e0.row || e1.col != e0.col + 1 || e0.col % 2 != 0) return false;
    }
    for (int p = 0; 2 * p + 1 < leaf::Layout::kSlotsB; ++p) {
      const mma_layout::Elem e0 = leaf::Layout::b(lane, 2 * p), e1 = leaf::Layout::b(lane, 2 * p + 1);
      if (e1.col != e0.col || e1.row != e0.row + 1 || e0.row % 2 != 0) return false;
    }
  }
  return true;
}
static_assert(slot_pairs_are_k_neighbours(), "conv2d: leaf slot pairs must be K neighbours");

template <class Frag>
__device__ inline void set_pair(Frag& f, int slot, uint32_t pair) {
  f.x[slot] = bf16_from_bits(uint16_t(pair & 0xffffu));
  f.x[slot + 1] = bf16_from_bits(uint16_t(pair >> 16));
}

// A[m][k] = channel k of staged weight row (row0 + m).
__device__ inline void load_a_rows(leaf::FragA& f, const uint32_t* s, int row0) {
  leaf::for_each_slot<leaf::Operand::A, 2>([&](int i, mma_layout::Elem e) {
    const int row = row0 + e.row;
    set_pair(f, i, s[row * kChunkWords + conv::swizzle_word(e.col / 2, row)]);
  });
}

// B[k][n] = channel k of staged patch pixel (pix0 + n).
__device__ inline void load_b_pixels(leaf::FragB& f, const uint32_t* s, int pix0) {
  leaf::for_each_slot<leaf::Operand::B, 2>([&](int i, mma_layout::Elem e) {
    const int pix = pix0 + e.col;
    set_pair(f, i, s[pix * kChunkWords + conv::swizzle_word(e.row / 2, pix)]);
  });
}

__device__ inline uint32_t bf16_pair(bf16 even, bf16 odd) {
  return uint32_t(bf16_bits(even)) | (uint32_t(bf16_bits(odd)) << 16);
}

// acc += A·B in precision P (F16: the leaf's fp16 product, the fragments' slots carrying fp16 bits).
template <ConvPrecision P, bool kSplit>
__device__ inline void product(leaf::FragC& acc, const split_leaf::FragA<kSplit>& a,
                               const split_leaf::FragB<kSplit>& b) {
  if constexpr (P == ConvPrecision::F16) leaf::mma<true>(acc, a.hi, b.hi);
  else split_leaf::mma<kSplit>(acc, a, b);
}

// A channel's group norm as one multiply-add, y = x·scale + offset with offset = shift − mean·scale
// (two terms per channel instead of three: the staging's registers are at their limit). It
// differs from (x − mean)·scale + shift by fp32 rounding of |mean·scale| (~6e-8 of it), far below
// the operands' rounding unless a group's mean were ~1e3 times its spread (not in the decoder).
struct NormTerms {
  float scale, offset;
};

__device__ inline NormTerms norm_terms(const ChannelNorm& n) { return {n.scale, n.shift - n.mean * n.scale}; }

// The SiLU of a staged value with the approximate exponential and reciprocal (a few ulp of fp32,
// far below the operands' fp16/bf16 rounding; the bf16x3 rows of `moss-check kernels --family vae` bound it too).
// Large negative t: exp overflows to inf and the quotient is −0, as SiLU's limit.
__device__ inline float silu_fast(float t) {
#if MOSS_PLATFORM_NVIDIA
  return __fdividef(t, 1.0f + fast_exp(-t));
#else
  return t * __builtin_amdgcn_rcpf(1.0f + fast_exp(-t));
#endif
}

// Stage 2 of a K-step: the chunk's 16 channels of every patch pixel, read through the padding,
// the upsampling and the group norm (+ SiLU), rounded to the operand type (hi, and lo for the
// split product) and stored as two 16-byte vectors per pixel. An item's 8 loads are all issued
// before any arithmetic: addresses are clamped into the map (the chunk's first channel, the map's
// first pixel) and out-of-range values replaced by zero afterwards, with selects. (The first
// version loaded each value under its own branch; with the norm + SiLU in that branch the loads
// were serialised and the normalised convolutions ran 4-7x slower than the plain ones.)
// norm: the chunk's 16 channel terms in shared memory (kNorm only; entries past cin unused).
template <int K, ConvPrecision P, int kThreads, int kBlockRows, bool kNorm, bool kSilu>
__device__ inline void stage_patch(const Conv2dArgs& a, uint32_t* s_hi, uint32_t* s_lo, const NormTerms* norm,
                                   int chunk, int oy0, int ox0, int tid) {
  constexpr bool kSplit = P == ConvPrecision::Bf16x3, kF16 = P == ConvPrecision::F16;
  constexpr int kPad = K / 2, kPatchW = kTileW + K - 1, kPatchPix = kPatchW * (kBlockRows + K - 1);
  const int up = a.upsample2x ? 1 : 0;
  const int ho = a.h << up, wo = a.w << up;
  const int64_t plane = int64_t(a.h) * a.w;
  const int c0 = chunk * kChunk, valid_channels = a.cin - c0 < kChunk ? a.cin - c0 : kChunk;
  const float* base = a.x + int64_t(c0) * plane;
  // Work item: one half (8 channels, one 16-byte vector) of one pixel; consecutive threads take
  // consecutive pixels of the same half (coalesced reads along the row).
  constexpr int kHalf = kChunk / 2;
#pragma unroll 1  // one item's 8 values in flight per thread: registers stay with the accumulators
  for (int item = tid; item < 2 * kPatchPix; item += kThreads) {
    const int half = item >= kPatchPix ? 1 : 0, p = item - half * kPatchPix;
    const int py = p / kPatchW, px = p - py * kPatchW;
    const int iy = oy0 + py - kPad, ix = ox0 + px - kPad;
    const bool inside = iy >= 0 && iy < ho && ix >= 0 && ix < wo;
    const int ch0 = half * kHalf;  // the item's first channel within the chunk
    const float* src = base + (inside ? int64_t(iy >> up) * a.w + (ix >> up) : 0);
    float v[kHalf];
#pragma unroll
    for (int c = 0; c < kHalf; ++c) v[c] = src[(ch0 + c < valid_channels ? ch0 + c : 0) * plane];
#pragma unroll
    for (int c = 0; c < kHalf; ++c) {
      float t = v[c];
      if constexpr (kNorm) {
        const NormTerms n = norm[ch0 + c];
        t = t * n.scale + n.offset;
        if constexpr (kSilu) t = silu_fast(t);
      }
      if constexpr (kF16) t *= kConvF16InputScale;
      // zero padding comes after the norm, as PyTorch pads the normalised map
      v[c] = inside && ch0 + c < valid_channels ? t : 0.0f;
    }
    uint32_t hi[kHalf / 2], lo[kHalf / 2];
#pragma unroll
    for (int w = 0; w < kHalf / 2; ++w) {
      if constexpr (kF16) {
        hi[w] = conv::f16_pair(v[2 * w], v[2 * w + 1]);
      } else {
        const bf16 h0 = to_bf16(v[2 * w]), h1 = to_bf16(v[2 * w + 1]);
        hi[w] = bf16_pair(h0, h1);
        if constexpr (kSplit)
          lo[w] = bf16_pair(to_bf16(v[2 * w] - to_float(h0)), to_bf16(v[2 * w + 1] - to_float(h1)));
      }
    }
    // words 0-3 (channels 0-7) go to the half the swizzle names, words 4-7 to the other
    const int at = (conv::swizzle_word(0, p) / 4) ^ half;
    reinterpret_cast<tile::Chunk16*>(&s_hi[p * kChunkWords])[at] = tile::Chunk16{{hi[0], hi[1], hi[2], hi[3]}};
    if constexpr (kSplit)
      reinterpret_cast<tile::Chunk16*>(&s_lo[p * kChunkWords])[at] = tile::Chunk16{{lo[0], lo[1], lo[2], lo[3]}};
  }
}

template <int K, ConvPrecision P, bool kPortable>
__global__ MOSS_LAUNCH_BOUNDS((BlockShape<P, kPortable>::kThreads), (BlockShape<P, kPortable>::kMinBlocks)) void conv2d_kernel(
    const Conv2dArgs a, int co_tiles, int tiles_x) {
  using Shape = BlockShape<P, kPortable>;
  constexpr bool kSplit = Shape::kSplit, kF16 = P == ConvPrecision::F16;
  constexpr int kThreads = Shape::kThreads, kBlockRows = Shape::kBlockRows, kBlockM = Shape::kBlockM;
  constexpr int kTaps = K * K, kPlanes = kSplit ? 2 : 1, kBuffers = Shape::kBuffers;
  constexpr int kPatchW = kTileW + K - 1, kPatchPix = kPatchW * (kBlockRows + K - 1);
  constexpr int kWeightWords = kTaps * kBlockM * kChunkWords;  // one plane, one K-step
  alignas(16) __shared__ uint32_t s_w[kBuffers][kPlanes][kWeightWords];
  alignas(16) __shared__ uint32_t s_x[kBuffers][kPlanes][kPatchPix * kChunkWords];
  __shared__ NormTerms s_norm[2][kChunk];  // the group norm of one chunk's / the next chunk's channels

  const int tid = int(thread_x()), warp = tid / kWaveSize;
  const int wm = warp % Shape::kWarpsM, wn = warp / Shape::kWarpsM;
  const int block = int(block_x());
  const int co_tile = block % co_tiles, pixel_tile = block / co_tiles;
  const int co0 = co_tile * kBlockM;
  const int oy0 = (pixel_tile / tiles_x) * kBlockRows, ox0 = (pixel_tile % tiles_x) * kTileW;
  const int up = a.upsample2x ? 1 : 0;
  const int ho = a.h << up, wo = a.w << up;
  const int chunks = (a.cin + kChunk - 1) / kChunk;
  const int row0 = wm * conv::kTilesM * 16;  // this warp's first weight row in the block tile

  leaf::FragC acc[conv::kTilesM][conv::kTilesN];
#pragma unroll
  for (int i = 0; i < conv::kTilesM; ++i)
#pragma unroll
    for (int j = 0; j < conv::kTilesN; ++j) leaf::zero(acc[i][j]);

  if (a.norm && tid < kChunk && tid < a.cin) s_norm[0][tid] = norm_terms(a.norm[tid]);

  // Stages 1 and 2 of K-step `chunk` into buffer `buf` (copies left in flight: wait_copies). The
  // norm terms of the next chunk go to the other s_norm slot: its last reader was the staging of
  // the chunk before, a barrier ago on either schedule.
  auto stage = [&](int chunk, int buf) {
    // 1. weights: one contiguous run per plane
    const int64_t wofs = (int64_t(co_tile) * chunks + chunk) * kWeightWords;
    for (int i = tid; i < kWeightWords / 4; i += kThreads) {
      tile::copy16_async(&s_w[buf][0][4 * i], a.w_hi + wofs + 4 * i);
      if constexpr (kSplit) tile::copy16_async(&s_w[buf][1][4 * i], a.w_lo + wofs + 4 * i);
    }
    tile::commit_copies();
    // 2. the input patch, normalised and rounded
    if (a.norm && tid < kChunk && (chunk + 1) * kChunk + tid < a.cin)
      s_norm[(chunk + 1) & 1][tid] = norm_terms(a.norm[(chunk + 1) * kChunk + tid]);
    const NormTerms* norm = s_norm[chunk & 1];
    uint32_t* s_hi = s_x[buf][0];
    uint32_t* s_lo = s_x[buf][kPlanes - 1];
    if (!a.norm) stage_patch<K, P, kThreads, kBlockRows, false, false>(a, s_hi, s_lo, norm, chunk, oy0, ox0, tid);
    else if (a.silu) stage_patch<K, P, kThreads, kBlockRows, true, true>(a, s_hi, s_lo, norm, chunk, oy0, ox0, tid);
    else stage_patch<K, P, kThreads, kBlockRows, true, false>(a, s_hi, s_lo, norm, chunk, oy0, ox0, tid);
  };

  // Double-buffered: K-step 0 staged up front, then each iteration stages the next K-step into the
  // other buffer (last read by the previous iteration's products, a barrier ago) before it
  // multiplies the current one. Single-buffered: stage, barrier, multiply, barrier.
  if constexpr (kBuffers == 2) {
    sync_workgroup();  // the first chunk's norm terms
    stage(0, 0);
    tile::wait_copies<0>();
    sync_workgroup();
  }
  for (int chunk = 0; chunk < chunks; ++chunk) {
    if constexpr (kBuffers == 1) {
      sync_workgroup();  // the previous K-step's fragments (and staged norm terms) are read
      stage(chunk, 0);
      tile::wait_copies<0>();
      sync_workgroup();
    } else if (chunk + 1 < chunks) {
      stage(chunk + 1, (chunk + 1) & 1);
    }
    const int buf = kBuffers == 1 ? 0 : chunk & 1;

    // 3. the k² leaf K-steps, column tap by column tap (see the top of the file)
#pragma unroll 1
    for (int kx = 0; kx < K; ++kx) {
      split_leaf::FragA<kSplit> fa[K][conv::kTilesM];
#pragma unroll
      for (int ky = 0; ky < K; ++ky)
#pragma unroll
        for (int i = 0; i < conv::kTilesM; ++i) {
          const int tap = ky * K + kx;
          load_a_rows(fa[ky][i].hi, &s_w[buf][0][tap * kBlockM * kChunkWords], row0 + 16 * i);
          if constexpr (kSplit) load_a_rows(fa[ky][i].lo, &s_w[buf][1][tap * kBlockM * kChunkWords], row0 + 16 * i);
        }
#pragma unroll
      for (int prow = 0; prow < conv::kTilesN + K - 1; ++prow) {  // this warp's patch rows
        const int pix0 = (wn * conv::kTilesN + prow) * kPatchW + kx;
        split_leaf::FragB<kSplit> fb;
        load_b_pixels(fb.hi, s_x[buf][0], pix0);
        if constexpr (kSplit) load_b_pixels(fb.lo, s_x[buf][1], pix0);
#pragma unroll
        for (int ky = 0; ky < K; ++ky) {
          const int j = prow - ky;  // the output row that reads this patch row at tap row ky
          if (j < 0 || j >= conv::kTilesN) continue;
#pragma unroll
          for (int i = 0; i < conv::kTilesM; ++i) product<P, kSplit>(acc[i][j], fa[ky][i], fb);
        }
      }
    }
    if constexpr (kBuffers == 2) {
      tile::wait_copies<0>();
      sync_workgroup();  // the next K-step is staged; this one's fragments are read
    }
  }

  // epilogue: bias, then the residual (read before the write, by the same thread: it may be out)
#pragma unroll
  for (int i = 0; i < conv::kTilesM; ++i)
#pragma unroll
    for (int j = 0; j < conv::kTilesN; ++j) {
      const int oy = oy0 + wn * conv::kTilesN + j;
      leaf::store_c(acc[i][j], [&](int m, int n, float v) {
        const int co = co0 + row0 + 16 * i + m, ox = ox0 + n;
        if (co >= a.cout || oy >= ho || ox >= wo) return;
        const int64_t idx = (int64_t(co) * ho + oy) * wo + ox;
        float r = (kF16 ? v * (1.0f / kConvF16InputScale) : v) + a.bias[co];
        if (a.residual) r = r + a.residual[idx];
        a.out[idx] = r;
      });
    }
}

template <int K, ConvPrecision P, bool kPortable>
void launch(const Conv2dArgs& a, hipStream_t stream) {
  using Shape = BlockShape<P, kPortable>;
  constexpr int kBlockRows = Shape::kBlockRows;
  const int ho = a.upsample2x ? 2 * a.h : a.h, wo = a.upsample2x ? 2 * a.w : a.w;
  const int co_tiles = conv::co_tiles(a.cout, Shape::kBlockM);
  const int tiles_x = (wo + kTileW - 1) / kTileW, tiles_y = (ho + kBlockRows - 1) / kBlockRows;
  const int64_t blocks = int64_t(co_tiles) * tiles_x * tiles_y;
  if (blocks > int64_t(0x7fffffff)) throw failure("conv2d: output too large for one launch");
  hipLaunchKernelGGL((conv2d_kernel<K, P, kPortable>), dim3(unsigned(blocks)), dim3(Shape::kThreads), 0, stream, a,
                     co_tiles, tiles_x);
  MOSS_HIP_CHECK(hipGetLastError());
}

template <ConvPrecision P>
void launch_k(const Conv2dArgs& a, hipStream_t stream) {
  with_kernel_path([&](auto portable) {
    constexpr bool kPortable = decltype(portable)::value;
    if (a.ksize == 3) launch<3, P, kPortable>(a, stream);
    else launch<1, P, kPortable>(a, stream);
  });
}

}  // namespace

const char* conv_precision_name(ConvPrecision p) {
  switch (p) {
    case ConvPrecision::Bf16: return "bf16";
    case ConvPrecision::Bf16x3: return "bf16x3";
    case ConvPrecision::F16: return "f16";
  }
  return "?";
}

void conv2d(const Conv2dArgs& a, ConvPrecision precision, hipStream_t stream) {
  if (a.cin <= 0 || a.h <= 0 || a.w <= 0 || a.cout <= 0 || (a.ksize != 1 && a.ksize != 3))
    throw failure("conv2d: bad shape (cin " + std::to_string(a.cin) + ", " + std::to_string(a.h) + "x" +
                  std::to_string(a.w) + ", cout " + std::to_string(a.cout) + ", k " + std::to_string(a.ksize) + ")");
  if (!a.x || !a.w_hi || !a.bias || !a.out) throw failure("conv2d: missing operand");
  switch (precision) {
    case ConvPrecision::Bf16: return launch_k<ConvPrecision::Bf16>(a, stream);
    case ConvPrecision::Bf16x3:
      if (!a.w_lo) throw failure("conv2d: bf16x3 needs the weights' lo parts");
      return launch_k<ConvPrecision::Bf16x3>(a, stream);
    case ConvPrecision::F16: return launch_k<ConvPrecision::F16>(a, stream);
  }
}

}  // namespace moss
