// Device helpers of the attention kernel that portability.h does not (need to) offer: 16-byte
// global->shared copies that run asynchronously on NVIDIA (cp.async, sm_80+) and as plain
// load+store on AMD, and a raw base-2 exponential (the softmax folds log2(e) into its scale).
#pragma once

#include <cstdint>

#include "kernels/probability_rounding.h"
#include "runtime/portability.h"

// The host emulation of the device (tests/emulation/runtime/portability.h, MOSS_LEAF_EMULATED)
// compiles these with the host compiler: no inline assembly; the copies are plain, exp2 the
// host's, and the probabilities round as the emulated leaf's platform rounds them
// (MOSS_LEAF_EMULATED_TARGET: 0 NVIDIA, 11/12 AMD). Real builds never see it.
#if defined(MOSS_LEAF_EMULATED)
#define MOSS_ATTENTION_DEVICE_ASM 0
#define MOSS_ATTENTION_ROUNDS_AS_NVIDIA (MOSS_LEAF_EMULATED_TARGET == 0)
#else
#define MOSS_ATTENTION_DEVICE_ASM 1
#define MOSS_ATTENTION_ROUNDS_AS_NVIDIA MOSS_PLATFORM_NVIDIA
#endif

namespace moss {
namespace attention_device {

// 16 bytes, the unit of every copy (also the element type of the dynamic shared memory, which
// gives it 16-byte alignment).
struct alignas(16) Chunk16 {
  uint32_t w[4];
};

// dst (shared) = src (global), 16 bytes, both 16-byte aligned. On NVIDIA the copy is only
// issued; it completes at wait_copies() (which a workgroup barrier must follow before other
// threads read dst).
__device__ inline void copy16(void* dst, const void* src) {
#if MOSS_PLATFORM_NVIDIA && MOSS_ATTENTION_DEVICE_ASM
  const unsigned saddr = unsigned(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(saddr), "l"(src) : "memory");
#else
  *static_cast<Chunk16*>(dst) = *static_cast<const Chunk16*>(src);
#endif
}

// Closes the group of copies issued since the last call.
__device__ inline void commit_copies() {
#if MOSS_PLATFORM_NVIDIA && MOSS_ATTENTION_DEVICE_ASM
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits for every committed group of this thread's copies.
__device__ inline void wait_copies() {
#if MOSS_PLATFORM_NVIDIA && MOSS_ATTENTION_DEVICE_ASM
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#endif
}

// 2^x with the hardware's approximate exp2 (NVIDIA ex2.approx.ftz: 2 ulp; AMD v_exp_f32);
// exp2(-inf) = 0, which the masked scores rely on.
__device__ inline float exp2_fast(float x) {
#if !MOSS_ATTENTION_DEVICE_ASM
  return exp2_f(x);
#elif MOSS_PLATFORM_NVIDIA
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return __builtin_amdgcn_exp2f(x);
#endif
}

// A probability (a finite value >= 0, or 0 for a masked key) rounded to bf16 for the P·V product.
// NVIDIA: cvt.rn (round to nearest even, one instruction a pair). AMD: one add a value and half a
// v_perm to pack two, where to_bf16 takes five and the v_perm (kernels/probability_rounding.h: to
// nearest, ties up; bench/sage_attention_fidelity.py measures the attention both ways).
__device__ inline bf16 probability_bf16(float p) {
#if MOSS_ATTENTION_ROUNDS_AS_NVIDIA
  return to_bf16(p);
#else
  return bf16_from_bits(probability_rounding::bf16_bits_half_up(f32_bits(p)));
#endif
}

// The values of `x` computed here, before what follows (AMD): the compiler may otherwise sink a
// WMMA down to the first use of its result, past a wave_priority that was meant to cover it (the
// scores' products ended up after the softmax's priority). An empty asm that reads and writes
// each register pins them; no instruction is emitted. NVIDIA takes no priorities: nothing to pin.
template <class Frag>
__device__ inline void computed_here(Frag& x) {
#if !MOSS_PLATFORM_NVIDIA && MOSS_ATTENTION_DEVICE_ASM
#pragma unroll
  for (auto& v : x.x) asm volatile("" : "+v"(v));
#else
  (void)x;
#endif
}

}  // namespace attention_device
}  // namespace moss
