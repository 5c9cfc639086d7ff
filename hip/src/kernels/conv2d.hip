// check_device: matrix
// The implicit-GEMM convolution of kernels/conv2d.h. One block: kBlockM output channels x
// kBlockRows output rows x 16 output columns. Per K-step (16 input channels):
//   1. issue the block's packed weights for all taps (16-byte chunks; cp.async on NVIDIA),
//   2. stage the input patch: each thread takes pixels of the (kBlockRows + k − 1) x (16 + k − 1)
//      window, reads the 16 channels (coalesced across threads along the row), applies padding,
//      upsampling, group norm and SiLU, rounds to bf16 (hi, and lo for the split product) and
//      writes each pixel as two 16-byte vectors,
//   3. for each tap (ky, kx): leaf A = weights [co][ci] of that tap, leaf B = patch pixels
//      shifted by (ky, kx) [ci][pixel]; each warp multiplies its kTilesM x kTilesN leaf tiles.
// Single-buffered (two barriers per K-step); several blocks per multiprocessor hide the staging.
#include "kernels/conv2d.h"

#include "kernels/conv2d_layout.h"
#include "kernels/split_leaf.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace {

using conv::kBlockM;
using conv::kBlockRows;
using conv::kChunk;
using conv::kChunkWords;
using conv::kThreads;
using conv::kTileW;

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
  const int lane = int(lane_id());
#pragma unroll
  for (int p = 0; p < leaf::Layout::kSlotsA / 2; ++p) {
    const mma_layout::Elem e = leaf::Layout::a(lane, 2 * p);
    const int row = row0 + e.row;
    set_pair(f, 2 * p, s[row * kChunkWords + conv::swizzle_word(e.col / 2, row)]);
  }
}

// B[k][n] = channel k of staged patch pixel (pix0 + n).
__device__ inline void load_b_pixels(leaf::FragB& f, const uint32_t* s, int pix0) {
  const int lane = int(lane_id());
#pragma unroll
  for (int p = 0; p < leaf::Layout::kSlotsB / 2; ++p) {
    const mma_layout::Elem e = leaf::Layout::b(lane, 2 * p);
    const int pix = pix0 + e.col;
    set_pair(f, 2 * p, s[pix * kChunkWords + conv::swizzle_word(e.row / 2, pix)]);
  }
}

__device__ inline uint32_t bf16_pair(bf16 even, bf16 odd) {
  return uint32_t(bf16_bits(even)) | (uint32_t(bf16_bits(odd)) << 16);
}

