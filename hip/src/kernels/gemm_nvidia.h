// NVIDIA-only instructions of the GEMM's mma kernel (GemmKernel::Mma in kernels/gemm.hip):
// shared-memory addresses, ldmatrix.x4 and one raw mma.sync m16n8k16, as inline PTX (sm_80+), and
// the thread-block-cluster instructions of its split-K reduction (sm_90).
// Which lane addresses which row, and what each lane receives, is kernels/gemm_layout.h (proven
// there against kernels/matrix_layout.h's NVIDIA fragments). cp.async comes from
// kernels/tile_copy.h. Nothing here exists on AMD, where the kernel is not built.
#pragma once

#include <cstdint>

#include "runtime/portability.h"
#include "kernels/gemm_layout.h"

#if MOSS_PLATFORM_NVIDIA
namespace moss {
namespace gemm_nv {

// The 32-bit shared-state-space address of a pointer into shared memory (what ldmatrix takes).
__device__ inline uint32_t shared_address(const void* p) {
  uint32_t a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// Four 8x8 b16 matrices: lanes 8q..8q+7 give the 16-byte-aligned row addresses of matrix q;
// r[q] receives row lane/4, elements 2(lane%4), +1 of matrix q (gemm_layout.h). Volatile keeps it
// on its side of the barriers around it.
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// d += A·B for one 16x8x16 block: a = ldmatrix registers of an A fragment, b0/b1 = the two
// registers of one n8 tile; d in the order of gemm_layout::c_element.
__device__ inline void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- thread-block clusters (sm_90): the split-K reduction of the Mma kernel -------------------
// Every thread of every block of the cluster arrives, then waits for all: shared-memory writes
// before it (release) are visible to the cluster's reads after it (acquire). All threads of each
// block must execute it (aligned).
__device__ inline void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The address of the same shared-memory location in block `rank` of the cluster.
__device__ inline uint32_t cluster_address(uint32_t local, uint32_t rank) {
  uint32_t a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(local), "r"(rank));
  return a;
}
// Two floats (8-byte aligned) from any block's shared memory in the cluster.
__device__ inline void load_cluster_pair(float& v0, float& v1, uint32_t address) {
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v0), "=f"(v1) : "r"(address) : "memory");
}

}  // namespace gemm_nv
}  // namespace moss
#endif
