// check_device: matrix
// Flash attention (interface: kernels/attention.h). This file holds the reference kernel (how its
// products sit on the matrix leaf per platform: kernels/attention_layout.h) and the dispatch; the
// NVIDIA flash kernel for head dims up to 128 is kernels/attention_flash_nvidia.h, the Hopper
// wgmma kernel for the DiT's case kernels/attention_hopper.h.
//
// Reference kernel, work split. A workgroup owns kQueryRows consecutive queries of one head and one chunk of Dv
// output dimensions; each wave owns RowTiles 16-row query tiles of them. The workgroup walks the
// keys in tiles of KT: K [key][d] and Vᵀ [dim][key] tiles are copied into shared memory
// (double-buffered asynchronous copies on NVIDIA, one buffer on AMD) and read by every wave; Q is
// staged once, as bf16, in shared memory. K and V come from a pack (attention_pack), or on the
// portable configuration at head dim 256 straight from bf16 activation rows, the next tile loaded
// into registers during the current one's products (KvTileLoader). The portable configuration up
// to head dim 128 stages no K/V tile at all: each wave reads its fragments from global memory (the
// direct tiling, Stages 0), K from the bf16 activation rows where they are aligned (kInPlace; else
// from the pack), Vᵀ from the pack. Per key tile each wave computes its scores (fp32 in registers),
// updates the running max and sum in base 2, rescales its output accumulators and adds P·V; at
// the end it divides by the sum and stores.
// Head dims above Dv run as several workgroups (blockIdx.z), each recomputing the scores for its
// chunk of output dimensions, which keeps the output accumulators in registers for head dims up
// to 384.
#include "kernels/attention.h"

#include <limits>
#include <string>
#include <type_traits>

#include "kernels/attention_device.h"
// The host emulation (tests/emulation/runtime/portability.h, MOSS_LEAF_EMULATED) runs this file's
// portable kernel with the host compiler: the NVIDIA-only kernels, inline PTX throughout, stay out
// of it (MOSS_ATTENTION_NATIVE_NVIDIA: the dispatch below never reaches them there).
#if MOSS_PLATFORM_NVIDIA && !defined(MOSS_LEAF_EMULATED)
#define MOSS_ATTENTION_NATIVE_NVIDIA 1
#include "kernels/attention_flash_nvidia.h"
#include "kernels/attention_hopper.h"
#else
#define MOSS_ATTENTION_NATIVE_NVIDIA 0
#endif
#include "kernels/attention_int8_keys.h"
#include "kernels/attention_kv_map.h"
#include "kernels/attention_layout.h"
#include "kernels/int8_row_lds.h"
#include "kernels/kernel_path.h"
#include "kernels/matrix_leaf.h"
#include "kernels/norm_rope_lane.h"

