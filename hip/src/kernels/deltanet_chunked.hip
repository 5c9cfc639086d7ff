// check_device: matrix
// The chunked gated delta rule (kernels/deltanet.h), in two launches that follow the host replay
// (ops/host/text_ops_host.cpp, chunked_head) step by step:
//
// 1. prep, one workgroup per (64-token block, value head), all independent:
//      Γ = running sum of g; decay D[i][j] = exp(Σ_{j<m≤i} g_m), summed over the gap itself
//      (a difference of running totals cancels and loses accuracy: the host's finding);
//      A' = −((beta·k)·kᵀ ⊙ D) strictly lower and M = ((scale·q)·kᵀ ⊙ D) lower   [leaf]
//      L = (I + A)⁻¹ by forward substitution in fp32 (the host's order);
//      U = L·(beta·v), W = L·(beta·exp(Γ)·k)                                       [leaf]
//    U, W, M, scale·q·exp(Γ), k·D[63][·] and exp(Γ_63) go to the block's record in scratch.
// 2. scan, one workgroup per (value head, 16 value columns) — the columns of S never mix — walks
//    the blocks in order with its [dk x 16] slice of the fp32 state in LDS:
//      v_new = U − W·S;  out = (scale·q·exp(Γ))·S + M·v_new;                        [leaf]
//      S ← exp(Γ_63)·S + (k·D[63][·])ᵀ·v_new                                        [leaf]
// A short last block is zero-padded (k = v = q = beta = g = 0), which adds nothing to any real
// output, as in the reference. Every matrix product goes through split_leaf (bf16 leaf, fp32
// accumulation; the split form by default). On AMD each workgroup is one wave; on NVIDIA four
// warps share the tiles of each step.
#include "kernels/deltanet.h"

#include "kernels/kernel_path.h"
#include "kernels/split_leaf.h"

