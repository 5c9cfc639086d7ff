#include "pipeline/noise.h"

#include <cmath>
#include <string>

#include "util/error.h"

namespace moss {

Mt19937::Mt19937(uint32_t seed) : index_(624) {
  state_[0] = seed;
  for (uint32_t i = 1; i < 624; ++i) state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + i;
}

void Mt19937::twist() {
  constexpr uint32_t kUpper = 0x80000000u, kLower = 0x7fffffffu, kMatrix = 0x9908b0dfu;
  for (int i = 0; i < 624; ++i) {
    const uint32_t y = (state_[i] & kUpper) | (state_[(i + 1) % 624] & kLower);
    state_[i] = state_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? kMatrix : 0u);
  }
  index_ = 0;
}

uint32_t Mt19937::next() {
  if (index_ >= 624) twist();
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

// torch's CPU generator keeps only the low 32 bits of the seed.
NoiseStream::NoiseStream(uint64_t seed) : rng_(uint32_t(seed & 0xffffffffu)) {}

std::vector<float> initial_noise(uint64_t seed, int64_t channels, int64_t gh, int64_t gw) {
  return NoiseStream(seed).next(channels, gh, gw);
}

std::vector<float> NoiseStream::next(int64_t channels, int64_t gh, int64_t gw) {
  Mt19937& rng = rng_;
  const int64_t n = channels * gh * gw;
  if (channels <= 0 || gh <= 0 || gw <= 0 || n % 16 != 0)
    throw usage_error("initial noise needs a positive element count that is a multiple of 16 (got " +
                      std::to_string(channels) + "x" + std::to_string(gh) + "x" + std::to_string(gw) + ")");
  std::vector<float> z(static_cast<size_t>(n));
  // Uniforms in [0, 1) from the low 24 bits of each 32-bit output, one per element, all first.
  for (float& u : z) u = float(rng.next() & 0xffffffu) * 0x1p-24f;
  // Box-Muller within each block of 16: the first 8 uniforms give radii, the last 8 angles.
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (int64_t b = 0; b < n; b += 16) {
    float* d = z.data() + b;
    for (int j = 0; j < 8; ++j) {
      const float u1 = 1.0f - d[j];  // (0, 1] for the log
      const float u2 = d[j + 8];
      const float radius = std::sqrt(-2.0f * std::log(u1));
      // 2π·u2 as one fp32 product, like torch's vectorised fill (within an ulp of the golden).
      const float theta = float(kTwoPi) * u2;
      d[j] = radius * std::cos(theta);
      d[j + 8] = radius * std::sin(theta);
    }
  }
  return z;
}

}  // namespace moss
