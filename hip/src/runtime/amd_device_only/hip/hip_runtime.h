// Stand-in for <hip/hip_runtime.h> used ONLY by hip/check_device.sh, which compiles the kernel
// sources device-only for the AMD targets (hip/amd_targets.txt) with Debian's clang-19 and no ROCm
// (`-nogpuinc -nogpulib --offload-device-only`, docs/toolchain.md section 1).
//
// In that mode no host code is generated: host functions in a kernel source (launchers) are
// parsed and type-checked but never emitted, so the host API below is declarations only. Device
// code must not need the ROCm device libraries: src/runtime/portability.h reaches thread ids,
// barriers, shuffles and math through compiler builtins on AMD, in this mode and in the real
// ROCm build alike, so the checked code is the shipped code.
//
// The real AMD build (-DHIP_TARGET=gfx...) never sees this directory; it uses ROCm 7's header.
#pragma once

#include <cstddef>

#if !defined(__HIP__)
#error "amd_device_only/hip/hip_runtime.h is for clang -x hip device-only checks"
#endif

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#define MOSSINFER_HIP_DEVICE_ONLY_CHECK 1

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(max_threads) __attribute__((amdgpu_flat_work_group_size(1, max_threads)))

struct dim3 {
  unsigned x, y, z;
  constexpr __host__ __device__ dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

enum hipError_t { hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorOutOfMemory = 2 };
typedef struct ihipStream_t* hipStream_t;

hipError_t hipGetLastError();
const char* hipGetErrorString(hipError_t e);

// clang lowers `kernel<<<grid, block, shmem, stream>>>(...)` through this function; it only
// has to be declared for a device-only compile.
extern "C" hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shmem = 0, hipStream_t stream = nullptr);
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
  kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)
