// Attention cases of `moss-check kernels` (the dit, te and vae families include this header and
// call check_attention_cases with their model).
//
// Every case runs the HIP attention op (ops/hip/attention_op) on random inputs laid out as the
// models lay them out -- q, k and v as column slices of one fused [T, q|k|v] buffer at an odd
// column offset (or, "aligned" cases, at offset 0 with 16-byte aligned rows: the bf16 path where
// the NVIDIA flash kernel, and the portable kernel at head dims 128 and 256, read k and v without a
// pack), out as a column slice of a wider
// buffer poisoned with NaN -- and compares it with
// the host op (host.core().attention) on the same values: every output element, or for the large
// timed shapes a sample of query rows (first, last, tails, spread) against a host replay of just
// those rows. It also checks that nothing outside `out` was written. Rows of the table:
//   attention[tiling]  shape: q/k rows, heads(/kv heads) x head dim, bi(directional) or causal,
//   dtype (" al": aligned layout; " out:f32": bf16 q/k/v, f32 out); tilings: attention (default:
//   on NVIDIA the Hopper wgmma kernel for "bf16 al" rows of head dim 128, bidirectional; else
//   flash 64-key tiles for head dims <= 128), attention[flash] (the mma.sync flash kernel, 64-key
//   tiles, where the default is wgmma), attention[ref] (the reference kernel), attention[portable]
//   (the reference kernel on the AMD tiling); rate = 4·Tq·Tk·hd·heads flops (halved when causal) per second, pack kernel
//   included. Shapes ending in " q_rope": q is the raw projection, normalised and rotated inside the
//   portable kernel (hip_attention's QNormRope), against the host's norm_rope then attention;
//   " q_rope vt": V given as the zero-padded Vᵀ the DiT's v GEMM writes (no pack), NaN past it.
// A failing case prints its first bad element (query, head, dim, got, want) before its row.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "../kernel_check.h"
#include "ops/backend.h"
#include "ops/hip/attention_op.h"
#include "ops/hip/hip_context.h"
#include "tensor/tensor.h"