namespace moss {
namespace {

using attention_device::Chunk16;
namespace kv_map = attention_kv_map;

// The emulation's scheme is its leaf's (MOSS_LEAF_EMULATED_TARGET: 0 NVIDIA, 11 gfx11, 12 gfx12),
// so that the AMD transposed schemes run with the AMD lane maps there.
#if defined(MOSS_LEAF_EMULATED) && MOSS_LEAF_EMULATED_TARGET == 11
using Scheme = attention_layout::Gfx11Scheme;
#elif defined(MOSS_LEAF_EMULATED) && MOSS_LEAF_EMULATED_TARGET == 12
using Scheme = attention_layout::Gfx12Scheme;
#elif MOSS_PLATFORM_NVIDIA
using Scheme = attention_layout::NvidiaScheme;
#elif defined(__GFX11__)
using Scheme = attention_layout::Gfx11Scheme;
#else  // gfx12, and AMD's host pass (device bodies are parsed there, never emitted)
using Scheme = attention_layout::Gfx12Scheme;
#endif
static_assert(std::is_same<Scheme::Layout, leaf::Layout>::value, "attention scheme and matrix leaf disagree");
using Coords = attention_layout::Coords<Scheme>;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kMinNormal = std::numeric_limits<float>::min();
constexpr float kLog2e = 1.4426950408889634f;

// Which leaf operand each attention operand is: NVIDIA S = Q·Kᵀ, O = P·V; AMD Sᵀ = K·Qᵀ, Oᵀ = Vᵀ·Pᵀ.
using QFrag = std::conditional_t<Scheme::kTransposed, leaf::FragB, leaf::FragA>;  // Q and P
using KFrag = std::conditional_t<Scheme::kTransposed, leaf::FragA, leaf::FragB>;  // K and Vᵀ
// The int8 QKᵀ variant's scores on the int8 leaf (16x16x32), the same sides.
using QFrag8 = std::conditional_t<Scheme::kTransposed, leaf::FragB8, leaf::FragA8>;
using KFrag8 = std::conditional_t<Scheme::kTransposed, leaf::FragA8, leaf::FragB8>;

// The tiling of one kernel instance. D: padded head dim (the QK depth); Dv: output dimensions per
// workgroup; KT: keys per tile; Warps per workgroup; RowTiles: 16-row query tiles per wave; Stages:
// shared-memory buffers of K/V tiles, 0 for none: each wave then reads its K and Vᵀ fragments
// straight from the packed tensors (global memory, 16 contiguous bytes per lane and fragment) and
// holds its Q fragments in registers, with no barrier in the key loop (the "direct" tiling);
// MinBlocks: workgroups per NVIDIA multiprocessor the register allocation must allow (a
// launch-bounds hint; AMD ignores it).
template <int kD, int kDv, int kKT, int kWarps, int kRowTiles, int kStages, int kMinBlocks = 1>
struct Tiling {
  static constexpr int D = kD, Dv = kDv, KT = kKT, RowTiles = kRowTiles, Stages = kStages, MinBlocks = kMinBlocks;
  static constexpr int kThreads = kWarps * kWaveSize;
  static constexpr int kQueryRows = kWarps * kRowTiles * 16;
  // Rows padded by 16 bytes: the fragment reads of 8 rows x 4 words then hit 32 distinct banks.
  static constexpr int kLdQ = kD + 8, kLdK = kD + 8, kLdV = kKT + 8;
  static constexpr int kQElems = kQueryRows * kLdQ, kKElems = kKT * kLdK, kVElems = kDv * kLdV;
  static constexpr int kSmemBytes = int((kQElems + kStages * (kKElems + kVElems)) * sizeof(bf16));
  static_assert(kD % 16 == 0 && kDv % 16 == 0 && kD % kDv == 0, "head dims in whole leaf tiles");
  static_assert(kKT % 16 == 0 && kAttentionKeyPadding % kKT == 0, "key tiles divide the key padding");
  static_assert(kStages >= 0 && kStages <= 2, "no, one or two K/V buffers");
  static constexpr bool kDirect = kStages == 0;
  static constexpr int kRing = kDirect ? 1 : kStages;  // buffers the tile index wraps over
  static_assert(kPlatformNvidia || kThreads <= kMaxAmdWorkgroupSize, "AMD: at most 256 threads per workgroup");
  static_assert(kPlatformNvidia || kSmemBytes <= 65536, "AMD: 64 KiB of LDS per workgroup");
};

// Fills an operand fragment from a bf16 tile in shared memory whose reduction index is contiguous:
// element (outer, k) at tile[outer * ld + k], outer being the row of A or the column of B. Slots
// 2p and 2p+1 are neighbours along k (attention_layout.h proves it), so one 32-bit read fills both.
// kClamp: rows past outer_last re-read row outer_last (a tile whose last rows do not exist: keys
// past tk read in place, whose scores are masked anyway).
template <class Frag, bool kClamp = false>
__device__ inline void load_operand(Frag& f, const bf16* tile, int ld, int outer_last = 0) {
  constexpr bool kIsA = std::is_same<Frag, leaf::FragA>::value;
  leaf::for_each_slot<kIsA ? leaf::Operand::A : leaf::Operand::B, 2>([&](int i, mma_layout::Elem e) {
    const int row = kIsA ? e.row : e.col, outer = kClamp && row > outer_last ? outer_last : row;
    const int k = kIsA ? e.col : e.row;
    const uint32_t w = *reinterpret_cast<const uint32_t*>(tile + outer * ld + k);
    f.x[i] = bf16_from_bits(uint16_t(w & 0xffffu));
    f.x[i + 1] = bf16_from_bits(uint16_t(w >> 16));
  });
}

// Fills an int8 operand fragment from an int8 tile whose reduction index is contiguous: element
// (outer, k) at tile[outer * ld + k] (ld and the tile's base multiples of 4: every slot word is four
// consecutive k, mma_layout::slot_words_are_k_quads, so one aligned 32-bit read).
template <class Frag>
__device__ inline void load_operand8(Frag& f, const int8_t* tile, int ld) {
  auto word = [&](int outer, int k0) { return *reinterpret_cast<const int32_t*>(tile + outer * ld + k0); };
  if constexpr (std::is_same<Frag, leaf::FragA8>::value) leaf::load_a8(f, word);
  else leaf::load_b8(f, word);
}

// acc += Q·Kᵀ (or its transpose, per Scheme) for one 16x16x32 int8 block, exact in int32.
template <class Q, class K>  // QFrag8, KFrag8 (a template: the untaken side is not instantiated)
__device__ inline void scheme_mma8(leaf::FragC32& acc, const Q& q, const K& k) {
  if constexpr (Scheme::kTransposed) leaf::mma_i8(acc, k, q);
  else leaf::mma_i8(acc, q, k);
}

// acc += Rows·Cols (or its transpose, per Scheme) for one 16x16x16 block: Rows holds the queries
// (Q for the scores, P for the output), Cols the keys (K) or the output dimensions (V).
template <class Rows, class Cols>
__device__ inline void scheme_mma(leaf::FragC& acc, const Rows& rows, const Cols& cols) {
  if constexpr (Scheme::kTransposed) leaf::mma(acc, cols, rows);
  else leaf::mma(acc, rows, cols);
}

// acc[r][n] += rows[r] · column tile n for every row tile r and column tile n, each column tile's
// fragment loaded once, by load_cols(fragment, n), and used by every row tile.
template <class ColFrag, int kRows, int kCols, class RowFrag, class LoadCols>
__device__ inline void row_tiles_mma(leaf::FragC (&acc)[kRows][kCols], const RowFrag (&rows)[kRows],
                                     LoadCols load_cols) {
#pragma unroll
  for (int n = 0; n < kCols; ++n) {
    ColFrag cols;
    load_cols(cols, n);
#pragma unroll
    for (int r = 0; r < kRows; ++r) scheme_mma(acc[r][n], rows[r], cols);
  }
}

// The probabilities of one 16x16 score block as the operand of the second product, in bf16.
template <class P>
__device__ inline P probabilities_operand(const leaf::FragC& s) {
  static_assert(int(sizeof(P::x) / sizeof(P::x[0])) == Scheme::kPSlots, "P operand slots");
  P f;
  const int lane = int(lane_id());
#pragma unroll
  for (int j = 0; j < Scheme::kPSlots; ++j) {
    float v = s.x[Scheme::p_source_slot(j)];
    if constexpr (Scheme::kPExchange) {
      const float partner = shfl_xor(v, 16);
      v = Scheme::p_from_partner(lane, j) ? partner : v;
    }
    f.x[j] = attention_device::probability_bf16(v);
  }
  return f;
}

// Moves one key tile's K rows [key][d] and Vᵀ rows [dim][key] into shared memory; which thread
// moves which 16-byte piece: kernels/attention_kv_map.h (host-proven by test_attention_kv_map).
// From the pack (attention_pack: K and Vᵀ zero-padded to whole tiles): move, plain 16-byte copies,
// asynchronous on NVIDIA (attention_device::copy16), unrolled by 8 on AMD so that several loads
// are in flight (each holds 4 registers). kInPlace: K and V are the activations' bf16 [key][d]
// rows themselves (tk rows, not padded; ldk, ldv the activation row strides), loaded into
// registers by fetch and stored by put, so that the kernel can load the next
// tile while it multiplies the current one. Keys past tk are stored as zeros without being read (a
// masked score's probability is 0, but 0 times an unread NaN would not be), and V is transposed in
// registers, two keys at a time, so that each store is one 32-bit word of a Vᵀ row.
template <class T, bool kInPlace>
struct KvTileLoader {
  static constexpr int kKPieces = kv_map::row_chunks(T::KT, T::D);
  static constexpr int kVPieces = kInPlace ? kv_map::v_pair_units(T::Dv, T::KT) : kv_map::row_chunks(T::Dv, T::KT);
  static constexpr int kKPer = kv_map::per_thread(kKPieces, T::kThreads);
  static constexpr int kVPer = kv_map::per_thread(kVPieces, T::kThreads);

  const bf16* kg;  // this kv head's K
  const bf16* vg;  // this kv head's V at the workgroup's first output dim
  int64_t ldk, ldv;
  int tk, tid;

  __device__ bool owns(int pieces, int i) const {
    return pieces % T::kThreads == 0 || kv_map::piece_of(tid, i, T::kThreads) < pieces;
  }
  __device__ static Chunk16 load(const bf16* src, bool inside) {
    return inside ? *reinterpret_cast<const Chunk16*>(src) : Chunk16{};
  }

  // From the pack: the whole tile in one go (the kernel's main loop waits for it).
  __device__ void move(int k0, bf16* kd, bf16* vd) const {
    static_assert(!kInPlace, "in place, a tile moves through fetch and put");
#pragma unroll 8
    for (int i = 0; i < kKPer; ++i) {
      if (!owns(kKPieces, i)) continue;
      const kv_map::Piece pc = kv_map::row_chunk(kv_map::piece_of(tid, i, T::kThreads), T::D);
      attention_device::copy16(kd + pc.row * T::kLdK + pc.col, kg + int64_t(k0 + pc.row) * ldk + pc.col);
    }
#pragma unroll 8
    for (int i = 0; i < kVPer; ++i) {
      if (!owns(kVPieces, i)) continue;
      const kv_map::Piece pc = kv_map::row_chunk(kv_map::piece_of(tid, i, T::kThreads), T::KT);
      attention_device::copy16(vd + pc.row * T::kLdV + pc.col, vg + int64_t(pc.row) * ldv + k0 + pc.col);
    }
    attention_device::commit_copies();
  }

  // In place, a tile's pieces between their global loads (fetch) and their shared stores (put):
  // K chunks, and V's two keys per piece.
  struct Held {
    Chunk16 k[kKPer];
    Chunk16 v[kVPer][2];
  };

  __device__ void fetch(Held& h, int k0) const {
    fetch_k(h, k0);
    fetch_v(h, k0);
  }
  __device__ void put(const Held& h, bf16* kd, bf16* vd) const {
    put_k(h, kd);
    put_v(h, vd);
  }