namespace moss {
namespace {

constexpr int kC = kDeltaRuleChunk;  // 64 tokens per block
constexpr int kCT = kC / 16;         // leaf tiles along a block
constexpr int kLdBlock = kC + 4;     // LDS row stride of the 64x64 block matrices (spreads banks)
constexpr int kSlice = 16;           // state columns per scan workgroup
constexpr int kLdSlice = kSlice + 4;
// Launch shapes, by the kernels' template parameter kP: the portable path (AMD's, one wave per
// workgroup; kernels/kernel_path.h) or NVIDIA's native one (4 warps).
template <bool kP>
constexpr int kWavesOf = kP ? 1 : 4;
template <bool kP>
constexpr int kThreadsOf = kWavesOf<kP> * kWaveSize;
// The scan's inner product loops: unrolled on NVIDIA's path, so the fragment loads of a whole
// product are in flight together (the scan is latency-bound); kept rolled on the portable one,
// where one wave holding a whole product's fragments exceeds AMD's register file.
template <bool kP>
constexpr int kScanUnrollOf = kP ? 1 : 8;

// The call's operands as the kernels take them: 32-bit strides and offsets (the launcher checks
// that every offset fits), the head ratio precomputed; fewer scalar registers than DeltaRuleArgs.
struct Params {
  const float *q, *k, *v, *g, *beta;
  float *out, *state;
  float* scratch;  // the block records
  int ldq, ldk, ldv, ldg, ldbeta, ldo;
  int T, group, blocks;  // group: value heads per key head
  float scale;
};

// What prep hands the scan for one (value head h, block c): one contiguous record at
// scratch + (h · blocks + c) · kSize, so the scan addresses everything from one pointer. Rows are
// the block's 64 tokens (zero rows past the end of the sequence).
template <int DK, int DV>
struct Record {
  static constexpr int kW = 0;                // [64, dk]  W = L·(beta·exp(Γ)·k)
  static constexpr int kQG = kW + kC * DK;    // [64, dk]  (scale·q)·exp(Γ_i)
  static constexpr int kKD = kQG + kC * DK;   // [64, dk]  k·D[63][i], the decay to the block's end
  static constexpr int kU = kKD + kC * DK;    // [64, dv]  U = L·(beta·v)
  static constexpr int kM = kU + kC * DV;     // [64, 64]  (scale·q·kᵀ) ⊙ D, lower tiles only
  static constexpr int kEnd = kM + kC * kC;   // exp(Γ_63), the decay over the whole block
  static constexpr int kSize = kEnd + 64;     // floats; a multiple of 64 keeps records 256-byte aligned
};

// Tokens of the block starting at t0 (64 except for a short last block).
__device__ inline int block_len(int T, int t0) { return T - t0 < kC ? T - t0 : kC; }

constexpr int record_floats(int dk, int dv) { return kC * (3 * dk + dv + kC) + 64; }

template <int DK, int DV, bool kSplit, bool kP>
__global__ __launch_bounds__(kThreadsOf<kP>) void delta_prep_kernel(Params a) {
  constexpr int kWaves = kWavesOf<kP>, kThreads = kThreadsOf<kP>;
  using FragA = split_leaf::FragA<kSplit>;
  using FragB = split_leaf::FragB<kSplit>;
  using R = Record<DK, DV>;
  __shared__ float g_s[kC], beta_s[kC], eg_s[kC], end_s[kC];
  __shared__ float dec[kC * kLdBlock];  // D, then A' in place (strictly lower; zero elsewhere)
  __shared__ float lin[kC * kLdBlock];  // L = (I + A)⁻¹, unit lower triangular

  const int tid = int(thread_x()), wave = tid / kWaveSize, lane = int(lane_id());
  const int c = int(block_x()), h = int(block_y());
  const int t0 = c * kC, n = block_len(a.T, t0);
  const int kh = h / a.group;
  // This block's rows of this head's columns, and its record.
  const float* qb = a.q + t0 * a.ldq + kh * DK;
  const float* kb = a.k + t0 * a.ldk + kh * DK;
  const float* vb = a.v + t0 * a.ldv + h * DV;
  float* rec = a.scratch + (h * a.blocks + c) * R::kSize;

  for (int i = tid; i < kC; i += kThreads) {
    g_s[i] = i < n ? a.g[(t0 + i) * a.ldg + h] : 0.0f;
    beta_s[i] = i < n ? a.beta[(t0 + i) * a.ldbeta + h] : 0.0f;
  }
  sync_workgroup();
  if (tid == 0) {  // Γ in token order, as the host sums it
    float cum = 0.0f;
    for (int i = 0; i < kC; ++i) {
      cum += g_s[i];
      eg_s[i] = cum;
    }
  }
  sync_workgroup();
  for (int i = tid; i < kC; i += kThreads) eg_s[i] = exp_f(eg_s[i]);
  // D column by column, the gap sum growing down the column (the host's order).
  for (int j = tid; j < kC; j += kThreads) {
    float gap = 0.0f;
    for (int i = 0; i < kC; ++i) {
      if (i > j) gap += g_s[i];
      dec[i * kLdBlock + j] = i >= j ? exp_f(gap) : 0.0f;
    }
  }
  sync_workgroup();
  for (int i = tid; i < kC; i += kThreads) end_s[i] = dec[(kC - 1) * kLdBlock + i];
  if (tid == 0) rec[R::kEnd] = eg_s[kC - 1];  // exp(Γ_63) = exp(Γ_{n−1}): padded g are 0
  sync_workgroup();  // the last row of D is saved before A' overwrites it

  // The elementwise operands of the scan: (scale·q)·exp(Γ_i) and k·D[63][i].
  for (int idx = tid; idx < kC * DK; idx += kThreads) {
    const int i = idx / DK, col = idx % DK;
    rec[R::kQG + idx] = i < n ? (qb[i * a.ldq + col] * a.scale) * eg_s[i] : 0.0f;
    rec[R::kKD + idx] = i < n ? kb[i * a.ldk + col] * end_s[i] : 0.0f;
  }

  // A' and M over the lower tiles (mi, nj), nj <= mi: both share the k operand.
#pragma unroll 1
  for (int tile = wave; tile < kCT * (kCT + 1) / 2; tile += kWaves) {
    int mi = 0;
    while ((mi + 1) * (mi + 2) / 2 <= tile) ++mi;
    const int nj = tile - mi * (mi + 1) / 2;
    leaf::FragC acc_a, acc_m;
    leaf::zero(acc_a);
    leaf::zero(acc_m);
#pragma unroll 1
    for (int k0 = 0; k0 < DK; k0 += 16) {
      FragA fkb, fq;
      FragB fk;
      split_leaf::load_a<kSplit>(fkb, [&](int m, int kk) {
        const int i = mi * 16 + m;
        return i < n ? kb[i * a.ldk + k0 + kk] * beta_s[i] : 0.0f;
      });
      split_leaf::load_a<kSplit>(fq, [&](int m, int kk) {
        const int i = mi * 16 + m;
        return i < n ? qb[i * a.ldq + k0 + kk] * a.scale : 0.0f;
      });
      split_leaf::load_b<kSplit>(fk, [&](int kk, int nn) {  // B[k][j] = k_j[k]
        const int j = nj * 16 + nn;
        return j < n ? kb[j * a.ldk + k0 + kk] : 0.0f;
      });
      split_leaf::mma<kSplit>(acc_a, fkb, fk);
      split_leaf::mma<kSplit>(acc_m, fq, fk);
    }
    // Each element of the tile belongs to one lane, which reads its D and writes A' in place.
#pragma unroll
    for (int sl = 0; sl < leaf::Layout::kSlotsC; ++sl) {
      const mma_layout::Elem e = leaf::Layout::c(lane, sl);
      const int i = mi * 16 + e.row, j = nj * 16 + e.col;
      float* d = dec + i * kLdBlock + j;
      const float decay = *d;
      rec[R::kM + i * kC + j] = j <= i ? acc_m.x[sl] * decay : 0.0f;
      *d = j < i ? -(acc_a.x[sl] * decay) : 0.0f;
    }
  }
  sync_workgroup();

  // Forward substitution, row by row: L[i][j] = A'[i][j] + Σ_{j<m<i} A'[i][m]·L[m][j].
  for (int i = 0; i < kC; ++i) {
    for (int j = tid; j < kC; j += kThreads) {
      float value = j == i ? 1.0f : 0.0f;
      if (j < i) {
        float acc = 0.0f;
        for (int m = j + 1; m < i; ++m) acc += dec[i * kLdBlock + m] * lin[m * kLdBlock + j];
        value = dec[i * kLdBlock + j] + acc;
      }
      lin[i * kLdBlock + j] = value;
    }
    sync_workgroup();
  }

  // U = L·(beta·v) and W = L·(beta·k·exp(Γ)): output tiles (mi, column tile), K over j <= i.
  constexpr int kNU = DV / 16, kNT = DV / 16 + DK / 16;
#pragma unroll 1
  for (int tile = wave; tile < kCT * kNT; tile += kWaves) {
    const int mi = tile / kNT, nt = tile % kNT;
    const bool is_u = nt < kNU;
    const int col0 = (is_u ? nt : nt - kNU) * 16;
    leaf::FragC acc;
    leaf::zero(acc);
#pragma unroll 1
    for (int kj = 0; kj <= mi; ++kj) {
      FragA fl;
      FragB fx;
      split_leaf::load_a<kSplit>(fl, [&](int m, int kk) { return lin[(mi * 16 + m) * kLdBlock + kj * 16 + kk]; });
      split_leaf::load_b<kSplit>(fx, [&](int kk, int nn) {
        const int j = kj * 16 + kk;
        if (j >= n) return 0.0f;
        return is_u ? vb[j * a.ldv + col0 + nn] * beta_s[j] : (kb[j * a.ldk + col0 + nn] * beta_s[j]) * eg_s[j];
      });
      split_leaf::mma<kSplit>(acc, fl, fx);
    }
    float* dst = rec + (is_u ? R::kU : R::kW) + col0;
    const int ld = is_u ? DV : DK;
    split_leaf::store(acc, [&](int m, int nn, float x) { dst[(mi * 16 + m) * ld + nn] = x; });
  }
}

template <int DK, int DV, bool kSplit, bool kP>
__global__ __launch_bounds__(kThreadsOf<kP>) void delta_scan_kernel(Params a) {
  constexpr int kWaves = kWavesOf<kP>, kThreads = kThreadsOf<kP>;
  using R = Record<DK, DV>;
  __shared__ float st[DK * kLdSlice];  // S[:, col0 .. col0+15], fp32
  __shared__ float vn[kC * kLdSlice];  // this block's v_new[:, col0 .. col0+15]

  const int tid = int(thread_x()), wave = tid / kWaveSize, lane = int(lane_id());
  const int col0 = int(block_x()) * kSlice, h = int(block_y());
  float* state_h = a.state ? a.state + h * DK * DV + col0 : nullptr;

  for (int idx = tid; idx < DK * kSlice; idx += kThreads) {
    const int r = idx / kSlice, cc = idx % kSlice;
    st[r * kLdSlice + cc] = state_h ? state_h[r * DV + cc] : 0.0f;
  }
  sync_workgroup();

#pragma unroll 1
  for (int c = 0; c < a.blocks; ++c) {
    const int t0 = c * kC, n = block_len(a.T, t0);
    const float* rec = a.scratch + (h * a.blocks + c) * R::kSize;

    // v_new = U − W·S
#pragma unroll 1
    for (int mi = wave; mi < kCT; mi += kWaves) {
      leaf::FragC acc;
      leaf::zero(acc);
#pragma unroll kScanUnrollOf<kP>
      for (int k0 = 0; k0 < DK; k0 += 16) {
        split_leaf::mma_loaded<kSplit>(acc, [&](int m, int kk) { return rec[R::kW + (mi * 16 + m) * DK + k0 + kk]; },
                                       [&](int kk, int nn) { return st[(k0 + kk) * kLdSlice + nn]; });
      }
      split_leaf::store(acc, [&](int m, int nn, float x) {
        const int i = mi * 16 + m;
        vn[i * kLdSlice + nn] = rec[R::kU + i * DV + col0 + nn] - x;
      });
    }
    sync_workgroup();

    // out = (scale·q·exp(Γ))·S + M·v_new, for the block's real tokens
#pragma unroll 1
    for (int mi = wave; mi < kCT && mi * 16 < n; mi += kWaves) {
      leaf::FragC inter, intra;
      leaf::zero(inter);
      leaf::zero(intra);
#pragma unroll kScanUnrollOf<kP>
      for (int k0 = 0; k0 < DK; k0 += 16) {
        split_leaf::mma_loaded<kSplit>(inter, [&](int m, int kk) { return rec[R::kQG + (mi * 16 + m) * DK + k0 + kk]; },
                                       [&](int kk, int nn) { return st[(k0 + kk) * kLdSlice + nn]; });
      }
#pragma unroll 1
      for (int kj = 0; kj <= mi; ++kj) {
        split_leaf::mma_loaded<kSplit>(
            intra, [&](int m, int kk) { return rec[R::kM + (mi * 16 + m) * kC + kj * 16 + kk]; },
            [&](int kk, int nn) { return vn[(kj * 16 + kk) * kLdSlice + nn]; });
      }
      float* ob = a.out + (t0 + mi * 16) * a.ldo + h * DV + col0;
#pragma unroll
      for (int sl = 0; sl < leaf::Layout::kSlotsC; ++sl) {  // same element in both accumulators
        const mma_layout::Elem e = leaf::Layout::c(lane, sl);
        if (mi * 16 + e.row < n) ob[e.row * a.ldo + e.col] = inter.x[sl] + intra.x[sl];
      }
    }
    sync_workgroup();  // every read of S for this block is done

    // S ← exp(Γ_63)·S + (k·D[63][·])ᵀ·v_new; each wave updates the state rows of its tiles.
    const float elast = rec[R::kEnd];
#pragma unroll 1
    for (int mt = wave; mt < DK / 16; mt += kWaves) {
      leaf::FragC acc;
      leaf::zero(acc);
#pragma unroll kScanUnrollOf<kP>
      for (int kj = 0; kj < kCT && kj * 16 < n; ++kj) {
        split_leaf::mma_loaded<kSplit>(
            acc, [&](int m, int kk) { return rec[R::kKD + (kj * 16 + kk) * DK + mt * 16 + m]; },
            [&](int kk, int nn) { return vn[(kj * 16 + kk) * kLdSlice + nn]; });
      }
      split_leaf::store(acc, [&](int m, int nn, float x) {
        float* e = st + (mt * 16 + m) * kLdSlice + nn;
        *e = *e * elast + x;
      });
    }
    sync_workgroup();
  }

  if (state_h)
    for (int idx = tid; idx < DK * kSlice; idx += kThreads) {
      const int r = idx / kSlice, cc = idx % kSlice;
      state_h[r * DV + cc] = st[r * kLdSlice + cc];
    }
}

template <int DK, int DV, bool kSplit, bool kP>
void launch_chunked(const Params& p, int value_heads, hipStream_t stream) {
  static_assert(Record<DK, DV>::kSize % 64 == 0, "records stay 256-byte aligned");
  static_assert(Record<DK, DV>::kSize == record_floats(DK, DV), "the scratch size matches the record");
  auto prep = delta_prep_kernel<DK, DV, kSplit, kP>;
  auto scan = delta_scan_kernel<DK, DV, kSplit, kP>;
  hipLaunchKernelGGL(prep, dim3(unsigned(p.blocks), unsigned(value_heads)), dim3(kThreadsOf<kP>), 0, stream, p);
  MOSS_HIP_CHECK(hipGetLastError());
  hipLaunchKernelGGL(scan, dim3(unsigned(DV / kSlice), unsigned(value_heads)), dim3(kThreadsOf<kP>), 0, stream, p);
  MOSS_HIP_CHECK(hipGetLastError());
}

template <int DK, int DV, bool kSplit>
void launch_chunked(const Params& p, int value_heads, hipStream_t stream) {
  if constexpr (kPlatformNvidia) {  // AMD builds only the portable kernels
    if (!portable_kernels()) return launch_chunked<DK, DV, kSplit, false>(p, value_heads, stream);
  }
  launch_chunked<DK, DV, kSplit, true>(p, value_heads, stream);
}

template <int DK, int DV>
void launch_chunked(const Params& p, int value_heads, DeltaPrecision precision, hipStream_t stream) {
  if (precision == DeltaPrecision::SplitBf16) launch_chunked<DK, DV, true>(p, value_heads, stream);
  else launch_chunked<DK, DV, false>(p, value_heads, stream);
}

int block_count(int T) { return (T + kC - 1) / kC; }

// The kernels index in 32 bits: every element offset they form must fit.
void require_int_offsets(int64_t extent, const char* what) {
  if (extent < 0 || extent > int64_t(0x7fffffff))
    throw usage_error(std::string("delta_rule_chunked: ") + what + " (" + std::to_string(extent) +
                      " elements) is beyond the kernels' 32-bit indexing");
}

}  // namespace

bool delta_rule_dims_supported(int dk, int dv) { return (dk == 128 && dv == 128) || (dk == 32 && dv == 32); }

size_t delta_rule_chunked_scratch_bytes(int T, int value_heads, int dk, int dv) {
  return size_t(value_heads) * size_t(block_count(T)) * size_t(record_floats(dk, dv)) * sizeof(float);
}

void delta_rule_chunked(const DeltaRuleArgs& a, DeltaPrecision precision, void* scratch, hipStream_t stream) {
  if (!delta_rule_dims_supported(a.dk, a.dv))
    throw usage_error("delta_rule_chunked: head dims dk=" + std::to_string(a.dk) + " dv=" + std::to_string(a.dv) +
                      " have no GPU kernel (128/128 and 32/32 are built)");
  if (a.T <= 0) return;  // no tokens: the state (if any) stays as it is
  Params p;
  p.blocks = block_count(a.T);
  const int64_t rows = int64_t(p.blocks) * kC;  // rows the kernels may address, padding included
  require_int_offsets(a.ldq * rows, "q");
  require_int_offsets(a.ldk * rows, "k");
  require_int_offsets(a.ldv * rows, "v");
  require_int_offsets(a.ldg * rows, "g");
  require_int_offsets(a.ldbeta * rows, "beta");
  require_int_offsets(a.ldo * rows, "out");
  require_int_offsets(int64_t(a.value_heads) * p.blocks * record_floats(a.dk, a.dv), "scratch");
  p.q = a.q, p.k = a.k, p.v = a.v, p.g = a.g, p.beta = a.beta, p.out = a.out, p.state = a.state;
  p.scratch = static_cast<float*>(scratch);
  p.ldq = int(a.ldq), p.ldk = int(a.ldk), p.ldv = int(a.ldv), p.ldg = int(a.ldg), p.ldbeta = int(a.ldbeta);
  p.ldo = int(a.ldo);
  p.T = a.T, p.group = a.value_heads / a.key_heads, p.scale = a.scale;
  if (a.dk == 128) launch_chunked<128, 128>(p, a.value_heads, precision, stream);
  else launch_chunked<32, 32>(p, a.value_heads, precision, stream);
}

}  // namespace moss
