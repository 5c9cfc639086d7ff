// NVIDIA Hopper (sm_90a) machinery shared by the wgmma kernels (the GEMM's GemmKernel::Wgmma in
// kernels/gemm.hip, the attention kernel in kernels/attention_hopper.h), as inline PTX, and the
// host-side tensor maps the copy engine reads through:
//   - mbarriers: the full/empty handshake between a producer thread and consumer warps;
//   - cp.async.bulk.tensor (TMA): one 2-D box of an operand per load, written into shared memory
//     with the 128-byte swizzle, completion counted in bytes on an mbarrier; and the GEMM's output
//     boxes stored back from shared memory the same way;
//   - wgmma ordering (fence, commit, wait) and the accumulator pin (f32, and s32 for int8);
//   - setmaxnreg: registers moved from a producer warpgroup to the consumers.
// The layouts both sides use are modelled and proved in gemm_layout::sw128 (and, for the
// attention's V operand, attention_layout::hopper). wgmma and setmaxnreg exist only on the sm_90a
// target (CMakeLists builds every NVIDIA .hip for it). Nothing here exists on AMD.
#pragma once

#include <cstdint>

#include "kernels/gemm_layout.h"
#include "runtime/portability.h"

#if MOSS_PLATFORM_NVIDIA
#include <string>

#include "runtime/nvidia_hopper.h"
#include "util/error.h"

// A tensor map kernel parameter must stay in parameter space (the copy engine reads it there):
// __grid_constant__ forbids the local copy that taking its address would otherwise make.
#define MOSS_GRID_CONSTANT __grid_constant__

// Accumulator operands of the wgmma wrappers: PTX takes a warpgroup's fragment as a brace list of
// scalar registers, so each element is its own operand, "+f" for f32 accumulators, "+r" for the
// s32 ones of the int8 products. MOSS_WGMMA_ACC64_AS(c, d, b) names d[b] .. d[b+63] in order (an
// m64n128 fragment, or half of an m64n256 one) with constraint c; MOSS_WGMMA_ACC64 is the f32 form.
#define MOSS_WGMMA_ACC8_AS(c, d, b)                                                                    \
  c(d[(b) + 0]), c(d[(b) + 1]), c(d[(b) + 2]), c(d[(b) + 3]), c(d[(b) + 4]), c(d[(b) + 5]), c(d[(b) + 6]), \
      c(d[(b) + 7])
#define MOSS_WGMMA_ACC64_AS(c, d, b)                                                                      \
  MOSS_WGMMA_ACC8_AS(c, d, (b) + 0), MOSS_WGMMA_ACC8_AS(c, d, (b) + 8), MOSS_WGMMA_ACC8_AS(c, d, (b) + 16),      \
      MOSS_WGMMA_ACC8_AS(c, d, (b) + 24), MOSS_WGMMA_ACC8_AS(c, d, (b) + 32), MOSS_WGMMA_ACC8_AS(c, d, (b) + 40), \
      MOSS_WGMMA_ACC8_AS(c, d, (b) + 48), MOSS_WGMMA_ACC8_AS(c, d, (b) + 56)
#define MOSS_WGMMA_ACC64(d, b) MOSS_WGMMA_ACC64_AS("+f", d, b)
// The accumulator operands' placeholders in a wgmma's text, in register order: the first 64, and
// the next 64 of an n256 product (the descriptors and the predicate follow them).
#define MOSS_WGMMA_D0_63 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define MOSS_WGMMA_D64_127 \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

