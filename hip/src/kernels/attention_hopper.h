// The NVIDIA Hopper attention kernel (FlashAttention-3 style on wgmma + TMA; docs/nvidia_kernels.md
// sets it beside the GEMM and says how its speed is judged), included by
// kernels/attention.hip on NVIDIA only; attention_forward picks it for head dim 128, bidirectional,
// bf16 q/k/v read in place (16-byte aligned rows), positive scale (AttentionTiling::Default and
// Wgmma). Everything else keeps the mma.sync flash kernel (attention_flash_nvidia.h).
// (Its first H200 run hung: the setmaxnreg budgets asked for more registers than the block holds;
// with budgets that add up exactly, see hopper::register_budgets_fit, it passes 67/67 checks.)
//
// Work split. A block of 3 warpgroups (384 threads, one block per SM) owns 128 consecutive
// queries of one head:
//   - warpgroup 0, the producer: gives up registers (setmaxnreg) and one thread asks the copy
//     engine (TMA, 128-byte swizzle, boxes of 64 dims x 128 rows, rows past T zero-filled) for the
//     Q tile once, then walks the keys in tiles of 128, loading the K tile and the V tile of each
//     into a 2-stage ring (full/empty mbarriers per stage and operand, as the GEMM's);
//   - warpgroups 1, 2, the consumers, own query rows 64c..64c+63. Per key tile:
//       S = Q·Kᵀ     8 x wgmma m64n128k16, Q and K K-major from shared memory (64 fp32 per thread);
//       softmax      keys past tk masked to -inf, row max over the quad of lanes sharing a row,
//                    base-2 exponentials with scale·log2(e) folded into one FFMA, one rescale of O;
//       P            the exponentials as bf16 pairs in registers: the wgmma A fragment directly;
//       O += P·V     8 x wgmma m64n128k16 with A from registers and V MN-major (transposed B).
//     FA3's intra-warpgroup overlap: S of tile t is issued together with P·V of tile t-1, and
//     the softmax of tile t runs while that P·V is still in the tensor cores (a serial variant,
//     each product awaited before the next step, measured slower and is gone). And FA3's
//     inter-warpgroup pingpong: the two consumers issue their products in turns (named barriers
//     1 and 2), so one's softmax overlaps the other's products.
//   - at the end each consumer divides by the row sums (reduced over the quad) and stores O as f32
//     or bf16 column pairs, masked at tq.
// Register layout of the accumulators (S and O alike; gemm_layout::sw128::accumulator): thread t of
// the consumer warpgroup (warp w = t / 32, lane l, g = l / 4) holds 64 floats; register i is row
// 16w + g + 8·h with h = (i / 2) % 2 (attention_layout::hopper::row_half), column 8·(i / 4) +
// 2·(l % 4) + i % 2. So each thread holds rows g and g + 8 of its warp's 16, and each row is
// spread over the 4 lanes of a quad (reductions: xor 1, xor 2). The P operand of key step kk is
// registers 8kk..8kk+7 paired (attention_layout::hopper::p_register, proved there).
// Shared memory: Q 32 KiB + 2 stages x (K 32 KiB + V 32 KiB) = 160 KiB, 1024-aligned, plus
// barriers (attention_layout::hopper proves every descriptor against the copy engine's layout).
#pragma once

#if MOSS_PLATFORM_NVIDIA
#include <cstdint>
#include <limits>

#include "kernels/attention.h"
#include "kernels/attention_device.h"
#include "kernels/attention_layout.h"
#include "kernels/hopper_common.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace attention_hopper {

namespace hl = attention_layout::hopper;

