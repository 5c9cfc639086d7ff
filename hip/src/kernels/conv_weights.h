// Packs a convolution's fp32 weights into the bf16 tiles the implicit-GEMM kernel stages
// (kernels/conv2d_layout.h), once per call: the kernel then copies each block's weights for a
// K-step as one contiguous run of 16-byte chunks, with no conversion in its inner loop.
#pragma once

#include <cstdint>

#include "runtime/portability.h"

namespace moss {

// w: f32 [cout, cin, ksize, ksize]. hi (and lo when non-null) receive conv::packed_words(cout,
// cin, ksize) words each: hi = bf16(w) and lo = bf16(w − hi), rounded to nearest even, so that
// hi + lo carries about 16 mantissa bits of w.
void conv_pack_weights(const float* w, int cout, int cin, int ksize, uint32_t* hi, uint32_t* lo,
                       hipStream_t stream);

}  // namespace moss
