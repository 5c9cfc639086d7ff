// THE one header where the AMD / NVIDIA spelling differences of device code live. Every .hip
// file includes this instead of <hip/hip_runtime.h>; nothing else in the repository spells a
// CUDA name (the HIP-on-CUDA shim in runtime/nvidia_shim excepted).
//
// Three ways this header is compiled:
//   NVIDIA  nvcc 13 (-DHIP_TARGET=nvidia): <hip/hip_runtime.h> is the project shim over CUDA.
//   AMD     clang with ROCm 7 (-DHIP_TARGET=gfx...): ROCm's own <hip/hip_runtime.h>.
//   check   clang-19 device-only, no ROCm (hip/check_device.sh): runtime/amd_device_only's
//           minimal header. No device libraries exist there, so on AMD everything below uses
//           compiler builtins only -- in the real build too, so the checked code is the shipped code.
//
// Rules this header encodes (docs/product.md section 1): wave size 32, workgroups of whole waves (32,
// 64, 128 or 256 threads, declared by every kernel), bf16 as `__nv_bfloat16` on CUDA (nvcc 13
// crashes on `__bf16`) and `__bf16` on AMD.
#pragma once

#include <hip/hip_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "util/error.h"

#if defined(__CUDACC__)
#define MOSS_PLATFORM_NVIDIA 1
#define MOSS_PLATFORM_AMD 0
#elif defined(__HIP__)
#define MOSS_PLATFORM_NVIDIA 0
#define MOSS_PLATFORM_AMD 1
#else
#error "runtime/portability.h is for .hip sources (nvcc or clang -x hip)"
#endif

// Device code compiled for sm_90a, whose wgmma, tensor-map copies and setmaxnreg the Hopper
// kernels use (0 in host passes and every other target).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MOSS_DEVICE_SM90A 1
#else
#define MOSS_DEVICE_SM90A 0
#endif

// Functions callable from host and device code alike (e.g. kernels/matrix_layout.h).
#undef MOSS_HOST_DEVICE
#define MOSS_HOST_DEVICE __host__ __device__