struct Shape {
  static constexpr int kConsumers = 2, kWarpgroup = 128, kThreads = (kConsumers + 1) * kWarpgroup;
  static constexpr int kQueryRows = kConsumers * 64;  // wgmma M per consumer
  static constexpr int kKeys = hl::kTileRows, kStages = 2;
  static constexpr int kTileBytes = hl::kTileBytes;
  // Barriers after the tiles: q_full, then per stage k_full, k_empty, v_full, v_empty.
  static constexpr int kBarrierBytes = 8 * (1 + 4 * kStages);
  // Slack to align the tiles to 1024 bytes (dynamic shared memory is only 16-byte aligned).
  static constexpr int kSmemBytes =
      int(hl::v_offset(kStages - 1)) + kTileBytes + kBarrierBytes + gemm_layout::sw128::kAtomBytes;
  // setmaxnreg budgets: the producer a minimum (its thread uses 9), a consumer O (64) + S (64) +
  // P (32) + addresses (189 used). They must fit the block's allocation, 168 x 384 at entry
  // (hopper::register_budgets_fit): 32/240 was 1024 registers short, so one consumer warpgroup's
  // setmaxnreg.inc spun forever (the hang of the first H200 run).
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  static_assert(kQueryRows == hl::kTileRows, "one Q box row per query");
  static_assert(kStages == 2, "the layout proofs cover stages 0 and 1");
  static_assert(kSmemBytes <= 227 * 1024, "tiles exceed the H200's 227 KiB of shared memory per block");
  static_assert(hopper::register_budgets_fit(kWarpgroup, kProducerRegs, kConsumers * kWarpgroup, kConsumerRegs),
                "setmaxnreg budgets exceed the block's register allocation: the consumers' setmaxnreg.inc would "
                "wait forever");
};

// What the kernel needs besides the tensor maps.
struct Args {
  void* out = nullptr;
  int64_t ld_out = 0;
  bool out_bf16 = false;
  bool out_pairs = false;  // column pairs may be stored as one 4/8-byte word
  int tq = 0, tk = 0, group = 1, head_dim = 0;
  float scale_log2 = 0;  // softmax scale · log2(e), > 0
};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kLog2e = 1.4426950408889634f;

// d[64 x 128] += A[64 x 16] · B[16 x 128] for one warpgroup, A from registers (four bf16 pairs per
// thread in the order of attention_layout::hopper::a_fragment), B MN-major in shared memory
// (imm-trans-b 1; attention_layout::hopper::v_step_descriptor).
__device__ inline void wgmma_m64n128k16_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %69, 0;\n\t"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      MOSS_WGMMA_D0_63
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n\t}"
      : MOSS_WGMMA_ACC64(d, 0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// The P registers are read by wgmma asynchronously: this pins their values until after the wait
// that retires the product (keeps them live, so their registers are not reused earlier).
template <int N>
__device__ inline void fence_registers(uint32_t (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// One consumer warpgroup's state and steps. t: thread in the warpgroup; c: consumer index.
struct Consumer {
  float o[64];   // O accumulators (gemm_layout::sw128::accumulator order, columns = dims)
  float s[64];   // scores of the current tile, then their exponentials
  uint32_t p[32];  // P as bf16 pairs: key step kk in p[4kk..4kk+3]
  float m[2], l[2];  // running max (raw score units) and per-lane sum of rows h = 0, 1
  int lane;

  // S = Q·Kᵀ for this consumer's 64 rows and the 128 keys of the tile at k_tile; one group.
  __device__ void issue_scores(uint32_t q_tile, uint32_t k_tile, int c) {
    hopper::wgmma_fence();
    hopper::wgmma_m64n128k16<0>(s, hl::kmajor_step_descriptor(q_tile, 64 * c, 0),
                                hl::kmajor_step_descriptor(k_tile, 0, 0), 0);
#pragma unroll
    for (int kk = 1; kk < hl::kK16Steps; ++kk)
      hopper::wgmma_m64n128k16<0>(s, hl::kmajor_step_descriptor(q_tile, 64 * c, kk),
                                  hl::kmajor_step_descriptor(k_tile, 0, kk), 1);
    hopper::wgmma_commit();
  }

  // O += P·V for the 128 keys of the tile at v_tile; one group.
  __device__ void issue_pv(uint32_t v_tile) {
    hopper::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < hl::kKeySteps; ++kk) {
      const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
      wgmma_m64n128k16_rs(o, a, hl::v_step_descriptor(v_tile, kk));
    }
    hopper::wgmma_commit();
  }

  // Online softmax of the scores of the tile at key k0 (s holds them, fp32): masks keys >= tk,
  // updates m and l, leaves the exponentials in s and returns in alpha the factors that rescale
  // the rows' previous O and sums.
  __device__ void softmax(int k0, const Args& a, float (&alpha)[2]) {
    if (k0 + hl::kTileRows > a.tk) {
#pragma unroll
      for (int i = 0; i < 64; ++i)
        if (k0 + gemm_layout::sw128::accumulator(lane, i).col >= a.tk) s[i] = kNegInf;
    }
    float mx[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int i = 0; i < 64; ++i) mx[hl::row_half(i)] = max_f(mx[hl::row_half(i)], s[i]);
    float base[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = max_f(mx[h], shfl_xor(mx[h], 1));  // the quad of lanes sharing the row
      mx[h] = max_f(mx[h], shfl_xor(mx[h], 2));
      const float m_new = max_f(m[h], mx[h]);
      // Every tile holds a key < tk, so m_new is finite; the guard keeps exp2 away from NaN anyway.
      base[h] = m_new == kNegInf ? 0.0f : m_new * a.scale_log2;
      alpha[h] = attention_device::exp2_fast(m[h] * a.scale_log2 - base[h]);  // m = -inf: 0
      m[h] = m_new;
    }
#pragma unroll
    for (int i = 0; i < 64; ++i) {
      const int h = hl::row_half(i);
      s[i] = attention_device::exp2_fast(fmaf(s[i], a.scale_log2, -base[h]));
      sum[h] += s[i];
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) l[h] = l[h] * alpha[h] + sum[h];
  }

  __device__ void rescale(const float (&alpha)[2]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] *= alpha[hl::row_half(i)];
  }

  // The exponentials as the A fragments of P·V (register 8kk + 2j, 8kk + 2j + 1 -> p[4kk + j]).
  __device__ void make_p() {
#pragma unroll
    for (int j = 0; j < 32; ++j) p[j] = tile::pack_bf16_pair(s[2 * j], s[2 * j + 1]);
  }

  // O / l to out rows q0 + 64c.. (those < tq), columns col0.., as f32 or bf16 pairs.
  __device__ void store(const Args& a, int row0, int64_t col0, int t) {
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[h];
      sum += shfl_xor(sum, 1);
      sum += shfl_xor(sum, 2);
      inv[h] = sum > 0.0f ? 1.0f / sum : 0.0f;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + gemm_layout::sw128::accumulator(t, 2 * h).row;
      if (row >= a.tq) continue;
      const int64_t row_at = int64_t(row) * a.ld_out + col0;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const int i = 4 * j + 2 * h;
        const int64_t at = row_at + gemm_layout::sw128::accumulator(t, i).col;
        const float x = o[i] * inv[h], y = o[i + 1] * inv[h];
        if (a.out_bf16) {
          bf16* const dst = static_cast<bf16*>(a.out) + at;
          if (a.out_pairs) {
            *reinterpret_cast<uint32_t*>(dst) = tile::pack_bf16_pair(x, y);
          } else {
            dst[0] = to_bf16(x);
            dst[1] = to_bf16(y);
          }
        } else {
          float* const dst = static_cast<float*>(a.out) + at;
          if (a.out_pairs) {
            *reinterpret_cast<float2*>(dst) = make_float2(x, y);
          } else {
            dst[0] = x;
            dst[1] = y;
          }
        }
      }
    }
  }
};