  __device__ void fetch_k(Held& h, int k0) const {
    static_assert(kInPlace, "the pack is copied by move");
#pragma unroll
    for (int i = 0; i < kKPer; ++i) {
      if (!owns(kKPieces, i)) continue;
      const kv_map::Piece pc = kv_map::row_chunk(kv_map::piece_of(tid, i, T::kThreads), T::D);
      const int key = k0 + pc.row;
      h.k[i] = load(kg + int64_t(key) * ldk + pc.col, key < tk);
    }
  }
  __device__ void fetch_v(Held& h, int k0) const {
#pragma unroll
    for (int i = 0; i < kVPer; ++i) {
      if (!owns(kVPieces, i)) continue;
      const kv_map::Piece pc = kv_map::v_pair_unit(kv_map::piece_of(tid, i, T::kThreads), T::KT);
      const int key = k0 + pc.row;
#pragma unroll
      for (int j = 0; j < 2; ++j) h.v[i][j] = load(vg + int64_t(key + j) * ldv + pc.col, key + j < tk);
    }
  }
  __device__ void put_k(const Held& h, bf16* kd) const {
#pragma unroll
    for (int i = 0; i < kKPer; ++i) {
      if (!owns(kKPieces, i)) continue;
      const kv_map::Piece pc = kv_map::row_chunk(kv_map::piece_of(tid, i, T::kThreads), T::D);
      *reinterpret_cast<Chunk16*>(kd + pc.row * T::kLdK + pc.col) = h.k[i];
    }
  }
  __device__ void put_v(const Held& h, bf16* vd) const {
#pragma unroll
    for (int i = 0; i < kVPer; ++i) {
      if (!owns(kVPieces, i)) continue;
      const kv_map::Piece pc = kv_map::v_pair_unit(kv_map::piece_of(tid, i, T::kThreads), T::KT);
#pragma unroll
      for (int e = 0; e < kv_map::kChunkElems; ++e)
        *reinterpret_cast<uint32_t*>(vd + (pc.col + e) * T::kLdV + pc.row) = kv_map::v_pair_word(h.v[i][0].w, h.v[i][1].w, e);
    }
  }
};

// The head dims whose D/8 lanes per row are a power of two: 32, 64, 128 (the direct tiling's).
constexpr bool q_rope_head_dim(int d) { return d == 32 || d == 64 || d == 128; }
template <class T>
constexpr bool kStagesQRope = T::kDirect && q_rope_head_dim(T::D);

// Rescaling the output only where it changes anything (the direct tiling): a row's probabilities
// are exp2(score - base) with base its running maximum, and a key tile that raises the maximum
// multiplies the row's accumulators and sum by exp2(old - new) -- Dv/2 VALU multiplies a lane on
// AMD, where the VALU does not run beside the matrix unit. Where no row of the wave's grew, the
// factor is exactly 1 and the wave skips the multiplies (opus_attn v39's "rescale skipped when the
// row max holds"): the same bits. kLazyRescaleLog2 > 0 would keep a stale base while the maximum
// grew by at most that much (FlashAttention-4), exact in real arithmetic, but the row's largest
// probabilities are then no longer exactly 1 before their bf16 rounding, and that costs 3-20% more
// attention error than the bf16 attention's (bench/sage_attention_fidelity.py, bench/amd_model.md
// section 6): 0 keeps the bits.
constexpr float kLazyRescaleLog2 = 0.0f;
template <class T>
constexpr bool kLazyRescale = T::kDirect;
// The direct tiling scales the scores inside exp2's argument: the row maximum is taken over the raw
// scores (a positive scale keeps their order, and so does rounding), then score·scale·log2(e) - base
// is one fma a score where a multiply and a subtract were (one VALU slot a score fewer on AMD, one
// rounding fewer). The other tilings keep the rounded product (their bits unchanged).
template <class T>
constexpr bool kScaleInFma = T::kDirect;

// Q staged with CoreOps::norm_rope applied on the way (AttentionQRope; the direct tiling at head
// dims 32, 64, 128): each group of D/8 threads takes one query row at a time, lane s the columns
// 4s..4s+3 and their rotation partners D/2 later, with the rows kernel's arithmetic
// (norm_rope_lane.h). Rows past tq stage zeros; every thread runs every iteration, so the group
// shuffles always see whole groups.
template <class T, class Visit>
__device__ inline void q_norm_rope_rows(const AttentionParams& p, int q0, int head, int tid, Visit visit) {
  constexpr int kLanes = T::D / 8, kGroups = T::kThreads / kLanes, kHalf = T::D / 2;
  static_assert(kLanes * 8 == T::D && (kLanes & (kLanes - 1)) == 0 && kLanes <= kWaveSize,
                "a power-of-two group of lanes, inside one wave, per head");
  static_assert(T::kQueryRows % kGroups == 0, "every group the same number of rows");
  const AttentionQRope& r = p.q_rope;
  const int group = tid / kLanes, i = (tid % kLanes) * 4;
  norm_rope_lane::Coefficients coef;
  norm_rope_lane::load4_at(r.w, r.w_bf16, i, true, coef.w0);
  norm_rope_lane::load4_at(r.w, r.w_bf16, i + kHalf, true, coef.w1);
  const int64_t col = int64_t(head) * p.head_dim + i;
  // Two rows' loads in flight at a time (the compiler would otherwise unroll all of them).
#pragma unroll 2
  for (int it = 0; it < T::kQueryRows / kGroups; ++it) {
    const int row = group + it * kGroups, query = q0 + row;
    const bool inside = query < p.tq;
    const int64_t qrow = inside ? query : 0;  // a row past tq is not read
    norm_rope_lane::load4_at(r.sin + qrow * r.ld_sin, false, i, inside, coef.s0);
    norm_rope_lane::load4_at(r.sin + qrow * r.ld_sin, false, i + kHalf, inside, coef.s1);
    norm_rope_lane::load4_at(r.cos + qrow * r.ld_cos, false, i, inside, coef.c0);
    norm_rope_lane::load4_at(r.cos + qrow * r.ld_cos, false, i + kHalf, inside, coef.c1);
    float a[4], b[4], ya[4], yb[4];
    norm_rope_lane::load4_at(p.q, p.q_bf16, qrow * p.ldq + col, inside, a);
    norm_rope_lane::load4_at(p.q, p.q_bf16, qrow * p.ldq + col + kHalf, inside, b);
    norm_rope_lane::apply(a, b, coef, kLanes, T::D, r.eps, ya, yb);
    visit(row, i, inside, ya, yb);
  }
}

// visit(row, i, inside, ya, yb) above receives row `row`'s columns i..i+3 (ya) and i+D/2.. (yb).
template <class T>
__device__ inline void stage_q_norm_rope(const AttentionParams& p, bf16* qs, int q0, int head, int tid) {
  constexpr int kHalf = T::D / 2;
  q_norm_rope_rows<T>(p, q0, head, tid, [&](int row, int i, bool inside, const float (&ya)[4], const float (&yb)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      qs[row * T::kLdQ + i + e] = to_bf16(inside ? ya[e] : 0.0f);
      qs[row * T::kLdQ + i + kHalf + e] = to_bf16(inside ? yb[e] : 0.0f);
    }
  });
}

// The int8 QKᵀ variant's Q (docs/attention_int8_qk.md; CoreOps::norm_rope_attention_int8_qk): y =
// fl(x·scale) of the fp32 norm_rope output x (before any bf16 rounding), quantized per block of 16
// consecutive queries -- one wave's query tile, CoreOps::kInt8QueryBlock -- by the keys' formulas
// (int8_row::set_scale over the block's rows and head_dim columns, int8_row::quantize_value; a
// block with a non-finite value: scale NaN, its values 0); rows past tq are zeros. In LDS: q8s
// [kQueryRows][kLdQ8] int8 and stats [2][kQueryRows] (each row's absmax, its non-finite flag), which
// the waves read again for their block's scale (query_block_scale). Two passes over the rows, the
// second recomputing the same bits rather than holding them across the barrier: the absmax and
// flags, then the values. Every thread of the workgroup calls it (two barriers).
template <class T>
struct QInt8Stage {
  static constexpr int kLdQ8 = T::D + 16;  // bytes a row: 16-byte aligned rows
  static constexpr int kQ8Bytes = T::kQueryRows * kLdQ8;
  static constexpr int kBytes = kQ8Bytes + 2 * T::kQueryRows * int(sizeof(float));
  static_assert(kBytes <= T::kSmemBytes, "the int8 Q stage within the bf16 kernel's LDS (its limits hold)");
};
constexpr int kQueryBlock = 16;  // CoreOps::kInt8QueryBlock

__device__ inline float query_block_scale(const float* stats, int rows, int first_row) {
  float amax = 0.0f, bad = 0.0f;
#pragma unroll
  for (int r = 0; r < kQueryBlock; ++r) {
    amax = max_f(amax, stats[first_row + r]);
    bad = max_f(bad, stats[rows + first_row + r]);
  }
  return int8_row::set_scale(amax, bad != 0.0f);
}

template <class T>
__device__ inline void stage_q_int8(const AttentionParams& p, int8_t* q8s, float* stats, int q0, int head, int tid) {
  constexpr int kLanes = T::D / 8, kHalf = T::D / 2, kLd = QInt8Stage<T>::kLdQ8;
  const float scale = p.scale;
  q_norm_rope_rows<T>(p, q0, head, tid, [&](int row, int, bool inside, const float (&ya)[4], const float (&yb)[4]) {
    float amax = 0.0f, bad = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const float y = inside ? mul_rn(e < 4 ? ya[e] : yb[e - 4], scale) : 0.0f;
      bad = finite_f(y) ? bad : 1.0f;
      amax = max_f(amax, abs_f(y));
    }
    // The row's kLanes lanes are consecutive in the wave (a power of two): xor stays inside.
#pragma unroll
    for (int m = 1; m < kLanes; m *= 2) {
      amax = max_f(amax, shfl_xor(amax, m));
      bad = max_f(bad, shfl_xor(bad, m));
    }
    if (tid % kLanes == 0) {
      stats[row] = amax;
      stats[T::kQueryRows + row] = bad;
    }
  });
  sync_workgroup();
  q_norm_rope_rows<T>(p, q0, head, tid, [&](int row, int i, bool inside, const float (&ya)[4], const float (&yb)[4]) {
    const float s = query_block_scale(stats, T::kQueryRows, row - row % kQueryBlock);
    const bool finite = s == s;
    uint32_t wa = 0, wb = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float a = inside ? mul_rn(ya[e], scale) : 0.0f, b = inside ? mul_rn(yb[e], scale) : 0.0f;
      wa |= uint32_t(uint8_t(finite ? int8_row::quantize_value(a, s) : int8_t(0))) << (8 * e);
      wb |= uint32_t(uint8_t(finite ? int8_row::quantize_value(b, s) : int8_t(0))) << (8 * e);
    }
    *reinterpret_cast<uint32_t*>(q8s + row * kLd + i) = wa;
    *reinterpret_cast<uint32_t*>(q8s + row * kLd + i + kHalf) = wb;
  });
}

