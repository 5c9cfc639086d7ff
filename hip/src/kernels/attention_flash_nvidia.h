// The NVIDIA flash-attention kernel (FlashAttention-2 style on mma.sync m16n8k16), included by
// kernels/attention.hip on NVIDIA only; attention_forward picks it for head dims up to 128.
//
// Work split. A workgroup of 4 warps owns 128 consecutive queries of one head; warp w owns query
// rows 32w..32w+31 as two 16-row tiles (two row tiles per warp halve the shared-memory reads per
// mma: every K/V fragment read feeds both). The workgroup walks the keys in tiles of 64: K and V
// tiles [key][D] are copied with cp.async into a double buffer (tile t+1 in flight while tile t is
// computed; keys past tk are zero-filled), one barrier per tile. Q is staged once in shared memory
// as bf16. All tiles are XOR-swizzled and read with ldmatrix (attention_layout::flash proves the
// maps). Per tile and row tile a warp computes S (16 x 64, fp32 registers), the online softmax in
// base 2 (one rescale of the output per tile), packs P to bf16 in registers as the A operand
// (accumulator layout = A layout) and adds P·V (V through ldmatrix.trans). At the end it divides
// by the row sums and stores f32 or bf16.
//
// Registers per thread: O 2 x D/8 x 4 (128 at D = 128), S 2 x 8 x 4 (64); two workgroups per
// multiprocessor (__launch_bounds__(128, 2): up to 255 registers), 96 KiB of shared memory each.
#pragma once

#if MOSS_PLATFORM_NVIDIA
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/attention.h"
#include "kernels/attention_device.h"
#include "kernels/attention_layout.h"
#include "kernels/gemm_nvidia.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace attention_flash {

namespace fl = attention_layout::flash;
// kKeysPerTile: keys per K/V tile; kScoreTileCount: row tiles whose scores are computed together,
// sharing each K fragment (2: fewer shared-memory reads; 1: 32 fewer live score registers).
template <int kD, int kKeysPerTile, int kScoreTileCount>
struct Shape {
  static constexpr int D = kD;
  static constexpr int kWarps = 4, kRowTiles = 2, kThreads = kWarps * 32;
  static constexpr int kQueryRows = kWarps * kRowTiles * 16;  // 128
  static constexpr int kKeys = kKeysPerTile;
  static constexpr int kScoreTiles = kScoreTileCount;
  static_assert(kKeys % 16 == 0 && kRowTiles % kScoreTiles == 0, "flash: whole key and row tiles");
  static constexpr int kChunks = D / 8;                       // 16-byte chunks per row
  static constexpr int kRowBytes = D * 2;
  static constexpr int kQBytes = kQueryRows * kRowBytes, kTileBytes = kKeys * kRowBytes;
  static constexpr int kSmemBytes = kQBytes + 4 * kTileBytes;  // Q, then per stage K and V
  // Copies: thread tid moves chunk tid % kChunks of rows tid / kChunks + i·kRowsPerPass, so its
  // chunk and its rows' swizzle (row % 8) stay fixed.
  static constexpr int kRowsPerPass = kThreads / kChunks;
  static_assert(D % 64 == 0 && D <= 128, "flash: D of 64 or 128 (rows a multiple of 128 bytes, one chunk per thread)");
  static_assert(kRowsPerPass % 8 == 0, "flash: a copy pass keeps each thread's swizzle");
};

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kLog2e = 1.4426950408889634f;

// ldmatrix.x4 (kTrans: .trans, each 8x8 matrix delivered transposed, attention_layout::flash::
// delivered_trans) at shared address base + (lane_offset ^ kXor) + kAdd. The XOR sits inside the
// asm so that the compiler computes it at the read instead of keeping one offset register per
// chunk pair for the whole kernel (attention_layout::flash::lane_offset, pair_xor).
template <bool kTrans, int kXor, int kAdd>
__device__ inline void ldsm_x4(uint32_t (&r)[4], uint32_t base, uint32_t lane_offset) {
  if constexpr (kTrans)
    asm volatile(
        "{ .reg .b32 a; xor.b32 a, %5, %6; add.u32 a, a, %4; "
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [a+%7]; }\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(base), "r"(lane_offset), "n"(kXor), "n"(kAdd));
  else
    asm volatile(
        "{ .reg .b32 a; xor.b32 a, %5, %6; add.u32 a, a, %4; "
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [a+%7]; }\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(base), "r"(lane_offset), "n"(kXor), "n"(kAdd));
}

