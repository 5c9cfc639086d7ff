// Helpers of the tiled matrix kernels (kernels/gemm.hip, kernels/conv2d.hip): 16-byte chunks moved from global to
// shared memory, and bf16 pairs packed from shared memory for the matrix leaf.
//
// Async copies: on NVIDIA a chunk goes global -> shared without registers (cp.async.cg, sm_80+),
// completion tracked in commit groups; on AMD there is no such path, so a chunk is loaded into
// registers by the caller and stored to LDS later (see TileLoader in gemm.hip), and the group
// functions are no-ops. The PTX lives here, not in runtime/portability.h, because only the
// tiled kernels use it (kernel-local helpers for cp.async-style buffering).
#pragma once

#include <cstdint>

#include "runtime/portability.h"

namespace moss {
namespace tile {

// 16 bytes with 16-byte alignment: the unit of every operand move (4 f32 or 8 bf16).
struct alignas(16) Chunk16 {
  uint32_t w[4];
};

// Register moves of a chunk. On AMD they go word by word through a vector type so that clang
// keeps chunks in registers (a conditional whole-struct copy lands in scratch memory).
#if MOSS_PLATFORM_NVIDIA
__device__ inline Chunk16 load_chunk_or_zero(const void* src, bool full) {
  Chunk16 c = {{0u, 0u, 0u, 0u}};
  if (full) c = *static_cast<const Chunk16*>(src);
  return c;
}
__device__ inline void store_chunk(void* dst, const Chunk16& c) { *static_cast<Chunk16*>(dst) = c; }
#else
__device__ inline Chunk16 load_chunk_or_zero(const void* src, bool full) {
  typedef unsigned v4u __attribute__((ext_vector_type(4)));
  v4u v = {0u, 0u, 0u, 0u};
  if (full) v = *static_cast<const v4u*>(src);
  Chunk16 c;
  c.w[0] = v.x;
  c.w[1] = v.y;
  c.w[2] = v.z;
  c.w[3] = v.w;
  return c;
}
__device__ inline void store_chunk(void* dst, const Chunk16& c) {
  typedef unsigned v4u __attribute__((ext_vector_type(4)));
  const v4u v = {c.w[0], c.w[1], c.w[2], c.w[3]};
  *static_cast<v4u*>(dst) = v;
}
#endif

// Copies one aligned 16-byte chunk from global to shared memory, asynchronously on NVIDIA;
// with `full` false nothing is read and the 16 bytes are zeros (`src` must still be a valid
// address). AMD has no asynchronous path: the plain copy is there for completeness.
__device__ inline void copy16_async_zfill(void* smem_dst, const void* gmem_src, bool full) {
#if MOSS_PLATFORM_NVIDIA
  uint32_t dst;
  asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(dst) : "l"(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(full ? 16 : 0)
               : "memory");
#else
  store_chunk(smem_dst, load_chunk_or_zero(gmem_src, full));
#endif
}

// The same for a chunk that lies wholly inside its source (kernels/conv2d.hip uses this one).
__device__ inline void copy16_async(void* smem_dst, const void* gmem_src) {
  copy16_async_zfill(smem_dst, gmem_src, true);
}

// Closes the group of copies issued since the last commit.
__device__ inline void commit_copies() {
#if MOSS_PLATFORM_NVIDIA
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `kPending` committed groups of this thread are still in flight. The
// copies are visible to other threads only after a following workgroup barrier.
template <int kPending>
__device__ inline void wait_copies() {
#if MOSS_PLATFORM_NVIDIA
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Two floats rounded to bf16 (nearest even) in one register, `lo` in bits 15:0.
__device__ inline uint32_t pack_bf16_pair(float lo, float hi) {
#if MOSS_PLATFORM_NVIDIA
  uint32_t packed;  // one instruction; its first source fills the high half
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(packed) : "f"(hi), "f"(lo));
  return packed;
#else
  return uint32_t(bf16_bits(to_bf16(lo))) | (uint32_t(bf16_bits(to_bf16(hi))) << 16);
#endif
}

// Two consecutive elements (k, k+1) as one bf16x2 register: the low half holds element k (the
// leaf's slot packing). `p` is 4-byte aligned for bf16 and 8-byte aligned for f32.
__device__ inline uint32_t load_bf16_pair(const bf16* p) { return *reinterpret_cast<const uint32_t*>(p); }
__device__ inline uint32_t load_bf16_pair(const float* p) {
  // One 8-byte read as an integer: compilers split a float-pair struct into two 4-byte reads.
  const uint64_t bits = *reinterpret_cast<const uint64_t*>(p);
  return pack_bf16_pair(__builtin_bit_cast(float, uint32_t(bits)), __builtin_bit_cast(float, uint32_t(bits >> 32)));
}

}  // namespace tile
}  // namespace moss