__global__ __launch_bounds__(Shape::kThreads, 1) void attention_wgmma_kernel(
    const MOSS_GRID_CONSTANT hopper::TensorMap q_map, const MOSS_GRID_CONSTANT hopper::TensorMap k_map,
    const MOSS_GRID_CONSTANT hopper::TensorMap v_map, const Args a) {
#if MOSS_DEVICE_SM90A
  using S = Shape;
  extern __shared__ tile::Chunk16 attention_wgmma_smem[];
  const uint32_t smem = hopper::shared_address(attention_wgmma_smem);
  const uint32_t tiles0 = (smem + gemm_layout::sw128::kAtomBytes - 1) & ~uint32_t(gemm_layout::sw128::kAtomBytes - 1);
  const uint32_t q_tile = tiles0 + hl::q_offset();
  auto k_tile = [&](int s) { return tiles0 + hl::k_offset(s); };
  auto v_tile = [&](int s) { return tiles0 + hl::v_offset(s); };
  const uint32_t barriers = v_tile(S::kStages - 1) + uint32_t(S::kTileBytes);
  const uint32_t q_full = barriers;
  auto k_full = [&](int s) { return barriers + uint32_t(8 * (1 + s)); };
  auto k_empty = [&](int s) { return barriers + uint32_t(8 * (1 + S::kStages + s)); };
  auto v_full = [&](int s) { return barriers + uint32_t(8 * (1 + 2 * S::kStages + s)); };
  auto v_empty = [&](int s) { return barriers + uint32_t(8 * (1 + 3 * S::kStages + s)); };

  const int tid = int(thread_x());
  if (tid == 0) {
    hopper::mbarrier_init(q_full, 1);
    for (int s = 0; s < S::kStages; ++s) {
      hopper::mbarrier_init(k_full(s), 1);                    // the producer's arrive_expect_tx (+ bytes)
      hopper::mbarrier_init(v_full(s), 1);
      hopper::mbarrier_init(k_empty(s), S::kConsumers * 4);  // lane 0 of every consumer warp
      hopper::mbarrier_init(v_empty(s), S::kConsumers * 4);
    }
    hopper::fence_barrier_init();
  }
  sync_workgroup();

  const int q0 = int(block_x()) * S::kQueryRows;
  const int head = int(block_y()), kv_head = head / a.group;
  const int tiles = (a.tk + S::kKeys - 1) / S::kKeys;
  const int warpgroup = tid / S::kWarpgroup;
  if (warpgroup == 0) {
    // ---- producer ----
    hopper::setmaxnreg_dec<S::kProducerRegs>();
    if (tid == 0) {
      hopper::prefetch_tensor_map(&q_map);
      hopper::prefetch_tensor_map(&k_map);
      hopper::prefetch_tensor_map(&v_map);
      // A tile = kBoxes boxes of 64 dims; the column of box b of head h is 128h + 64b.
      auto load_tile = [&](uint32_t dst, const hopper::TensorMap* map, int head_index, int row0, uint32_t bar) {
        hopper::mbarrier_arrive_expect_tx(bar, uint32_t(S::kTileBytes));
#pragma unroll
        for (int b = 0; b < hl::kBoxes; ++b)
          hopper::tma_load_2d(dst + uint32_t(b * hl::kBoxBytes), map, head_index * hl::kHeadDim + b * hl::kBoxDims,
                              row0, bar);
      };
      load_tile(q_tile, &q_map, head, q0, q_full);
      for (int t = 0; t < tiles; ++t) {
        const int s = t % S::kStages;
        // Use u = t / kStages of slot s: wait for the consumers' release of use u - 1 (the u-th
        // completion of its empty barrier, parity (u - 1) & 1); the first kStages uses find it free.
        const uint32_t parity = uint32_t((t / S::kStages + 1) & 1);
        if (t >= S::kStages) hopper::mbarrier_wait(k_empty(s), parity);
        load_tile(k_tile(s), &k_map, kv_head, t * S::kKeys, k_full(s));
        if (t >= S::kStages) hopper::mbarrier_wait(v_empty(s), parity);
        load_tile(v_tile(s), &v_map, kv_head, t * S::kKeys, v_full(s));
      }
    }
  } else {
    // ---- consumers ----
    hopper::setmaxnreg_inc<S::kConsumerRegs>();
    const int c = warpgroup - 1, t = tid % S::kWarpgroup;
    const bool arrives = t % kWaveSize == 0;  // lane 0 of each warp releases stages
    Consumer w;
    w.lane = int(lane_id());
#pragma unroll
    for (int i = 0; i < 64; ++i) w.o[i] = 0.0f;
    for (int h = 0; h < 2; ++h) {
      w.m[h] = kNegInf;
      w.l[h] = 0.0f;
    }
    hopper::fence_accumulators(w.o);
    auto wait_k = [&](int kt) { hopper::mbarrier_wait(k_full(kt % S::kStages), uint32_t((kt / S::kStages) & 1)); };
    auto wait_v = [&](int kt) { hopper::mbarrier_wait(v_full(kt % S::kStages), uint32_t((kt / S::kStages) & 1)); };
    auto release_k = [&](int kt) {
      if (arrives) hopper::mbarrier_arrive(k_empty(kt % S::kStages));
    };
    auto release_v = [&](int kt) {
      if (arrives) hopper::mbarrier_arrive(v_empty(kt % S::kStages));
    };
    // Pingpong between the consumers (FA3's inter-warpgroup overlap): each issues its products only
    // in its turn, so one warpgroup's softmax runs while the other's products fill the tensor
    // cores, instead of both computing exponentials at once while the tensor cores idle. Turn
    // barrier 1 + c is consumer c's: it waits there (its 128 threads) for the other's 128 arrivals,
    // given once the other has issued its products. Every consumer has tiles + 1 turns (scores of
    // tile 0, then scores and P·V together, then the last P·V). Consumer 1 hands consumer 0 its
    // first turn, so it gives one arrival fewer at the end: every barrier sees exactly as many
    // arrivals as waits, and nothing is left pending when the block exits.
    constexpr int kTurnThreads = 2 * S::kWarpgroup;
    int turns = tiles + 1;
    auto take_turn = [&] { hopper::named_barrier(1 + c, kTurnThreads); };
    auto end_turn = [&] {
      if (--turns > 0 || c == 0) hopper::named_barrier_arrive(2 - c, kTurnThreads);
    };
    if (c == 1) hopper::named_barrier_arrive(1, kTurnThreads);
    hopper::mbarrier_wait(q_full, 0);

    float alpha[2];
    // Tile 0: scores, softmax (O is still zero: no rescale), P.
    wait_k(0);
    take_turn();
    w.issue_scores(q_tile, k_tile(0), c);
    end_turn();
    hopper::wgmma_wait<0>();
    hopper::fence_accumulators(w.s);
    release_k(0);
    w.softmax(0, a, alpha);
    w.make_p();
    for (int kt = 1; kt < tiles; ++kt) {
      wait_k(kt);
      wait_v(kt - 1);
      take_turn();
      w.issue_scores(q_tile, k_tile(kt % S::kStages), c);    // group: S of tile kt
      w.issue_pv(v_tile((kt - 1) % S::kStages));             // group: P·V of tile kt-1
      end_turn();
      hopper::wgmma_wait<1>();                               // S done (groups retire in order)
      hopper::fence_accumulators(w.s);
      release_k(kt);
      w.softmax(kt * S::kKeys, a, alpha);                    // while P·V runs
      hopper::wgmma_wait<0>();
      hopper::fence_accumulators(w.o);
      fence_registers(w.p);
      release_v(kt - 1);
      w.rescale(alpha);
      w.make_p();
    }
    wait_v(tiles - 1);
    take_turn();
    w.issue_pv(v_tile((tiles - 1) % S::kStages));
    end_turn();
    hopper::wgmma_wait<0>();
    hopper::fence_accumulators(w.o);
    fence_registers(w.p);
    release_v(tiles - 1);
    w.store(a, q0 + 64 * c, int64_t(head) * a.head_dim, t);
  }
#else
  // Built for a target without wgmma (CMakeLists insists on sm_90a): never launched there.
  hopper::unsupported_target();
#endif
}

