// The INT8 ConvRot activation ops of `moss-check kernels --family dit`, group int8 (with
// int8_linear_cases.h): CoreOps::rotate_quantize, linear_int8 from QuantizedRows, the
// quantizing producers norm_modulate_quantized, add_norm_modulate_quantized and
// gated_unit_quantized, and linear_int8_gated_unit (the unit in the int8 GEMM's epilogue)
// (docs/int8_convrot.md section 9).
//
// What is bit-identical, and so compared with tolerance 0 ("differ": the count of differing int8
// values and scales):
// - rotate_quantize against the host's on the same values (the activation pass's contract);
// - linear_int8 from the GPU's quantized rows against the GPU's x-taking linear_int8 (the same
//   bits by definition: one is the other's second half);
// - a producer's quantized rows against the host's rotate_quantize OF THE PRODUCER'S OWN fp32
//   rows (asked for as an f32 y in the same call): the quantization is of the fp32 values, never
//   of a rounding. That holds for the one-pass kernels (rows.hip: the norms' register kernel and
//   the unit's row kernel quantizing in LDS, the DiT's widths) and for the composition through
//   f32 scratch (wider rows); the cases cover both. The fp32 rows themselves are compared with the host's within 1e-5 (relative
//   L2), as the norm_modulate cases do: the norm's sum of squares is reduced in another order on
//   the GPU, so the rows are not bit-identical to the host's, and a value near a rounding
//   boundary can quantize one step apart from the host's own quantization (which is why the
//   comparison is against the GPU's rows, exactly).
// - a second call with y in bf16 gives the same quantized rows, and y the f32 rows rounded once
//   (the timed call has no y).
// - linear_int8_gated_unit against the GPU's own composition, linear_int8 into an f32 [M, 2F]
//   product then gated_unit on its halves (the op's definition; linear_int8 itself is the host's
//   bits, int8_linear_cases.h), tolerance 0; and against the host op within 1e-5 (relative L2),
//   as the gated_unit cases: the device's tanh and exp need not be the host library's to the bit.
// Shapes: the DiT's (3072 and 8192 wide, 4160 rows, timed), small and odd ones, groups 64 and
// 256, both SumTo modes, one and two updates, NaN / infinity / zero rows.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../kernel_check.h"
#include "int8_linear_cases.h"  // same: equal bits, or both NaN
#include "ops/backend.h"
#include "tensor/tensor.h"

