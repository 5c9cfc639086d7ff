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

// channels·gh·gw values (a multiple of 16, else usage_error), row-major [C, gh, gw].
std::vector<float> initial_noise(uint64_t seed, int64_t channels, int64_t gh, int64_t gw);

}  // namespace moss
