// NVIDIA Hopper (sm_90a) instructions of the GEMM's wgmma kernel (GemmKernel::Wgmma in
// kernels/gemm.hip), as inline PTX, and the host-side tensor maps the copy engine reads through.
//   - mbarriers: the full/empty handshake between the producer thread and the consumer warps;
//   - cp.async.bulk.tensor (TMA): one 2-D box of an operand per stage and operand, written into
//     shared memory with the 128-byte swizzle, completion counted in bytes on an mbarrier;
//   - wgmma.mma_async m64n256k16 (bf16 in, f32 accumulators), both operands from shared memory
//     through matrix descriptors (gemm_layout::sw128 models and proves the layout both sides use);
//   - setmaxnreg: registers moved from the producer warpgroup to the consumers.
// wgmma and setmaxnreg exist only on the sm_90a target (CMakeLists builds every NVIDIA .hip for
// it). Nothing here exists on AMD.
#pragma once

#include <cstdint>

#include "kernels/gemm_layout.h"
#include "runtime/portability.h"

#if MOSS_PLATFORM_NVIDIA
#include <cuda.h>            // CUtensorMap and its enums only: the encoder comes through the runtime,
#include <cudaTypedefs.h>    // so the program needs no libcuda link

#include <string>

#include "util/error.h"

// A tensor map kernel parameter must stay in parameter space (the copy engine reads it there):
// __grid_constant__ forbids the local copy that taking its address would otherwise make.
#define MOSS_GRID_CONSTANT __grid_constant__

namespace moss {
namespace gemm_hopper {

using TensorMap = CUtensorMap;

// ---- host: tensor maps ---------------------------------------------------------------------------
// cuTensorMapEncodeTiled is a driver function; the runtime hands out its address, so the program
// needs no link against libcuda (the static runtime loads the driver itself).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encoder = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn)
      throw failure(std::string("gemm: the CUDA driver has no cuTensorMapEncodeTiled (") + cudaGetErrorString(e) + ")");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encoder;
}

// A K-major bf16 operand [rows, k] with row stride ld (elements; ld * 2 a multiple of 16, base
// 16-byte aligned): boxes of 64 k x box_rows rows, written to shared memory with the 128-byte
// swizzle (gemm_layout::sw128::tma_address). Boxes reaching past the operand (M or N tails) are
// filled with zeros, and still count their full size on the mbarrier.
inline TensorMap kmajor_tensor_map(const void* base, int64_t rows, int64_t k, int64_t ld, int box_rows) {
  TensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(k), cuuint64_t(rows)};  // innermost first
  const cuuint64_t strides[1] = {cuuint64_t(ld) * 2};            // bytes, of dims 1..
  const cuuint32_t box[2] = {cuuint32_t(gemm_layout::sw128::kBK), cuuint32_t(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims,
                                          strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw failure("gemm: cuTensorMapEncodeTiled failed (error " + std::to_string(int(r)) + ") for " +
                  std::to_string(rows) + "x" + std::to_string(k) + " bf16, ld " + std::to_string(ld));
  return map;
}

// ---- device ------------------------------------------------------------------------------------
// Stops the kernel: the body of a wgmma kernel compiled for a target without wgmma.
__device__ inline void unsupported_target() { __trap(); }

__device__ inline uint32_t shared_address(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

// mbarrier in shared memory (8 bytes, 8-byte aligned). `count` arrivals complete a phase (plus,
// for the full barriers, the bytes announced by arrive_expect_tx).
__device__ inline void mbarrier_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the copy engine (async proxy) before first use.
__device__ inline void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;" ::: "memory");
}
// One arrival that also announces `bytes` of copies that will complete on this barrier.
__device__ inline void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ inline void mbarrier_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Waits until the phase of parity `parity` has completed (phases alternate 0, 1, 0, ...; a fresh
// barrier is in phase 0). try_wait suspends for a while in hardware before it returns false.
__device__ inline void mbarrier_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// Keeps the tensor map's cache line warm before the first copy.
__device__ inline void prefetch_tensor_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// The box at (k0, row0) of the operand behind `map` into shared memory at `dst` (1024-aligned),
// completing `bytes` on barrier `bar`.
__device__ inline void tma_load_2d(uint32_t dst, const TensorMap* map, int k0, int row0, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(k0), "r"(row0), "r"(bar)
      : "memory");
}

// Register budget per thread of this warpgroup from here on (a multiple of 8, 24..256); the
// kernel needs a register cap at entry (__launch_bounds__(threads, 1)).
template <int kRegs>
__device__ inline void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ inline void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// wgmma ordering: fence before the first wgmma that touches registers written by ordinary
// instructions (the zeroed accumulators); commit closes a group of issued wgmmas; wait<N> returns
// when at most N groups are still running.
__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// The accumulators are written asynchronously, behind the compiler's back: this empty asm pins
// each register at this point (no reads moved above a wait, no writes moved below a fence).
template <int N>
__device__ inline void fence_accumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d[64 x 256] += A[64 x 16] · B[256 x 16]ᵀ for one warpgroup, both operands K-major in shared
// memory (descriptors: gemm_layout::sw128::step_descriptor); d in the order of
// gemm_layout::sw128::accumulator. Scale-d is 1 (predicate p: accumulate; the caller zeroes d first); no
// negation, no transposes (imm-trans 0 = K-major).
__device__ inline void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p, 1, 1, 0, 0;\n\t}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

}  // namespace gemm_hopper
}  // namespace moss
#endif  // MOSS_PLATFORM_NVIDIA
