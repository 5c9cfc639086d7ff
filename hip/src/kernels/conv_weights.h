// Packs a convolution's fp32 weights into the bf16 tiles the implicit-GEMM kernel stages
// (kernels/conv2d_layout.h), once per call: the kernel then copies each block's weights for a
// K-step as one contiguous run of 16-byte chunks, with no conversion in its inner loop.
#pragma once

#include <cstdint>

#include "kernels/conv2d.h"
#include "runtime/portability.h"

namespace moss {

// w: f32 [cout, cin, ksize, ksize]. hi receives conv::packed_words(cout, cin, ksize) words in the
// operand type of `precision`: bf16 pairs (Bf16, Bf16x3) or fp16 pairs (F16, unscaled), rounded
// to nearest even. lo (Bf16x3 only, else null) receives bf16(w − hi), so that hi + lo carries
// about 16 mantissa bits of w.
void conv_pack_weights(const float* w, int cout, int cin, int ksize, ConvPrecision precision, uint32_t* hi,
                       uint32_t* lo, hipStream_t stream);

}  // namespace moss
