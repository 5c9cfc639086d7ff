#include "model/image_u8.h"

#include <cmath>
#include <stdexcept>

namespace moss {

uint8_t image_value_to_u8(float v) {
  // v/2 is exact, so this is torch's (v / 2 + 0.5).clamp(0, 1) * 255 rounded half to even
  // (nearbyint in the default rounding mode). A NaN becomes 0 rather than an undefined cast.
  float t = v * 0.5f + 0.5f;
  if (!(t > 0.0f)) t = 0.0f;
  if (t > 1.0f) t = 1.0f;
  return uint8_t(std::nearbyint(t * 255.0f));
}

std::vector<uint8_t> image_to_u8(const Tensor& image) {
  if (image.where != Where::Host || image.dtype != DType::F32 || image.rank != 3 || image.shape[0] != 3 ||
      !image.contiguous())
    throw std::invalid_argument("image_to_u8: the image must be a contiguous host f32 [3, H, W], got " +
                                image.shape_str());
  const int64_t P = image.shape[1] * image.shape[2];
  const float* src = image.ptr<const float>();
  std::vector<uint8_t> out(size_t(3 * P));
  for (int64_t p = 0; p < P; ++p)
    for (int64_t c = 0; c < 3; ++c) out[size_t(3 * p + c)] = image_value_to_u8(src[c * P + p]);
  return out;
}

}  // namespace moss
