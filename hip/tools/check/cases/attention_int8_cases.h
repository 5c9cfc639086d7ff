// The int8 QKᵀ attention of `moss-check kernels --family dit`, group int8_attention
// (CoreOps::quantize_keys and norm_rope_attention_int8_qk; docs/attention_int8_qk.md).
//
// quantize_keys: the GPU's int8 keys and block scales against the host op's on the same values,
// tolerance 0 ("differ": differing int8 values plus differing scales, NaN equal to NaN): the two
// are the same arithmetic (channel sums in key order, IEEE divisions, the same rounding). Shapes:
// Tk not a multiple of 32 or 64, one key, head dims 32, 64, 128, bf16 and f32 keys (the host's
// are the same values widened), keys with a per-channel offset (what the smoothing removes), a
// NaN and an infinity in one head's keys, and the DiT's 1024² shape timed.
//
// norm_rope_attention_int8_qk: the GPU op (its keys from the GPU's quantize_keys) against the
// host op (its keys from the host's), within the bf16 attention cases' 1e-2 relative L2
// (attention_cases.h): the int8 operands are the same bits, the scores exact int32 sums on both
// sides, so what differs is exactly what differs in the bf16 attention -- the GPU's exp2 and
// online softmax order, P rounded to bf16, V in bf16 -- plus q's fp32 norm and RoPE, whose sum of
// squares the kernel reduces in its own order, so a value on a rounding boundary can quantize one
// step apart (1/127 of its block's range, inside that tolerance). Large shapes compare whole
// 16-query blocks (the quantization's blocks start at query 0, so a block's rows replayed alone
// quantize as in the full op): the first, the last (partial) and a spread. Shapes: Tq = Tk = 100
// and 77 (partial query and key blocks), head dims 32, 64, 128, V as rows (packed by the op) and
// as the DiT's transposed Vᵀ (NaN past its padded keys), bf16 and f32 q, and the DiT's 1024²
// shape (T = 4160, 24 heads x 128, Vᵀ) timed. On a kernel path without the int8 variant (NVIDIA's
// native one; CoreOps::attention_int8_qk false) one row checks instead that the op refuses by name
// and writes nothing.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../kernel_check.h"
#include "ops/backend.h"
#include "ops/core_ops.h"
#include "ops/hip/attention_op.h"
#include "tensor/tensor.h"

