// check_device_expect: dynamic-stack
// Deliberately bad kernel: real recursion needs a stack of unknown depth; check_device.sh must fail it.
#include "runtime/portability.h"

__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__global__ __launch_bounds__(moss::kWorkgroupSize) void recursive_kernel(const int* n, int* out) {
  out[moss::thread_x()] = fib(n[moss::thread_x()]);
}
