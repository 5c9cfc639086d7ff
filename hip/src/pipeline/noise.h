// The initial noise (docs/model.md section 5): torch.randn((1, C, gh, gw)) from a CPU generator
// seeded with the seed, reproduced on the host: MT19937 seeded with the seed's low 32 bits, one
// 24-bit uniform per element, Box-Muller over blocks of 16. Layout c128hw (channel-major).
#pragma once
#include <cstdint>
#include <vector>

namespace moss {

// The 32-bit Mersenne Twister (MT19937) with the reference seeding (init_genrand).
class Mt19937 {
 public:
  explicit Mt19937(uint32_t seed);
  uint32_t next();

 private:
  void twist();
  uint32_t state_[624];
  int index_;
};

// Successive torch.randn((1, C, gh, gw)) draws of one CPU generator seeded with the seed: the
// first is the initial noise; ancestral and SDE samplers take the noise they add from the
// following draws, one per noise the sampler adds (docs/samplers.md), so a seed reproduces an
// image and Python reproduces the stream with torch.Generator().manual_seed(seed).
class NoiseStream {
 public:
  explicit NoiseStream(uint64_t seed);
  // channels·gh·gw values (a multiple of 16, else usage_error), row-major [C, gh, gw].
  std::vector<float> next(int64_t channels, int64_t gh, int64_t gw);

 private:
  Mt19937 rng_;
};

// The stream's first draw.
std::vector<float> initial_noise(uint64_t seed, int64_t channels, int64_t gh, int64_t gw);

}  // namespace moss