// kInPlace: K read from the activation rows (tk of them, unpadded), not the pack; with a shared
// K/V tile (head dim 256) V too (AttentionParams::kv_in_place), in the direct tiling K alone
// (AttentionParams::k_in_place: its Vᵀ fragments want 8 keys of one dim contiguous, the pack).
// kInt8Qk: the int8 QKᵀ variant (AttentionParams::k8; the direct tiling with the fused q_rope):
// Q quantized per wave into LDS (stage_q_int8) and held in registers as int8 fragments, K's int8
// fragments read from k8.q, the scores exact int32 sums converted to float in the bf16 scores'
// registers (attention_layout.h int8_scores_in_place), and the scale in exp2's fma per key tile,
// fl(fl(s_q·s_k)·log2 e), where the bf16 scores have scale·log2 e. The softmax and P·V as they are.
template <class T, bool kInPlace, bool kInt8Qk = false>
__global__ MOSS_LAUNCH_BOUNDS(T::kThreads, T::MinBlocks) void attention_kernel(const AttentionParams p) {
  constexpr bool kStagedInPlace = kInPlace && !T::kDirect, kDirectKInPlace = kInPlace && T::kDirect;
  static_assert(!kInt8Qk || (kStagesQRope<T> && !kInPlace && T::KT == kAttentionInt8KeyBlock),
                "int8 scores: the direct tiling with the fused q_rope, one key block a tile, K from k8");
#if defined(MOSS_LEAF_EMULATED)  // the emulation's workgroup buffer of the launch's size (no extern __shared__ there)
  Chunk16* const attention_smem = static_cast<Chunk16*>(emu::dynamic_shared());
#else
  extern __shared__ Chunk16 attention_smem[];
#endif
  bf16* const qs = reinterpret_cast<bf16*>(attention_smem);  // [kQueryRows][kLdQ]
  bf16* const ks = qs + T::kQElems;                           // [Stages][KT][kLdK]
  bf16* const vs = ks + T::Stages * T::kKElems;               // [Stages][Dv][kLdV]

  const int tid = int(thread_x()), lane = int(lane_id());
  const int blocks = (p.tq + T::kQueryRows - 1) / T::kQueryRows;
  // Causal: the last query blocks see the most keys; they start first.
  const int q0 = (p.causal ? blocks - 1 - int(block_x()) : int(block_x())) * T::kQueryRows;
  const int head = int(block_y()), kv_head = head / (p.heads / p.kv_heads);
  const int dv0 = int(block_z()) * T::Dv;
  const bf16* const kg = p.k + int64_t(kv_head) * p.k_head_stride;
  // V at the workgroup's first output dim: a column of the activation rows, or a row of the pack.
  const bf16* const vg = p.v + int64_t(kv_head) * p.v_head_stride + (kStagedInPlace ? int64_t(dv0) : int64_t(dv0) * p.ldv);
  int key_end = p.tk;
  if (p.causal && q0 + T::kQueryRows < key_end) key_end = q0 + T::kQueryRows;
  const int tiles = (key_end + T::KT - 1) / T::KT;

  // Copies key tile t (K rows and Vᵀ columns k0..k0+KT) into its buffer.
  const KvTileLoader<T, kStagedInPlace> loader{kg, vg, p.ldk, p.ldv, p.tk, tid};
  auto copy_tile = [&](int t) {
    if constexpr (!kStagedInPlace) loader.move(t * T::KT, ks + (t % T::kRing) * T::kKElems, vs + (t % T::kRing) * T::kVElems);
  };

  // In place, tile t+1's K and V pieces are loaded into registers while tile t is multiplied and
  // stored after the next barrier (the portable GEMM's kHold, kernels/gemm_leaf.h: AMD has no
  // asynchronous global-to-LDS copy). That needs one query tile per wave (head dim 256): with two,
  // the output accumulators left room for K only (measured at head dim 128 before the direct
  // tiling took it: V's 16 more registers spilled 31 VGPRs on gfx12).
  static_assert(!kStagedInPlace || (T::Stages == 1 && T::RowTiles == 1),
                "in place: one buffer, one query tile a wave, the next tile in registers");
  typename KvTileLoader<T, kStagedInPlace>::Held held;
  if constexpr (kStagedInPlace) loader.fetch(held, 0);  // in flight while Q is staged
  if constexpr (T::Stages == 2) copy_tile(0);     // in flight while Q is staged
  (void)copy_tile;  // the direct tiling copies no tile

  // Q as bf16, zero beyond tq and head_dim (zero columns add nothing to the scores); normalised
  // and rotated on the way where the request says (uniform across the workgroup).
  bool q_staged = false;
  int8_t* const q8s = reinterpret_cast<int8_t*>(attention_smem);             // int8 variant: [kQueryRows][kLdQ8]
  float* const q8_stats = reinterpret_cast<float*>(q8s + QInt8Stage<T>::kQ8Bytes);  // and [2][kQueryRows]
  if constexpr (kInt8Qk) {
    stage_q_int8<T>(p, q8s, q8_stats, q0, head, tid);
    q_staged = true;
  } else if constexpr (kStagesQRope<T>) {
    if (p.q_rope.w) {
      stage_q_norm_rope<T>(p, qs, q0, head, tid);
      q_staged = true;
    }
  }
  if (!kInt8Qk && !q_staged) {  // (the int8 variant's LDS holds no bf16 Q tile)
    const int64_t qcol0 = int64_t(head) * p.head_dim;
    for (int idx = tid; idx < T::kQueryRows * T::D; idx += T::kThreads) {
      const int r = idx / T::D, d = idx % T::D, query = q0 + r;
      float x = 0.0f;
      if (query < p.tq && d < p.head_dim) {
        const int64_t at = int64_t(query) * p.ldq + qcol0 + d;
        x = p.q_bf16 ? to_float(static_cast<const bf16*>(p.q)[at]) : static_cast<const float*>(p.q)[at];
      }
      qs[r * T::kLdQ + d] = to_bf16(x);
    }
  }

  const int wrow = tid / kWaveSize * T::RowTiles * 16;  // this wave's first row in the block
  const int wq0 = q0 + wrow;                            // and its first query
  const float scale_log2 = p.scale * kLog2e;

  // Direct tiling: Q staged once (the only barrier), then held in registers for the whole key loop
  // where a Q fragment is 4 registers (gfx12, NVIDIA); gfx11's duplicated operands would make it 8,
  // 64 in all, which spills on the parts with half the register file (gfx1102/1103/1150/1152), so
  // there Q is re-read from LDS each key tile.
  constexpr bool kQInRegisters = !kInt8Qk && T::kDirect && sizeof(QFrag) <= 16;
  QFrag q_regs[kQInRegisters ? T::RowTiles : 1][kQInRegisters ? T::D / 16 : 1];
  // The int8 variant's Q fragments, with each query tile's block scale: in registers where a
  // fragment is 4 (gfx12, NVIDIA: 16 registers at head dim 128); gfx11's duplicated operands would
  // make it 8, 32 in all, which took the kernel to 255 VGPRs on gfx1100 (check_device), so there
  // they are re-read from the LDS stage each key tile, as the bf16 Q is (154 VGPRs with the depth
  // loop unrolled by 2 below; the bf16 scores' kernel: 177).
  constexpr bool kQ8InRegisters = kInt8Qk && sizeof(QFrag8) <= 16;
  QFrag8 q8_regs[kQ8InRegisters ? T::RowTiles : 1][kQ8InRegisters ? T::D / leaf::kLeafK8 : 1];
  auto load_q8 = [&](QFrag8& f, int r, int ds) {
    load_operand8(f, q8s + (wrow + r * 16) * QInt8Stage<T>::kLdQ8 + ds * leaf::kLeafK8, QInt8Stage<T>::kLdQ8);
  };
  float q8_scale[T::RowTiles];
  if constexpr (T::kDirect) sync_workgroup();
  if constexpr (kInt8Qk) {
#pragma unroll
    for (int r = 0; r < T::RowTiles; ++r) {
      q8_scale[r] = query_block_scale(q8_stats, T::kQueryRows, wrow + r * 16);
      if constexpr (kQ8InRegisters) {
#pragma unroll
        for (int ds = 0; ds < T::D / leaf::kLeafK8; ++ds) load_q8(q8_regs[r][ds], r, ds);
      }
    }
  }
  (void)load_q8;
  (void)q8_scale;
  // The int8 variant's K of this kv head and the scales of its key blocks.
  const int8_t* const k8g = kInt8Qk ? p.k8.q + int64_t(kv_head) * p.k8.keys_pad * T::D : nullptr;
  const float* const k8_scale = kInt8Qk ? p.k8.scale + kv_head * (p.k8.keys_pad / kAttentionInt8KeyBlock) : nullptr;
  if constexpr (kQInRegisters) {
#pragma unroll
    for (int r = 0; r < T::RowTiles; ++r) {
#pragma unroll
      for (int ds = 0; ds < T::D / 16; ++ds) load_operand(q_regs[r][ds], qs + (wrow + r * 16) * T::kLdQ + ds * 16, T::kLdQ);
    }
  }

  leaf::FragC o[T::RowTiles][T::Dv / 16];
  float m[T::RowTiles][Scheme::kStats], l[T::RowTiles][Scheme::kStats];  // running max (base 2), sum
#pragma unroll
  for (int r = 0; r < T::RowTiles; ++r) {
#pragma unroll
    for (int dv = 0; dv < T::Dv / 16; ++dv) leaf::zero(o[r][dv]);
#pragma unroll
    for (int st = 0; st < Scheme::kStats; ++st) {
      m[r][st] = kNegInf;
      l[r][st] = 0.0f;
    }
  }

  for (int t = 0; t < tiles; ++t) {
    if constexpr (T::kDirect) {
      // no shared K/V tile: nothing to wait for
    } else if constexpr (T::Stages == 2) {
      attention_device::wait_copies();
      sync_workgroup();  // tile t visible to all; every wave is done with tile t-1's buffer
      if (t + 1 < tiles) copy_tile(t + 1);
    } else if constexpr (kStagedInPlace) {
      sync_workgroup();  // every wave is done with tile t-1 (and Q is staged)
      loader.put(held, ks, vs);
      sync_workgroup();
      if (t + 1 < tiles) loader.fetch(held, (t + 1) * T::KT);
    } else {
      sync_workgroup();  // every wave is done with tile t-1 (and Q is staged)
      copy_tile(t);
      attention_device::wait_copies();
      sync_workgroup();
    }
    const int k0 = t * T::KT;
    // Waves past tq, or (causal) whose queries all precede the tile, have nothing to add.
    if (wq0 >= p.tq || (p.causal && k0 > wq0 + T::RowTiles * 16 - 1)) continue;
    // This key tile's K rows [key][d] and Vᵀ columns [dim][key]: in shared memory, or (direct) in
    // the packed tensors, padded to whole tiles.
    const bf16* const kt_s = T::kDirect ? kg + int64_t(k0) * p.ldk : ks + (t % T::kRing) * T::kKElems;
    const bf16* const vt_s = T::kDirect ? vg + k0 : vs + (t % T::kRing) * T::kVElems;
    const int ldk = T::kDirect ? int(p.ldk) : T::kLdK, ldv = T::kDirect ? int(p.ldv) : T::kLdV;
    // K fragment (key rows j*16.., dims ds*16..); read in place, the rows of a partial last tile
    // past tk re-read row tk - 1 instead of memory past the tensor.
    const int k_last = p.tk - 1 - k0;
    auto load_k = [&](KFrag& kf, int j, int ds) {
      load_operand<KFrag, kDirectKInPlace>(kf, kt_s + j * 16 * ldk + ds * 16, ldk, k_last - j * 16);
    };

    // Wave priorities (the direct tiling, whose 8 waves never wait for each other): the phases
    // that feed the matrix unit go first -- the scores (3), then P·V (1) -- and the softmax
    // (0) fills the issue slots they leave, so one wave's exp2 and shuffles run under another's
    // WMMAs (opus_attn_gfx1201 v139's scheme: +5% over v39 at the same shape on an RX 9070 XT,
    // bench/amd_calibration.py). A scheduling hint only: the results are the same bits.
    if constexpr (T::kDirect) wave_priority<3>();
    // Scores: s[r][j] = Q rows of tile r · K rows j*16.. of this key tile.
    leaf::FragC s[T::RowTiles][T::KT / 16];
#pragma unroll
    for (int r = 0; r < T::RowTiles; ++r) {
#pragma unroll
      for (int j = 0; j < T::KT / 16; ++j) leaf::zero(s[r][j]);
    }
    float score_scale[T::RowTiles];  // the scores' factor in exp2's fma (base 2)
#pragma unroll
    for (int r = 0; r < T::RowTiles; ++r) score_scale[r] = scale_log2;
    if constexpr (kInt8Qk) {
      leaf::FragC32 s8[T::RowTiles][T::KT / 16];
#pragma unroll
      for (int r = 0; r < T::RowTiles; ++r) {
#pragma unroll
        for (int j = 0; j < T::KT / 16; ++j) leaf::zero(s8[r][j]);
      }
      const int8_t* const kt8 = k8g + int64_t(k0) * T::D;
      auto depth_step = [&](int ds) {
        QFrag8 qf[T::RowTiles];
#pragma unroll
        for (int r = 0; r < T::RowTiles; ++r) {
          if constexpr (kQ8InRegisters) qf[r] = q8_regs[r][ds];
          else load_q8(qf[r], r, ds);
        }
#pragma unroll
        for (int j = 0; j < T::KT / 16; ++j) {
          KFrag8 kf;
          load_operand8(kf, kt8 + j * 16 * T::D + ds * leaf::kLeafK8, T::D);
#pragma unroll
          for (int r = 0; r < T::RowTiles; ++r) scheme_mma8(s8[r][j], qf[r], kf);
        }
      };
      // Q from LDS (gfx11): two depth steps at a time, as the bf16 scores' LDS path, so that the
      // compiler does not hold every step's K fragments at once.
      if constexpr (kQ8InRegisters) {
#pragma unroll
        for (int ds = 0; ds < T::D / leaf::kLeafK8; ++ds) depth_step(ds);
      } else {
#pragma unroll 2
        for (int ds = 0; ds < T::D / leaf::kLeafK8; ++ds) depth_step(ds);
      }
      // |S| <= 128·128·D < 2^24: exact as float. The tile is one key block (KT == 32): one s_k.
      const float s_k = k8_scale[t];
#pragma unroll
      for (int r = 0; r < T::RowTiles; ++r) {
#pragma unroll
        for (int j = 0; j < T::KT / 16; ++j) {
#pragma unroll
          for (int i = 0; i < leaf::Layout::kSlotsC; ++i) s[r][j].x[i] = float(s8[r][j].x[i]);
        }
        // Below the smallest normal (a block of zeros on both sides) a masked key's -inf·c would
        // be NaN; the floor keeps it -inf and every other logit's exp2 at 1, as the host's S·0.
        const float c = mul_rn(mul_rn(q8_scale[r], s_k), kLog2e);
        score_scale[r] = c < kMinNormal ? kMinNormal : c;
#if defined(MOSS_LEAF_EMULATED)  // the host emulation's test compares the int32 scores bit for bit
#pragma unroll
        for (int j = 0; j < T::KT / 16; ++j) {
          for (int i = 0; i < leaf::Layout::kSlotsC; ++i)
            emu::record_int8_score(head, wq0 + r * 16 + Coords::query(lane, i), k0 + j * 16 + Coords::other(lane, i),
                                   s8[r][j].x[i], score_scale[r]);
        }
#endif
      }
    } else if constexpr (kQInRegisters) {
#pragma unroll
      for (int ds = 0; ds < T::D / 16; ++ds) {
        QFrag qf[T::RowTiles];
#pragma unroll
        for (int r = 0; r < T::RowTiles; ++r) qf[r] = q_regs[r][ds];
        row_tiles_mma<KFrag>(s, qf, [&](KFrag& kf, int j) { load_k(kf, j, ds); });
      }
    } else {
#pragma unroll 2
      for (int ds = 0; ds < T::D / 16; ++ds) {
        QFrag qf[T::RowTiles];
#pragma unroll
        for (int r = 0; r < T::RowTiles; ++r) load_operand(qf[r], qs + (wrow + r * 16) * T::kLdQ + ds * 16, T::kLdQ);
        row_tiles_mma<KFrag>(s, qf, [&](KFrag& kf, int j) { load_k(kf, j, ds); });
      }
    }

    // Online softmax in base 2 of s·scale·log2(e), masked to -inf past tk and above the diagonal.
    if constexpr (T::kDirect) {
#pragma unroll
      for (int r = 0; r < T::RowTiles; ++r) {
#pragma unroll
        for (int j = 0; j < T::KT / 16; ++j) attention_device::computed_here(s[r][j]);
      }
      wave_priority<0>();
    }
#pragma unroll
    for (int r = 0; r < T::RowTiles; ++r) {
      const int rq0 = wq0 + r * 16;
      const float scale_r = score_scale[r];
      const bool masked = k0 + T::KT > p.tk || (p.causal && k0 + T::KT - 1 > rq0);
      float tile_max[Scheme::kStats];
#pragma unroll
      for (int st = 0; st < Scheme::kStats; ++st) tile_max[st] = kNegInf;
#pragma unroll
      for (int j = 0; j < T::KT / 16; ++j) {
#pragma unroll
        for (int i = 0; i < leaf::Layout::kSlotsC; ++i) {
          float x = kScaleInFma<T> ? s[r][j].x[i] : s[r][j].x[i] * scale_r;
          if (masked) {
            const int key = k0 + j * 16 + Coords::other(lane, i), query = rq0 + Coords::query(lane, i);
            if (key >= p.tk || (p.causal && key > query)) x = kNegInf;
          }
          s[r][j].x[i] = x;
          tile_max[Scheme::stat(i)] = max_f(tile_max[Scheme::stat(i)], x);
        }
      }
      float base[Scheme::kStats], alpha[Scheme::kStats], sum[Scheme::kStats];
      bool rescale = false;  // this lane's output accumulators take a new base
#pragma unroll
      for (int st = 0; st < Scheme::kStats; ++st) {
#pragma unroll
        for (int n = 0; n < Scheme::kReduceMasks; ++n)
          tile_max[st] = max_f(tile_max[st], shfl_xor(tile_max[st], Scheme::reduce_mask(n)));
        const float m_new = max_f(m[r][st], kScaleInFma<T> ? tile_max[st] * scale_r : tile_max[st]);
        // The direct tiling keeps the base while the row's maximum grew by at most kLazyRescaleLog2
        // (false for -inf or NaN differences: a first key, a row with none yet).
        if (kLazyRescale<T> && m_new - m[r][st] <= kLazyRescaleLog2) {
          base[st] = m[r][st];
          alpha[st] = 1.0f;
        } else {
          base[st] = m_new == kNegInf ? 0.0f : m_new;  // a row with no key yet: keep exp2 away from NaN
          alpha[st] = attention_device::exp2_fast(m[r][st] - base[st]);
          m[r][st] = m_new;
          rescale = true;
        }
        sum[st] = 0.0f;
      }
#pragma unroll
      for (int j = 0; j < T::KT / 16; ++j) {
#pragma unroll
        for (int i = 0; i < leaf::Layout::kSlotsC; ++i) {
          const float x = s[r][j].x[i];
          const float e = attention_device::exp2_fast(kScaleInFma<T> ? x * scale_r - base[Scheme::stat(i)]
                                                                     : x - base[Scheme::stat(i)]);
          s[r][j].x[i] = e;
          sum[Scheme::stat(i)] += e;
        }
      }
      // Sums stay per lane (the row's other keys sit in the partner lanes) until the end.
#pragma unroll
      for (int st = 0; st < Scheme::kStats; ++st) l[r][st] = l[r][st] * alpha[st] + sum[st];
      // A branch, not a select: where no lane of the wave takes a new base the wave skips the Dv/2
      // multiplies a lane (64 at head dim 128).
      if (rescale) {
#pragma unroll
        for (int dv = 0; dv < T::Dv / 16; ++dv) {
#pragma unroll
          for (int i = 0; i < leaf::Layout::kSlotsC; ++i) o[r][dv].x[i] *= alpha[Scheme::stat(i)];
        }
      }
    }

    // Output: o[r][dv] += P (16 queries x 16 keys j) · V (keys j, dims dv).
    if constexpr (T::kDirect) wave_priority<1>();
#pragma unroll
    for (int j = 0; j < T::KT / 16; ++j) {
      QFrag pf[T::RowTiles];
#pragma unroll
      for (int r = 0; r < T::RowTiles; ++r) pf[r] = probabilities_operand<QFrag>(s[r][j]);
      row_tiles_mma<KFrag>(o, pf,
                           [&](KFrag& vf, int dv) { load_operand(vf, vt_s + dv * 16 * ldv + j * 16, ldv); });
    }
    if constexpr (T::kDirect) wave_priority<0>();
  }

  // Normalise by the row sums (reduced over the partner lanes now) and store.
  const int64_t out_col0 = int64_t(head) * p.head_dim;
#pragma unroll
  for (int r = 0; r < T::RowTiles; ++r) {
    float inv[Scheme::kStats];
#pragma unroll
    for (int st = 0; st < Scheme::kStats; ++st) {
#pragma unroll
      for (int n = 0; n < Scheme::kReduceMasks; ++n) l[r][st] += shfl_xor(l[r][st], Scheme::reduce_mask(n));
      inv[st] = l[r][st] > 0.0f ? 1.0f / l[r][st] : 0.0f;
    }
#pragma unroll
    for (int dv = 0; dv < T::Dv / 16; ++dv) {
#pragma unroll
      for (int i = 0; i < leaf::Layout::kSlotsC; ++i) {
        const int query = wq0 + r * 16 + Coords::query(lane, i), dim = dv0 + dv * 16 + Coords::other(lane, i);
        if (query >= p.tq || dim >= p.head_dim) continue;
        const float v = o[r][dv].x[i] * inv[Scheme::stat(i)];
        const int64_t at = int64_t(query) * p.ld_out + out_col0 + dim;
        if (p.out_bf16) static_cast<bf16*>(p.out)[at] = to_bf16(v);
        else static_cast<float*>(p.out)[at] = v;
      }
    }
  }
}