// cp.async of one 16-byte chunk to a shared-state-space address; zeros when !full (src unread
// but valid).
__device__ inline void copy16_zfill(uint32_t dst, const void* src, bool full) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(full ? 16 : 0) : "memory");
}

__device__ inline void store_shared16(uint32_t dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// Q element (query, d) as f32, zero outside tq x head_dim.
__device__ inline float q_value(const AttentionParams& p, int query, int d, int64_t col0) {
  if (query >= p.tq || d >= p.head_dim) return 0.0f;
  const int64_t at = int64_t(query) * p.ldq + col0 + d;
  return p.q_bf16 ? to_float(static_cast<const bf16*>(p.q)[at]) : static_cast<const float*>(p.q)[at];
}

// s[r][j] += Q rows of row tile r · K rows 8j..8j+7, over the head dim in 16-wide steps kd. A
// rolled loop on purpose: unrolled, ptxas issues a dozen fragment reads ahead and spills.
template <class S>
__device__ inline void score_tile(float (&s)[S::kScoreTiles][S::kKeys / 8][4], uint32_t q_warp, uint32_t q_lane,
                                  uint32_t ks, uint32_t k_lane) {
#pragma unroll 1
  for (int kd = 0; kd < S::D / 16; ++kd) {
    const uint32_t x = uint32_t(fl::pair_xor(kd));
    uint32_t qf[S::kScoreTiles][4];
#pragma unroll
    for (int r = 0; r < S::kScoreTiles; ++r)
      gemm_nv::ldmatrix_x4(qf[r], q_warp + uint32_t(r * 16 * S::kRowBytes) + (q_lane ^ x));
    const uint32_t k_at = ks + (k_lane ^ x);
#pragma unroll
    for (int kk = 0; kk < S::kKeys / 16; ++kk) {
      uint32_t kf[4];
      gemm_nv::ldmatrix_x4(kf, k_at + uint32_t(kk * 16 * S::kRowBytes));
#pragma unroll
      for (int r = 0; r < S::kScoreTiles; ++r) {
        gemm_nv::mma_16816(s[r][2 * kk], qf[r], kf[0], kf[1]);
        gemm_nv::mma_16816(s[r][2 * kk + 1], qf[r], kf[2], kf[3]);
      }
    }
  }
}

// o[r][*] += P (row tile r, these 16 keys) · V (16 keys at vrow, all dims) in 16-dim steps dd.
template <class S, int... kDD>
__device__ inline void output_step(float (&o)[S::kRowTiles][S::D / 8][4], const uint32_t (&pf)[S::kRowTiles][4],
                                   uint32_t vrow, uint32_t v_lane, std::integer_sequence<int, kDD...>) {
  auto step = [&](auto dd_constant) {
    constexpr int dd = decltype(dd_constant)::value;
    uint32_t vf[4];
    ldsm_x4<true, fl::pair_xor(dd), 0>(vf, vrow, v_lane);
#pragma unroll
    for (int r = 0; r < S::kRowTiles; ++r) {
      gemm_nv::mma_16816(o[r][2 * dd], pf[r], vf[0], vf[1]);
      gemm_nv::mma_16816(o[r][2 * dd + 1], pf[r], vf[2], vf[3]);
    }
  };
  (step(std::integral_constant<int, kDD>()), ...);
}

template <class S>
__global__ __launch_bounds__(S::kThreads, 2) void flash_attention_kernel(const AttentionParams p, bool q_direct) {
  extern __shared__ tile::Chunk16 flash_smem[];
  const uint32_t s_q = gemm_nv::shared_address(flash_smem);
  const uint32_t s_kv = s_q + S::kQBytes;  // stage s: K at s_kv + 2s·kTileBytes, V kTileBytes further

  const int tid = int(thread_x()), lane = int(lane_id()), warp = tid / 32;
  const int blocks = (p.tq + S::kQueryRows - 1) / S::kQueryRows;
  // Causal: the last query blocks see the most keys; they start first.
  const int q0 = (p.causal ? blocks - 1 - int(block_x()) : int(block_x())) * S::kQueryRows;
  const int head = int(block_y()), kv_head = head / (p.heads / p.kv_heads);
  const bf16* const kg = p.k + int64_t(kv_head) * p.k_head_stride;
  const bf16* const vg = p.v + int64_t(kv_head) * p.v_head_stride;
  int key_end = p.tk;
  if (p.causal && q0 + S::kQueryRows < key_end) key_end = q0 + S::kQueryRows;
  const int tiles = (key_end + S::kKeys - 1) / S::kKeys;

  // This thread's copy slot: chunk `cchunk` of rows crow + i·kRowsPerPass (same swizzle for all).
  const int cchunk = tid % S::kChunks, crow = tid / S::kChunks;
  const uint32_t cdst = uint32_t(fl::offset(crow, cchunk, S::D));

  // Rows past tk read nothing (zeros); their source address is the head's first row, valid.
  const bf16* const k_src = kg + int64_t(crow) * p.ldk + cchunk * 8;
  const bf16* const v_src = vg + int64_t(crow) * p.ldv + cchunk * 8;
  auto copy_tile = [&](int t) {
    const int k0 = t * S::kKeys;
    const uint32_t kdst = s_kv + uint32_t((t % 2) * 2 * S::kTileBytes) + cdst;
    const uint32_t vdst = kdst + S::kTileBytes;
    const bf16* const kt = k_src + int64_t(k0) * p.ldk;
    const bf16* const vt = v_src + int64_t(k0) * p.ldv;
#pragma unroll
    for (int i = 0; i < S::kKeys / S::kRowsPerPass; ++i) {
      const bool inside = k0 + crow + i * S::kRowsPerPass < p.tk;
      const uint32_t step = uint32_t(i * S::kRowsPerPass * S::kRowBytes);
      copy16_zfill(kdst + step, inside ? kt + int64_t(i * S::kRowsPerPass) * p.ldk : kg, inside);
      copy16_zfill(vdst + step, inside ? vt + int64_t(i * S::kRowsPerPass) * p.ldv : vg, inside);
    }
  };

  copy_tile(0);
  // Q: 16-byte copies when it is bf16 with aligned rows and head_dim == D, else converted here.
  const int64_t qcol0 = int64_t(head) * p.head_dim;
  if (q_direct) {
#pragma unroll
    for (int i = 0; i < S::kQueryRows / S::kRowsPerPass; ++i) {
      const int query = q0 + crow + i * S::kRowsPerPass;
      const bool inside = query < p.tq;
      const bf16* src = static_cast<const bf16*>(p.q) + (inside ? int64_t(query) * p.ldq : 0) + qcol0 + cchunk * 8;
      copy16_zfill(s_q + cdst + uint32_t(i * S::kRowsPerPass * S::kRowBytes), src, inside);
    }
  }
  tile::commit_copies();
  if (!q_direct) {
    for (int i = 0; i < S::kQueryRows / S::kRowsPerPass; ++i) {
      const int query = q0 + crow + i * S::kRowsPerPass, d0 = cchunk * 8;
      uint32_t w[4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
        w[e] = tile::pack_bf16_pair(q_value(p, query, d0 + 2 * e, qcol0), q_value(p, query, d0 + 2 * e + 1, qcol0));
      store_shared16(s_q + cdst + uint32_t(i * S::kRowsPerPass * S::kRowBytes), w[0], w[1], w[2], w[3]);
    }
  }

  // Per-lane ldmatrix offsets within a tile (attention_layout::flash::lane_offset): the lane's row
  // of the first 16-row block and its chunk (0 or 1) of the first pair; later pairs XOR pair_xor,
  // later row blocks add 16 rows.
  const int wrow = warp * S::kRowTiles * 16;  // this warp's first row in the block
  const int wq0 = q0 + wrow;                  // and its first query
  const gemm_layout::RowChunk qa = gemm_layout::a_source(lane), kb = gemm_layout::b_source(lane),
                              vb = fl::v_source(lane);
  const uint32_t q_lane = uint32_t(fl::lane_offset(qa.row, qa.chunk, S::D));
  const uint32_t k_lane = uint32_t(fl::lane_offset(kb.row, kb.chunk, S::D));
  const uint32_t v_lane = uint32_t(fl::lane_offset(vb.row, vb.chunk, S::D));
  const uint32_t q_warp = s_q + uint32_t(wrow * S::kRowBytes);  // wrow % 8 == 0: same swizzle

  const float scale_log2 = p.scale * kLog2e;
  float o[S::kRowTiles][S::D / 8][4];
  float m[S::kRowTiles][2], l[S::kRowTiles][2];  // running max (base 2) and per-lane sum; rows g, g+8
#pragma unroll
  for (int r = 0; r < S::kRowTiles; ++r) {
#pragma unroll
    for (int n = 0; n < S::D / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[r][n][e] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m[r][h] = kNegInf;
      l[r][h] = 0.0f;
    }
  }

  for (int t = 0; t < tiles; ++t) {
    tile::wait_copies<0>();
    sync_workgroup();  // tile t (and Q) visible to all; every warp is done with tile t-1's buffer
    if (t + 1 < tiles) {
      copy_tile(t + 1);
      tile::commit_copies();
    }
    const int k0 = t * S::kKeys;
    // Warps past tq, or (causal) whose queries all precede the tile, have nothing to add.
    if (wq0 >= p.tq || (p.causal && k0 > wq0 + S::kRowTiles * 16 - 1)) continue;
    const uint32_t ks = s_kv + uint32_t((t % 2) * 2 * S::kTileBytes), vs = ks + S::kTileBytes;

    // Row tiles in groups of kScoreTiles: S = Q·Kᵀ (s[r][j]: the 16 x 8 block of the group's row
    // tile r and keys 8j..8j+7), the online softmax, and P packed to bf16 A fragments (pf[r][kk]:
    // keys 16kk..16kk+15; attention_layout::flash::p_source). Then O += P·V for all row tiles,
    // sharing each V fragment.
    uint32_t pf[S::kRowTiles][S::kKeys / 16][4];
#pragma unroll
    for (int r0 = 0; r0 < S::kRowTiles; r0 += S::kScoreTiles) {
      float s[S::kScoreTiles][S::kKeys / 8][4];
#pragma unroll
      for (int r = 0; r < S::kScoreTiles; ++r)
#pragma unroll
        for (int j = 0; j < S::kKeys / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[r][j][e] = 0.0f;
      score_tile<S>(s, q_warp + uint32_t(r0 * 16 * S::kRowBytes), q_lane, ks, k_lane);

      // Online softmax in base 2. Accumulator element e of block j: query row g + 8(e / 2), key
      // k0 + 8j + 2(lane % 4) + e % 2 (gemm_layout::c_element).
#pragma unroll
      for (int r = 0; r < S::kScoreTiles; ++r) {
        const int rt = r0 + r, rq0 = wq0 + rt * 16;
        const bool masked = k0 + S::kKeys > p.tk || (p.causal && k0 + S::kKeys - 1 > rq0);
        float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
        for (int j = 0; j < S::kKeys / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float x = s[r][j][e] * scale_log2;
            if (masked) {
              const int key = k0 + 8 * j + 2 * (lane % 4) + e % 2, query = rq0 + lane / 4 + 8 * (e / 2);
              if (key >= p.tk || (p.causal && key > query)) x = kNegInf;
            }
            s[r][j][e] = x;
            tile_max[e / 2] = max_f(tile_max[e / 2], x);
          }
        }
        float base[2], alpha[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          tile_max[h] = max_f(tile_max[h], shfl_xor(tile_max[h], 1));  // the quad of lanes sharing the row
          tile_max[h] = max_f(tile_max[h], shfl_xor(tile_max[h], 2));
          const float m_new = max_f(m[rt][h], tile_max[h]);
          base[h] = m_new == kNegInf ? 0.0f : m_new;  // a row with no key yet: keep exp2 away from NaN
          alpha[h] = attention_device::exp2_fast(m[rt][h] - base[h]);
          m[rt][h] = m_new;
        }
#pragma unroll
        for (int j = 0; j < S::kKeys / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float x = attention_device::exp2_fast(s[r][j][e] - base[e / 2]);
            s[r][j][e] = x;
            sum[e / 2] += x;
          }
        }
        // Sums stay per lane (the row's other keys sit in the quad's other lanes) until the end.
#pragma unroll
        for (int h = 0; h < 2; ++h) l[rt][h] = l[rt][h] * alpha[h] + sum[h];
#pragma unroll
        for (int n = 0; n < S::D / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) o[rt][n][e] *= alpha[e / 2];
#pragma unroll
        for (int kk = 0; kk < S::kKeys / 16; ++kk)
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const fl::PSource lo = fl::p_source(q, 0), hi = fl::p_source(q, 1);
            pf[rt][kk][q] =
                tile::pack_bf16_pair(s[r][2 * kk + lo.tile][lo.element], s[r][2 * kk + hi.tile][hi.element]);
          }
      }
    }

    // O += P·V per 16 keys kk: V's B fragments of 16 dims per ldmatrix.trans.
#pragma unroll
    for (int kk = 0; kk < S::kKeys / 16; ++kk) {
      uint32_t pk[S::kRowTiles][4];
#pragma unroll
      for (int r = 0; r < S::kRowTiles; ++r)
#pragma unroll
        for (int q = 0; q < 4; ++q) pk[r][q] = pf[r][kk][q];
      output_step<S>(o, pk, vs + uint32_t(kk * 16 * S::kRowBytes), v_lane,
                     std::make_integer_sequence<int, S::D / 16>());
    }
  }

  // Normalise by the row sums (reduced over the quad now) and store: element e of block n is
  // query row g + 8(e / 2), dim 8n + 2(lane % 4) + e % 2; pairs e = 0, 1 and 2, 3 are neighbours.
  const int64_t out_col0 = int64_t(head) * p.head_dim;
  const bool pairs = p.head_dim % 2 == 0 && p.ld_out % 2 == 0 &&
                     (reinterpret_cast<uintptr_t>(p.out) % (p.out_bf16 ? 4 : 8)) == 0;
#pragma unroll
  for (int r = 0; r < S::kRowTiles; ++r) {
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[r][h];
      sum += shfl_xor(sum, 1);
      sum += shfl_xor(sum, 2);
      inv[h] = sum > 0.0f ? 1.0f / sum : 0.0f;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int query = wq0 + r * 16 + lane / 4 + 8 * h;
      if (query >= p.tq) continue;
      const int64_t row_at = int64_t(query) * p.ld_out + out_col0;
#pragma unroll
      for (int n = 0; n < S::D / 8; ++n) {
        const int dim = 8 * n + 2 * (lane % 4);
        if (dim >= p.head_dim) continue;
        const float a = o[r][n][2 * h] * inv[h], b = o[r][n][2 * h + 1] * inv[h];
        const int64_t at = row_at + dim;
        if (p.out_bf16) {
          bf16* const dst = static_cast<bf16*>(p.out) + at;
          if (pairs) {
            *reinterpret_cast<uint32_t*>(dst) = tile::pack_bf16_pair(a, b);
          } else {
            dst[0] = to_bf16(a);
            if (dim + 1 < p.head_dim) dst[1] = to_bf16(b);
          }
        } else {
          float* const dst = static_cast<float*>(p.out) + at;
          if (pairs) {
            *reinterpret_cast<float2*>(dst) = make_float2(a, b);
          } else {
            dst[0] = a;
            if (dim + 1 < p.head_dim) dst[1] = b;
          }
        }
      }
    }
  }
}