namespace int8_check {

using namespace moss;

// A host f32 matrix of random values (deterministic from the env's seed), rows 1-3 NaN /
// infinity / zeros when asked, and its device copy in `dt`.
struct HostDevice {
  Tensor h, d;
};
inline HostDevice random_rows(kcheck::Env& e, DType dt, int64_t m, int64_t k, float scale, bool specials) {
  kcheck::admit(e, {m, k});
  std::vector<float> v(size_t(m * k));
  kcheck::fill(v, ++e.seed, scale);
  Tensor h = host_tensor(DType::F32, {m, k}), src = host_tensor(dt, {m, k});
  for (int64_t i = 0; i < m * k; ++i) {
    float f = dt == DType::BF16 ? round_bf16(v[size_t(i)]) : v[size_t(i)];
    const int64_t r = i / k, c = i % k;
    if (specials && r == 1 && c == k / 2) f = std::nanf("");
    if (specials && r == 2 && c == 0) f = -INFINITY;
    if (specials && r == 3) f = 0.0f;
    h.ptr<float>()[i] = f;
    if (dt == DType::BF16) src.ptr<uint16_t>()[i] = f32_to_bf16(f);
    else src.ptr<float>()[i] = f;
  }
  return {h, e.gpu.upload(src)};
}

inline QuantizedRows device_rows(kcheck::Env& e, int64_t m, int64_t k, int64_t group) {
  kcheck::admit(e, {m, k});
  QuantizedRows q{e.gpu.alloc(DType::I8, {m, k}), kcheck::poisoned(e, {m, 1}), group};
  MOSS_HIP_CHECK(hipMemsetAsync(q.q.data, 0x55, size_t(m * k), e.stream()));  // a skipped value shows
  return q;
}

// Differing int8 values plus differing scales (NaN equals NaN), the first one printed.
inline int64_t count_differences(kcheck::Env& e, const char* op, const QuantizedRows& gpu, const QuantizedRows& host) {
  const Tensor q = e.gpu.download(gpu.q), s = e.gpu.download(gpu.scale);
  int64_t differ = 0;
  for (int64_t r = 0; r < host.rows(); ++r) {
    const float a = s.ptr<float>()[r], b = host.scale.ptr<float>()[r];
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    if (!(std::isnan(a) && std::isnan(b)) && ua != ub) {
      if (!differ) std::printf("  %s: scale of row %lld: got %.9g, want %.9g\n", op, (long long)r, a, b);
      ++differ;
    }
  }
  for (int64_t i = 0; i < host.q.numel(); ++i)
    if (q.ptr<int8_t>()[i] != host.q.ptr<int8_t>()[i]) {
      if (!differ)
        std::printf("  %s: first difference at [%lld, %lld]: got %d, want %d\n", op, (long long)(i / host.cols()),
                    (long long)(i % host.cols()), int(q.ptr<int8_t>()[i]), int(host.q.ptr<int8_t>()[i]));
      ++differ;
    }
  return differ;
}

// The host's rotate_quantize of a host f32 matrix.
inline QuantizedRows host_quantized(kcheck::Env& e, const Tensor& rows, int64_t group) {
  QuantizedRows q{host_tensor(DType::I8, {rows.rows(), rows.cols()}), host_tensor(DType::F32, {rows.rows(), 1}), group};
  e.host.core().rotate_quantize(rows, q);
  return q;
}

// kcheck::report over the rows whose reference is finite; a row the reference holds a NaN or an
// infinity in must hold one on the GPU too (else the row is reported as unwritten).
inline void report_rows(kcheck::Env& e, const std::string& op, const std::string& shape, const Tensor& got_t,
                        const std::vector<float>& want_all, int64_t cols, double tol) {
  const std::vector<float> got_all = to_f32_vector(got_t);
  std::vector<float> got, want;
  for (size_t r = 0; r * size_t(cols) < want_all.size(); ++r) {
    bool want_finite = true, got_finite = true;
    for (int64_t c = 0; c < cols; ++c) {
      want_finite = want_finite && std::isfinite(want_all[r * size_t(cols) + size_t(c)]);
      got_finite = got_finite && std::isfinite(got_all[r * size_t(cols) + size_t(c)]);
    }
    if (!want_finite) {
      if (got_finite) got.push_back(std::nanf("")), want.push_back(0.0f);
      continue;
    }
    got.insert(got.end(), got_all.begin() + long(r * size_t(cols)), got_all.begin() + long((r + 1) * size_t(cols)));
    want.insert(want.end(), want_all.begin() + long(r * size_t(cols)), want_all.begin() + long((r + 1) * size_t(cols)));
  }
  kcheck::report(e, op, shape, got, want, cols, tol);
}

inline void exact_row(kcheck::Env& e, const char* op, const std::string& shape, int64_t differ, double ms = 0,
                      double bytes = 0) {
  e.table.row(op, shape, kcheck::Compare{double(differ), double(differ), true}, 0.0, ms, 0, bytes);
}

// ---- rotate_quantize, and linear_int8 from its rows -----------------------------------------------
struct RotateQuantizeSpec {
  int64_t m, k, group;
  DType x = DType::BF16;
  bool specials = false;
  bool timed = false;
};
inline void rotate_quantize_case(kcheck::Env& e, const RotateQuantizeSpec& s) {
  const HostDevice x = random_rows(e, s.x, s.m, s.k, 2.0f, s.specials);
  QuantizedRows q = device_rows(e, s.m, s.k, s.group);
  auto run = [&] { e.gpu.core().rotate_quantize(x.d, q); };
  run();
  const std::string shape = kcheck::shape_of({s.m, s.k}) + " g" + std::to_string(s.group) + " x:" + dtype_name(s.x) +
                            (s.specials ? " nan/inf/0 rows" : "");
  const int64_t differ = count_differences(e, "rotate_quantize", q, host_quantized(e, x.h, s.group));
  const double ms = s.timed ? kcheck::time_it(e, run) : 0;
  const double bytes = double(s.m * s.k) * double(dtype_size(s.x) + 1);
  exact_row(e, "rotate_quantize", shape, differ, ms, bytes);
  if (s.timed) kcheck::record(e, "rotate_quantize", shape, ms, 0, bytes);

  // The product from these rows is linear_int8's second half: the x-taking op's bits.
  const int64_t n = 72;
  Tensor qw = host_tensor(DType::I8, {n, s.k}), sw = host_tensor(DType::F32, {n, 1});
  const uint64_t wseed = ++e.seed;
  for (int64_t i = 0; i < n * s.k; ++i) qw.ptr<int8_t>()[i] = int8_t(int(kcheck::mix(wseed + uint64_t(i)) % 256) - 128);
  for (int64_t i = 0; i < n; ++i) sw.ptr<float>()[i] = kcheck::uniform(wseed, uint64_t(i), 1e-3f, 2e-2f);
  const Tensor qwd = e.gpu.upload(qw), swd = e.gpu.upload(sw);
  Tensor y_rows = kcheck::poisoned(e, DType::F32, {s.m, n}), y_x = kcheck::poisoned(e, DType::F32, {s.m, n});
  e.gpu.core().linear_int8(q, qwd, swd, nullptr, y_rows);
  e.gpu.core().linear_int8(x.d, qwd, swd, nullptr, s.group, y_x);
  const std::vector<float> a = kcheck::fetch(e, y_rows), b = kcheck::fetch(e, y_x);
  int64_t differ_y = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    uint32_t ua, ub;
    std::memcpy(&ua, &a[i], 4);
    std::memcpy(&ub, &b[i], 4);
    differ_y += !(std::isnan(a[i]) && std::isnan(b[i])) && ua != ub;
  }
  exact_row(e, "linear_int8 (quantized rows)", kcheck::shape_of({s.m, s.k, n}) + " g" + std::to_string(s.group),
            differ_y);
}