namespace moss {
namespace hopper {

using nvidia::TensorMap;

using nvidia::TmaElement;

// A 2-D tensor [rows, cols] (row stride ld elements; ld times the element size a multiple of 16,
// base 16-byte aligned) as the copy engine moves it to and from shared memory: boxes of 128 bytes
// of a row x box_rows rows, laid out with the 128-byte swizzle (gemm_layout::sw128::tma_address).
inline TensorMap swizzled_tensor_map(const void* base, TmaElement element, int64_t rows, int64_t cols, int64_t ld,
                                     int box_rows, nvidia::L2Promotion l2) {
  return nvidia::swizzled_2d_tensor_map(base, element, rows, cols, ld,
                                        gemm_layout::sw128::kRowBytes / nvidia::tma_element_bytes(element), box_rows, l2);
}

// A K-major operand [rows, k] (bf16, or the int8 GEMM's bytes): boxes of one 128-byte k-step (64
// bf16 or 128 int8) x box_rows rows. Boxes reaching past the operand (M, N or K tails) are filled
// with zeros, and still count their full size on the mbarrier.
static_assert(gemm_layout::sw128::kBK * 2 == gemm_layout::sw128::kRowBytes, "a k-step is one 128-byte box row");
inline TensorMap kmajor_tensor_map(const void* base, int64_t rows, int64_t k, int64_t ld, int box_rows,
                                   TmaElement element = TmaElement::BF16) {
  return swizzled_tensor_map(base, element, rows, k, ld, box_rows, nvidia::L2Promotion::Lines256);
}

// A row-major output [rows, cols] that the copy engine writes from shared memory (the boxes laid
// out as swizzled_tensor_map says); parts of a box past the output are not written (M and N tails).
inline TensorMap store_tensor_map(void* base, bool bf16, int64_t rows, int64_t cols, int64_t ld, int box_rows) {
  return swizzled_tensor_map(base, bf16 ? TmaElement::BF16 : TmaElement::F32, rows, cols, ld, box_rows,
                             nvidia::L2Promotion::None);
}

// ---- device ------------------------------------------------------------------------------------
// Stops the kernel: the body of a wgmma kernel compiled for a target without wgmma.
__device__ inline void unsupported_target() { __trap(); }

// Registers per thread a block of `threads` starts with under __launch_bounds__(threads, 1): the
// 64 Ki register file shared out, rounded down to the allocation granule of 8 (168 for 384).
constexpr int entry_registers(int threads) { return 65536 / threads / 8 * 8; }
// Whether warp-specialised setmaxnreg budgets fit the block's allocation (valid budgets: multiples
// of 8 in 24..256, the producers giving registers up and the consumers taking them). More than the
// allocation hangs (the pool never has enough); we also require exactly the allocation, the
// balance every known-good kernel keeps (the GEMM's 40/232, FlashAttention-3's 24/240: 168 x 384),
// since a report of a hang with fewer (CUTLASS issue 2007, 24/232) was answered "make it equal".
constexpr bool register_budgets_fit(int producer_threads, int producer_regs, int consumer_threads, int consumer_regs) {
  return producer_regs % 8 == 0 && consumer_regs % 8 == 0 && 24 <= producer_regs &&
         producer_regs <= entry_registers(producer_threads + consumer_threads) &&
         entry_registers(producer_threads + consumer_threads) <= consumer_regs && consumer_regs <= 256 &&
         producer_threads * producer_regs + consumer_threads * consumer_regs ==
             entry_registers(producer_threads + consumer_threads) * (producer_threads + consumer_threads);
}

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

// Shared memory at `src` (a box as store_tensor_map lays it out, 1024-aligned) -> the box at
// (col0, row0) of the output behind `map`, in this thread's current bulk group.
__device__ inline void tma_store_2d(const TensorMap* map, uint32_t src, int col0, int row0) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(col0), "r"(row0), "r"(src)
               : "memory");
}
// Closes this thread's current bulk group (the stores issued since the last commit).
__device__ inline void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until the copy engine has read the shared memory of every group this thread committed (the
// block may then reuse or release it; the writes to global memory finish on their own).
__device__ inline void tma_store_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// The number of blocks in the grid's x dimension (a persistent kernel's stride over its tiles).
__device__ inline int grid_blocks_x() {
  unsigned n;
  asm("mov.u32 %0, %%nctaid.x;" : "=r"(n));
  return int(n);
}
// Makes this thread's ordinary shared-memory writes visible to the copy engine (the async proxy).
__device__ inline void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Barrier `id` (1..15; 0 is the block barrier) among `threads` threads, whole warps.
__device__ inline void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// This warp's arrival at barrier `id` among `threads` threads, without waiting for the others
// (the signalling side of a hand-off between warpgroups that wait with named_barrier).
__device__ inline void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ inline void store_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ inline void store_shared_v2f32(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}

// Register budget per thread of this warpgroup from here on (a multiple of 8, 24..256); the
// kernel needs a register cap at entry (__launch_bounds__(threads, 1)). The registers move through
// a per-CTA pool that holds only what the block was launched with (entry_registers x threads):
// .dec puts the difference into the pool, .inc spins (USETMAXREG.TRY_ALLOC in a loop) until the
// pool has its difference -- forever when the budgets add up to more (register_budgets_fit).
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

// d[kFirst .. kFirst + 63] (+)= A[64 x 16] · B[128 x 16]ᵀ for one warpgroup (m64n128k16), both
// operands K-major in shared memory through descriptors; d's registers in the order of
// gemm_layout::sw128::accumulator. accumulate 0 overwrites them (scale-d false), 1 adds to them;
// the rest of d is untouched. The attention kernel's S = Q·Kᵀ (d of 64, kFirst 0) and the GEMM's
// column halves of a 64 x 256 accumulator (kFirst 0 or 64, gemm_hopper.h) share it.
template <int kFirst, int N>
__device__ inline void wgmma_m64n128k16(float (&d)[N], uint64_t desc_a, uint64_t desc_b, int accumulate) {
  static_assert(kFirst >= 0 && kFirst + 64 <= N, "64 accumulators inside d");
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      MOSS_WGMMA_D0_63
      "}, %64, %65, p, 1, 1, 0, 0;\n\t}"
      : MOSS_WGMMA_ACC64(d, kFirst)
      : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}

// The accumulators are written asynchronously, behind the compiler's back: this empty asm pins
// each register at this point (no reads moved above a wait, no writes moved below a fence).
template <int N>
__device__ inline void fence_accumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// The same for the s32 accumulators of the int8 products.
template <int N>
__device__ inline void fence_accumulators(int32_t (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

}  // namespace hopper
}  // namespace moss
#endif  // MOSS_PLATFORM_NVIDIA