template <int K, bool kSplit>
__global__ __launch_bounds__(kThreads) void conv2d_kernel(const Conv2dArgs a, int co_tiles, int tiles_x) {
  constexpr int kTaps = K * K, kPad = K / 2, kPlanes = kSplit ? 2 : 1;
  constexpr int kPatchW = kTileW + K - 1, kPatchH = kBlockRows + K - 1, kPatchPix = kPatchW * kPatchH;
  constexpr int kWeightWords = kTaps * kBlockM * kChunkWords;  // one plane, one K-step
  alignas(16) __shared__ uint32_t s_w[kPlanes][kWeightWords];
  alignas(16) __shared__ uint32_t s_x[kPlanes][kPatchPix * kChunkWords];

  const int tid = int(thread_x()), warp = tid / kWaveSize;
  const int wm = warp % conv::kWarpsM, wn = warp / conv::kWarpsM;
  const int block = int(block_x());
  const int co_tile = block % co_tiles, pixel_tile = block / co_tiles;
  const int co0 = co_tile * kBlockM;
  const int oy0 = (pixel_tile / tiles_x) * kBlockRows, ox0 = (pixel_tile % tiles_x) * kTileW;
  const int up = a.upsample2x ? 1 : 0;
  const int ho = a.h << up, wo = a.w << up;
  const int64_t plane = int64_t(a.h) * a.w;
  const int chunks = (a.cin + kChunk - 1) / kChunk;
  const int row0 = wm * conv::kTilesM * 16;  // this warp's first weight row in the block tile

  leaf::FragC acc[conv::kTilesM][conv::kTilesN];
#pragma unroll
  for (int i = 0; i < conv::kTilesM; ++i)
#pragma unroll
    for (int j = 0; j < conv::kTilesN; ++j) leaf::zero(acc[i][j]);

  for (int chunk = 0; chunk < chunks; ++chunk) {
    sync_workgroup();  // the previous K-step's fragments are read

    // 1. weights: one contiguous run per plane
    const int64_t wofs = (int64_t(co_tile) * chunks + chunk) * kWeightWords;
    for (int i = tid; i < kWeightWords / 4; i += kThreads) {
      tile::copy16_async(&s_w[0][4 * i], a.w_hi + wofs + 4 * i);
      if constexpr (kSplit) tile::copy16_async(&s_w[1][4 * i], a.w_lo + wofs + 4 * i);
    }
    tile::commit_copies();

    // 2. the input patch, normalised and rounded
    const int c0 = chunk * kChunk, valid_channels = a.cin - c0 < kChunk ? a.cin - c0 : kChunk;
    for (int p = tid; p < kPatchPix; p += kThreads) {
      const int py = p / kPatchW, px = p - py * kPatchW;
      const int iy = oy0 + py - kPad, ix = ox0 + px - kPad;
      const bool inside = iy >= 0 && iy < ho && ix >= 0 && ix < wo;
      const float* src = a.x + (inside ? (int64_t(c0) * a.h + (iy >> up)) * a.w + (ix >> up) : 0);
      uint32_t hi[kChunkWords], lo[kChunkWords];
#pragma unroll
      for (int c = 0; c < kChunk; c += 2) {
        float v[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          v[e] = 0.0f;  // zero padding comes after the norm, as PyTorch pads the normalised map
          if (inside && c + e < valid_channels) {
            v[e] = src[(c + e) * plane];
            if (a.norm) {
              const ChannelNorm n = a.norm[c0 + c + e];
              v[e] = (v[e] - n.mean) * n.scale + n.shift;
              if (a.silu) v[e] = v[e] * sigmoid_f(v[e]);
            }
          }
        }
        const bf16 h0 = to_bf16(v[0]), h1 = to_bf16(v[1]);
        hi[c / 2] = bf16_pair(h0, h1);
        if constexpr (kSplit) lo[c / 2] = bf16_pair(to_bf16(v[0] - to_float(h0)), to_bf16(v[1] - to_float(h1)));
      }
      // words 0-3 (channels 0-7) go to the half the swizzle names, words 4-7 to the other
      const int first = conv::swizzle_word(0, p), second = first ^ 4;
      tile::Chunk16* dst = reinterpret_cast<tile::Chunk16*>(&s_x[0][p * kChunkWords]);
      dst[first / 4] = tile::Chunk16{{hi[0], hi[1], hi[2], hi[3]}};
      dst[second / 4] = tile::Chunk16{{hi[4], hi[5], hi[6], hi[7]}};
      if constexpr (kSplit) {
        tile::Chunk16* dst_lo = reinterpret_cast<tile::Chunk16*>(&s_x[1][p * kChunkWords]);
        dst_lo[first / 4] = tile::Chunk16{{lo[0], lo[1], lo[2], lo[3]}};
        dst_lo[second / 4] = tile::Chunk16{{lo[4], lo[5], lo[6], lo[7]}};
      }
    }
    tile::wait_copies<0>();
    sync_workgroup();

    // 3. one leaf K-step per tap
#pragma unroll 1
    for (int tap = 0; tap < kTaps; ++tap) {
      const int ky = tap / K, kx = tap % K;
      split_leaf::FragA<kSplit> fa[conv::kTilesM];
#pragma unroll
      for (int i = 0; i < conv::kTilesM; ++i) {
        load_a_rows(fa[i].hi, &s_w[0][tap * kBlockM * kChunkWords], row0 + 16 * i);
        if constexpr (kSplit) load_a_rows(fa[i].lo, &s_w[1][tap * kBlockM * kChunkWords], row0 + 16 * i);
      }
#pragma unroll
      for (int j = 0; j < conv::kTilesN; ++j) {
        const int pix0 = (wn * conv::kTilesN + j + ky) * kPatchW + kx;
        split_leaf::FragB<kSplit> fb;
        load_b_pixels(fb.hi, s_x[0], pix0);
        if constexpr (kSplit) load_b_pixels(fb.lo, s_x[1], pix0);
#pragma unroll
        for (int i = 0; i < conv::kTilesM; ++i) split_leaf::mma(acc[i][j], fa[i], fb);
      }
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
        float r = v + a.bias[co];
        if (a.residual) r = r + a.residual[idx];
        a.out[idx] = r;
      });
    }
}

template <int K, bool kSplit>
void launch(const Conv2dArgs& a, hipStream_t stream) {
  const int ho = a.upsample2x ? 2 * a.h : a.h, wo = a.upsample2x ? 2 * a.w : a.w;
  const int co_tiles = conv::co_tiles(a.cout);
  const int tiles_x = (wo + kTileW - 1) / kTileW, tiles_y = (ho + kBlockRows - 1) / kBlockRows;
  const int64_t blocks = int64_t(co_tiles) * tiles_x * tiles_y;
  if (blocks > int64_t(0x7fffffff)) throw failure("conv2d: output too large for one launch");
  hipLaunchKernelGGL((conv2d_kernel<K, kSplit>), dim3(unsigned(blocks)), dim3(kThreads), 0, stream, a, co_tiles,
                     tiles_x);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace

const char* conv_precision_name(ConvPrecision p) { return p == ConvPrecision::Bf16 ? "bf16" : "bf16x3"; }

void conv2d(const Conv2dArgs& a, ConvPrecision precision, hipStream_t stream) {
  if (a.cin <= 0 || a.h <= 0 || a.w <= 0 || a.cout <= 0 || (a.ksize != 1 && a.ksize != 3))
    throw failure("conv2d: bad shape (cin " + std::to_string(a.cin) + ", " + std::to_string(a.h) + "x" +
                  std::to_string(a.w) + ", cout " + std::to_string(a.cout) + ", k " + std::to_string(a.ksize) + ")");
  if (!a.x || !a.w_hi || !a.bias || !a.out) throw failure("conv2d: missing operand");
  const bool split = precision == ConvPrecision::Bf16x3;
  if (split && !a.w_lo) throw failure("conv2d: bf16x3 needs the weights' lo parts");
  if (a.ksize == 3) {
    if (split) launch<3, true>(a, stream);
    else launch<3, false>(a, stream);
  } else {
    if (split) launch<1, true>(a, stream);
    else launch<1, false>(a, stream);
  }
}

}  // namespace moss
