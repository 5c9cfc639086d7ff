// Row-wise kernels of the core op family; contract in kernels/rows.h.
//
// Launch shapes: elementwise kernels map block x to a row and (block y, thread) to 4 consecutive
// columns; the RMS norm gives each wave one (row, group) pair and reduces the sum of squares
// across the wave (norm_modulate's register kernel: a block per row, reduced across its waves);
// RoPE gives each thread one rotated pair;
// norm_rope gives each wave one (row, head). NVIDIA blocks hold 4 warps, AMD
// workgroups one wave (product contract).
#include "kernels/rows.h"

#include <string>
#include <type_traits>

#include "kernels/gated_unit.h"
#include "kernels/int8_row_lds.h"
#include "kernels/int8_row_regs.h"
#include "kernels/kernel_path.h"
#include "kernels/norm_rope_lane.h"
#include "kernels/tile_copy.h"

namespace moss {
namespace {

// Waves per block: W (a template parameter of every kernel): 4 on NVIDIA's native path, 1 on the
// portable one (AMD's; kernels/kernel_path.h). with_waves calls f with the one that runs.
constexpr int kNativeWaves = kPlatformNvidia ? 4 : 1;
template <class F>
void with_waves(F&& f) {
  with_kernel_path([&](auto portable) { f(std::integral_constant<int, decltype(portable)::value ? 1 : kNativeWaves>{}); });
}

// ---- element access ----------------------------------------------------------------------------
struct Mat {
  void* p;
  int64_t ld;
  bool bf16;
};
// Row `row` of m: its first element.
__device__ inline void* row_start(const Mat& m, int64_t row) {
  return static_cast<char*>(m.p) + row * m.ld * (m.bf16 ? 2 : 4);
}

using norm_rope_lane::bf16_bits_to_float;
using norm_rope_lane::load4_at;
__device__ inline uint32_t float_to_bf16_bits(float v) { return bf16_bits(to_bf16(v)); }

__device__ inline float load1(const Mat& m, int64_t row, int64_t c) {
  if (m.bf16) return bf16_bits_to_float(static_cast<const uint16_t*>(m.p)[row * m.ld + c]);
  return static_cast<const float*>(m.p)[row * m.ld + c];
}
__device__ inline void store1(const Mat& m, int64_t row, int64_t c, float v) {
  if (m.bf16) static_cast<uint16_t*>(m.p)[row * m.ld + c] = uint16_t(float_to_bf16_bits(v));
  else static_cast<float*>(m.p)[row * m.ld + c] = v;
}

__device__ inline void store4_at(void* p, bool bf16, int64_t e, const float v[4]) {
  if (bf16) {
    uint64_t bits = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) bits |= uint64_t(float_to_bf16_bits(v[j])) << (16 * j);
    *reinterpret_cast<uint64_t*>(static_cast<uint16_t*>(p) + e) = bits;
  } else {
    tile::Chunk16 c;
#pragma unroll
    for (int j = 0; j < 4; ++j) c.w[j] = __builtin_bit_cast(uint32_t, v[j]);
    tile::store_chunk(static_cast<float*>(p) + e, c);
  }
}

// Columns c..c+n-1 (n <= 4) of a row into v[0..n-1] (the rest zero). `vec`: n == 4 and the
// row is aligned for one 16-byte (f32) or 8-byte (bf16) access.
__device__ inline void load4(const Mat& m, int64_t row, int64_t c, int n, bool vec, float v[4]) {
  if (vec) {
    load4_at(m.p, m.bf16, row * m.ld + c, true, v);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = j < n ? load1(m, row, c + j) : 0.0f;
  }
}
__device__ inline void store4(const Mat& m, int64_t row, int64_t c, int n, bool vec, const float v[4]) {
  if (vec) {
    store4_at(m.p, m.bf16, row * m.ld + c, v);
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < n) store1(m, row, c + j, v[j]);
  }
}

// Element i of a parameter vector.
struct Vec {
  const void* p;
  bool bf16;
};
__device__ inline float at(const Vec& v, int64_t i) {
  return v.bf16 ? bf16_bits_to_float(static_cast<const uint16_t*>(v.p)[i]) : static_cast<const float*>(v.p)[i];
}

// add_norm_modulate's pending updates as the kernels take them (rows.h RowsUpdates).
struct Updates {
  Mat d[2];
  Vec gate[2];
  int count;  // 0 .. 2
  bool store;
};
// Columns c..c+n-1 of a row: v += d·gate, as AddOp adds it.
__device__ inline void add_update(const Mat& d, const Vec& gate, int64_t row, int64_t c, int n, bool vec, float v[4]) {
  float dv[4];
  load4(d, row, c, n, vec, dv);
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (j < n) v[j] += dv[j] * at(gate, c + j);
}
// Each update in order (the slots named, not indexed: the arguments stay where the kernel has them).
__device__ inline void add_updates(const Updates& u, int64_t row, int64_t c, int n, bool vec, float v[4]) {
  if (u.count > 0) add_update(u.d[0], u.gate[0], row, c, n, vec, v);
  if (u.count > 1) add_update(u.d[1], u.gate[1], row, c, n, vec, v);
}

// ---- elementwise kernels: one thread per 4 columns of a row ------------------------------------
struct AddOp {
  Mat x, d;
  Vec gate;  // p null: plain add
  __device__ void operator()(int64_t row, int64_t c, int n, bool vec) const {
    float xv[4], dv[4];
    load4(x, row, c, n, vec, xv);
    load4(d, row, c, n, vec, dv);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (j < n) xv[j] += gate.p ? dv[j] * at(gate, c + j) : dv[j];
    store4(x, row, c, n, vec, xv);
  }
};

