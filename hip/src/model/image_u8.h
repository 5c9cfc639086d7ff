// The decoder's image as 8-bit RGB (docs/model.md section 6, docs/vae.md section 4.1, as
// diffusers' image processor does it): u8 = round_half_even(clamp(v/2 + 0.5, 0, 1)·255),
// computed in fp32.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace moss {

// One value of the decoder's output as an 8-bit level.
uint8_t image_value_to_u8(float v);

// image_chw: host f32 [3, H, W] (channels R, G, B). Returns H·W·3 bytes, HWC order.
std::vector<uint8_t> image_to_u8(const Tensor& image_chw);

}  // namespace moss
