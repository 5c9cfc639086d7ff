// The VAE's 3x3 / 1x1 convolution as an implicit GEMM on the matrix leaf (VaeOps::conv2d):
// out[co, y, x] = bias[co] + Σ w[co, ci, ky, kx]·in'[ci, y + ky − k/2, x + kx − k/2] (+ residual)
// where in' is the NCHW fp32 input seen through the optional group norm + SiLU (applied as the
// values are staged), the optional nearest-2x upsampling (in the addressing) and zero padding.
// No im2col buffer, no normalised or upsampled copy; bias and residual in the epilogue.
//
// Design (kernels/conv2d_layout.h has the tile constants):
//   - a block computes kBlockM output channels x kBlockRows output rows of 16 pixels;
//   - per K-step of 16 input channels it stages, in shared memory, the (rows + k − 1) x (16 + k − 1)
//     input patch of those channels (normalised, rounded to the operand type: one 16-byte pair of
//     vectors per pixel) and the block's packed weights for all k² taps (contiguous 16-byte
//     chunks, async on NVIDIA), then runs k² leaf K-steps, reading both operands as 16-bit pairs
//     (bank-conflict free through the half swizzle); the portable path double-buffers both;
//   - each warp owns kTilesM x kTilesN leaf tiles; fp32 accumulators stay in registers.
// Precision (ConvPrecision):
//   Bf16    both operands rounded to bf16 (8-bit significand): ~1.6e-3 relative L2 per conv.
//   Bf16x3  both split into bf16 hi + lo, lo·hi + hi·lo + hi·hi (kernels/split_leaf.h): ~1.2e-5
//           (measured on the H200), fp32-class, three products per leaf step (AMD's decode until
//           the portable leaf gained the f16 WMMA; kept as the check's fp32-class reference row).
//   F16     both operands rounded to fp16 (11-bit significand, the same as TF32, which is what
//           the reference decode gets from cuDNN's default fp32 convolutions), one product
//           (the leaf's mma<true>: v_wmma_f32_16x16x16_f16 on gfx11/gfx12, mma.sync ...f16 on
//           NVIDIA). The decode's precision on every platform and kernel path. The staged input is scaled by 2^-8 (undone
//           exactly in the epilogue) so fp16's range holds inputs up to 1.6e7 in magnitude (the
//           raw residual stream read by the upsample and shortcut convs is unbounded in
//           principle); values below 2^-6 then become fp16 subnormals with an absolute error
//           of at most 2^-25·2^8 = 7.6e-6, far below the 2^-12 relative rounding of the rest.
//           Expected ~4e-4 relative L2 per conv (two TF32-like roundings).
// Why F16: host emulation of the tiny golden decode (hip/tests/data, two cases, conv operands
// rounded as each precision would; fp32 elsewhere) against image_fp64 / image_u8:
//   fp32           rel L2 2.2e-6, 8-bit: 0-2 values one level off
//   f16 (2^-8)     rel L2 1.3e-3-1.4e-3, max 3.7e-3; 8-bit: ~5% one off, none two, mean 0.05 levels
//   f16 unscaled   the same (the scale costs nothing)
//   bf16 w only    (x split hi + lo, w bf16: two products) rel L2 6.4e-3-7.1e-3; 18-38 values 2+ off
//   bf16           rel L2 1.1e-2; ~250 values 2+ levels off
// The golden rule (8-bit: no value two levels off; image within 1e-2 relative L2) passes only
// from F16 up, and F16 is the cheapest of those (one product, one plane).
#pragma once

#include <cstdint>

#include "kernels/group_norm.h"
#include "runtime/portability.h"

namespace moss {

enum class ConvPrecision : uint8_t { Bf16, Bf16x3, F16 };
const char* conv_precision_name(ConvPrecision p);  // "bf16", "bf16x3", "f16"

// The staged input's scale under F16 (a power of two: exact both ways; see above).
constexpr float kConvF16InputScale = 1.0f / 256.0f;

// Device pointers. out must not overlap x; residual may equal out (each element is read, then
// written, by the same thread) but must not overlap it otherwise.
struct Conv2dArgs {
  const float* x = nullptr;  // [cin, h, w]
  int cin = 0, h = 0, w = 0;
  const uint32_t* w_hi = nullptr;  // packed weights (kernels/conv_weights.h): bf16 or f16 pairs
  const uint32_t* w_lo = nullptr;  // their lo parts; needed by Bf16x3
  int cout = 0, ksize = 3;         // ksize 1 or 3, padding ksize / 2
  const float* bias = nullptr;     // [cout]
  const ChannelNorm* norm = nullptr;  // [cin] per-channel group norm applied on load, or null
  bool silu = false;                  // SiLU after the norm (only with norm)
  bool upsample2x = false;            // read in[c, ⌊y/2⌋, ⌊x/2⌋]: out is [cout, 2h, 2w]
  const float* residual = nullptr;    // [cout, ho, wo] added last, or null
  float* out = nullptr;               // [cout, ho, wo]
};

// Launches on `stream`; throws moss::failure on a bad shape or a failed launch.
void conv2d(const Conv2dArgs& args, ConvPrecision precision, hipStream_t stream);

}  // namespace moss