struct GatedOp {
  Mat a, b, out;
  GatedUnit kind;
  __device__ void operator()(int64_t row, int64_t c, int n, bool vec) const {
    float av[4], bv[4], o[4];
    load4(a, row, c, n, vec, av);
    load4(b, row, c, n, vec, bv);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      switch (kind) {
        case GatedUnit::Situ: o[j] = gated_unit_value<GatedUnit::Situ>(av[j], bv[j]); break;
        case GatedUnit::SwiGlu: o[j] = gated_unit_value<GatedUnit::SwiGlu>(av[j], bv[j]); break;
        default: o[j] = gated_unit_value<GatedUnit::SigmoidGate>(av[j], bv[j]); break;
      }
    }
    store4(out, row, c, n, vec, o);
  }
};

// gated_unit_quantized in one pass (rows_gated_unit_quantized): a workgroup of 8 waves per row
// computes the unit with GatedOp's function (gated_unit_value: the elementwise kernel's values,
// bit for bit) and rotates and quantizes it: in registers (kernels/int8_row_regs.h: each lane
// computes 16 consecutive values of the unit from 16-byte loads of a and b, stores them to `out`
// when asked, and rotates them; 2 segments of 512 a wave hold rows up to 8192), or, for groups,
// widths and alignments that path does not take, into an LDS row rotated there
// (kernels/int8_row_lds.h).
constexpr int kUnitRowThreads = 8 * kWaveSize;
constexpr int64_t kUnitRowFloats = 8192;  // 32 KiB: ffn_down's input width
// The register pass's loader: the unit's values at columns col .. col + 15 of the row, 4 columns
// an access (a, b and out aligned for them: the launcher's condition), written to out when given.
template <GatedUnit kKind>
struct UnitLoad {
  const void *a, *b;  // the row's first element
  void* out;          // null: none
  bool a_bf16, b_bf16, out_bf16;
  __device__ void operator()(int col, float (&v)[int8_regs::kLaneValues]) const {
#pragma unroll
    for (int c = 0; c < int8_regs::kLaneValues; c += 4) {
      float av[4], bv[4], u[4];  // u: a pointer into v would put v in scratch memory on AMD
      load4_at(a, a_bf16, col + c, true, av);
      load4_at(b, b_bf16, col + c, true, bv);
#pragma unroll
      for (int j = 0; j < 4; ++j) v[c + j] = u[j] = gated_unit_value<kKind>(av[j], bv[j]);
      if (out) store4_at(out, out_bf16, col + c, u);
    }
  }
};
// The register pass: 8 waves of 2 segments of 512 (rows up to 8192), no LDS row.
template <GatedUnit kKind>
__global__ __launch_bounds__(kUnitRowThreads) void gated_unit_quantize_regs_kernel(Mat a, Mat b, Mat out, int cols,
                                                                                  int8_t* q, float* q_scale,
                                                                                  int group) {
  static_assert(kUnitRowThreads / kWaveSize * 2 * int8_regs::kSegment == kUnitRowFloats, "the unit's widest row");
  __shared__ float partial[2 * kUnitRowThreads / kWaveSize];
  const int64_t row = block_x();
  const UnitLoad<kKind> load{row_start(a, row), row_start(b, row), out.p ? row_start(out, row) : nullptr, a.bf16,
                             b.bf16, out.bf16};
  int8_regs::rotate_quantize_row<kUnitRowThreads, 2>(load, cols, group, partial, q + row * cols, q_scale + row);
}
// The LDS stages: the unit's values into the LDS row, rotated there.
template <GatedUnit kKind>
__global__ __launch_bounds__(kUnitRowThreads) void gated_unit_quantize_kernel(Mat a, Mat b, Mat out, int cols,
                                                                             int8_t* q, float* q_scale, int group) {
  __shared__ float lds[kUnitRowFloats];
  __shared__ float partial[2 * kUnitRowThreads / kWaveSize];
  const int64_t row = block_x();
  const int tid = int(thread_x());
  for (int c = tid; c < cols; c += kUnitRowThreads) {
    lds[c] = gated_unit_value<kKind>(load1(a, row, c), load1(b, row, c));
    if (out.p) store1(out, row, c, lds[c]);
  }
  sync_workgroup();
  int8_row::rotate_quantize<kUnitRowThreads>(lds, cols, group, tid, partial, q + row * cols, q_scale + row);
}

struct SiluOp {
  Mat x, y;
  __device__ void operator()(int64_t row, int64_t c, int n, bool vec) const {
    float v[4];
    load4(x, row, c, n, vec, v);
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = v[j] * sigmoid_exact(v[j]);
    store4(y, row, c, n, vec, v);
  }
};

struct GatherOp {
  Mat src, dst;
  const int32_t* ids;  // null: identity
  __device__ void operator()(int64_t row, int64_t c, int n, bool vec) const {
    float v[4];
    load4(src, ids ? int64_t(ids[row]) : row, c, n, vec, v);
    store4(dst, row, c, n, vec, v);
  }
};

template <int W, class Op>
__global__ __launch_bounds__(W * kWaveSize) void elementwise_kernel(Op op, int64_t cols, bool vec) {
  const int64_t row = block_x();
  const int64_t c = (int64_t(block_y()) * W * kWaveSize + thread_x()) * 4;
  if (c >= cols) return;
  const int n = cols - c < 4 ? int(cols - c) : 4;
  op(row, c, n, vec && n == 4);
}