template <class T, bool kInPlace = false, bool kInt8Qk = false>
void launch(const AttentionParams& p, hipStream_t stream) {
  const int blocks = (p.tq + T::kQueryRows - 1) / T::kQueryRows;
  const dim3 grid(unsigned(blocks), unsigned(p.heads), unsigned(T::D / T::Dv));
  const auto kernel = attention_kernel<T, kInPlace, kInt8Qk>;  // (a template-id's comma would split the macros' arguments)
  // The int8 variant stages its Q in int8 (19 KB at head dim 128 where the bf16 Q takes 34): more
  // workgroups fit a CU's LDS, so the registers, not the LDS, bound its waves.
  constexpr int kSmemBytes = kInt8Qk ? QInt8Stage<T>::kBytes : T::kSmemBytes;
  static_assert(kSmemBytes % sizeof(Chunk16) == 0, "whole 16-byte chunks of LDS");
#if MOSS_PLATFORM_NVIDIA
  // Above 48 KiB a kernel's dynamic shared memory must be raised explicitly (per device).
  MOSS_HIP_CHECK(hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
#endif
  hipLaunchKernelGGL(kernel, grid, dim3(T::kThreads), size_t(kSmemBytes), stream, p);
  MOSS_HIP_CHECK(hipGetLastError());
}

// Output dimensions per workgroup: the largest multiple of 16 that divides d and is <= limit.
constexpr int out_chunk(int d, int limit) {
  for (int c = limit - limit % 16; c > 16; c -= 16)
    if (c <= d && d % c == 0) return c;
  return 16;
}

// The flash kernel's padded head dim for head_dim (NVIDIA, up to 128), else 0.
int flash_head_dim(int head_dim) {
  if (portable_kernels() || head_dim > 128) return 0;
  return head_dim <= 64 ? 64 : 128;
}

// The portable configuration (the AMD build's; kernels/kernel_path.h). Up to head dim 128 (the
// DiT's): the direct tiling, 8 waves of one 16-query tile (128 queries a workgroup), each wave
// reading its K and Vᵀ fragments from the packed tensors, Q in registers, 32-key steps, no barrier
// in the key loop: the structure of the fastest published RDNA4 attention kernels (opus_attn_gfx1201
// v39, bench/amd_calibration.py), where an LDS-staged tile pays a barrier and a synchronous copy
// every 32 keys (docs/amd_kernels.md). The 8 waves walk the same keys together, so the caches serve
// each K/V fragment to the workgroup. Above 128: 32-key tiles in one LDS buffer shared by the waves,
// 4 waves of one tile up to 256, 2 waves at 384 (the Q, K and Vᵀ tiles stay within 64 KiB).
template <int D>
using PortableTiling = std::conditional_t<
    (D <= 128), Tiling<D, out_chunk(D, 128), 32, 8, 1, 0>,
    std::conditional_t<(D <= 256), Tiling<D, out_chunk(D, 128), 32, 4, 1, 1>, Tiling<D, out_chunk(D, 128), 32, 2, 1, 1>>>;

// The padded head dims whose portable kernel also reads K and V in place (bf16 activation rows,
// no pack): the text encoder's 256. The direct tiling (up to 128, the DiT's) reads K in place and
// Vᵀ from the pack, whose rows give each lane 8 keys of one dim as 16 contiguous bytes
// (portable_k_in_place); the others (192; 384: the VAE's one head, 2-wave workgroups) pack both.
constexpr bool portable_in_place(int d) { return d == 256; }
constexpr bool portable_k_in_place(int d) { return d <= 128; }
static_assert(PortableTiling<128>::kDirect && !PortableTiling<192>::kDirect, "K in place where the tiling is direct");

// Whether a request of this tiling runs the portable kernel (the AMD build always does).
bool portable_tiling(AttentionTiling tiling) { return portable_kernels() || tiling == AttentionTiling::Portable; }

template <int D>
void launch_reference(const AttentionParams& p, hipStream_t stream) {
  if (p.k8.q) {  // attention_forward checked attention_int8_qk
    if constexpr (kStagesQRope<PortableTiling<D>>) return launch<PortableTiling<D>, false, true>(p, stream);
    throw failure("attention: no int8 QK^T kernel for head dim " + std::to_string(p.head_dim));
  }
  if (portable_tiling(p.tiling)) {
    if constexpr (portable_in_place(D)) {
      if (p.kv_in_place) return launch<PortableTiling<D>, true>(p, stream);
    }
    if constexpr (portable_k_in_place(D)) {
      if (p.k_in_place) return launch<PortableTiling<D>, true>(p, stream);
    }
    if (p.kv_in_place || p.k_in_place)
      throw failure("attention: no in-place K/V kernel for head dim " + std::to_string(p.head_dim));
    return launch<PortableTiling<D>>(p, stream);
  }
  if (p.kv_in_place || p.k_in_place) throw failure("attention: the reference kernel reads packed K/V only");
#if MOSS_PLATFORM_NVIDIA
  // 32-key tiles; up to 192 output columns per workgroup. Head dims up to 128: two query tiles per
  // warp halve the shared-memory reads per matrix op (252 registers, two workgroups of 4 warps per
  // multiprocessor). Above 128: 4 warps of one tile each.
  constexpr int kDv = out_chunk(D, 192);
  if constexpr (D <= 128) launch<Tiling<D, kDv, 32, 4, 2, 2, 2>>(p, stream);
  else launch<Tiling<D, kDv, 32, 4, 1, 2>>(p, stream);
#endif
}

}  // namespace