template <class S>
void launch_shape(const AttentionParams& p, hipStream_t stream) {
  const int blocks = (p.tq + S::kQueryRows - 1) / S::kQueryRows;
  const uintptr_t q_addr = reinterpret_cast<uintptr_t>(p.q);
  const bool q_direct = p.q_bf16 && p.head_dim == S::D && p.ldq % 8 == 0 && q_addr % 16 == 0;
  MOSS_HIP_CHECK(hipFuncSetAttribute(flash_attention_kernel<S>, hipFuncAttributeMaxDynamicSharedMemorySize,
                                     S::kSmemBytes));
  hipLaunchKernelGGL(flash_attention_kernel<S>, dim3(unsigned(blocks), unsigned(p.heads)), dim3(S::kThreads),
                     size_t(S::kSmemBytes), stream, p, q_direct);
  MOSS_HIP_CHECK(hipGetLastError());
}

// Launches the flash kernel for padded head dim D (64 or 128): 64-key tiles, both row tiles of a
// warp sharing each K fragment (32-key tiles with one row tile's scores at a time measured slower).
template <int D>
void launch(const AttentionParams& p, hipStream_t stream) {
  launch_shape<Shape<D, 64, 2>>(p, stream);
}

}  // namespace attention_flash
}  // namespace moss
#endif  // MOSS_PLATFORM_NVIDIA