// ---- the quantizing producers ---------------------------------------------------------------------
// kind: 0 norm_modulate_quantized, 1 add_norm_modulate_quantized (one update, o's), 2 the same with
// two (the block's first norm), 3 gated_unit_quantized (SiTU, a and b of dtype `in`).
struct QuantizingSpec {
  int kind;
  int64_t m, k, group;
  SumTo sum = SumTo::X;
  DType in = DType::BF16;  // the updates' dtype (the DiT's pending updates: bf16), or the unit's inputs'
  bool specials = false;
  bool timed = false;
};
inline void quantizing_case(kcheck::Env& e, const QuantizingSpec& s) {
  static const char* const kNames[] = {"norm_modulate_quantized", "add_norm_modulate_quantized",
                                       "add_norm_modulate_quantized", "gated_unit_quantized"};
  const char* op = kNames[s.kind];
  const bool unit = s.kind == 3;
  const int updates = s.kind == 1 ? 1 : s.kind == 2 ? 2 : 0;
  // Operands: x f32 (the residual stream) or the unit's two halves; w, shift, scale, gates f32.
  // (The unit's inputs at the gated_unit cases' scale; no non-finite inputs there: its device
  // tanh of an infinity need not be the host's, and the quantization's NaN rows are covered by
  // the other cases.)
  const HostDevice x = random_rows(e, unit ? s.in : DType::F32, s.m, s.k, unit ? 3.0f : 2.0f, s.specials && !unit);
  const HostDevice b = random_rows(e, s.in, s.m, s.k, unit ? 3.0f : 1.0f, false);
  const HostDevice d1 = random_rows(e, s.in, s.m, s.k, 1.0f, false);
  const HostDevice vecs = random_rows(e, DType::F32, 5, s.k, 0.5f, false);  // w, shift, scale, gate 0, gate 1
  std::vector<Tensor> vh, vd;
  for (int64_t i = 0; i < 5; ++i) {
    vh.push_back(vecs.h.slice_rows(i, 1));
    vd.push_back(vecs.d.slice_rows(i, 1));
  }
  GatedUpdates uh, ud;
  if (updates > 0) {
    uh.then(b.h, vh[3]);
    ud.then(b.d, vd[3]);
  }
  if (updates > 1) {
    uh.then(d1.h, vh[4]);
    ud.then(d1.d, vd[4]);
  }
  // The host reference of the fp32 rows (and of x's sum), on a copy of x.
  Tensor xh = host_tensor(DType::F32, {s.m, s.k}), rows_h = host_tensor(DType::F32, {s.m, s.k});
  std::memcpy(xh.data, x.h.data, xh.nbytes());
  if (unit) e.host.core().gated_unit(GatedUnit::Situ, x.h, b.h, rows_h);
  else if (updates) e.host.core().add_norm_modulate(xh, uh, s.sum, vh[0], 1e-6f, vh[1], vh[2], rows_h);
  else e.host.core().norm_modulate(xh, vh[0], 1e-6f, vh[1], vh[2], rows_h);

  // The GPU op, run on a fresh copy of x each time (a stored sum changes it), with an f32 y (its
  // fp32 rows), a bf16 y, or none.
  auto run = [&](Tensor& xd, QuantizedRows& q, Tensor* y) {
    if (unit) e.gpu.core().gated_unit_quantized(GatedUnit::Situ, xd, b.d, q, y);
    else if (updates) e.gpu.core().add_norm_modulate_quantized(xd, ud, s.sum, vd[0], 1e-6f, vd[1], vd[2], q, y);
    else e.gpu.core().norm_modulate_quantized(xd, vd[0], 1e-6f, vd[1], vd[2], q, y);
  };
  auto fresh_x = [&] { return unit ? x.d : e.gpu.upload(x.h); };
  Tensor x1 = fresh_x(), rows_d = kcheck::poisoned(e, DType::F32, {s.m, s.k});
  QuantizedRows q1 = device_rows(e, s.m, s.k, s.group);
  run(x1, q1, &rows_d);
  const Tensor rows_got = e.gpu.download(rows_d);
  const std::string shape = kcheck::shape_of({s.m, s.k}) + " g" + std::to_string(s.group) + " " + dtype_name(s.in) +
                            (updates == 2 ? " 2 updates" : "") +
                            (updates && s.sum == SumTo::Nowhere ? " sum not stored" : "") +
                            (s.specials ? " nan/inf/0 rows" : "");
  // Timed first (on its own copy of x): the DiT's call, no y (the quantized rows are its only
  // output); x read (f32), the updates read, q written (and x written when the sum is stored).
  double ms = 0, bytes = 0;
  if (s.timed) {
    Tensor xt = fresh_x();
    QuantizedRows qt = device_rows(e, s.m, s.k, s.group);
    ms = kcheck::time_it(e, [&] { run(xt, qt, nullptr); });
    bytes = double(s.m * s.k) * (unit ? double(2 * dtype_size(s.in) + 1)
                                      : double(4 + updates * dtype_size(s.in) + 1 + (updates && s.sum == SumTo::X ? 4 : 0)));
    kcheck::record(e, op, shape, ms, 0, bytes);
  }
  // The quantization of the GPU's own fp32 rows, bit for bit.
  exact_row(e, op, shape, count_differences(e, op, q1, host_quantized(e, rows_got, s.group)), ms, bytes);
  // Those rows against the host's (the reduction order: 1e-5; non-finite rows compare as NaN).
  report_rows(e, std::string(op) + " rows", shape, rows_got, to_f32_vector(rows_h), s.k, 1e-5);
  if (updates && s.sum == SumTo::X)
    report_rows(e, std::string(op) + " x", shape, e.gpu.download(x1), to_f32_vector(xh), s.k, 1e-5);
  if (updates && s.sum == SumTo::Nowhere)
    report_rows(e, std::string(op) + " x (unchanged)", shape, e.gpu.download(x1), to_f32_vector(x.h), s.k, 0.0);
  // Again with y in bf16: the same quantized rows; y the rows rounded once.
  Tensor x2 = fresh_x();
  QuantizedRows q2 = device_rows(e, s.m, s.k, s.group);
  Tensor y2 = kcheck::poisoned(e, DType::BF16, {s.m, s.k});
  run(x2, q2, &y2);
  const Tensor q1h = e.gpu.download(q1.q), s1h = e.gpu.download(q1.scale);
  exact_row(e, op, shape + " y:bf16", count_differences(e, op, q2, {q1h, s1h, s.group}));
  std::vector<float> want = to_f32_vector(rows_got);
  for (float& f : want) f = round_bf16(f);
  report_rows(e, std::string(op) + " y:bf16", shape, e.gpu.download(y2), want, s.k, 0.0);
}