namespace int8_attention_check {

using namespace moss;

// Random [rows, cols] values of sd `scale` plus a per-column offset (the keys' channel bias that
// quantize_keys' smoothing removes), rounded to bf16 when dt is; NaN and -infinity planted when
// asked. h: the f32 values the host sees; d: the device copy in dt.
struct Values {
  Tensor h, d;
};
inline Values random_values(kcheck::Env& e, DType dt, int64_t rows, int64_t cols, float scale, float offset,
                            bool specials) {
  kcheck::admit(e, {rows, cols});
  std::vector<float> v(static_cast<size_t>(rows * cols)), bias(static_cast<size_t>(cols));
  kcheck::fill(v, ++e.seed, scale);
  kcheck::fill(bias, ++e.seed, offset);
  Tensor h = host_tensor(DType::F32, {rows, cols}), src = host_tensor(dt, {rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) {
    float f = v[size_t(i)] + bias[size_t(i % cols)];
    if (specials && i == (rows / 2) * cols + 3) f = std::nanf("");
    if (specials && i == (rows - 1) * cols + cols - 1) f = -INFINITY;
    if (dt == DType::BF16) f = round_bf16(f);
    h.ptr<float>()[i] = f;
    if (dt == DType::BF16) src.ptr<uint16_t>()[i] = f32_to_bf16(f);
    else src.ptr<float>()[i] = f;
  }
  return {h, e.gpu.upload(src)};
}

inline CoreOps::QuantizedKeys keys_on(Backend& b, int64_t tk, int64_t heads, int64_t hd) {
  const int64_t pad = CoreOps::transposed_v_keys(tk);
  return CoreOps::QuantizedKeys{b.alloc(DType::I8, {heads * pad, hd}),
                                b.alloc(DType::F32, {heads * pad / CoreOps::kInt8KeyBlock, 1}), tk};
}

// Differing int8 values plus differing scales (NaN equals NaN), the first one printed.
inline int64_t count_key_differences(kcheck::Env& e, const CoreOps::QuantizedKeys& gpu,
                                     const CoreOps::QuantizedKeys& host) {
  const Tensor q = e.gpu.download(gpu.q), s = e.gpu.download(gpu.scale);
  int64_t differ = 0;
  for (int64_t i = 0; i < q.numel(); ++i)
    if (q.ptr<int8_t>()[i] != host.q.ptr<int8_t>()[i] && differ++ == 0)
      std::printf("  quantize_keys: q[%lld] %d, host %d\n", (long long)i, q.ptr<int8_t>()[i], host.q.ptr<int8_t>()[i]);
  for (int64_t i = 0; i < s.numel(); ++i) {
    const float a = s.ptr<float>()[i], b = host.scale.ptr<float>()[i];
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    if (!(std::isnan(a) && std::isnan(b)) && ua != ub && differ++ == 0)
      std::printf("  quantize_keys: scale[%lld] %.9g, host %.9g\n", (long long)i, a, b);
  }
  return differ;
}

struct KeysSpec {
  int64_t tk, heads, hd;
  DType k = DType::BF16;
  bool specials = false;
  bool timed = false;
};
inline void keys_case(kcheck::Env& e, const KeysSpec& s) {
  const Values k = random_values(e, s.k, s.tk, s.heads * s.hd, 1.0f, 3.0f, s.specials);
  CoreOps::QuantizedKeys gpu = keys_on(e.gpu, s.tk, s.heads, s.hd), host = keys_on(e.host, s.tk, s.heads, s.hd);
  MOSS_HIP_CHECK(hipMemsetAsync(gpu.q.data, 0x55, size_t(gpu.q.numel()), e.stream()));  // a skipped value shows
  auto run = [&] { e.gpu.core().quantize_keys(k.d, s.heads, s.hd, gpu); };
  run();
  e.host.core().quantize_keys(k.h, s.heads, s.hd, host);
  const std::string shape = kcheck::shape_of({s.tk, s.heads, s.hd}) + " k:" + dtype_name(s.k) +
                            (s.specials ? " nan/inf" : "");
  const int64_t differ = count_key_differences(e, gpu, host);
  const double ms = s.timed ? kcheck::time_it(e, run) : 0;
  const double bytes = double(s.tk * s.heads * s.hd) * double(2 * dtype_size(s.k) + 1);
  e.table.row("quantize_keys", shape, kcheck::Compare{double(differ), double(differ), true}, 0.0, ms, 0, bytes);
  if (s.timed) kcheck::record(e, "quantize_keys", shape, ms, 0, bytes);
}

struct AttentionSpec {
  int64_t t, heads, hd;
  DType q = DType::BF16;
  bool v_transposed = true;
  int sampled_blocks = 0;  // 0: every query
  bool timed = false;
};

// The 16-query blocks compared: all, or the first, the last and an even spread.
inline std::vector<int64_t> sample_blocks(int64_t t, int count) {
  const int64_t blocks = (t + CoreOps::kInt8QueryBlock - 1) / CoreOps::kInt8QueryBlock;
  std::vector<int64_t> b;
  if (count <= 0 || count >= blocks) {
    for (int64_t i = 0; i < blocks; ++i) b.push_back(i);
    return b;
  }
  b = {0, blocks - 1};
  for (int i = 0; i < count; ++i) b.push_back(int64_t((double(i) + 0.5) * double(blocks) / count));
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

inline void attention_case(kcheck::Env& e, const AttentionSpec& s) {
  const int64_t t = s.t, hd = s.hd, width = s.heads * hd;
  constexpr float kEps = 1e-6f;  // the DiT's RMS norm epsilon
  const float scale = float(1.0 / std::sqrt(double(hd)));
  const Values q = random_values(e, s.q, t, width, 2.0f, 0.0f, false);
  const Values k = random_values(e, DType::BF16, t, width, 1.0f, 2.0f, false);
  const Values v = random_values(e, DType::BF16, t, width, 1.0f, 0.0f, false);
  // The norm weight around 1, [f | f] RoPE tables of random angles (attention_cases.h's).
  std::vector<float> wv(static_cast<size_t>(hd)), angles(static_cast<size_t>(t * hd / 2));
  kcheck::fill(wv, ++e.seed, 0.3f);
  kcheck::fill(angles, ++e.seed, 3.0f);
  Tensor w = host_tensor(DType::F32, {hd}), sin = host_tensor(DType::F32, {t, hd}), cos = host_tensor(DType::F32, {t, hd});
  for (int64_t i = 0; i < hd; ++i) w.ptr<float>()[i] = 1.0f + wv[size_t(i)];
  for (int64_t r = 0; r < t; ++r)
    for (int64_t i = 0; i < hd / 2; ++i)
      for (int64_t j : {i, i + hd / 2}) {
        sin.ptr<float>()[r * hd + j] = std::sin(angles[size_t(r * hd / 2 + i)]);
        cos.ptr<float>()[r * hd + j] = std::cos(angles[size_t(r * hd / 2 + i)]);
      }
  const Tensor w_d = e.gpu.upload(w), sin_d = e.gpu.upload(sin), cos_d = e.gpu.upload(cos);

  CoreOps::QuantizedKeys kq_gpu = keys_on(e.gpu, t, s.heads, hd), kq_host = keys_on(e.host, t, s.heads, hd);
  e.gpu.core().quantize_keys(k.d, s.heads, hd, kq_gpu);
  e.host.core().quantize_keys(k.h, s.heads, hd, kq_host);
  // The DiT's Vᵀ: bf16 [width, keys_pad], zeros past t, inside a buffer whose other columns are NaN.
  Tensor v_op = v.d;
  if (s.v_transposed) {
    const int64_t keys = CoreOps::transposed_v_keys(t), ld = keys + 64;
    Tensor vt = host_tensor(DType::BF16, {width, ld});
    for (int64_t d = 0; d < width; ++d)
      for (int64_t j = 0; j < ld; ++j)
        vt.ptr<uint16_t>()[d * ld + j] =
            j < t ? f32_to_bf16(v.h.ptr<float>()[j * width + d]) : j < keys ? uint16_t(0) : uint16_t(0x7fc0);
    v_op = e.gpu.upload(vt).slice_cols(0, keys);
  }
  Tensor out = kcheck::poisoned(e, DType::F32, {t, width});
  // CoreOps lets the op normalise q in place; the HIP backend's never does (it applies the norm and
  // RoPE in the kernel or refuses), so the timed launches reuse one copy of q.
  Tensor q_work = e.gpu.alloc(s.q, {t, width});
  e.gpu.core().copy(q.d, q_work);
  auto run = [&] {
    e.gpu.core().norm_rope_attention_int8_qk(q_work, w_d, kEps, sin_d, cos_d, kq_gpu, v_op, out, s.heads, hd, scale,
                                             s.v_transposed);
  };
  run();
  const std::vector<float> got_all = kcheck::fetch(e, out);
  std::vector<float> got, want;
  for (int64_t b : sample_blocks(t, s.sampled_blocks)) {
    const int64_t r0 = b * CoreOps::kInt8QueryBlock, n = std::min<int64_t>(CoreOps::kInt8QueryBlock, t - r0);
    Tensor qb = host_tensor(DType::F32, {n, width}), ob = host_tensor(DType::F32, {n, width});
    std::memcpy(qb.data, q.h.ptr<float>() + r0 * width, size_t(n * width) * 4);
    e.host.core().norm_rope_attention_int8_qk(qb, w, kEps, sin.slice_rows(r0, n), cos.slice_rows(r0, n), kq_host, v.h,
                                              ob, s.heads, hd, scale, false);
    want.insert(want.end(), ob.ptr<float>(), ob.ptr<float>() + n * width);
    got.insert(got.end(), got_all.begin() + long(r0 * width), got_all.begin() + long((r0 + n) * width));
  }
  const double ms = s.timed ? kcheck::time_it(e, run) : 0;
  const std::string shape = kcheck::shape_of({t, s.heads, hd}) + " q:" + dtype_name(s.q) + (s.v_transposed ? " vt" : "");
  const double flops = 4.0 * double(t) * double(t) * double(width);
  kcheck::report(e, "norm_rope_attention_int8_qk", shape, got, want, width, 1e-2, ms, ms > 0 ? flops : 0);
  if (s.timed) kcheck::record(e, "norm_rope_attention_int8_qk", shape, ms, flops, 0);
}

// On a kernel path without the int8 variant: the op refuses, naming the int8 QK^T attention, and
// leaves out as it was (NaN).
inline void refusal_case(kcheck::Env& e, const AttentionSpec& s) {
  const int64_t width = s.heads * s.hd;
  const Values q = random_values(e, DType::BF16, s.t, width, 2.0f, 0.0f, false);
  const Values k = random_values(e, DType::BF16, s.t, width, 1.0f, 2.0f, false);
  Tensor w = host_tensor(DType::F32, {s.hd}), table = host_tensor(DType::F32, {s.t, s.hd});
  for (int64_t i = 0; i < s.hd; ++i) w.ptr<float>()[i] = 1.0f;
  for (int64_t i = 0; i < s.t * s.hd; ++i) table.ptr<float>()[i] = 0.5f;
  const Tensor w_d = e.gpu.upload(w), table_d = e.gpu.upload(table);
  CoreOps::QuantizedKeys kq = keys_on(e.gpu, s.t, s.heads, s.hd);
  e.gpu.core().quantize_keys(k.d, s.heads, s.hd, kq);
  Tensor out = kcheck::poisoned(e, DType::F32, {s.t, width}), q_work = e.gpu.alloc(DType::BF16, {s.t, width});
  e.gpu.core().copy(q.d, q_work);
  std::string message;
  try {
    e.gpu.core().norm_rope_attention_int8_qk(q_work, w_d, 1e-6f, table_d, table_d, kq, k.d, out, s.heads, s.hd, 0.1f,
                                             false);
  } catch (const std::exception& x) {
    message = x.what();
  }
  int64_t written = 0;
  for (float f : kcheck::fetch(e, out)) written += !std::isnan(f);
  const bool named = message.find("int8 QK^T") != std::string::npos;
  if (!named) std::printf("  norm_rope_attention_int8_qk: no refusal naming the int8 QK^T attention (%s)\n", message.c_str());
  const double bad = double(written + (named ? 0 : 1));
  e.table.row("norm_rope_attention_int8_qk", "refused on this kernel path", kcheck::Compare{bad, bad, true}, 0.0, 0);
}

}  // namespace int8_attention_check

// Every case, each guarded (a refusing op fails its row alone).
inline void check_int8_attention(kcheck::Env& e) {
  using namespace int8_attention_check;
  const std::vector<KeysSpec> keys = {
      {1, 3, 32, DType::F32},       {77, 4, 32, DType::F32},  {100, 24, 128},
      {33, 4, 64, DType::BF16},     {130, 2, 64, DType::F32}, {64, 2, 128, DType::BF16, true},
      {100, 4, 32, DType::F32, true}, {4160, 24, 128, DType::BF16, false, true},
  };
  for (const KeysSpec& s : keys)
    kcheck::guarded(e.table, "quantize_keys " + kcheck::shape_of({s.tk, s.heads, s.hd}), [&] { keys_case(e, s); });
  const std::vector<AttentionSpec> attention = {
      {100, 4, 128, DType::BF16, true},  {77, 24, 128, DType::F32, true}, {100, 4, 32, DType::F32, false},
      {77, 4, 64, DType::BF16, false},   {300, 4, 32, DType::BF16, true}, {257, 24, 128, DType::BF16, false},
      {4160, 24, 128, DType::BF16, true, 12, true},
  };
  for (const AttentionSpec& s : attention) {
    // Where the kernel path has no int8 variant (NVIDIA's native path: its wgmma bf16 attention
    // stays), the op must refuse by name instead: one row says it did. (Whether the DiT uses the
    // op, CoreOps::attention_int8_qk, is a narrower question: not on RDNA3, where it runs anyway.)
    if (!hip_attention_runs_int8_qk(s.hd)) {
      kcheck::guarded(e.table, "norm_rope_attention_int8_qk refusal", [&] { refusal_case(e, s); });
      break;
    }
    kcheck::guarded(e.table, "norm_rope_attention_int8_qk " + kcheck::shape_of({s.t, s.heads, s.hd}),
                    [&] { attention_case(e, s); });
  }
}