namespace attention_check {

struct Case {
  int64_t tq, tk, heads, kv_heads, head_dim;
  bool causal;
  bool bf16;          // q, k, v and out in bf16 (else f32)
  int sampled_rows;   // compare this many query rows (0: all of them)
  int reps;           // timed launches after the checked one (0: not timed)
  bool other_tiling;  // also check and time the alternative NVIDIA tilings
  bool aligned;       // q|k|v at column 0 of the fused buffer (tq != tk: q and k|v at column 0 of
                      // their buffers), out at column 8
  bool out_f32;       // bf16 q, k, v but f32 out
  bool q_rope = false;  // q is the raw projection, normalised and rotated inside the portable kernel
                        // (hip_attention's QNormRope, CoreOps::norm_rope_attention): aligned only
  bool v_transposed = false;  // (q_rope cases) V given as the zero-padded Vᵀ the DiT's v GEMM
                              // writes (CoreOps::linear_transposed), read with no pack
};

inline Case make_case(int64_t tq, int64_t tk, int64_t heads, int64_t kv_heads, int64_t head_dim, bool causal,
                      bool bf16 = false, int sampled_rows = 0, int reps = 0, bool other_tiling = false,
                      bool aligned = false, bool out_f32 = false) {
  return Case{tq, tk, heads, kv_heads, head_dim, causal, bf16, sampled_rows, reps, other_tiling, aligned, out_f32};
}

// A bidirectional aligned case whose q is normalised and rotated on its way into the portable
// kernel (the DiT's CoreOps::norm_rope_attention).
inline Case q_rope_case(int64_t t, int64_t heads, int64_t head_dim, bool bf16, int sampled_rows = 0, int reps = 0) {
  Case c = make_case(t, t, heads, heads, head_dim, false, bf16, sampled_rows, reps, false, true);
  c.q_rope = true;
  return c;
}

// The DiT's whole AMD attention path: q_rope_case with V transposed by its GEMM (bf16 only: the
// kernel reads K's rows in place).
inline Case vt_case(int64_t t, int64_t heads, int64_t head_dim, int sampled_rows = 0, int reps = 0) {
  Case c = q_rope_case(t, heads, head_dim, true, sampled_rows, reps);
  c.v_transposed = true;
  return c;
}

inline bool out_bf16(const Case& c) { return c.bf16 && !c.out_f32; }

// The cases the NVIDIA default sends to the Hopper wgmma kernel (kernels/attention_hopper.h:
// head dim 128, bidirectional, bf16 q/k/v with aligned rows); only chooses which extra rows run.
inline bool wgmma_case(const Case& c) {
  return moss::kPlatformNvidia && c.bf16 && c.aligned && c.head_dim == 128 && !c.causal;
}

// Uniform random values of standard deviation `scale` (splitmix64: fast enough for the
// 16k-token shapes, deterministic per seed).
inline void fill_uniform(std::vector<float>& v, uint64_t seed, float scale) {
  const float half_width = scale * 1.7320508f;  // uniform on [-a, a] has sd a/sqrt(3)
  for (size_t i = 0; i < v.size(); ++i) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v[i] = (float(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * half_width;
  }
}

inline std::shared_ptr<void> device_buffer(size_t bytes) {
  void* p = nullptr;
  MOSS_HIP_CHECK(hipMalloc(&p, bytes));
  return std::shared_ptr<void>(p, [](void* q) { (void)hipFree(q); });
}

// A host f32 matrix [rows, cols] and its device twin (f32 or bf16 with the same element strides).
struct Twin {
  moss::Tensor host, dev;
};

inline Twin make_twin(const std::vector<float>& values, int64_t rows, int64_t cols, bool bf16) {
  Twin t;
  t.host = moss::host_tensor(moss::DType::F32, {rows, cols});
  float* h = t.host.ptr<float>();
  const size_t n = size_t(rows * cols);
  std::shared_ptr<void> d = device_buffer(n * (bf16 ? 2 : 4));
  if (bf16) {
    std::vector<uint16_t> bits(n);
    for (size_t i = 0; i < n; ++i) {
      bits[i] = moss::f32_to_bf16(values[i]);
      h[i] = moss::bf16_to_f32(bits[i]);  // the host replay sees the rounded values
    }
    MOSS_HIP_CHECK(hipMemcpy(d.get(), bits.data(), n * 2, hipMemcpyHostToDevice));
  } else {
    std::memcpy(h, values.data(), n * 4);
    MOSS_HIP_CHECK(hipMemcpy(d.get(), values.data(), n * 4, hipMemcpyHostToDevice));
  }
  t.dev = moss::Tensor(d.get(), bf16 ? moss::DType::BF16 : moss::DType::F32, {rows, cols}, moss::Where::Device);
  t.dev.owner = d;
  return t;
}

// Query rows to compare: all, or first, last, the last block's tail and an even spread.
inline std::vector<int64_t> sample_rows(int64_t tq, int count) {
  std::vector<int64_t> rows;
  if (count <= 0 || count >= tq) {
    for (int64_t r = 0; r < tq; ++r) rows.push_back(r);
    return rows;
  }
  for (int64_t r : {int64_t(0), int64_t(1), int64_t(15), int64_t(16), tq - 1, tq - 2, tq - 17, tq / 2})
    if (r >= 0 && r < tq) rows.push_back(r);
  for (int i = 0; i < count; ++i) rows.push_back(int64_t((double(i) + 0.5) * double(tq) / count));
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

// Host replay of the chosen query rows: a row of a causal case sees keys 0..row, so it runs as a
// one-row bidirectional attention over those keys; bidirectional rows run together.
inline std::vector<float> host_replay(moss::Backend& host, const moss::Tensor& q, const moss::Tensor& k,
                                      const moss::Tensor& v, const Case& c, const std::vector<int64_t>& rows,
                                      float scale) {
  const int64_t width = c.heads * c.head_dim;
  std::vector<float> want(rows.size() * size_t(width));
  if (int64_t(rows.size()) == c.tq && !c.causal) {
    moss::Tensor out = moss::host_tensor(moss::DType::F32, {c.tq, width});
    host.core().attention(q, k, v, out, c.heads, c.kv_heads, c.head_dim, scale, false);
    std::memcpy(want.data(), out.data, want.size() * 4);
    return want;
  }
  if (int64_t(rows.size()) == c.tq && c.causal) {
    moss::Tensor out = moss::host_tensor(moss::DType::F32, {c.tq, width});
    host.core().attention(q, k, v, out, c.heads, c.kv_heads, c.head_dim, scale, true);
    std::memcpy(want.data(), out.data, want.size() * 4);
    return want;
  }
  if (!c.causal) {
    moss::Tensor qs = moss::host_tensor(moss::DType::F32, {int64_t(rows.size()), width});
    for (size_t i = 0; i < rows.size(); ++i) std::memcpy(qs.row<float>(int64_t(i)), q.row<float>(rows[i]), width * 4);
    moss::Tensor out = moss::host_tensor(moss::DType::F32, {int64_t(rows.size()), width});
    host.core().attention(qs, k, v, out, c.heads, c.kv_heads, c.head_dim, scale, false);
    std::memcpy(want.data(), out.data, want.size() * 4);
    return want;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t r = rows[i];
    moss::Tensor out = moss::host_tensor(moss::DType::F32, {1, width});
    host.core().attention(q.slice_rows(r, 1), k.slice_rows(0, r + 1), v.slice_rows(0, r + 1), out, c.heads,
                          c.kv_heads, c.head_dim, scale, false);
    std::memcpy(want.data() + i * size_t(width), out.data, size_t(width) * 4);
  }
  return want;
}

inline std::string shape_text(const Case& c) {
  char buf[112];
  const std::string heads = c.kv_heads == c.heads ? std::to_string(c.heads)
                                                  : std::to_string(c.heads) + "/" + std::to_string(c.kv_heads);
  if (c.tq == c.tk)
    std::snprintf(buf, sizeof buf, "T%lld h%sx%lld %s%s%s%s", (long long)c.tq, heads.c_str(), (long long)c.head_dim,
                  c.causal ? "causal" : "bi", c.bf16 ? " bf16" : "", c.aligned ? " al" : "",
                  c.out_f32 ? " out:f32" : "");
  else
    std::snprintf(buf, sizeof buf, "q%lld k%lld h%sx%lld %s%s%s", (long long)c.tq, (long long)c.tk, heads.c_str(),
                  (long long)c.head_dim, c.causal ? "causal" : "bi", c.bf16 ? " bf16" : "", c.aligned ? " al" : "");
  return std::string(buf) + (c.q_rope ? " q_rope" : "") + (c.v_transposed ? " vt" : "");
}

inline const char* tiling_name(moss::AttentionTiling t) {
  switch (t) {
    case moss::AttentionTiling::Flash: return "attention[flash]";
    case moss::AttentionTiling::Wgmma: return "attention[wgmma]";
    case moss::AttentionTiling::Reference: return "attention[ref]";
    case moss::AttentionTiling::Portable: return "attention[portable]";
    default: return "attention";
  }
}

// Runs one case with one tiling: poisoned output, check against the host rows, optional timing
// (sustain_s: kcheck::time_sustained's).
inline void run_case(kcheck::Table& table, moss::HipContext& ctx, const Case& c, const moss::Tensor& q,
                     const moss::Tensor& k, const moss::Tensor& v, const std::vector<int64_t>& rows, const std::vector<float>& want, float scale,
                     moss::AttentionTiling tiling, int sustain_s, const moss::QNormRope* q_rope = nullptr) {
  const int64_t width = c.heads * c.head_dim;
  // out: columns [3, 3 + width) of a [tq, width + 5] buffer (aligned: [8, 8 + width) of width + 16),
  // all of it NaN beforehand.
  const int64_t out_cols = width + (c.aligned ? 16 : 5), out_off = c.aligned ? 8 : 3;
  const size_t esize = out_bf16(c) ? 2 : 4;
  const size_t out_bytes = size_t(c.tq * out_cols) * esize;
  std::shared_ptr<void> buf = device_buffer(out_bytes);
  moss::Tensor whole(buf.get(), out_bf16(c) ? moss::DType::BF16 : moss::DType::F32, {c.tq, out_cols},
                     moss::Where::Device);
  whole.owner = buf;
  moss::Tensor out = whole.slice_cols(out_off, width);
  kcheck::poison(whole, ctx.stream());

  kcheck::Compare cmp;
  double ms = 0;
  try {
    moss::hip_attention(ctx, q, k, v, out, c.heads, c.kv_heads, c.head_dim, scale, c.causal, tiling, q_rope,
                        c.v_transposed);
    MOSS_HIP_CHECK(hipStreamSynchronize(ctx.stream()));
    std::vector<uint8_t> raw(out_bytes);
    MOSS_HIP_CHECK(hipMemcpy(raw.data(), buf.get(), out_bytes, hipMemcpyDeviceToHost));
    auto at = [&](int64_t r, int64_t col) -> float {
      const size_t i = size_t(r * out_cols + col);
      if (out_bf16(c)) {
        uint16_t b;
        std::memcpy(&b, raw.data() + i * 2, 2);
        return moss::bf16_to_f32(b);
      }
      float f;
      std::memcpy(&f, raw.data() + i * 4, 4);
      return f;
    };
    // Outside `out` (the poison's bits, NaN) must be untouched.
    int64_t touched = 0;
    for (int64_t r = 0; r < c.tq; ++r)
      for (int64_t col = 0; col < out_cols; ++col)
        if ((col < out_off || col >= out_off + width) && !std::isnan(at(r, col))) ++touched;
    std::vector<float> got(want.size());
    for (size_t i = 0; i < rows.size(); ++i)
      for (int64_t col = 0; col < width; ++col) got[i * size_t(width) + size_t(col)] = at(rows[i], out_off + col);
    cmp = kcheck::compare(got, want);
    if (touched) {
      std::printf("  %s %s: %lld elements outside out were written\n", tiling_name(tiling), shape_text(c).c_str(),
                  (long long)touched);
      cmp.finite = false;
    }
    if (!cmp.finite || cmp.rel_l2 > 1e-2) {
      double rms = 0;
      for (float w : want) rms += double(w) * w;
      rms = std::sqrt(rms / double(std::max<size_t>(want.size(), 1)));
      for (size_t i = 0; i < got.size(); ++i) {
        const double d = std::fabs(double(got[i]) - want[i]);
        if (!std::isfinite(got[i]) || d > 0.05 * rms) {
          const int64_t col = int64_t(i % size_t(width));
          std::printf("  first bad: query %lld head %lld dim %lld got %.6g want %.6g (rms %.3g, %zu rows compared)\n",
                      (long long)rows[i / size_t(width)], (long long)(col / c.head_dim),
                      (long long)(col % c.head_dim), got[i], want[i], rms, rows.size());
          break;
        }
      }
    }
    if (c.reps > 0)
      ms = kcheck::time_sustained(
          ctx.stream(),
          [&] {
            moss::hip_attention(ctx, q, k, v, out, c.heads, c.kv_heads, c.head_dim, scale, c.causal, tiling, q_rope,
                                c.v_transposed);
          },
          c.reps, sustain_s);
  } catch (const std::exception& e) {
    (void)hipGetLastError();
    std::printf("  %s %s: %s\n", tiling_name(tiling), shape_text(c).c_str(), e.what());
    cmp.finite = false;
  }
  const double flops = 4.0 * double(c.tq) * double(c.tk) * double(c.head_dim) * double(c.heads) * (c.causal ? 0.5 : 1.0);
  table.row(tiling_name(tiling), shape_text(c), cmp, 1e-2, ms, ms > 0 ? flops : 0);
  if (ms > 0) table.timings.push_back({tiling_name(tiling), shape_text(c), ms, flops, 0});
}

constexpr float kQRopeEps = 1e-6f;  // the DiT's RMS norm epsilon

inline void check_case(kcheck::Table& table, moss::HipContext& ctx, moss::Backend& host, const Case& c,
                       uint64_t seed, int sustain_s) {
  const int64_t qc = c.heads * c.head_dim, kc = c.kv_heads * c.head_dim;
  const float scale = float(1.0 / std::sqrt(double(c.head_dim)));
  // Fused [T, 1 | q | k | v | 2] when Tq == Tk (the projections' layout), else two buffers;
  // the odd column offsets make every operand a strided, unaligned column slice.
  Twin qbuf, kvbuf;
  moss::Tensor q_dev, k_dev, v_dev, q_host, k_host, v_host;
  std::vector<float> values;
  if (c.tq == c.tk) {
    const int64_t q0 = c.aligned ? 0 : 1, cols = c.aligned ? qc + 2 * kc : 1 + qc + 2 * kc + 2;
    values.resize(size_t(c.tq * cols));
    fill_uniform(values, seed, 1.0f);
    for (int64_t r = 0; r < c.tq; ++r)  // sharper scores than unit variance: q has sd 2
      for (int64_t col = q0; col < q0 + qc; ++col) values[size_t(r * cols + col)] *= 2.0f;
    qbuf = make_twin(values, c.tq, cols, c.bf16);
    q_host = qbuf.host.slice_cols(q0, qc), k_host = qbuf.host.slice_cols(q0 + qc, kc),
    v_host = qbuf.host.slice_cols(q0 + qc + kc, kc);
    q_dev = qbuf.dev.slice_cols(q0, qc), k_dev = qbuf.dev.slice_cols(q0 + qc, kc),
    v_dev = qbuf.dev.slice_cols(q0 + qc + kc, kc);
  } else {
    // [Tq, 1 | q | 2] and [Tk, k | 1 | v] (aligned: [Tq, q] and [Tk, k | v], 16-byte aligned rows
    // wider than k alone).
    const int64_t q0 = c.aligned ? 0 : 1, v0 = c.aligned ? kc : kc + 1;
    values.resize(size_t(c.tq * (qc + 3 * q0)));
    fill_uniform(values, seed, 2.0f);
    qbuf = make_twin(values, c.tq, qc + 3 * q0, c.bf16);
    values.assign(size_t(c.tk * (v0 + kc)), 0.0f);
    fill_uniform(values, seed + 1, 1.0f);
    kvbuf = make_twin(values, c.tk, v0 + kc, c.bf16);
    q_host = qbuf.host.slice_cols(q0, qc), q_dev = qbuf.dev.slice_cols(q0, qc);
    k_host = kvbuf.host.slice_cols(0, kc), k_dev = kvbuf.dev.slice_cols(0, kc);
    v_host = kvbuf.host.slice_cols(v0, kc), v_dev = kvbuf.dev.slice_cols(v0, kc);
  }
  values.clear();
  values.shrink_to_fit();

  const std::vector<int64_t> rows = sample_rows(c.tq, c.sampled_rows);
  if (c.q_rope) {
    // q's norm weight (around 1) and [f | f] RoPE tables of random angles; the host normalises and
    // rotates q (CoreOps::norm_rope) before its replay, the kernel on its way in. Only the portable
    // tiling stages Q that way.
    const int64_t hd = c.head_dim;
    std::vector<float> wv(static_cast<size_t>(hd)), angles(static_cast<size_t>(c.tq * hd / 2)),
        sv(static_cast<size_t>(c.tq * hd)), cv(static_cast<size_t>(c.tq * hd));
    fill_uniform(wv, seed + 2, 0.3f);
    for (float& x : wv) x += 1.0f;
    fill_uniform(angles, seed + 3, 3.0f);
    for (int64_t r = 0; r < c.tq; ++r)
      for (int64_t i = 0; i < hd / 2; ++i)
        for (int64_t j : {i, i + hd / 2}) {
          sv[size_t(r * hd + j)] = std::sin(angles[size_t(r * hd / 2 + i)]);
          cv[size_t(r * hd + j)] = std::cos(angles[size_t(r * hd / 2 + i)]);
        }
    const Twin w = make_twin(wv, 1, hd, c.bf16), sin = make_twin(sv, c.tq, hd, false), cos = make_twin(cv, c.tq, hd, false);
    moss::Tensor q_ref = moss::host_tensor(moss::DType::F32, {c.tq, qc});
    host.core().norm_rope(q_host, w.host, kQRopeEps, hd, sin.host, cos.host, q_ref);
    const std::vector<float> want = host_replay(host, q_ref, k_host, v_host, c, rows, scale);
    const moss::QNormRope rope{w.dev, kQRopeEps, sin.dev, cos.dev};
    if (c.v_transposed) {
      // Vᵀ [kc, keys] (zeros past tk) as the first keys columns of a [kc, keys + 64] buffer whose
      // other columns are NaN: the kernel must read nothing past the padded keys.
      const int64_t keys = moss::CoreOps::transposed_v_keys(c.tk), ld = keys + 64;
      std::vector<uint16_t> bits(static_cast<size_t>(kc * ld), uint16_t(0x7fc0));  // bf16 NaN
      for (int64_t d = 0; d < kc; ++d)
        for (int64_t j = 0; j < keys; ++j)
          bits[size_t(d * ld + j)] = j < c.tk ? moss::f32_to_bf16(v_host.row<const float>(j)[d]) : uint16_t(0);
      std::shared_ptr<void> vbuf = device_buffer(bits.size() * 2);
      MOSS_HIP_CHECK(hipMemcpy(vbuf.get(), bits.data(), bits.size() * 2, hipMemcpyHostToDevice));
      moss::Tensor vt(vbuf.get(), moss::DType::BF16, {kc, ld}, moss::Where::Device);
      vt.owner = vbuf;
      run_case(table, ctx, c, q_dev, k_dev, vt.slice_cols(0, keys), rows, want, scale, moss::AttentionTiling::Portable,
               sustain_s, &rope);
      return;
    }
    run_case(table, ctx, c, q_dev, k_dev, v_dev, rows, want, scale, moss::AttentionTiling::Portable, sustain_s, &rope);
    return;
  }
  const std::vector<float> want = host_replay(host, q_host, k_host, v_host, c, rows, scale);
  run_case(table, ctx, c, q_dev, k_dev, v_dev, rows, want, scale, moss::AttentionTiling::Default, sustain_s);
  if (wgmma_case(c) && c.other_tiling)
    run_case(table, ctx, c, q_dev, k_dev, v_dev, rows, want, scale, moss::AttentionTiling::Flash, sustain_s);
  // The AMD build's tiling on every case (there it is what Default runs).
  if (moss::kPlatformNvidia)
    run_case(table, ctx, c, q_dev, k_dev, v_dev, rows, want, scale, moss::AttentionTiling::Portable, sustain_s);
  if (c.other_tiling && moss::kPlatformNvidia && c.head_dim <= 128)
    run_case(table, ctx, c, q_dev, k_dev, v_dev, rows, want, scale, moss::AttentionTiling::Reference, sustain_s);
}

// The real shapes of each model (moderate T replayed in full on the host, large T timed and
// spot-checked on sampled rows) and odd tails.
inline std::vector<Case> model_cases(const std::string& model) {
  std::vector<Case> cases;
  if (model == "dit") {
    // 24 heads of 128 (tiny: 4 of 32), bidirectional. Text-embedder blocks: the text rows alone.
    cases = {
        make_case(12, 12, 24, 24, 128, false),                    // a short prompt's text rows
        make_case(77, 77, 24, 24, 128, false),                    // text rows, one partial query block
        make_case(1000, 1000, 24, 24, 128, false),                // image+text, full replay
        make_case(256, 256, 24, 24, 128, false),                  // whole tiles, no tail
        make_case(523, 523, 24, 24, 128, false, true),            // bf16 activations
        make_case(100, 777, 24, 24, 128, false),                  // Tq != Tk
        make_case(33, 33, 4, 4, 32, false),                       // tiny model
        make_case(300, 300, 4, 4, 32, false),                     // tiny model
        make_case(300, 300, 4, 4, 32, false, true, 0, 0, false, true),       // tiny, bf16 aligned
        make_case(1000, 1000, 24, 24, 128, false, true, 0, 0, true, true),   // bf16 aligned: no pack
        make_case(130, 130, 24, 24, 128, false, true, 0, 0, true, true),     // bf16 aligned, tails
        make_case(4173, 4173, 24, 24, 128, false, false, 48, 10, true),   // 1024²: 64² image + 77 text
        make_case(4173, 4173, 24, 24, 128, false, true, 48, 10, true, true),  // 1024², bf16 as the DiT will
        make_case(8350, 8350, 24, 24, 128, false, false, 32, 5, true),    // 1456²: 91² image + 69 text
        make_case(16450, 16450, 24, 24, 128, false, false, 24, 3, true),  // 2048²: 128² image + 66 text
        // bf16 aligned, head dim 128: the NVIDIA Hopper wgmma kernel (and its serial variant).
        make_case(12, 12, 24, 24, 128, false, true, 0, 0, false, true),     // text rows alone: one partial tile
        make_case(77, 77, 24, 24, 128, false, true, 0, 0, false, true, true),  // f32 out
        make_case(257, 257, 24, 24, 128, false, true, 0, 0, false, true),   // 2 whole tiles + 1 key / query
        make_case(384, 384, 24, 8, 128, false, true, 0, 0, false, true),    // GQA, whole tiles
        make_case(1000, 1000, 24, 24, 128, false, true, 0, 0, false, true, true),  // f32 out
        make_case(1040, 1040, 24, 24, 128, false, true, 0, 0, false, true),  // 512²: 32² image + 16 text
        make_case(2333, 2333, 24, 24, 128, false, true, 64, 0, false, true),  // odd T, sampled
        make_case(4173, 4173, 24, 24, 128, false, true, 48, 10, false, true, true),  // 1024², f32 out, timed
        make_case(8350, 8350, 24, 24, 128, false, true, 32, 5, true, true),   // 1456², timed
        make_case(16450, 16450, 24, 24, 128, false, true, 24, 3, true, true),  // 2048², timed
        // bf16 aligned, head dim 128, the cases the portable kernel's in-place K/V loader (no pack)
        // must get right beyond the ones above: keys past tk in a partial tile (tk < 64, tk not a
        // multiple of 32 or 64), causal, GQA with a tail, Tq != Tk.
        make_case(45, 45, 24, 24, 128, true, true, 0, 0, false, true),     // causal, one partial tile
        make_case(333, 333, 24, 8, 128, true, true, 0, 0, false, true),    // causal GQA, tail
        make_case(200, 200, 24, 6, 128, false, true, 0, 0, false, true),   // GQA 4:1, tail
        make_case(100, 45, 24, 24, 128, false, true, 0, 0, false, true),   // Tq != Tk, tk < 64
        make_case(70, 160, 24, 8, 128, false, true, 0, 0, false, true),    // Tq != Tk, tk = 5 x 32
        // q normalised and rotated inside the portable kernel (CoreOps::norm_rope_attention), the
        // DiT's q path on AMD: partial and whole query blocks, bf16 and f32 q, the tiny model's 32,
        // head dim 64, and the 1024² shape timed.
        q_rope_case(12, 24, 128, true),
        q_rope_case(77, 24, 128, false),
        q_rope_case(257, 24, 128, true),
        q_rope_case(1000, 24, 128, true),
        q_rope_case(300, 4, 32, true),
        q_rope_case(130, 4, 64, false),
        q_rope_case(4173, 24, 128, true, 48, 10),
        // ... and V given transposed by the v GEMM (CoreOps::linear_transposed), the DiT's whole
        // AMD attention path: keys past tk in a partial tile (tk < 64, tk % 32 != 0), whole tiles,
        // the tiny model's 32, head dim 64, and the 1024² shapes of cond and uncond timed.
        vt_case(12, 24, 128),
        vt_case(77, 24, 128),
        vt_case(128, 24, 128),
        vt_case(257, 24, 128),
        vt_case(300, 4, 32),
        vt_case(130, 4, 64),
        vt_case(4173, 24, 128, 48, 10),
        vt_case(4106, 24, 128, 48, 10),
    };
  } else if (model == "te") {
    // Causal GQA: 16 query heads over 4 kv heads of 256 (tiny: 4 over 1 of 64).
    cases = {
        make_case(1, 1, 16, 4, 256, true),
        make_case(7, 7, 16, 4, 256, true),
        make_case(100, 100, 16, 4, 256, true),
        make_case(513, 513, 16, 4, 256, true, true),   // bf16, a tail past a whole block
        make_case(1024, 1024, 16, 4, 256, true),
        make_case(77, 77, 4, 1, 64, true),             // tiny model
        make_case(200, 200, 4, 1, 64, true, true),     // tiny model, bf16
        make_case(333, 333, 4, 1, 64, true, true, 0, 0, true, true),  // tiny, bf16 aligned (flash, no pack)
        make_case(4096, 4096, 16, 4, 256, true, false, 48, 10),  // the longest prompt, timed
        // bf16 aligned, head dim 256: the portable kernel reads K and V in place (no pack).
        make_case(7, 7, 16, 4, 256, true, true, 0, 0, false, true),      // a short prompt
        make_case(100, 100, 16, 4, 256, true, true, 0, 0, false, true),  // tk < 128, not a multiple of 32
        make_case(513, 513, 16, 4, 256, true, true, 0, 0, false, true),  // a tail past whole tiles
        make_case(130, 130, 16, 4, 256, false, true, 0, 0, false, true),  // bidirectional
        make_case(50, 90, 16, 16, 256, false, true, 0, 0, false, true),  // Tq != Tk, no GQA
        make_case(2048, 2048, 16, 4, 256, true, true, 48, 10, false, true),  // long prompt, timed
    };
  } else if (model == "vae") {
    // Mid-block attention: one head of C channels (384; tiny 96) over all latent positions.
    cases = {
        make_case(64, 64, 1, 1, 384, false),                          // 8x8 latent
        make_case(1000, 1000, 1, 1, 384, false),                      // odd tail
        make_case(777, 777, 1, 1, 384, false, true),                  // bf16
        make_case(300, 300, 1, 1, 96, false),                         // tiny model
        make_case(1024, 1024, 1, 1, 96, false, true),                 // tiny model, bf16
        make_case(4096, 4096, 1, 1, 384, false, false, 64, 10),       // 512²: 64² latent
        make_case(16384, 16384, 1, 1, 384, false, false, 32, 5),      // 1024²: 128² latent
        make_case(65536, 65536, 1, 1, 384, false, false, 16, 2),      // 2048²: 256² latent
    };
  } else {
    throw moss::failure("check_attention_cases: unknown model '" + model + "' (dit, te or vae)");
  }
  return cases;
}

}  // namespace attention_check

// model: "dit", "te" or "vae"; sustain_s: `moss-check kernels --sustain` (0: short bursts).
// max_elements: Options::max_elements (a case whose fused q|k|v buffer is larger is skipped).
inline void check_attention_cases(kcheck::Table& table, moss::HipContext& ctx, moss::Backend& host,
                                  const std::string& model, int sustain_s = 0, int64_t max_elements = 0) {
  uint64_t seed = 0xA77E4710ull;
  for (const attention_check::Case& c : attention_check::model_cases(model)) {
    const uint64_t case_seed = seed++;
    kcheck::guarded(table, "attention " + attention_check::shape_text(c), [&] {
      kcheck::admit(max_elements, {c.tk, (c.heads + 2 * c.kv_heads) * c.head_dim});
      attention_check::check_case(table, ctx, host, c, case_seed, sustain_s);
    });
  }
}