// ---- linear_int8_gated_unit ------------------------------------------------------------------------
// The unit (SiTU) in the int8 GEMM's epilogue: q_w [2F, K] (hidden rows, then gate rows), out f32
// [M, F]. Every platform and path takes the leaf kernels (kernels/int8_linear.h), tiled where K is
// a multiple of 16, direct for the rest; they pair hidden and gate rows at any F. (NVIDIA's native
// wgmma kernel has no gated unit: measured slower than the GEMM and a pass; the DiT takes that
// flow there, CoreOps::int8_unit_in_gemm_epilogue.)
struct GatedLinearSpec {
  int64_t m, k, f, group;
  bool bias_present = false;
  DType bias = DType::F32;
  bool specials = false;  // rows 1, 2, 3 of x: NaN, infinity, zeros
  bool sampled = false;   // full size: the host replays 64 sampled rows
  bool timed = false;
};
inline void gated_linear_case(kcheck::Env& e, const GatedLinearSpec& s) {
  const int64_t n = 2 * s.f;
  kcheck::admit(e, {s.m, n});
  kcheck::admit(e, {n, s.k});
  const HostDevice x = random_rows(e, DType::BF16, s.m, s.k, 2.0f, s.specials);
  QuantizedRows xq = device_rows(e, s.m, s.k, s.group);
  e.gpu.core().rotate_quantize(x.d, xq);
  Tensor qw = host_tensor(DType::I8, {n, s.k}), sw = host_tensor(DType::F32, {n, 1});
  const uint64_t wseed = ++e.seed;
  for (int64_t i = 0; i < n * s.k; ++i) qw.ptr<int8_t>()[i] = int8_t(int(kcheck::mix(wseed + uint64_t(i)) % 256) - 128);
  for (int64_t i = 0; i < n; ++i) sw.ptr<float>()[i] = kcheck::uniform(wseed, uint64_t(i), 1e-3f, 2e-2f);
  std::vector<float> bv(static_cast<size_t>(n));
  kcheck::fill(bv, ++e.seed, 0.5f);
  Tensor bias = host_tensor(s.bias, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (s.bias == DType::BF16) bias.ptr<uint16_t>()[i] = f32_to_bf16(bv[size_t(i)]);
    else bias.ptr<float>()[i] = bv[size_t(i)];
  }
  const Tensor qwd = e.gpu.upload(qw), swd = e.gpu.upload(sw), bd = e.gpu.upload(bias);
  const Tensor* bias_d = s.bias_present ? &bd : nullptr;
  Tensor out = kcheck::poisoned(e, DType::F32, {s.m, s.f});
  auto run = [&] { e.gpu.core().linear_int8_gated_unit(GatedUnit::Situ, xq, qwd, swd, bias_d, out); };
  run();
  // The composition on the GPU: the product in f32, then the unit's row kernel.
  Tensor t = kcheck::poisoned(e, DType::F32, {s.m, n}), unit = kcheck::poisoned(e, DType::F32, {s.m, s.f});
  auto composed = [&] {
    e.gpu.core().linear_int8(xq, qwd, swd, bias_d, t);
    e.gpu.core().gated_unit(GatedUnit::Situ, t.slice_cols(0, s.f), t.slice_cols(s.f, s.f), unit);
  };
  composed();
  const std::vector<float> got = kcheck::fetch(e, out), want = kcheck::fetch(e, unit);
  int64_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!same(got[i], want[i])) {
      if (!differ)
        std::printf("  linear_int8_gated_unit: first difference at [%lld, %lld]: got %.9g, want %.9g\n",
                    (long long)(int64_t(i) / s.f), (long long)(int64_t(i) % s.f), got[i], want[i]);
      ++differ;
    }
  const std::string shape = kcheck::shape_of({s.m, s.k, n}) + " g" + std::to_string(s.group) +
                            (s.bias_present ? (s.bias == DType::BF16 ? " +b:bf16" : " +b:f32") : "") +
                            (s.specials ? " nan/inf/0 rows" : "");
  double ms = 0, ms_composed = 0;
  const double flops = 2.0 * double(s.m) * double(n) * double(s.k);
  if (s.timed) {
    ms = kcheck::time_it(e, run);
    ms_composed = kcheck::time_it(e, composed);
    kcheck::record(e, "linear_int8_gated_unit", shape, ms, flops, 0);
    kcheck::record(e, "linear_int8 + gated_unit (composed)", shape, ms_composed, flops, 0);
  }
  exact_row(e, "linear_int8_gated_unit", shape, differ, ms);
  // Against the host op on the same quantized rows (every row, or 64 sampled ones).
  std::vector<int64_t> rows;
  if (s.sampled)
    for (int64_t i = 0; i < 64; ++i) rows.push_back(i == 63 ? s.m - 1 : std::min(s.m - 1, i * (s.m / 64) + i % 7));
  else
    for (int64_t r = 0; r < s.m; ++r) rows.push_back(r);
  const int64_t R = int64_t(rows.size());
  const Tensor q_all = e.gpu.download(xq.q), s_all = e.gpu.download(xq.scale);
  QuantizedRows hq{host_tensor(DType::I8, {R, s.k}), host_tensor(DType::F32, {R, 1}), s.group};
  std::vector<float> got_rows;
  for (int64_t i = 0; i < R; ++i) {
    std::memcpy(hq.q.ptr<int8_t>() + i * s.k, q_all.ptr<int8_t>() + rows[size_t(i)] * s.k, size_t(s.k));
    hq.scale.ptr<float>()[i] = s_all.ptr<float>()[rows[size_t(i)]];
    got_rows.insert(got_rows.end(), got.begin() + long(rows[size_t(i)] * s.f), got.begin() + long((rows[size_t(i)] + 1) * s.f));
  }
  Tensor yh = host_tensor(DType::F32, {R, s.f});
  e.host.core().linear_int8_gated_unit(GatedUnit::Situ, hq, qw, sw, s.bias_present ? &bias : nullptr, yh);
  Tensor got_t = host_tensor(DType::F32, {R, s.f});
  std::memcpy(got_t.data, got_rows.data(), got_rows.size() * sizeof(float));
  report_rows(e, "linear_int8_gated_unit (host)", shape, got_t, to_f32_vector(yh), s.f, 1e-5);
}