// ---- RMS norm: one wave per (row, group) ---------------------------------------------------------
// kModulate: then ·(1 + scale) + shift per column (norm_modulate; shift and scale are indexed
// by the row's column), of x plus its updates (add_norm_modulate: added in both passes, the
// same bits each time, and with u.store written back in the second).
template <int W, bool kModulate>
__global__ __launch_bounds__(W * kWaveSize) void rms_norm_kernel(Mat x, Mat y, Vec w, NormWeight mode, float eps,
                                                            int64_t group, int64_t groups_per_row, int64_t items,
                                                            bool vec, Vec shift, Vec scale, Updates u) {
  const int64_t item = int64_t(block_x()) * W + thread_x() / kWaveSize;
  if (item >= items) return;  // whole waves leave together
  const int64_t row = item / groups_per_row, g0 = (item % groups_per_row) * group;
  const int64_t lane = lane_id();
  float ss = 0.0f;
  // Unrolled so that several 16-byte loads per lane are in flight (whole-row norms: 24 each);
  // twice with the updates' operands (four times they run out of scalar registers on AMD).
  constexpr int kUnroll = kModulate ? 2 : 4;
#pragma unroll kUnroll
  for (int64_t c = lane * 4; c < group; c += kWaveSize * 4) {
    const int n = group - c < 4 ? int(group - c) : 4;
    float v[4];
    load4(x, row, g0 + c, n, vec && n == 4, v);
    if constexpr (kModulate) add_updates(u, row, g0 + c, n, vec && n == 4, v);
    ss += v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3];
  }
  ss = wave_sum(ss);
  const float inv = 1.0f / sqrt_f(ss / float(group) + eps);
#pragma unroll kUnroll
  for (int64_t c = lane * 4; c < group; c += kWaveSize * 4) {
    const int n = group - c < 4 ? int(group - c) : 4;
    float v[4];
    load4(x, row, g0 + c, n, vec && n == 4, v);
    if constexpr (kModulate) {
      add_updates(u, row, g0 + c, n, vec && n == 4, v);
      if (u.store) store4(x, row, g0 + c, n, vec && n == 4, v);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[j] *= inv;
      if (j < n && mode == NormWeight::Mul) v[j] *= at(w, c + j);
      if (j < n && mode == NormWeight::OnePlus) v[j] *= at(w, c + j) + 1.0f;
      if (kModulate && j < n) v[j] = v[j] * (1.0f + at(scale, g0 + c + j)) + at(shift, g0 + c + j);
    }
    store4(y, row, g0 + c, n, vec && n == 4, v);
  }
}

// ---- RoPE: one thread per rotated pair (row, head, i < rot_dim / 2) ------------------------------
template <int W>
__global__ __launch_bounds__(W * kWaveSize) void rope_kernel(Mat x, const float* sin, int64_t ld_sin, const float* cos,
                                                        int64_t ld_cos, int64_t head_dim, int64_t half,
                                                        int64_t heads, int64_t total) {
  const int64_t idx = int64_t(block_x()) * W * kWaveSize + thread_x();
  if (idx >= total) return;
  const int64_t i = idx % half, rest = idx / half, h = rest % heads, r = rest / heads;
  const int64_t c0 = h * head_dim + i;
  const float a = load1(x, r, c0), b = load1(x, r, c0 + half);
  const float* s = sin + r * ld_sin;
  const float* c = cos + r * ld_cos;
  // x·cos + rotate_half(x)·sin, as the host replay computes it.
  store1(x, r, c0, a * c[i] + (-b) * s[i]);
  store1(x, r, c0 + half, b * c[i + half] + a * s[i + half]);
}

// ---- per-head RMS norm + RoPE: one wave per (row, head) -------------------------------------------
// Lane l owns the rotated pairs (i, i + half) for i = l, l + wave, ...: it reads both halves of
// its pairs for the statistics, then normalises and rotates exactly the elements it read, so y
// may be x. Loads are coalesced across the wave (consecutive i).
template <int W>
__global__ __launch_bounds__(W * kWaveSize) void norm_rope_kernel(Mat x, Mat y, Vec w, float eps, int64_t head_dim,
                                                             int64_t heads, int64_t items, const float* sin,
                                                             int64_t ld_sin, const float* cos, int64_t ld_cos) {
  const int64_t item = int64_t(block_x()) * W + thread_x() / kWaveSize;
  if (item >= items) return;  // whole waves leave together
  const int64_t row = item / heads, g0 = (item % heads) * head_dim, half = head_dim / 2;
  const int64_t lane = lane_id();
  float ss = 0.0f;
  for (int64_t i = lane; i < half; i += kWaveSize) {
    const float a = load1(x, row, g0 + i), b = load1(x, row, g0 + i + half);
    ss += a * a + b * b;
  }
  ss = wave_sum(ss);
  const float inv = 1.0f / sqrt_f(ss / float(head_dim) + eps);
  const float* s = sin + row * ld_sin;
  const float* c = cos + row * ld_cos;
  for (int64_t i = lane; i < half; i += kWaveSize) {
    float a = load1(x, row, g0 + i), b = load1(x, row, g0 + i + half);
    // rms_norm's n = x·inv, n·w; then rope's x·cos + rotate_half(x)·sin, as the host replays.
    a *= inv;
    a *= at(w, i);
    b *= inv;
    b *= at(w, i + half);
    store1(y, row, g0 + i, a * c[i] + (-b) * s[i]);
    store1(y, row, g0 + i + half, b * c[i + half] + a * s[i + half]);
  }
}

// ---- register-resident fast paths of norm_modulate and norm_rope ------------------------------
// Both read each input element exactly once with 16-byte (f32) / 8-byte (bf16) accesses issued
// together, keep the values in registers through the reduction, and read the per-column
// parameters with the same vector width; the launchers fall back to the kernels above when a
// shape or alignment does not fit.

// Row `row` of m into registers, the chunk layout of norm_modulate_regs_kernel (below): thread
// tid holds columns 4(tid + k·W·waves) .. +3 of chunk k; columns past cols read as zero.
template <int W, int kChunks>
__device__ inline void load_row_chunks(const Mat& m, int64_t row, int tid, int cols, float (&v)[kChunks][4]) {
  const void* mrow = static_cast<const char*>(m.p) + row * m.ld * (m.bf16 ? 2 : 4);
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int c = (k * W * kWaveSize + tid) * 4;
    load4_at(mrow, m.bf16, c, c < cols, v[k]);
  }
}

