// The seed of `--seed -1`. Drawn from the kernel with getrandom(2) (glibc 2.25): not
// std::random_device, whose libstdc++ may use arc4random (glibc 2.36), which the release
// binary must not need.
#pragma once
#include <cstdint>

namespace moss {

uint64_t draw_random_seed();  // throws moss::Error (exit 1) when the kernel gives no entropy

}  // namespace moss