inline void check_int8_quantized(kcheck::Env& e) {
  const kcheck::Op<RotateQuantizeSpec> rq{"rotate_quantize", rotate_quantize_case};
  const kcheck::Op<QuantizingSpec> qp{"quantizing producer", quantizing_case};
  const kcheck::Op<GatedLinearSpec> gl{"linear_int8_gated_unit", gated_linear_case};
  constexpr DType F32 = DType::F32, BF16 = DType::BF16;
  const int64_t rows = 64 * 64 + 64, dim = 3072, ffn = 8192;  // the DiT at 1024x1024
  kcheck::run_cases(e, {
      rq({5, 4, 4, F32}),                                          // the smallest group
      rq({33, 192, 64, BF16, true}),                               // the tiny model's group; NaN, inf, 0 rows
      rq({17, 1024, 256, F32}),                                    // odd rows, 4 groups of 256
      rq({rows, dim, 256, BF16, false, true}),                     // the attention output (o's input), timed
      rq({2048, ffn, 256, F32, false, true}),                      // ffn_down's input from the GEMM's f32 unit, timed
      rq({5, 4352, 256, F32, true}),                               // the register pass: a half segment past 4096
      rq({7, 1536, 16, BF16}),                                     // the register pass without lane swaps
      rq({6, 1024, 4, F32}),                                       // the register pass, the smallest group
      qp({0, 7, 192, 64}),                                         // norm_modulate_quantized, tiny width
      qp({0, 9, 3072, 256, SumTo::X, BF16, true}),                 // the DiT's width; NaN, inf, 0 rows
      qp({1, 31, 384, 64, SumTo::Nowhere}),                        // o's update, the sum not stored (norm2)
      qp({2, 13, 3072, 256, SumTo::X}),                            // two updates stored (norm1)
      qp({1, 5, 260, 4, SumTo::X, F32}),                           // a width past the register kernel's chunk; f32 d
      qp({2, 3, 4096, 256, SumTo::Nowhere}),                       // past the portable one-pass row (3072): composed
      qp({1, 3, 8448, 256, SumTo::X}),                             // past the native one-pass row (8192): composed
      qp({3, 11, 384, 64, SumTo::X, F32}),                         // gated_unit_quantized, f32 inputs
      qp({3, 7, 256, 16, SumTo::X, BF16}),                         // bf16 inputs, group 16
      qp({3, 6, 8192, 256, SumTo::X, F32}),                        // ffn_down's width
      qp({3, 3, 8448, 256, SumTo::X, F32}),                        // past the unit's one-pass row (8192): composed
      qp({2, rows, dim, 256, SumTo::X, BF16, false, true}),        // norm1 at 1024x1024, timed
      qp({1, rows, dim, 256, SumTo::Nowhere, BF16, false, true}),  // norm2
      qp({3, 2048, ffn, 256, SumTo::X, F32, false, true}),         // the unit on a 2048-row run of f32 products
      // linear_int8_gated_unit: the leaf kernels (tiled, direct) at any F, every path.
      gl({67, 192, 40, 64, true, BF16}),                           // tiled: F past a block's 32 columns
      gl({150, 256, 21, 64, true, F32}),                           // tiled: F odd, M past a 128-row tile
      gl({11, 40, 19, 4, true, F32}),                              // direct: K not a multiple of 16
      gl({9, 256, 24, 64, true, F32, true}),                       // tiled: NaN, infinity and zero rows
      gl({200, 512, 128, 64, true, F32}),                          // tiled: M past a tile, F 128
      gl({130, 640, 256, 64, false}),                              // tiled: no bias, F 256
      gl({70, 400, 384, 16, true, BF16}),                          // tiled: K ends 16 bytes into a 64-byte step
      gl({9, 512, 128, 64, true, F32, true}),                      // tiled: NaN, infinity and zero rows, K 512
      gl({70, 512, 200, 64, true, F32}),                           // tiled: F not a multiple of 128
      gl({rows, dim, ffn, 256, false, F32, false, true, true}),    // the DiT's ffn_up_gate at 1024x1024, timed (and composed)
  });
}

}  // namespace int8_check