// Row `row` of a bf16 matrix as its raw bits, 4 columns (8 bytes) a chunk in load_row_chunks'
// layout; columns past cols read as zero bits.
template <int W, int kChunks>
__device__ inline void load_row_bits(const Mat& m, int64_t row, int tid, int cols, uint64_t (&b)[kChunks]) {
  const uint16_t* mrow = static_cast<const uint16_t*>(m.p) + row * m.ld;
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int c = (k * W * kWaveSize + tid) * 4;
    b[k] = c < cols ? *reinterpret_cast<const uint64_t*>(mrow + c) : 0;
  }
}

// v += d·gate per column of the thread's chunks, as AddOp adds it: d as f32 values, or as bf16 bits.
template <int W, int kChunks>
__device__ inline void add_row_update(float (&v)[kChunks][4], const float (&dv)[kChunks][4], const Vec& gate, int tid,
                                      int cols) {
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int c = (k * W * kWaveSize + tid) * 4;
    if (c >= cols) continue;
    float g[4];
    load4_at(gate.p, gate.bf16, c, true, g);
#pragma unroll
    for (int j = 0; j < 4; ++j) v[k][j] += dv[k][j] * g[j];
  }
}
template <int W, int kChunks>
__device__ inline void add_row_update_bits(float (&v)[kChunks][4], const uint64_t (&b)[kChunks], const Vec& gate,
                                           int tid, int cols) {
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int c = (k * W * kWaveSize + tid) * 4;
    if (c >= cols) continue;
    float g[4];
    load4_at(gate.p, gate.bf16, c, true, g);
#pragma unroll
    for (int j = 0; j < 4; ++j) v[k][j] += bf16_bits_to_float(uint32_t(b[k] >> (16 * j)) & 0xffffu) * g[j];
  }
}

// norm_modulate, one block per row, the whole row in registers: thread t holds columns
// 4(t + k·threads) .. +3 for k < kChunks (cols <= 4·threads·kChunks, cols % 4 == 0, rows
// aligned); the sum of squares is reduced over the wave, then over the block's waves through
// shared memory. A block per row (not a wave) keeps few values per thread, so many rows' loads
// are in flight on each multiprocessor: these passes are bound by HBM.
// With kUpdates (add_norm_modulate) the row is first updated, x + d₀·gate₀ (+ d₁·gate₁) in order,
// and with kStore written back. Every row is loaded at once, so the loads are in flight together:
// one update's as f32 values; two updates' (bf16, as the DiT's are) as their raw bits, half the
// registers, so the three rows take no more than x and one f32 update do.
// With kQuant (add_norm_modulate_quantized) the row's final fp32 values also go into LDS, where
// the workgroup rotates and quantizes them into qo: each wave reads 512-value segments back into
// registers, rotates them there and writes them back (int8_regs::rotate_quantize_row_lds, where
// qo.regs: int8_regs::fits and q 4-byte aligned), else stage by stage in LDS
// (int8_row::rotate_quantize); y is then written only where qo.y_too says so.
struct QuantOut {
  int8_t* q;
  float* scale;
  int group;
  bool y_too;
  bool regs;
};
// The register pass's loader from a row already in LDS (16-byte aligned), 4 values an access.
struct LdsLoad {
  const float* row;
  __device__ void operator()(int col, float (&v)[int8_regs::kLaneValues]) const {
#pragma unroll
    for (int c = 0; c < int8_regs::kLaneValues; c += 4) {
      const int8_regs::Quad q = *reinterpret_cast<const int8_regs::Quad*>(row + col + c);
#pragma unroll
      for (int j = 0; j < 4; ++j) v[c + j] = q.f[j];
    }
  }
};
template <int W, int kChunks, int kUpdates, bool kStore, bool kQuant = false>
__global__ __launch_bounds__(W * kWaveSize) void norm_modulate_regs_kernel(Mat x, Mat y, Vec w, float eps, int cols,
                                                                      Vec shift, Vec scale, Updates u, QuantOut qo) {
  const int64_t row = block_x();
  const int tid = int(thread_x());
  float v[kChunks][4];
  load_row_chunks<W>(x, row, tid, cols, v);
  if constexpr (kUpdates == 1) {
    float dv[kChunks][4];
    load_row_chunks<W>(u.d[0], row, tid, cols, dv);
    add_row_update<W>(v, dv, u.gate[0], tid, cols);
  } else if constexpr (kUpdates == 2) {
    uint64_t b0[kChunks], b1[kChunks];
    load_row_bits<W>(u.d[0], row, tid, cols, b0);
    load_row_bits<W>(u.d[1], row, tid, cols, b1);
    add_row_update_bits<W>(v, b0, u.gate[0], tid, cols);
    add_row_update_bits<W>(v, b1, u.gate[1], tid, cols);
  }
  if constexpr (kUpdates > 0 && kStore) {
    void* xout = row_start(x, row);
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const int c = (k * W * kWaveSize + tid) * 4;
      if (c < cols) store4_at(xout, x.bf16, c, v[k]);
    }
  }
  float ss = 0.0f;