namespace moss {

// ---- execution shape ----------------------------------------------------------------------------
constexpr int kWaveSize = 32;       // wave32 on gfx11/gfx12, warp size on NVIDIA
constexpr int kWorkgroupSize = 32;  // a one-wave kernel: __launch_bounds__(kWorkgroupSize)
// The most threads an AMD workgroup of this project has (check_device.sh's rule: a kernel declares
// its launch bound, 32, 64, 128 or 256 threads, never the compiler's default of 1024).
constexpr int kMaxAmdWorkgroupSize = 256;

// Launch bounds of the NVIDIA-sized kernels (more than a wave per block): the block size and, on
// NVIDIA, the blocks per multiprocessor to fit; AMD's __launch_bounds__ takes the block size alone.
#if MOSS_PLATFORM_NVIDIA
#define MOSS_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads, min_blocks)
#else
#define MOSS_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads)
#endif

constexpr bool kPlatformNvidia = MOSS_PLATFORM_NVIDIA;
constexpr const char* kPlatformName = MOSS_PLATFORM_NVIDIA ? "nvidia" : "amd";

// ---- bf16 ---------------------------------------------------------------------------------------
// Device kernels take `const bf16*`; host code holds the same bits as uint16_t (tensor.h helpers)
// and passes them with reinterpret_cast<const bf16*>.
#if MOSS_PLATFORM_NVIDIA
using bf16 = __nv_bfloat16;
__host__ __device__ inline float to_float(bf16 x) { return __bfloat162float(x); }
__host__ __device__ inline bf16 to_bf16(float x) { return __float2bfloat16(x); }  // round to nearest even
__host__ __device__ inline uint16_t bf16_bits(bf16 x) { return __bfloat16_as_ushort(x); }
__host__ __device__ inline bf16 bf16_from_bits(uint16_t b) { return __ushort_as_bfloat16(b); }
#else
using bf16 = __bf16;
__host__ __device__ inline float to_float(bf16 x) { return static_cast<float>(x); }
__host__ __device__ inline bf16 to_bf16(float x) { return static_cast<bf16>(x); }  // round to nearest even
__host__ __device__ inline uint16_t bf16_bits(bf16 x) { return __builtin_bit_cast(uint16_t, x); }
__host__ __device__ inline bf16 bf16_from_bits(uint16_t b) { return __builtin_bit_cast(bf16, b); }
#endif
static_assert(sizeof(bf16) == 2, "bf16 must be 2 bytes");
// Lets templated loaders take fp32 or bf16 activations alike.
__host__ __device__ inline float to_float(float x) { return x; }

// ---- thread ids and barriers --------------------------------------------------------------------
// Blocks are one wave, so the lane is the thread id; the lane comes from the hardware (mbcnt,
// %laneid), not from a flat id, so it stays right in multi-wave code too (docs/matrix_layouts.md 1.3).
#if MOSS_PLATFORM_NVIDIA
__device__ inline unsigned lane_id() {
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}
__device__ inline unsigned thread_x() { return threadIdx.x; }
__device__ inline unsigned block_x() { return blockIdx.x; }
__device__ inline unsigned block_y() { return blockIdx.y; }
__device__ inline unsigned block_z() { return blockIdx.z; }
// Workgroup barrier with shared-memory visibility (__syncthreads).
__device__ inline void sync_workgroup() { __syncthreads(); }
// The wave's issue priority (AMD below); NVIDIA's warp schedulers take no such hint.
template <int kLevel>
__device__ inline void wave_priority() {}
#else
__device__ inline unsigned lane_id() { return __builtin_amdgcn_mbcnt_lo(~0u, 0u); }
__device__ inline unsigned thread_x() { return __builtin_amdgcn_workitem_id_x(); }
__device__ inline unsigned block_x() { return __builtin_amdgcn_workgroup_id_x(); }
__device__ inline unsigned block_y() { return __builtin_amdgcn_workgroup_id_y(); }
__device__ inline unsigned block_z() { return __builtin_amdgcn_workgroup_id_z(); }
// s_barrier alone does not order LDS accesses; the fences make it a full __syncthreads.
__device__ inline void sync_workgroup() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// s_setprio: among the waves of a SIMD ready to issue, those of higher priority (0-3) go first. A
// hint to the hardware only: what a wave computes does not depend on it. The compiler would move
// instructions across a bare s_setprio (the scores' WMMAs ended up after the softmax's priority),
// so scheduling barriers on both sides keep each phase's instructions at its own priority.
template <int kLevel>
__device__ inline void wave_priority() {
  static_assert(kLevel >= 0 && kLevel <= 3, "s_setprio takes 0..3");
  __builtin_amdgcn_sched_barrier(0);
  __builtin_amdgcn_s_setprio(kLevel);
  __builtin_amdgcn_sched_barrier(0);
}
#endif

// ---- math ---------------------------------------------------------------------------------------
// AMD: builtins only (no ROCm device libraries in the check build; __builtin_tanhf has no
// libcall there, so tanh is written through exp).
#if MOSS_PLATFORM_NVIDIA
__device__ inline float abs_f(float x) { return fabsf(x); }
__device__ inline float max_f(float a, float b) { return fmaxf(a, b); }
__device__ inline float exp_f(float x) { return expf(x); }
__device__ inline float fast_exp(float x) { return __expf(x); }  // a few ulp (grows with |x|): softmax, SiLU
__device__ inline float log_f(float x) { return logf(x); }
__device__ inline float sqrt_f(float x) { return sqrtf(x); }
__device__ inline float rsqrt_f(float x) { return rsqrtf(x); }
__device__ inline float tanh_f(float x) { return tanhf(x); }
__device__ inline float fast_rcp(float x) { return __fdividef(1.0f, x); }  // 2 ulp; 0 beyond 2^126
// The hardware's approximation (one MUFU op, relative error about 2^-11): for values that are
// rounded to bf16 right after, where tanhf's twenty-odd instructions would cost more than the
// rounding hides (the GEMM's gated-unit epilogue).
__device__ inline float tanh_fast(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#else
__device__ inline float abs_f(float x) { return __builtin_fabsf(x); }
__device__ inline float max_f(float a, float b) { return __builtin_fmaxf(a, b); }
__device__ inline float exp_f(float x) { return __builtin_expf(x); }
__device__ inline float fast_exp(float x) { return __builtin_amdgcn_exp2f(x * 1.4426950408889634f); }
__device__ inline float log_f(float x) { return __builtin_logf(x); }
__device__ inline float sqrt_f(float x) { return __builtin_sqrtf(x); }
__device__ inline float rsqrt_f(float x) { return __builtin_amdgcn_rsqf(x); }
__device__ inline float tanh_f(float x) {
  const float ax = abs_f(x);
  // Near 0 the exp form cancels; the odd Taylor series is used there (next term < 6e-8 relative).
  // Max relative error over [-20, 20] with exact exp: 4.2e-7.
  if (ax < 0.2f) {
    const float x2 = x * x;
    return x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f))));
  }
  const float t = 1.0f - 2.0f / (__builtin_expf(2.0f * ax) + 1.0f);  // exp overflow gives 1 exactly
  return __builtin_copysignf(t, x);
}
__device__ inline float tanh_fast(float x) { return tanh_f(x); }
__device__ inline float fast_rcp(float x) { return __builtin_amdgcn_rcpf(x); }
#endif
__device__ inline float sigmoid_f(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

// fp32 arithmetic that replays a host formula to the bit (the INT8 ConvRot kernels, the LoRA
// merge in kernels/lora_merge.hip, fp8 P.V's values): mul_rn, add_rn and div_rn are one
// multiplication, addition or division rounded on its own (the division correctly rounded, as the
// host's), never contracted into an fma (nvcc fuses a*b + c by default, clang's HIP default
// fp-contract=fast-honor-pragmas too; nvcc's __fmul_rn/__fadd_rn are never contracted, clang keeps
// the pragma's operations unfused through inlining), so a host loop built with -ffp-contract=off
// replays bit for bit; rint_f rounds to the nearest integer, half to even (nearbyint under the
// default mode); finite_f is isfinite; nan_f a quiet NaN; f32_bits the float's bits.
#if MOSS_PLATFORM_NVIDIA
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline uint32_t f32_bits(float x) { return __float_as_uint(x); }
__device__ inline float rint_f(float x) { return rintf(x); }
__device__ inline bool finite_f(float x) { return isfinite(x); }
__device__ inline float min_f(float a, float b) { return fminf(a, b); }
__device__ inline float nan_f() { return __int_as_float(0x7fc00000); }
#else
__device__ inline float mul_rn(float a, float b) {
#pragma clang fp contract(off)
  return a * b;
}
__device__ inline float add_rn(float a, float b) {
#pragma clang fp contract(off)
  return a + b;
}
// HIP-Clang divides fp32 correctly rounded unless told otherwise (-fhip-fp32-correctly-rounded-
// divide-sqrt is its default, and this project never turns it off).
__device__ inline float div_rn(float a, float b) { return a / b; }
__device__ inline uint32_t f32_bits(float x) { return __builtin_bit_cast(uint32_t, x); }
__device__ inline float rint_f(float x) { return __builtin_rintf(x); }
__device__ inline bool finite_f(float x) { return __builtin_isfinite(x); }
__device__ inline float min_f(float a, float b) { return __builtin_fminf(a, b); }
__device__ inline float nan_f() { return __builtin_bit_cast(float, 0x7fc00000u); }
#endif

// ---- cross-lane ---------------------------------------------------------------------------------
#if MOSS_PLATFORM_NVIDIA
__device__ inline float shfl_xor(float v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask, kWaveSize); }
__device__ inline float shfl(float v, int src_lane) { return __shfl_sync(0xffffffffu, v, src_lane, kWaveSize); }
#else
// ds_bpermute reads the value of the lane whose byte address (lane * 4) is given.
__device__ inline float shfl(float v, int src_lane) {
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(src_lane << 2, __builtin_bit_cast(int, v)));
}
__device__ inline float shfl_xor(float v, int lane_mask) { return shfl(v, int(lane_id()) ^ lane_mask); }
#endif
// Sum / max over the 32 lanes of the wave; every lane gets the result.
__device__ inline float wave_sum(float v) {
#pragma unroll
  for (int m = kWaveSize / 2; m > 0; m /= 2) v += shfl_xor(v, m);
  return v;
}
__device__ inline float wave_max(float v) {
#pragma unroll
  for (int m = kWaveSize / 2; m > 0; m /= 2) v = max_f(v, shfl_xor(v, m));
  return v;
}

