// HIP-on-CUDA shim: the project's own <hip/hip_runtime.h> for the NVIDIA build (nvcc 13, sm_90).
//
// Why it exists: HIP's own NVIDIA headers (hip/nvidia_detail) do not compile with CUDA 13 (45
// errors with Debian's 5.2, 28 with 5.7; newer HIP ships none), see
// docs/toolchain.md section 3. CMake puts this directory on the include path of
// the NVIDIA build, so `#include <hip/hip_runtime.h>` resolves here.
//
// Scope: exactly what the project's runtime and tools call, forwarded one to one to the CUDA
// runtime. Add a forwarder here when the code needs a new call; keep the HIP spelling of the
// name and the HIP argument order. This file and src/runtime/portability.h are the only places
// where CUDA spellings may appear.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>

#ifndef __HIP_PLATFORM_NVIDIA__
#define __HIP_PLATFORM_NVIDIA__ 1
#endif
#define MOSSINFER_HIP_SHIM_CUDA 1

// ---- types ------------------------------------------------------------------------------------
typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaMemcpyKind hipMemcpyKind;
typedef cudaFuncAttribute hipFuncAttribute;
typedef cudaFuncAttributes hipFuncAttributes;
typedef cudaDeviceAttr hipDeviceAttribute_t;
typedef __nv_bfloat16 __hip_bfloat16;
typedef __nv_bfloat162 __hip_bfloat162;

// ---- constants --------------------------------------------------------------------------------
#define hipSuccess cudaSuccess
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorInvalidDevice cudaErrorInvalidDevice
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver

#define hipMemcpyHostToHost cudaMemcpyHostToHost
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault

#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostMallocPortable cudaHostAllocPortable
#define hipHostMallocMapped cudaHostAllocMapped
#define hipHostMallocWriteCombined cudaHostAllocWriteCombined

#define hipStreamDefault cudaStreamDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipEventDefault cudaEventDefault
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventBlockingSync cudaEventBlockingSync

#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeWarpSize cudaDevAttrWarpSize
#define hipDeviceAttributeMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlock
#define hipDeviceAttributeSharedMemPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define hipDeviceAttributeComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define hipDeviceAttributeComputeCapabilityMinor cudaDevAttrComputeCapabilityMinor

// ---- devices and errors -------------------------------------------------------------------------
static inline hipError_t hipGetDeviceCount(int* n) { return cudaGetDeviceCount(n); }
static inline hipError_t hipSetDevice(int d) { return cudaSetDevice(d); }
static inline hipError_t hipGetDevice(int* d) { return cudaGetDevice(d); }
static inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) { return cudaGetDeviceProperties(p, d); }
static inline hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t a, int d) { return cudaDeviceGetAttribute(v, a, d); }
static inline hipError_t hipDeviceSynchronize() { return cudaDeviceSynchronize(); }
static inline hipError_t hipDeviceReset() { return cudaDeviceReset(); }
static inline hipError_t hipRuntimeGetVersion(int* v) { return cudaRuntimeGetVersion(v); }
static inline hipError_t hipDriverGetVersion(int* v) { return cudaDriverGetVersion(v); }
static inline hipError_t hipGetLastError() { return cudaGetLastError(); }
static inline hipError_t hipPeekAtLastError() { return cudaPeekAtLastError(); }
static inline const char* hipGetErrorString(hipError_t e) { return cudaGetErrorString(e); }
static inline const char* hipGetErrorName(hipError_t e) { return cudaGetErrorName(e); }