#pragma unroll
  for (int k = 0; k < kChunks; ++k) ss += v[k][0] * v[k][0] + v[k][1] * v[k][1] + v[k][2] * v[k][2] + v[k][3] * v[k][3];
  ss = wave_sum(ss);
  if constexpr (W > 1) {
    __shared__ float partial[W];
    if (lane_id() == 0) partial[tid / kWaveSize] = ss;
    sync_workgroup();
    ss = 0.0f;
#pragma unroll
    for (int i = 0; i < W; ++i) ss += partial[i];
  }
  const float inv = 1.0f / sqrt_f(ss / float(cols) + eps);
  void* yrow = row_start(y, row);
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int c = (k * W * kWaveSize + tid) * 4;
    if (c >= cols) continue;
    float wv[4], sh[4], sc[4];
    load4_at(w.p, w.bf16, c, true, wv);
    load4_at(shift.p, shift.bf16, c, true, sh);
    load4_at(scale.p, scale.bf16, c, true, sc);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // rms_norm (x·inv, then ·w), then modulate, as the host replays them.
      float n = v[k][j] * inv;
      n *= wv[j];
      v[k][j] = n * (1.0f + sc[j]) + sh[j];
    }
    if (!kQuant || qo.y_too) store4_at(yrow, y.bf16, c, v[k]);
  }
  if constexpr (kQuant) {
    alignas(16) __shared__ float lds[kChunks * W * kWaveSize * 4];  // the row (cols fit by the launcher's choice)
    __shared__ float wave_partial[2 * W];
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      const int c = (k * W * kWaveSize + tid) * 4;
      if (c >= cols) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) lds[c + j] = v[k][j];
    }
    sync_workgroup();
    if (qo.regs)  // the rotation in registers, from the row in LDS and back (kernels/int8_row_regs.h)
      int8_regs::rotate_quantize_row_lds<W * kWaveSize>(LdsLoad{lds}, cols, qo.group, lds, wave_partial,
                                                        qo.q + row * cols, qo.scale + row);
    else
      int8_row::rotate_quantize<W * kWaveSize>(lds, cols, qo.group, tid, wave_partial, qo.q + row * cols,
                                               qo.scale + row);
  }
}

// norm_rope, one block per row: a group of `lanes` lanes (lanes = head_dim / 8, a power of two
// dividing the wave) handles one head at a time, lane s owning the pairs i = 4s .. 4s+3 and
// i + half; the groups of a block walk the row's heads kBatch at a time (group g takes heads
// g, g + groups, ...), so each lane loads its sin/cos/weight values once per row and has
// 2·kBatch head loads in flight. The lane reads exactly the elements it writes: y may be x.
constexpr int kRopeBatch = 3;
template <int W>
__global__ __launch_bounds__(W * kWaveSize) void norm_rope_regs_kernel(Mat x, Mat y, Vec w, float eps, int head_dim,
                                                                  int heads, int lane_shift, const float* sin,
                                                                  int64_t ld_sin, const float* cos, int64_t ld_cos) {
  const int64_t row = block_x();
  const int lanes = 1 << lane_shift, groups = (W * kWaveSize) >> lane_shift;
  const int group = int(thread_x()) >> lane_shift, i = (int(thread_x()) & (lanes - 1)) * 4, half = head_dim / 2;
  norm_rope_lane::Coefficients coef;
  load4_at(sin + row * ld_sin, false, i, true, coef.s0);
  load4_at(sin + row * ld_sin, false, i + half, true, coef.s1);
  load4_at(cos + row * ld_cos, false, i, true, coef.c0);
  load4_at(cos + row * ld_cos, false, i + half, true, coef.c1);
  load4_at(w.p, w.bf16, i, true, coef.w0);
  load4_at(w.p, w.bf16, i + half, true, coef.w1);
  const void* xrow = row_start(x, row);
  void* yrow = row_start(y, row);
  for (int base = 0; base < heads; base += groups * kRopeBatch) {  // uniform across the block
    float a[kRopeBatch][4], b[kRopeBatch][4];
#pragma unroll
    for (int j = 0; j < kRopeBatch; ++j) {
      const int h = base + group + j * groups;
      load4_at(xrow, x.bf16, int64_t(h) * head_dim + i, h < heads, a[j]);
      load4_at(xrow, x.bf16, int64_t(h) * head_dim + i + half, h < heads, b[j]);
    }
#pragma unroll
    for (int j = 0; j < kRopeBatch; ++j) {
      const int h = base + group + j * groups;
      float ya[4], yb[4];
      norm_rope_lane::apply(a[j], b[j], coef, lanes, head_dim, eps, ya, yb);
      if (h < heads) {
        store4_at(yrow, y.bf16, int64_t(h) * head_dim + i, ya);
        store4_at(yrow, y.bf16, int64_t(h) * head_dim + i + half, yb);
      }
    }
  }
}

// ---- host side ---------------------------------------------------------------------------------
Mat mat(const RowsMatrix& m) { return {m.data, m.ld, m.bf16}; }
Vec vec(RowsVector v) { return {v.data, v.bf16}; }

// Rows aligned for 4-column vector accesses (16 bytes f32, 8 bytes bf16).
bool aligned4(const RowsMatrix& m) {
  const uint64_t bytes = m.bf16 ? 8 : 16, elem = m.bf16 ? 2 : 4;
  return reinterpret_cast<uintptr_t>(m.data) % bytes == 0 && (uint64_t(m.ld) * elem) % bytes == 0;
}

// A parameter vector (or f32 table row) aligned for 4-element vector accesses at multiples of 4.
bool aligned4(const void* p, bool bf16) { return reinterpret_cast<uintptr_t>(p) % (bf16 ? 8 : 16) == 0; }

void require(bool ok, const char* kernel, const std::string& why) {
  if (!ok) throw failure(std::string(kernel) + ": " + why);
}

void require_matrix(const RowsMatrix& m, const char* kernel, const char* name) {
  require(m.data && m.rows >= 0 && m.cols >= 0 && m.ld >= m.cols, kernel,
          std::string(name) + " is not a valid device matrix");
}

