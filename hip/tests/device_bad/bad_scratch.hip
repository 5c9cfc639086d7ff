// check_device_expect: scratch
// Deliberately bad kernel for tests/suites/device_check.cmake: a private array indexed by a
// run-time value cannot live in registers, so it goes to scratch memory; check_device.sh must fail it.
#include "runtime/portability.h"

__global__ __launch_bounds__(moss::kWorkgroupSize) void scratch_kernel(const int* idx, float* out) {
  float local[64];
  for (int i = 0; i < 64; ++i) local[i] = out[i * 32 + moss::thread_x()];
  out[moss::thread_x()] = local[idx[moss::thread_x()] & 63];
}
