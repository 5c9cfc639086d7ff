// check_device_expect: spill
// Deliberately bad kernel: 48 live floats squeezed into 16 VGPRs must spill; check_device.sh must fail it.
#include "runtime/portability.h"

__global__ __launch_bounds__(moss::kWorkgroupSize) __attribute__((amdgpu_num_vgpr(16))) void spill_kernel(float* data) {
  float v[48];
  for (int i = 0; i < 48; ++i) v[i] = data[i * 32 + moss::thread_x()];
  float acc = 0.0f;
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 48; ++i) acc += v[i] * v[(i + r) % 48];
  for (int i = 0; i < 48; ++i) data[i * 32 + moss::thread_x()] = v[i] * acc;
}