// Whether the kernel serves p (attention_forward has checked the K/V alignment already).
inline bool fits(const AttentionParams& p) {
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  return p.head_dim == hl::kHeadDim && !p.causal && p.q_bf16 && p.scale > 0 && p.ldq % 8 == 0 && aligned(p.q) &&
         p.k_head_stride == hl::kHeadDim && p.v_head_stride == hl::kHeadDim && p.ldk % 8 == 0 && p.ldv % 8 == 0 &&
         aligned(p.k) && aligned(p.v) && p.heads % p.kv_heads == 0;
}

// Launches the kernel for p (fits(p) holds).
inline void launch(const AttentionParams& p, hipStream_t stream) {
  using S = Shape;
  // Q [tq, heads·128], K and V [tk, kv_heads·128] as bf16 matrices; a head's tile is two boxes.
  const hopper::TensorMap q_map =
      hopper::kmajor_tensor_map(p.q, p.tq, int64_t(p.heads) * hl::kHeadDim, p.ldq, S::kQueryRows);
  const hopper::TensorMap k_map =
      hopper::kmajor_tensor_map(p.k, p.tk, int64_t(p.kv_heads) * hl::kHeadDim, p.ldk, S::kKeys);
  const hopper::TensorMap v_map =
      hopper::kmajor_tensor_map(p.v, p.tk, int64_t(p.kv_heads) * hl::kHeadDim, p.ldv, S::kKeys);
  Args a;
  a.out = p.out;
  a.ld_out = p.ld_out;
  a.out_bf16 = p.out_bf16;
  a.out_pairs = p.ld_out % 2 == 0 && reinterpret_cast<uintptr_t>(p.out) % (p.out_bf16 ? 4 : 8) == 0;
  a.tq = p.tq;
  a.tk = p.tk;
  a.group = p.heads / p.kv_heads;
  a.head_dim = p.head_dim;
  a.scale_log2 = p.scale * kLog2e;
  auto kernel = attention_wgmma_kernel;
  MOSS_HIP_CHECK(hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes));
  const dim3 grid(unsigned((p.tq + S::kQueryRows - 1) / S::kQueryRows), unsigned(p.heads));
  hipLaunchKernelGGL(kernel, grid, dim3(S::kThreads), size_t(S::kSmemBytes), stream, q_map, k_map, v_map, a);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace attention_hopper
}  // namespace moss
#endif  // MOSS_PLATFORM_NVIDIA
