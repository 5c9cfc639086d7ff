// The VAE's 3x3 / 1x1 convolution as an implicit GEMM on the matrix leaf (VaeOps::conv2d):
// out[co, y, x] = bias[co] + Σ w[co, ci, ky, kx]·in'[ci, y + ky − k/2, x + kx − k/2] (+ residual)
// where in' is the NCHW fp32 input seen through the optional group norm + SiLU (applied as the
// values are staged), the optional nearest-2x upsampling (in the addressing) and zero padding.
// No im2col buffer, no normalised or upsampled copy; bias and residual in the epilogue.
//
// Design (kernels/conv2d_layout.h has the tile constants):
//   - a block computes kBlockM output channels x kBlockRows output rows of 16 pixels;
//   - per K-step of 16 input channels it stages, in shared memory, the (rows + k − 1) x (16 + k − 1)
//     input patch of those channels (normalised, rounded to bf16: one 16-byte pair of vectors per
//     pixel) and the block's packed weights for all k² taps (contiguous 16-byte chunks, async on
//     NVIDIA), then runs k² leaf K-steps, reading both operands as bf16 pairs (bank-conflict
//     free through the half swizzle);
//   - each warp owns kTilesM x kTilesN leaf tiles; fp32 accumulators stay in registers.
// Precision: Bf16 rounds both operands to bf16 (~3e-3 relative); Bf16x3 splits both into
// bf16 hi + lo and accumulates lo·hi + hi·lo + hi·hi (kernels/split_leaf.h), ~5e-6 relative,
// i.e. fp32-class results at three times the matrix work. The VAE decode uses Bf16x3: its
// 8-bit output must match an fp32 decode to within a few values one level off.
#pragma once

#include <cstdint>

#include "kernels/group_norm.h"
#include "runtime/portability.h"

namespace moss {

enum class ConvPrecision : uint8_t { Bf16, Bf16x3 };
const char* conv_precision_name(ConvPrecision p);  // "bf16", "bf16x3"

// Device pointers. out must not overlap x; residual may equal out (each element is read, then
// written, by the same thread) but must not overlap it otherwise.
struct Conv2dArgs {
  const float* x = nullptr;  // [cin, h, w]
  int cin = 0, h = 0, w = 0;
  const uint32_t* w_hi = nullptr;  // packed weights (kernels/conv_weights.h)
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