template <class Op>
void launch_elementwise(const Op& op, int64_t rows, int64_t cols, bool vec, hipStream_t stream, const char* kernel) {
  if (rows == 0 || cols == 0) return;
  with_waves([&](auto waves) {
    constexpr int W = decltype(waves)::value, kThreads = W * kWaveSize;
    const int64_t col_blocks = (cols + 4 * kThreads - 1) / (4 * kThreads);
    require(rows <= 0x7fffffff && col_blocks <= 65535, kernel,
            "shape " + std::to_string(rows) + "x" + std::to_string(cols) + " is too large");
    hipLaunchKernelGGL((elementwise_kernel<W, Op>), dim3(unsigned(rows), unsigned(col_blocks)), dim3(kThreads), 0,
                       stream, op, cols, vec);
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

unsigned blocks_for(int64_t items, int64_t per_block, const char* kernel) {
  const int64_t blocks = (items + per_block - 1) / per_block;
  require(blocks <= 0x7fffffff, kernel, "too many items (" + std::to_string(items) + ")");
  return unsigned(blocks);
}

template <int W, int kChunks, int kUpdates, bool kStore, bool kQuant>
void launch_norm_modulate_regs_as(const RowsMatrix& x, RowsVector w, float eps, RowsVector shift, RowsVector scale,
                                  const RowsMatrix& y, const Updates& u, const QuantOut& qo, hipStream_t stream) {
  hipLaunchKernelGGL((norm_modulate_regs_kernel<W, kChunks, kUpdates, kStore, kQuant>),
                     dim3(blocks_for(x.rows, 1, "norm_modulate")), dim3(W * kWaveSize), 0, stream, mat(x), mat(y),
                     vec(w), eps, int(x.cols), vec(shift), vec(scale), u, qo);
}
template <int W, int kChunks, bool kQuant = false>
void launch_norm_modulate_regs(const RowsMatrix& x, RowsVector w, float eps, RowsVector shift, RowsVector scale,
                               const RowsMatrix& y, const Updates& u, hipStream_t stream, const QuantOut& qo = {}) {
  if (u.count == 0) launch_norm_modulate_regs_as<W, kChunks, 0, true, kQuant>(x, w, eps, shift, scale, y, u, qo, stream);
  else if (u.count == 1 && u.store)
    launch_norm_modulate_regs_as<W, kChunks, 1, true, kQuant>(x, w, eps, shift, scale, y, u, qo, stream);
  else if (u.count == 1) launch_norm_modulate_regs_as<W, kChunks, 1, false, kQuant>(x, w, eps, shift, scale, y, u, qo, stream);
  else if (u.store) launch_norm_modulate_regs_as<W, kChunks, 2, true, kQuant>(x, w, eps, shift, scale, y, u, qo, stream);
  else launch_norm_modulate_regs_as<W, kChunks, 2, false, kQuant>(x, w, eps, shift, scale, y, u, qo, stream);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace

void rows_rms_norm(const RowsMatrix& x, RowsVector w, NormWeight mode, float eps, int64_t group, const RowsMatrix& y,
                   hipStream_t stream) {
  require_matrix(x, "rms_norm", "x");
  require_matrix(y, "rms_norm", "y");
  require(group > 0 && x.cols % group == 0, "rms_norm", "group must divide the columns");
  require(y.rows == x.rows && y.cols == x.cols, "rms_norm", "y shape");
  require(mode == NormWeight::None || w.data, "rms_norm", "weight missing");
  const int64_t items = x.rows * (x.cols / group);
  if (items == 0) return;
  const bool v = group % 4 == 0 && aligned4(x) && aligned4(y);
  with_waves([&](auto waves) {
    constexpr int W = decltype(waves)::value;
    hipLaunchKernelGGL((rms_norm_kernel<W, false>), dim3(blocks_for(items, W, "rms_norm")), dim3(W * kWaveSize), 0,
                       stream, mat(x), mat(y), vec(w), mode, eps, group, x.cols / group, items, v, Vec{nullptr, false},
                       Vec{nullptr, false}, Updates{});
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

void rows_norm_modulate(const RowsMatrix& x, RowsVector w, float eps, RowsVector shift, RowsVector scale,
                        const RowsMatrix& y, hipStream_t stream) {
  rows_add_norm_modulate(x, RowsUpdates{}, w, eps, shift, scale, y, stream);
}

namespace {

// The rows of the quantizing register kernel: its LDS row, at most 8192 floats (32 KiB).
template <int W, int kChunks>
constexpr int64_t quant_row_floats() {
  return kChunks * W * kWaveSize * 4 < 8192 ? kChunks * W * kWaveSize * 4 : 8192;
}

// rows_add_norm_modulate and its quantizing form. With qo (quantizing): only the register kernel,
// y optional (y.data null: none); returns whether it launched. Without: always launches.
bool norm_modulate_pass(const RowsMatrix& x, const RowsUpdates& updates, RowsVector w, float eps, RowsVector shift,
                        RowsVector scale, const RowsMatrix& y, const QuantOut* qo, hipStream_t stream) {
  const bool has_y = !qo || y.data;
  require_matrix(x, "norm_modulate", "x");
  if (has_y) {
    require_matrix(y, "norm_modulate", "y");
    require(y.rows == x.rows && y.cols == x.cols, "norm_modulate", "y shape");
    require(x.data != y.data || (x.bf16 == y.bf16 && x.ld == y.ld), "norm_modulate",
            "y may be x only with the same dtype and row stride");
  }
  require(w.data && shift.data && scale.data, "norm_modulate", "weight, shift and scale are required");
  require(updates.count >= 0 && updates.count <= 2, "add_norm_modulate", "0 to 2 updates");
  Updates u{};
  u.count = updates.count;
  u.store = updates.store;
  bool d_aligned = true, gates_aligned = true;
  for (int i = 0; i < updates.count; ++i) {
    const RowsMatrix& d = updates.d[i];
    require_matrix(d, "add_norm_modulate", "d");
    require(d.rows == x.rows && d.cols == x.cols, "add_norm_modulate", "d shape");
    require(updates.gate[i].data, "add_norm_modulate", "the gate is required");
    u.d[i] = mat(d);
    u.gate[i] = vec(updates.gate[i]);
    d_aligned = d_aligned && aligned4(d);
    gates_aligned = gates_aligned && aligned4(updates.gate[i].data, updates.gate[i].bf16);
  }
  if (updates.count > 0 && has_y) require(x.data != y.data, "add_norm_modulate", "y must not be x");
  if (x.rows == 0 || x.cols == 0) return true;
  const bool v = x.cols % 4 == 0 && aligned4(x) && (!has_y || aligned4(y)) && d_aligned;
  // Two updates go through the register kernel as bf16 bits (the DiT's); f32 ones take the other.
  const bool bits = updates.count < 2 || (updates.d[0].bf16 && updates.d[1].bf16);
  if (v && bits && gates_aligned && aligned4(w.data, w.bf16) && aligned4(shift.data, shift.bf16) &&
      aligned4(scale.data, scale.bf16)) {
    // The register-resident kernel for rows of up to 4·threads·kChunks columns (the smallest fit).
    bool launched = false;
    with_waves([&](auto waves) {
      constexpr int W = decltype(waves)::value, kThreads = W * kWaveSize;
      const int64_t chunks = (x.cols + 4 * kThreads - 1) / (4 * kThreads);
      if (qo) {  // the quantizing kernel, where its LDS row holds the row
        const QuantOut& q = *qo;
        if (chunks <= 2 && x.cols <= quant_row_floats<W, 2>())
          launch_norm_modulate_regs<W, 2, true>(x, w, eps, shift, scale, y, u, stream, q), launched = true;
        else if (chunks <= 8 && x.cols <= quant_row_floats<W, 8>())
          launch_norm_modulate_regs<W, 8, true>(x, w, eps, shift, scale, y, u, stream, q), launched = true;
        else if (chunks <= 24 && x.cols <= quant_row_floats<W, 24>())
          launch_norm_modulate_regs<W, 24, true>(x, w, eps, shift, scale, y, u, stream, q), launched = true;
        return;
      }
      launched = chunks <= 24;
      if (chunks <= 2) launch_norm_modulate_regs<W, 2>(x, w, eps, shift, scale, y, u, stream);
      else if (chunks <= 8) launch_norm_modulate_regs<W, 8>(x, w, eps, shift, scale, y, u, stream);
      else if (chunks <= 24) launch_norm_modulate_regs<W, 24>(x, w, eps, shift, scale, y, u, stream);
    });
    if (launched || qo) return launched;
  }
  if (qo) return false;
  // Any other shape: the wave-per-row kernel, which adds the updates in both of its passes over
  // the row (the same operations in order).
  with_waves([&](auto waves) {
    constexpr int W = decltype(waves)::value;
    hipLaunchKernelGGL((rms_norm_kernel<W, true>), dim3(blocks_for(x.rows, W, "norm_modulate")), dim3(W * kWaveSize),
                       0, stream, mat(x), mat(y), vec(w), NormWeight::Mul, eps, x.cols, int64_t(1), x.rows, v,
                       vec(shift), vec(scale), u);
  });
  MOSS_HIP_CHECK(hipGetLastError());
  return true;
}

}  // namespace

void rows_add_norm_modulate(const RowsMatrix& x, const RowsUpdates& updates, RowsVector w, float eps,
                            RowsVector shift, RowsVector scale, const RowsMatrix& y, hipStream_t stream) {
  norm_modulate_pass(x, updates, w, eps, shift, scale, y, nullptr, stream);
}

bool rows_add_norm_modulate_quantized(const RowsMatrix& x, const RowsUpdates& updates, RowsVector w, float eps,
                                      RowsVector shift, RowsVector scale, const RowsMatrix& y, int64_t group,
                                      int8_t* q, float* q_scale, hipStream_t stream) {
  require(q && q_scale && group >= 4 && group <= 1024 && x.cols % group == 0, "add_norm_modulate_quantized",
          "the quantized rows, their scales and a group of 4 to 1024 dividing the width are required");
  const bool regs = int8_regs::fits(x.cols, group) && reinterpret_cast<uintptr_t>(q) % 4 == 0;
  const QuantOut qo{q, q_scale, int(group), y.data != nullptr, regs};
  return norm_modulate_pass(x, updates, w, eps, shift, scale, y, &qo, stream);
}

void rows_norm_rope(const RowsMatrix& x, RowsVector w, float eps, int64_t head_dim, const float* sin,
                    int64_t ld_sin, const float* cos, int64_t ld_cos, const RowsMatrix& y, hipStream_t stream) {
  require_matrix(x, "norm_rope", "x");
  require_matrix(y, "norm_rope", "y");
  require(y.rows == x.rows && y.cols == x.cols, "norm_rope", "y shape");
  require(w.data && sin && cos, "norm_rope", "weight, sin and cos are required");
  require(head_dim > 0 && head_dim % 2 == 0 && x.cols % head_dim == 0, "norm_rope",
          "head_dim must be even and divide the columns");
  require(x.data != y.data || (x.bf16 == y.bf16 && x.ld == y.ld), "norm_rope",
          "y may be x only with the same dtype and row stride");
  const int64_t heads = x.cols / head_dim, items = x.rows * heads;
  if (items == 0) return;
  // The register kernel: head_dim / 8 lanes per head, a power of two dividing the wave (head_dim
  // 16 .. 256), every access aligned.
  int lane_shift = -1;
  for (int s = 0; (int64_t(8) << s) <= head_dim && (1 << s) <= kWaveSize; ++s)
    if ((int64_t(8) << s) == head_dim) lane_shift = s;
  const bool tables_aligned = aligned4(sin, false) && aligned4(cos, false) && ld_sin % 4 == 0 && ld_cos % 4 == 0;
  if (lane_shift >= 0 && aligned4(x) && aligned4(y) && aligned4(w.data, w.bf16) && tables_aligned &&
      x.rows <= 0x7fffffff && heads <= 0x7fffffff) {
    with_waves([&](auto waves) {
      constexpr int W = decltype(waves)::value;
      hipLaunchKernelGGL(norm_rope_regs_kernel<W>, dim3(unsigned(x.rows)), dim3(W * kWaveSize), 0, stream, mat(x),
                         mat(y), vec(w), eps, int(head_dim), int(heads), lane_shift, sin, ld_sin, cos, ld_cos);
    });
    MOSS_HIP_CHECK(hipGetLastError());
    return;
  }
  with_waves([&](auto waves) {
    constexpr int W = decltype(waves)::value;
    hipLaunchKernelGGL(norm_rope_kernel<W>, dim3(blocks_for(items, W, "norm_rope")), dim3(W * kWaveSize), 0, stream,
                       mat(x), mat(y), vec(w), eps, head_dim, heads, items, sin, ld_sin, cos, ld_cos);
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

void rows_add(const RowsMatrix& x, const RowsMatrix& d, RowsVector gate, hipStream_t stream) {
  require_matrix(x, "add", "x");
  require_matrix(d, "add", "d");
  require(d.rows == x.rows && d.cols == x.cols, "add", "shape mismatch");
  launch_elementwise(AddOp{mat(x), mat(d), vec(gate)}, x.rows, x.cols, aligned4(x) && aligned4(d), stream, "add");
}

void rows_gated_unit(GatedUnit kind, const RowsMatrix& a, const RowsMatrix& b, const RowsMatrix& out,
                     hipStream_t stream) {
  require_matrix(a, "gated_unit", "a");
  require_matrix(b, "gated_unit", "b");
  require_matrix(out, "gated_unit", "out");
  require(b.rows == a.rows && b.cols == a.cols && out.rows == a.rows && out.cols == a.cols, "gated_unit",
          "shape mismatch");
  launch_elementwise(GatedOp{mat(a), mat(b), mat(out), kind}, a.rows, a.cols,
                     aligned4(a) && aligned4(b) && aligned4(out), stream, "gated_unit");
}

bool rows_gated_unit_quantized(GatedUnit kind, const RowsMatrix& a, const RowsMatrix& b, const RowsMatrix& out,
                               int64_t group, int8_t* q, float* q_scale, hipStream_t stream) {
  require_matrix(a, "gated_unit_quantized", "a");
  require_matrix(b, "gated_unit_quantized", "b");
  require(a.rows == b.rows && a.cols == b.cols, "gated_unit_quantized", "shape mismatch");
  if (out.data) {
    require_matrix(out, "gated_unit_quantized", "out");
    require(out.rows == a.rows && out.cols == a.cols, "gated_unit_quantized", "out shape");
  }
  require(q && q_scale && group >= 4 && group <= 1024 && a.cols % group == 0, "gated_unit_quantized",
          "the quantized rows, their scales and a group of 4 to 1024 dividing the width are required");
  if (a.cols > kUnitRowFloats || a.rows > 0x7fffffff) return false;
  if (a.rows == 0) return true;
  // The register pass (its loads and stores of a, b and out are 4 columns wide, of q 4 bytes),
  // else the LDS stages.
  const bool regs = int8_regs::fits(a.cols, group) && reinterpret_cast<uintptr_t>(q) % 4 == 0 && aligned4(a) &&
                    aligned4(b) && (!out.data || aligned4(out));
  const auto launch = [&](auto regs_kernel, auto lds_kernel) {
    const auto kernel = regs ? regs_kernel : lds_kernel;
    hipLaunchKernelGGL(kernel, dim3(unsigned(a.rows)), dim3(kUnitRowThreads), 0, stream, mat(a), mat(b), mat(out),
                       int(a.cols), q, q_scale, int(group));
  };
  switch (kind) {
    case GatedUnit::Situ:
      launch(gated_unit_quantize_regs_kernel<GatedUnit::Situ>, gated_unit_quantize_kernel<GatedUnit::Situ>);
      break;
    case GatedUnit::SwiGlu:
      launch(gated_unit_quantize_regs_kernel<GatedUnit::SwiGlu>, gated_unit_quantize_kernel<GatedUnit::SwiGlu>);
      break;
    default:
      launch(gated_unit_quantize_regs_kernel<GatedUnit::SigmoidGate>,
             gated_unit_quantize_kernel<GatedUnit::SigmoidGate>);
      break;
  }
  MOSS_HIP_CHECK(hipGetLastError());
  return true;
}

void rows_silu(const RowsMatrix& x, const RowsMatrix& y, hipStream_t stream) {
  require_matrix(x, "silu", "x");
  require_matrix(y, "silu", "y");
  require(y.rows == x.rows && y.cols == x.cols, "silu", "shape mismatch");
  launch_elementwise(SiluOp{mat(x), mat(y)}, x.rows, x.cols, aligned4(x) && aligned4(y), stream, "silu");
}

void rows_rope(const RowsMatrix& x, const float* sin, int64_t ld_sin, const float* cos, int64_t ld_cos,
               int64_t head_dim, int64_t rot_dim, hipStream_t stream) {
  require_matrix(x, "rope", "x");
  require(sin && cos, "rope", "sin and cos are required");
  require(head_dim > 0 && x.cols % head_dim == 0 && rot_dim % 2 == 0 && rot_dim <= head_dim, "rope", "dims");
  const int64_t half = rot_dim / 2, heads = x.cols / head_dim, total = x.rows * heads * half;
  if (total == 0) return;
  with_waves([&](auto waves) {
    constexpr int W = decltype(waves)::value;
    hipLaunchKernelGGL(rope_kernel<W>, dim3(blocks_for(total, W * kWaveSize, "rope")), dim3(W * kWaveSize), 0, stream,
                       mat(x), sin, ld_sin, cos, ld_cos, head_dim, half, heads, total);
  });
  MOSS_HIP_CHECK(hipGetLastError());
}

void rows_gather(const RowsMatrix& src, const int32_t* ids, const RowsMatrix& dst, hipStream_t stream) {
  require_matrix(src, "gather", "src");
  require_matrix(dst, "gather", "dst");
  require(src.cols == dst.cols && (ids || src.rows == dst.rows), "gather", "shape mismatch");
  launch_elementwise(GatherOp{mat(src), mat(dst), ids}, dst.rows, dst.cols, aligned4(src) && aligned4(dst), stream,
                     "gather");
}

}  // namespace moss
