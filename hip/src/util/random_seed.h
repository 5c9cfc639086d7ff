// The seed of `--seed -1`. Drawn from the kernel with getrandom(2) (glibc 2.25): not
// std::random_device, whose libstdc++ may use arc4random (glibc 2.36), which the release
// binary must not need. Below 2^32, as A1111 draws them: JavaScript clients (LibreChat,
// SillyTavern) read a seed as a double, and a 64-bit one comes back rounded, another seed.
#pragma once
#include <cstdint>

namespace moss {

uint64_t draw_random_seed();  // 0 .. 2^32-1; throws moss::Error (exit 1) when the kernel gives no entropy

}  // namespace moss