AttentionKvLayout attention_kv_layout(int head_dim, AttentionTiling tiling) {
  AttentionKvLayout layout;
  const bool flash_tiling = tiling != AttentionTiling::Reference && tiling != AttentionTiling::Portable;
  const int flash = flash_tiling ? flash_head_dim(head_dim) : 0;
  if (flash > 0 && head_dim >= 16 && head_dim % 16 == 0) {
    layout.d_pad = flash;
    layout.flash = true;
    layout.in_place = true;
  } else {
    layout.d_pad = attention_padded_head_dim(head_dim);
    layout.v_transposed = true;
    const bool whole = layout.d_pad == head_dim && portable_tiling(tiling);
    layout.in_place = whole && portable_in_place(layout.d_pad);
    layout.k_in_place = whole && portable_k_in_place(layout.d_pad);
  }
  return layout;
}

bool attention_fuses_q_rope(int head_dim, AttentionTiling tiling) {
  static_assert(kStagesQRope<PortableTiling<128>> && kStagesQRope<PortableTiling<64>> &&
                    kStagesQRope<PortableTiling<32>> && !kStagesQRope<PortableTiling<96>>,
                "the portable tilings that stage Q through norm_rope_lane");
  return portable_tiling(tiling) && q_rope_head_dim(head_dim);
}

