// The VAE convolution's tile shape and the packed weight layout it reads: shared by the
// implicit-GEMM kernel (kernels/conv2d.hip) and the weight packer (kernels/conv_weights.hip),
// which must agree on the M side and the packing. The block tile differs between NVIDIA's native
// path (2 warps along M, 2-4 along N: 64 channels x 8-16 rows) and the portable one (2 x 2
// wave32s: 64 channels x 8 rows, or one wave of 32 channels x 4 rows for the split product,
// whose two planes must stay single-buffered), which NVIDIA builds hold too (kernels/kernel_path.h).
//
// GEMM reading of a k x k convolution (k = 1 or 3): M = output channels, N = output pixels,
// K = taps x input channels, walked as (input-channel chunk of 16) x (tap): one leaf K-step is
// 16 input channels at one tap (ky, kx).
//
// Shared-memory rows hold the 16 channels of one K-step as 8 words (bf16 or fp16 pairs). Two fragment
// reads of neighbouring rows would hit the same banks (a row is 8 of the 32 banks), so the two
// 4-word halves of every row whose index has bit 2 set are swapped: word w of row r is stored
// at w ^ (4·((r >> 2) & 1)). Eight consecutive rows then cover all 32 banks (NVIDIA's fragment
// reads: 8 rows x 4 words per instruction), and each 8-channel half stays one 16-byte vector.
#pragma once

#include <cstdint>

#include "kernels/kernel_path.h"
#include "runtime/portability.h"

namespace moss {
namespace conv {

constexpr int kChunk = 16;                // input channels per K-step (the leaf's K)
constexpr int kChunkWords = kChunk / 2;   // bf16 pairs per shared-memory row
constexpr int kTileW = 16;                // output pixels per leaf column: 16 of one output row

// M side (output channels), shared with the weight packer: kWarpsM warps of kTilesM leaf tiles,
// the same on both kernel paths and for every precision (the packed layout has one kBlockM).
constexpr int kTilesM = 2;  // 16-channel leaf tiles per warp
constexpr int kWarpsM = 2;
constexpr int kBlockM = kWarpsM * kTilesM * 16;  // output channels per block

// N side (output pixels), the kernel's alone: each warp takes kTilesN output rows of kTileW
// pixels, warps_n warps stack along the rows. Natively 4 warps (16 rows: the 3x3 halo costs
// 18/16 staged rows instead of 10/8, and each staged weight serves 256 pixels), except for the
// split product, whose two planes must stay within 48 KiB of static shared memory (2 warps).
// Portable: 2 waves (8 rows) with both operands double-buffered (2 x 24 KiB at k = 3, the 48 KiB
// limit again: NVIDIA builds run this block too), 1 for the single-buffered split product.
constexpr int kTilesN = 4;
template <bool kPortable>
MOSS_HOST_DEVICE constexpr int warps_n(bool split) { return kPortable ? (split ? 1 : 2) : (split ? 2 : 4); }

MOSS_HOST_DEVICE constexpr int swizzle_word(int word, int row) { return word ^ (((row >> 2) & 1) << 2); }

// Two floats rounded to fp16 (nearest even, subnormals kept) in one word, `even` in bits 15:0:
// the F16 operand pair of both the staged input (kernels/conv2d.hip) and the packed weights.
__device__ inline uint32_t f16_pair(float even, float odd) {
#if MOSS_PLATFORM_NVIDIA
  uint32_t packed;  // the first source fills the high half
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(odd), "f"(even));
  return packed;
#else
  return uint32_t(__builtin_bit_cast(uint16_t, static_cast<_Float16>(even))) |
         (uint32_t(__builtin_bit_cast(uint16_t, static_cast<_Float16>(odd))) << 16);
#endif
}

// Packed weights, one plane of bf16 (or fp16) pairs (uint32 words) per precision part (hi, and lo for the
// split product): [co_tile][chunk][tap][kBlockM][kChunkWords], output channels padded to
// co_tiles·kBlockM and input channels to chunks·16 with zeros, each row swizzled as above. A
// block's weights for one chunk are then one contiguous run of taps·kBlockM·8 words.
MOSS_HOST_DEVICE constexpr int co_tiles(int cout, int per_block) { return (cout + per_block - 1) / per_block; }
inline int chunks(int cin) { return (cin + kChunk - 1) / kChunk; }
inline int64_t packed_words(int cout, int cin, int ksize) {
  return int64_t(co_tiles(cout, kBlockM)) * chunks(cin) * ksize * ksize * kBlockM * kChunkWords;
}

}  // namespace conv
}  // namespace moss
