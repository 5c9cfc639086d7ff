// check_device_expect: workgroup
// Deliberately bad kernel: no __launch_bounds__, so the compiler assumes 1024-thread workgroups;
// check_device.sh must fail it (a kernel declares 32, 64, 128 or 256 threads).
#include "runtime/portability.h"

__global__ void unbounded_kernel(float* out) { out[moss::thread_x()] *= 2.0f; }
