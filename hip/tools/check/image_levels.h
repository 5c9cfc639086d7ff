// How far an 8-bit image is from its golden, in levels: the image interleaved ([P, 3], as
// image_to_u8 writes it), the golden planar ([3, P]). For the checks of a decode's 8-bit output
// (moss-check kernels --family vae; vae_cmd.cpp's rule is the same count).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace check {

struct LevelDiff {
  int64_t one_off = 0, worse = 0;  // values one level off, and more than one
  double share_one_off(int64_t pixels) const { return double(one_off) / double(3 * pixels); }
};

inline LevelDiff level_diff(const std::vector<uint8_t>& interleaved, const uint8_t* planar, int64_t pixels) {
  LevelDiff r;
  for (int64_t ch = 0; ch < 3; ++ch)
    for (int64_t px = 0; px < pixels; ++px) {
      const int d = std::abs(int(interleaved[size_t(3 * px + ch)]) - int(planar[ch * pixels + px]));
      r.one_off += d == 1;
      r.worse += d > 1;
    }
  return r;
}

}  // namespace check
