// check_device: matrix
// check_device_expect: matrix
// Deliberately bad kernel: marked as a matrix kernel but computes its dot product on the vector
// ALU; check_device.sh must fail it for having no bf16 or f16 matrix instruction.
#include "runtime/portability.h"

__global__ __launch_bounds__(moss::kWorkgroupSize) void scalar_dot_kernel(const moss::bf16* a, const moss::bf16* b,
                                                                         float* out, int k) {
  float acc = 0.0f;
  for (int i = 0; i < k; ++i) acc += moss::to_float(a[i]) * moss::to_float(b[moss::thread_x() * k + i]);
  out[moss::thread_x()] = acc;
}