bool attention_int8_qk(int head_dim, AttentionTiling tiling) {
  // The kernel instance is attention_kernel<PortableTiling<D>, false, true>, whose static_assert
  // holds exactly where the q_rope is fused.
  return attention_fuses_q_rope(head_dim, tiling);
}

int attention_padded_head_dim(int head_dim) {
  if (head_dim < 16 || head_dim % 16 != 0) return 0;
  for (int d : {32, 64, 96, 128, 192, 256, 384})
    if (head_dim <= d) return d;
  return 0;
}

void attention_forward(const AttentionParams& p, hipStream_t stream) {
  const int d = attention_padded_head_dim(p.head_dim);
  if (d == 0) throw failure("attention: head dim " + std::to_string(p.head_dim) + " is not a multiple of 16 in [16, 384]");
  if (p.heads <= 0 || p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    throw failure("attention: heads " + std::to_string(p.heads) + " is not a multiple of kv heads " +
                  std::to_string(p.kv_heads));
  if (p.heads > 65535) throw failure("attention: more than 65535 heads");
  if (p.tk <= 0) throw failure("attention: no keys");
  const AttentionKvLayout layout = attention_kv_layout(p.head_dim, p.tiling);
  if (p.kv_in_place && p.k_in_place) throw failure("attention: K/V in place and K alone in place both requested");
  if (p.q_rope.w && !attention_fuses_q_rope(p.head_dim, p.tiling))
    throw failure("attention: head dim " + std::to_string(p.head_dim) + " on this tiling cannot apply q's norm and RoPE");
  if (p.k8.q) {
    if (!attention_int8_qk(p.head_dim, p.tiling) || !p.q_rope.w)
      throw failure("attention: int8 QK^T needs the portable direct tiling with q's norm and RoPE (head dims 32, 64, "
                    "128; head dim " + std::to_string(p.head_dim) + " here)");
    if (!p.k8.scale || p.k8.keys_pad < p.tk || p.k8.keys_pad % kAttentionInt8KeyBlock != 0 ||
        reinterpret_cast<uintptr_t>(p.k8.q) % 4 != 0 || p.kv_in_place || p.k_in_place)
      throw failure("attention: int8 keys padded to " + std::to_string(p.k8.keys_pad) + " for " +
                    std::to_string(p.tk) + " keys are not the quantize_keys layout (or K is also read in place)");
  }
  if (layout.flash || p.kv_in_place || p.k_in_place) {
    if (p.ldk % 8 != 0 || p.ldv % 8 != 0 || p.k_head_stride % 8 != 0 || p.v_head_stride % 8 != 0 ||
        reinterpret_cast<uintptr_t>(p.k) % 16 != 0 || reinterpret_cast<uintptr_t>(p.v) % 16 != 0)
      throw failure("attention: K/V rows are not 16-byte aligned (row strides " + std::to_string(p.ldk) + ", " +
                    std::to_string(p.ldv) + ")");
  }
  if (p.kv_in_place && !layout.in_place)
    throw failure("attention: head dim " + std::to_string(p.head_dim) + " cannot read K/V in place on this tiling");
  if (p.k_in_place && !layout.k_in_place)
    throw failure("attention: head dim " + std::to_string(p.head_dim) + " cannot read K in place on this tiling");
#if MOSS_ATTENTION_NATIVE_NVIDIA
  if (layout.flash) {
    if (p.tq <= 0) return;
    const bool wgmma = p.tiling == AttentionTiling::Wgmma || p.tiling == AttentionTiling::Default;
    if (wgmma && attention_hopper::fits(p)) return attention_hopper::launch(p, stream);
    if (layout.d_pad == 64) return attention_flash::launch<64>(p, stream);
    return attention_flash::launch<128>(p, stream);
  }
#endif
  if (!p.kv_in_place && (p.tk_pad < p.tk || p.tk_pad % kAttentionKeyPadding != 0))
    throw failure("attention: packed key count " + std::to_string(p.tk_pad) + " does not pad " + std::to_string(p.tk) +
                  " keys");
  if (p.tq <= 0) return;
  switch (layout.d_pad) {
    case 32: return launch_reference<32>(p, stream);
    case 64: return launch_reference<64>(p, stream);
    case 96: return launch_reference<96>(p, stream);
    case 128: return launch_reference<128>(p, stream);
    case 192: return launch_reference<192>(p, stream);
    case 256: return launch_reference<256>(p, stream);
    default: return launch_reference<384>(p, stream);
  }
}

}  // namespace moss