// ---- host side: errors and device naming ---------------------------------------------------------
// Throws moss::failure naming the call, file and line when a runtime call fails.
inline void hip_check_result(hipError_t err, const char* call, const char* file, int line) {
  if (err != hipSuccess)
    throw failure(std::string("HIP error: ") + call + " failed: " + hipGetErrorString(err) + " (" + file + ":" +
                  std::to_string(line) + ")");
}
#define MOSS_HIP_CHECK(call) ::moss::hip_check_result((call), #call, __FILE__, __LINE__)

#if !defined(MOSSINFER_HIP_DEVICE_ONLY_CHECK)
// The device's architecture as the build names it: "gfx1100" (feature suffixes such as
// ":sramecc-:xnack-" dropped) or "sm_90".
inline std::string device_arch(const hipDeviceProp_t& p) {
#if MOSS_PLATFORM_NVIDIA
  return "sm_" + std::to_string(p.major * 10 + p.minor);
#else
  std::string arch = p.gcnArchName;
  return arch.substr(0, arch.find(':'));
#endif
}

// The architectures this binary holds device code for.
inline std::vector<std::string> built_device_archs() {
  std::vector<std::string> out;
#if MOSS_PLATFORM_NVIDIA
  for (int a : {__CUDA_ARCH_LIST__}) out.push_back("sm_" + std::to_string(a / 10));
#elif defined(MOSSINFER_HIP_TARGET)
  const std::string list = MOSSINFER_HIP_TARGET;  // "gfx1100,gfx1101,...,gfx1201" (CMakeLists.txt)
  for (size_t begin = 0; begin <= list.size();) {
    const size_t end = std::min(list.find(',', begin), list.size());
    if (end > begin) out.push_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
#endif
  return out;
}
#endif

}  // namespace moss