// ---- memory -----------------------------------------------------------------------------------
static inline hipError_t hipMalloc(void** p, size_t n) { return cudaMalloc(p, n); }
template <class T>
static inline hipError_t hipMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
static inline hipError_t hipFree(void* p) { return cudaFree(p); }
// Pinned (page-locked) host memory; HIP's flags map one to one onto cudaHostAlloc's.
static inline hipError_t hipHostMalloc(void** p, size_t n, unsigned flags = hipHostMallocDefault) {
  return cudaHostAlloc(p, n, flags);
}
template <class T>
static inline hipError_t hipHostMalloc(T** p, size_t n, unsigned flags = hipHostMallocDefault) {
  return cudaHostAlloc(reinterpret_cast<void**>(p), n, flags);
}
static inline hipError_t hipHostFree(void* p) { return cudaFreeHost(p); }
static inline hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total_bytes) { return cudaMemGetInfo(free_bytes, total_bytes); }
static inline hipError_t hipMemcpy(void* dst, const void* src, size_t n, hipMemcpyKind k) { return cudaMemcpy(dst, src, n, k); }
static inline hipError_t hipMemcpyAsync(void* dst, const void* src, size_t n, hipMemcpyKind k, hipStream_t s = nullptr) {
  return cudaMemcpyAsync(dst, src, n, k, s);
}
static inline hipError_t hipMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                          size_t height, hipMemcpyKind k, hipStream_t s = nullptr) {
  return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, k, s);
}
static inline hipError_t hipMemset(void* dst, int v, size_t n) { return cudaMemset(dst, v, n); }
static inline hipError_t hipMemsetAsync(void* dst, int v, size_t n, hipStream_t s = nullptr) { return cudaMemsetAsync(dst, v, n, s); }

// ---- streams and events -------------------------------------------------------------------------
static inline hipError_t hipStreamCreate(hipStream_t* s) { return cudaStreamCreate(s); }
static inline hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned f) { return cudaStreamCreateWithFlags(s, f); }
static inline hipError_t hipStreamDestroy(hipStream_t s) { return cudaStreamDestroy(s); }
static inline hipError_t hipStreamSynchronize(hipStream_t s) { return cudaStreamSynchronize(s); }
static inline hipError_t hipStreamQuery(hipStream_t s) { return cudaStreamQuery(s); }
static inline hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned f = 0) { return cudaStreamWaitEvent(s, e, f); }
static inline hipError_t hipEventCreate(hipEvent_t* e) { return cudaEventCreate(e); }
static inline hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned f) { return cudaEventCreateWithFlags(e, f); }
static inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = nullptr) { return cudaEventRecord(e, s); }
static inline hipError_t hipEventSynchronize(hipEvent_t e) { return cudaEventSynchronize(e); }
static inline hipError_t hipEventQuery(hipEvent_t e) { return cudaEventQuery(e); }
static inline hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  return cudaEventElapsedTime(ms, start, stop);
}
static inline hipError_t hipEventDestroy(hipEvent_t e) { return cudaEventDestroy(e); }

// ---- kernels ----------------------------------------------------------------------------------
template <class F>
static inline hipError_t hipFuncSetAttribute(F* f, hipFuncAttribute a, int v) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(f), a, v);
}
template <class F>
static inline hipError_t hipFuncGetAttributes(hipFuncAttributes* out, F* f) {
  return cudaFuncGetAttributes(out, reinterpret_cast<const void*>(f));
}
// HIP's launch macro over CUDA's triple-chevron launch (same argument order).
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
  kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)

// ---- warp shuffles: HIP's mask-free spellings over the _sync forms (full 32-lane warp) ----------
#ifdef __CUDACC__
// HIP_NAME(v, lane_arg, width) is CUDA_NAME(full mask, v, lane_arg, width); the four differ only
// in their names and the type of the lane argument.
#define MOSS_SHIM_SHUFFLE(HIP_NAME, CUDA_NAME, LaneArg)                                      \
  template <class T>                                                                         \
  __device__ __forceinline__ T HIP_NAME(T v, LaneArg lane_arg, int width = 32) {             \
    return CUDA_NAME(0xffffffffu, v, lane_arg, width);                                       \
  }
MOSS_SHIM_SHUFFLE(__shfl, __shfl_sync, int)
MOSS_SHIM_SHUFFLE(__shfl_xor, __shfl_xor_sync, int)
MOSS_SHIM_SHUFFLE(__shfl_down, __shfl_down_sync, unsigned)
MOSS_SHIM_SHUFFLE(__shfl_up, __shfl_up_sync, unsigned)
#undef MOSS_SHIM_SHUFFLE
#endif
