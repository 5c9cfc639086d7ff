// The emulation tests' one comparison of a kernel's float with the host op's: the same bits, or
// both NaN (a NaN's payload is not part of the ops' contract).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

inline bool same_bits(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}
