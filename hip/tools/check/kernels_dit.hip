// `moss-check kernels --family dit`: every core kernel the DiT runs, on the GPU backend against the
// host replay (ops/host) on the same random inputs, at the real DiT shapes (dim 3072, ffn 8192, 24
// heads of 128; 4160 token rows at 1024x1024 = 4096 image + 64 text) and at odd sizes (tails,
// misaligned column slices, bf16 operands). Outputs are poisoned with NaN first, so an element
// a kernel forgets to write fails its case.
//
// Groups (--filter): gemm, gemm_gated_unit, gemm_skinny, rows, fused, attention, packed, int8_attention
// (the int8 QKᵀ attention: cases/attention_int8_cases.h), fp8 (P.V in fp8's values:
// cases/fp8_values_cases.h), int8 (the
// INT8 ConvRot linear, bit-identical to the host: cases/int8_linear_cases.h; its activation ops
// and the quantizing producers: cases/int8_quantized_cases.h), fp8 (P.V in fp8's values, bit-identical
// to the host: cases/fp8_values_cases.h).
//
// Table rows: kernel, shape, relative L2, max |error|, ms per launch, rate, verdict. Tolerances:
// bf16-operand kernels (GEMM) 1e-2 relative L2, fp32 kernels 1e-5 (bf16 in/out cases 1e-2). The
// full-size GEMMs are timed and spot-checked on 64 sampled rows (host replay of those rows only).
// A failing case prints its first bad element before its row. The closing summary lists each
// timed kernel at the 1024x1024 shapes with its share of the H200 ceilings (790 TFLOP/s dense
// bf16, 4.3 TB/s). About 20-40 s on an H200 machine (most of it the host replay of the GEMM
// checks on 16 cores).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cases/attention_cases.h"
#include "cases/attention_int8_cases.h"
#include "cases/int8_linear_cases.h"
#include "cases/fp8_values_cases.h"
#include "cases/int8_quantized_cases.h"
#include "kernel_check.h"
#include "kernels/gemm.h"
#include "ops/backend.h"
#include "ops/hip/hip_backend.h"
#include "tensor/packed_bf16.h"

namespace {

using namespace moss;
using kcheck::Case;
using kcheck::Env;
using kcheck::fetch;
using kcheck::fill;
using kcheck::poisoned;
using kcheck::record;
using kcheck::report;
using kcheck::shape_of;
using kcheck::time_it;

constexpr double kBf16Tol = 1e-2, kF32Tol = 1e-5;

// The DiT at 1024x1024.
constexpr int64_t kDim = 3072, kFfn = 8192, kHeads = 24, kHeadDim = 128, kText = 64;
constexpr int64_t kRows = 64 * 64 + kText;  // image tokens + text tokens
static_assert(kHeads * kHeadDim == kDim, "the DiT's heads tile its width");

// A random matrix on both sides: `h` is host f32 (the host ops' activation dtype) holding exactly
// the values of `d`, the device tensor of dtype dt (bf16 values are rounded first).
struct Pair {
  Tensor h, d;
};
Pair random_pair(Env& e, DType dt, const std::vector<int64_t>& dims, float scale = 1.0f) {
  kcheck::admit(e, dims);
  Tensor h = host_tensor(DType::F32, dims);
  std::vector<float> v(size_t(h.numel()));
  fill(v, ++e.seed, scale);
  Tensor src = host_tensor(dt, dims);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::BF16) {
      const uint16_t b = f32_to_bf16(v[i]);
      src.ptr<uint16_t>()[i] = b;
      h.ptr<float>()[i] = bf16_to_f32(b);
    } else {
      src.ptr<float>()[i] = v[i];
      h.ptr<float>()[i] = v[i];
    }
  }
  return {h, e.gpu.upload(src)};
}

// A host tensor of dtype dt with the values of h (f32) -- for weights the host ops read as is.
Tensor host_as(const Tensor& h, DType dt) {
  if (dt == DType::F32) return h;
  Tensor out = host_tensor(dt, h.dims());
  for (int64_t i = 0; i < h.numel(); ++i) out.ptr<uint16_t>()[i] = f32_to_bf16(h.ptr<const float>()[i]);
  return out;
}

// The rows a full-size case checks against the host (the host replay of all of them would take
// minutes): kSampledRows spread over the m rows, the last among them.
constexpr int64_t kSampledRows = 64;
std::vector<int64_t> sampled_rows(int64_t m) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < kSampledRows; ++i)
    rows.push_back(i == kSampledRows - 1 ? m - 1
                   : m <= kSampledRows   ? i % m
                                         : std::min(m - 1, i * (m / kSampledRows) + i % 7));
  return rows;
}

// Rows `rows` of a [*, cols] result, one after another.
std::vector<float> gather_rows(const std::vector<float>& all, const std::vector<int64_t>& rows, int64_t cols) {
  std::vector<float> out(rows.size() * size_t(cols));
  for (size_t i = 0; i < rows.size(); ++i) std::copy_n(all.begin() + rows[i] * cols, cols, out.begin() + int64_t(i) * cols);
  return out;
}

// An element the kernel left unwritten anywhere in `all` (the NaN poison survives) fails the case
// even outside the checked rows: it is named and carried into `got`, which the comparison rejects.
void carry_unwritten(const std::vector<float>& all, int64_t cols, const std::string& what, std::vector<float>& got) {
  for (size_t i = 0; i < all.size(); ++i)
    if (!std::isfinite(all[i])) {
      got[0] = all[i];
      std::printf("  %s: element [%lld, %lld] not written\n", what.c_str(), (long long)(int64_t(i) / cols),
                  (long long)(int64_t(i) % cols));
      return;
    }
}

// ---- GEMM ----------------------------------------------------------------------------------------
struct LinearSpec {
  std::string name;
  int64_t m, k, n;
  DType x = DType::F32, w = DType::BF16, y = DType::F32;
  bool bias = false;
  int64_t x_offset = 0;  // x is a column slice at this offset of a wider matrix (misaligned rows)
};

// Through CoreOps::linear on both backends; every output element compared.
void linear_case(Env& e, const LinearSpec& s) {
  const int64_t width = s.k + s.x_offset + (s.x_offset ? 3 : 0);
  Pair xp = random_pair(e, s.x, {s.m, width});
  Pair wp = random_pair(e, s.w, {s.n, s.k}, float(1.0 / std::sqrt(double(s.k))));
  Pair bp = random_pair(e, s.w, {s.n}, 0.5f);
  const Tensor xh = xp.h.slice_cols(s.x_offset, s.k), xd = xp.d.slice_cols(s.x_offset, s.k);
  const Tensor wh = host_as(wp.h, s.w), bh = host_as(bp.h, s.w);

  Tensor yh = host_tensor(DType::F32, {s.m, s.n});
  e.host.core().linear(xh, wh, s.bias ? &bh : nullptr, yh);
  Tensor yd = poisoned(e, s.y, {s.m, s.n});
  e.gpu.core().linear(xd, wp.d, s.bias ? &bp.d : nullptr, yd);
  const std::string shape = shape_of({s.m, s.k, s.n}) + (s.x == DType::BF16 ? " x:bf16" : "") +
                            (s.w == DType::F32 ? " w:f32" : "") + (s.y == DType::BF16 ? " y:bf16" : "") +
                            (s.x_offset ? " x:slice" : "") + (s.bias ? " +b" : "");
  const double ms = time_it(e, [&] { e.gpu.core().linear(xd, wp.d, s.bias ? &bp.d : nullptr, yd); }, 3);
  report(e, "linear " + s.name, shape, fetch(e, yd), to_f32_vector(yh), s.n, kBf16Tol, ms, 2.0 * s.m * s.n * s.k);
}
const kcheck::Op<LinearSpec> op_linear{"linear", linear_case};  // tolerance 1e-2 (bf16 operands)

// CoreOps::linear_transposed on both backends (the DiT's v projection on AMD: the GEMM's
// transposed epilogue writing the attention's zero-padded Vᵀ): yt [n, p] as the first p columns of
// an [n, p + ld_extra] buffer poisoned with NaN. Every element compared (the columns past m must
// be exact zeros), and the columns past p must stay NaN. ld_extra 8 keeps yt's rows 16-byte
// aligned (gfx12's one-store runs), 3 does not (element stores).
struct TransposedSpec {
  std::string name;
  int64_t m, k, n, p;
  DType x = DType::BF16, y = DType::BF16;
  int64_t ld_extra = 8;
};
void linear_transposed_case(Env& e, const TransposedSpec& s) {
  Pair xp = random_pair(e, s.x, {s.m, s.k});
  Pair wp = random_pair(e, DType::BF16, {s.n, s.k}, float(1.0 / std::sqrt(double(s.k))));
  Tensor yh = host_tensor(DType::F32, {s.n, s.p});
  e.host.core().linear_transposed(xp.h, host_as(wp.h, DType::BF16), yh);
  const int64_t ld = s.p + s.ld_extra;
  Tensor whole = poisoned(e, s.y, {s.n, ld});
  Tensor yd = whole.slice_cols(0, s.p);
  e.gpu.core().linear_transposed(xp.d, wp.d, yd);
  const std::vector<float> all = fetch(e, whole);
  std::vector<float> got(size_t(s.n * s.p));
  int64_t touched = 0, nonzero_pad = 0;
  for (int64_t c = 0; c < s.n; ++c)
    for (int64_t r = 0; r < ld; ++r) {
      const float v = all[size_t(c * ld + r)];
      if (r >= s.p) touched += !std::isnan(v);
      else got[size_t(c * s.p + r)] = v;
      if (r >= s.m && r < s.p) nonzero_pad += v != 0.0f;
    }
  const std::string shape = shape_of({s.m, s.k, s.n}) + " yt:" + std::to_string(s.p) + "/" + std::to_string(ld) +
                            (s.x == DType::F32 ? " x:f32" : "") + (s.y == DType::F32 ? " y:f32" : "");
  if (touched || nonzero_pad) {
    std::printf("  linear_transposed %s: %lld elements past yt written, %lld padding elements not zero\n",
                shape.c_str(), (long long)touched, (long long)nonzero_pad);
    got[0] = std::nanf("");
  }
  const double ms = time_it(e, [&] { e.gpu.core().linear_transposed(xp.d, wp.d, yd); }, 3);
  report(e, "linear_transposed " + s.name, shape, got, to_f32_vector(yh), s.p, kBf16Tol, ms, 2.0 * s.m * s.n * s.k);
}
const kcheck::Op<TransposedSpec> op_linear_transposed{"linear_transposed", linear_transposed_case};

// "wgmma 128x256/2+1wg", "mma 128x256/8w", "leaf 128x128/4w", "mma 64x128/4w k/8".
std::string plan_name(const GemmPlan& p, DType) {
  return std::string(gemm_kernel_name(p.kernel)) + " " + gemm_tiles_name(p.tiles, p.kernel) +
         (p.split > 1 ? " k/" + std::to_string(p.split) : "");
}

// Optional parts of a forced-plan case: y and bias dtypes, x as the first k columns of a wider
// matrix (row stride k + x_pad; x_pad a multiple of 8 keeps x packed).
// unit: the gated-unit epilogue (`kind`, SiTU unless named; w and bias have 2n rows, y is [m, n],
// against the host's linear_gated_unit); repeat: run again into a fresh y and require the same
// bits (split-K reduces in a fixed order); no_bias: no bias operand.
struct PlanCaseOptions {
  DType y = DType::F32, bias = DType::F32;
  int64_t x_pad = 0;
  bool unit = false, repeat = false;
  GatedUnit kind = GatedUnit::Situ;
  bool no_bias = false;
};

// moss::gemm with a forced plan (every kernel instantiation): a tail shape, all compared. The
// requested kernel must be the one that runs (a silent fallback would leave it unchecked).
void gemm_plan_case(Env& e, GemmPlan plan, DType xdt, DType wdt, int64_t m, int64_t n, int64_t k,
                    PlanCaseOptions o = {}) {
  const int64_t wn = o.unit ? 2 * n : n;  // w's rows
  Pair xp = random_pair(e, xdt, {m, k + o.x_pad});
  Pair wp = random_pair(e, wdt, {wn, k}, float(3.0 / std::sqrt(double(k))));
  Pair bp = random_pair(e, o.bias, {wn}, 0.5f);
  const Tensor wh = host_as(wp.h, wdt), bh = host_as(bp.h, o.bias);
  Tensor yh = host_tensor(DType::F32, {m, n});
  const Tensor* bias_h = o.no_bias ? nullptr : &bh;
  if (o.unit) e.host.core().linear_gated_unit(o.kind, xp.h.slice_cols(0, k), wh, bias_h, yh);
  else e.host.core().linear(xp.h.slice_cols(0, k), wh, bias_h, yh);
  Tensor yd = poisoned(e, o.y, {m, n});
  GemmOperands op;
  op.x = xp.d.data;
  op.x_type = xdt == DType::BF16 ? GemmType::BF16 : GemmType::F32;
  op.ldx = k + o.x_pad;
  op.w = wp.d.data;
  op.w_type = wdt == DType::BF16 ? GemmType::BF16 : GemmType::F32;
  op.ldw = k;
  op.bias = o.no_bias ? nullptr : bp.d.data;
  op.bias_type = o.bias == DType::BF16 ? GemmType::BF16 : GemmType::F32;
  op.y = yd.data;
  op.y_type = o.y == DType::BF16 ? GemmType::BF16 : GemmType::F32;
  op.ldy = n;
  op.gated = o.unit;
  op.unit = o.kind;
  op.m = m;
  op.n = n;
  op.k = k;
  const GemmKernel requested = plan.kernel;
  const int requested_split = plan.split;
  plan = gemm_resolve(op, e.ctx.multiprocessors(), plan);
  if (requested == GemmKernel::Wgmma && plan.kernel != GemmKernel::Wgmma)
    std::printf("  gemm %lldx%lldx%lld: wgmma requested, %s resolved\n", (long long)m, (long long)k, (long long)n,
                gemm_kernel_name(plan.kernel));
  if (o.unit && !gemm_fuses_unit(op, e.ctx.multiprocessors(), plan)) {
    // The gated-unit epilogue is the Wgmma kernel's and the portable wide tiles' (bf16 weights;
    // gemm_fuses_unit); other plans run the unit as its own op, checked with the rows kernels.
    // Asked with the case's plan: these tail shapes are too small for Auto to choose wgmma.
    std::printf("  gemm %lldx%lldx%lld: gated unit not fused by %s, skipped\n", (long long)m, (long long)k,
                (long long)n, gemm_kernel_name(plan.kernel));
    return;
  }
  if (requested_split > 1 && plan.split != requested_split)
    std::printf("  gemm %lldx%lldx%lld: split %d requested, %d resolved\n", (long long)m, (long long)k, (long long)n,
                requested_split, plan.split);
  gemm(op, e.stream(), e.ctx.multiprocessors(), plan);
  std::vector<float> want = to_f32_vector(yh);
  if (o.y == DType::BF16)
    for (float& v : want) v = round_bf16(v);  // the device rounds once; so must the reference
  const std::string shape = shape_of({m, k, n}) + " " + dtype_name(xdt) + "·" + dtype_name(wdt) +
                            (o.y == DType::BF16 ? " y:bf16" : "") + (o.bias == DType::BF16 ? " b:bf16" : "") +
                            (o.x_pad ? " ldx:" + std::to_string(k + o.x_pad) : "") + (o.no_bias ? " no bias" : "") +
                            (!o.unit                       ? ""
                             : o.kind == GatedUnit::Situ   ? " situ"
                             : o.kind == GatedUnit::SwiGlu ? " swiglu"
                                                           : " sigmoid");
  const std::vector<float> got = fetch(e, yd);
  report(e, "gemm " + plan_name(plan, xdt), shape, got, want, n, kBf16Tol);
  if (o.repeat) {
    Tensor again = poisoned(e, o.y, {m, n});
    op.y = again.data;
    gemm(op, e.stream(), e.ctx.multiprocessors(), plan);
    report(e, "gemm " + plan_name(plan, xdt) + " rerun", shape + " same bits", fetch(e, again), got, n, 0.0);
  }
}
struct GemmPlanCase { GemmPlan plan; DType xdt, wdt; int64_t m, n, k; PlanCaseOptions o = {}; };
void gemm_plan_case(Env& e, const GemmPlanCase& c) { gemm_plan_case(e, c.plan, c.xdt, c.wdt, c.m, c.n, c.k, c.o); }
// tolerance 1e-2 (bf16 operands); a rerun must give the same bits
const kcheck::Op<GemmPlanCase> op_gemm_plan{"gemm", gemm_plan_case};

// A full-size DiT GEMM: timed, every element checked for being written, 64 sampled rows
// compared with a host replay of those rows.
// weight_rate: report the weights' GB/s (N·K·2 bytes per launch) instead of TFLOP/s: the text
// encoder's few-row GEMMs are bound by streaming the weights.
void gemm_full_case(Env& e, const std::string& name, int64_t m, int64_t k, int64_t n, DType xdt, GemmPlan plan = {},
                    DType ydt = DType::F32, bool weight_rate = false) {
  Pair xp = random_pair(e, xdt, {m, k});
  Pair wp = random_pair(e, DType::BF16, {n, k}, float(1.0 / std::sqrt(double(k))));
  Tensor yd = poisoned(e, ydt, {m, n});
  GemmOperands op;
  op.x = xp.d.data;
  op.x_type = xdt == DType::BF16 ? GemmType::BF16 : GemmType::F32;
  op.ldx = k;
  op.w = wp.d.data;
  op.w_type = GemmType::BF16;
  op.ldw = k;
  op.y = yd.data;
  op.y_type = ydt == DType::BF16 ? GemmType::BF16 : GemmType::F32;
  op.ldy = n;
  op.m = m;
  op.n = n;
  op.k = k;
  const GemmPlan used = gemm_resolve(op, e.ctx.multiprocessors(), plan);
  gemm(op, e.stream(), e.ctx.multiprocessors(), used);
  const std::vector<float> all = fetch(e, yd);

  const std::vector<int64_t> rows = sampled_rows(m);
  Tensor xs = host_tensor(DType::F32, {kSampledRows, k});
  for (int64_t i = 0; i < kSampledRows; ++i)
    std::memcpy(xs.row<float>(i), xp.h.row<const float>(rows[size_t(i)]), size_t(k) * sizeof(float));
  Tensor ys = host_tensor(DType::F32, {kSampledRows, n});
  e.host.core().linear(xs, host_as(wp.h, DType::BF16), nullptr, ys);
  std::vector<float> got = gather_rows(all, rows, n);
  std::vector<float> want = to_f32_vector(ys);
  if (ydt == DType::BF16)
    for (float& v : want) v = round_bf16(v);
  carry_unwritten(all, n, "gemm " + name, got);

  const double ms = time_it(e, [&] { gemm(op, e.stream(), e.ctx.multiprocessors(), used); });
  const double flops = weight_rate ? 0.0 : 2.0 * m * n * k, bytes = weight_rate ? 2.0 * n * k : 0.0;
  const std::string kernel = "gemm " + name + " " + plan_name(used, xdt);
  const std::string shape =
      shape_of({m, k, n}) + (xdt == DType::BF16 ? " x:bf16" : "") + (ydt == DType::BF16 ? " y:bf16" : "");
  report(e, kernel, shape, got, want, n, kBf16Tol, ms, flops, bytes);
  record(e, kernel, shape, ms, flops, bytes);
}
struct GemmFullCase {
  std::string name; int64_t m, k, n; DType xdt; GemmPlan plan = {}; DType ydt = DType::F32; bool weight_rate = false;
};
void gemm_full_case(Env& e, const GemmFullCase& c) {
  gemm_full_case(e, c.name, c.m, c.k, c.n, c.xdt, c.plan, c.ydt, c.weight_rate);
}
const kcheck::Op<GemmFullCase> op_gemm_full{"gemm", gemm_full_case};  // tolerance 1e-2 (bf16 operands)

void check_gemms(Env& e) {
  std::vector<Case> cases;
  kcheck::run_cases(e, {
    // The DiT's projections at 512/256 rows (all compared) and the small ones.
    op_linear({"q/k/v/o", 512, kDim, kDim}),
    op_linear({"ffn_up_gate", 256, kDim, 2 * kFfn}),
    op_linear({"ffn_down", 256, kFfn, kDim}),
    op_linear({"text qkv", kText, kDim, 3 * kDim, DType::F32, DType::BF16, DType::F32, true}),
    op_linear({"text_embedder.proj", kText, 4096, kDim, DType::F32, DType::BF16, DType::F32, true}),
    op_linear({"modulation", 1, kDim, 6 * kDim, DType::F32, DType::BF16, DType::F32, true}),
    op_linear({"time_embedding.0", 1, 256, kDim, DType::F32, DType::BF16, DType::F32, true}),
    op_linear({"video_embedder", 512, 128, kDim, DType::F32, DType::BF16, DType::F32, true}),
    op_linear({"final_linear", 512, kDim, 128}),
    // Tails and the other operand kinds.
    op_linear({"tail", 77, 100, 45}),                  // K % 8 != 0: packed into scratch
    op_linear({"tail", 129, 264, 257, DType::F32, DType::BF16, DType::F32, true}),
    op_linear({"tail", 3, 8, 1}),
    op_linear({"slice", 130, 96, 200, DType::F32, DType::BF16, DType::F32, false, 3}),  // misaligned x
    op_linear({"bf16 x", 200, 3072, 136, DType::BF16}),
    op_linear({"f32 w (vae)", 256, 96, 288, DType::F32, DType::F32, DType::F32, true}),
    op_linear({"bf16 y", 100, 512, 96, DType::F32, DType::BF16, DType::BF16, true}),
    // The v projection written transposed (AMD's DiT): wide tiles with a row tail and padding,
    // a text row count, the narrow tile (< 65 rows), one row, f32 x and y, unaligned yt rows.
    op_linear_transposed({"v", 523, kDim, kDim, 576}),
    op_linear_transposed({"v text", 77, kDim, kDim, 128}),
    op_linear_transposed({"v whole tiles", 256, kDim, 256, 256}),
    op_linear_transposed({"narrow", 40, 256, 200, 64}),
    op_linear_transposed({"one row", 1, 128, 96, 64}),
    op_linear_transposed({"f32 x", 130, 264, 136, 192, DType::F32}),
    op_linear_transposed({"f32 y", 100, 512, 96, 128, DType::BF16, DType::F32}),
    op_linear_transposed({"unaligned yt", 70, 256, 72, 128, DType::BF16, DType::BF16, 3}),
  });
  // Every kernel instantiation on tail shapes (M, N and the last k-step partial); the Mma kernel
  // (NVIDIA, bf16 weights) also with fewer k-steps than its pipeline holds (K 24: one step).
  for (GemmTiles t : {GemmTiles::Large, GemmTiles::Medium, GemmTiles::Small}) {
    if (kPlatformNvidia) {
      for (DType x : {DType::F32, DType::BF16}) {
        cases.push_back(op_gemm_plan({{t, GemmKernel::Mma}, x, DType::BF16, 300, 520, 136}));
        cases.push_back(op_gemm_plan({{t, GemmKernel::Mma}, x, DType::BF16, 70, 90, 24}));
      }
    }
    // The Leaf kernel: NVIDIA's for f32 weights (bf16 weights resolve to Mma there).
    for (DType x : {DType::F32, DType::BF16})
      cases.push_back(op_gemm_plan({{t, GemmKernel::Leaf}, x, DType::F32, 300, 520, 136}));
  }
  // The portable (AMD) kernel by name (on AMD every plan resolves to it): its wide (Medium) and
  // narrow (Small) tiles with every operand dtype on tails (M, N, and the last k-step partial),
  // one k-step, one row, and a K of 8 (a quarter step).
  for (GemmTiles t : {GemmTiles::Medium, GemmTiles::Small})
    for (DType x : {DType::F32, DType::BF16})
      for (DType w : {DType::BF16, DType::F32}) {
        cases.push_back(op_gemm_plan({{t, GemmKernel::Portable}, x, w, 300, 520, 136}));
        cases.push_back(op_gemm_plan({{t, GemmKernel::Portable}, x, w, 70, 90, 24}));
      }
  cases.push_back(op_gemm_plan(
      {{GemmTiles::Auto, GemmKernel::Portable}, DType::BF16, DType::BF16, 1, 3072, 3072}));
  cases.push_back(op_gemm_plan(
      {{GemmTiles::Medium, GemmKernel::Portable}, DType::BF16, DType::BF16, 129, 257, 8}));
  // The Wgmma kernel (NVIDIA, bf16 x; K a multiple of 64, at least 192): M and N tails inside one
  // tile and across several, the least K (three k-steps, fewer than its 4 stages: two by column
  // halves, one whole), more k-steps than stages (slots reused), bf16 y and bias, odd N
  // (unpaired stores), a strided x, one row; a K below the least resolves to another kernel.
  if (kPlatformNvidia) {
    const GemmPlan wg = {GemmTiles::Auto, GemmKernel::Wgmma};
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 300, 520, 192}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 70, 90, 256}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 70, 90, 128}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 129, 257, 320, {DType::BF16, DType::BF16}}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 257, 1001, 576, {DType::F32, DType::BF16, 24}}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 1, 3072, 3072}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 1040, kDim, kDim, {DType::BF16}}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 520, kFfn, kDim}));
    // More tiles than multiprocessors at the least K: some blocks walk two tiles, the stage ring
    // running on from one to the next, the next tile's first steps under the last one's stores.
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 4500, 1024, 192, {DType::BF16}}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 4500, 1024, 320}));
  }
  // The 1024x1024 shapes, timed: q/k/v/o in each large tile shape of the Mma kernel with either x
  // dtype; then the FFN shapes and the 512x512 q/k/v/o (1088 rows, where Auto leaves the large
  // tiles) as Auto picks.
  if (kPlatformNvidia)
    for (GemmTiles t : {GemmTiles::Large, GemmTiles::Medium})
      for (DType x : {DType::F32, DType::BF16})
        cases.push_back(op_gemm_full({"q/k/v/o", kRows, kDim, kDim, x, {t, GemmKernel::Mma}}));
  for (DType x : {DType::F32, DType::BF16}) {
    cases.push_back(op_gemm_full({"ffn_up_gate", kRows, kDim, 2 * kFfn, x}));
    cases.push_back(op_gemm_full({"ffn_down", kRows, kFfn, kDim, x}));
  }
  constexpr int64_t kRows512 = 32 * 32 + kText;
  cases.push_back(op_gemm_full({"q/k/v/o@512", kRows512, kDim, kDim, DType::F32}));
  if (kPlatformNvidia)
    for (GemmTiles t : {GemmTiles::Large, GemmTiles::Medium})
      cases.push_back(op_gemm_full(
          {"q/k/v/o@512", kRows512, kDim, kDim, DType::F32, {t, GemmKernel::Mma}}));
  // The portable kernel at the DiT's shapes (bf16 x, as the DiT feeds it; and an f32 x), timed.
  {
    const GemmPlan pt = {GemmTiles::Auto, GemmKernel::Portable};
    cases.push_back(op_gemm_full({"q/k/v/o", kRows, kDim, kDim, DType::BF16, pt}));
    cases.push_back(op_gemm_full({"q/k/v/o", kRows, kDim, kDim, DType::F32, pt}));
    cases.push_back(op_gemm_full({"ffn_up_gate", kRows, kDim, 2 * kFfn, DType::BF16, pt, DType::BF16}));
    cases.push_back(op_gemm_full({"ffn_down", kRows, kFfn, kDim, DType::BF16, pt, DType::BF16}));
    cases.push_back(op_gemm_full({"q/k/v/o@512", kRows512, kDim, kDim, DType::BF16, pt}));
  }
  // The Wgmma kernel at every DiT shape with a bf16 x (Auto above picks it at 1024x1024 already;
  // here by name, also at 512x512 and 1456x1456 rows and with a bf16 y), against the Mma kernel
  // on the same bf16 x at 512x512.
  if (kPlatformNvidia) {
    const GemmPlan wg = {GemmTiles::Auto, GemmKernel::Wgmma};
    constexpr int64_t kRows1456 = 91 * 91 + kText;
    cases.push_back(op_gemm_full({"q/k/v/o", kRows, kDim, kDim, DType::BF16, wg}));
    cases.push_back(op_gemm_full({"ffn_up_gate", kRows, kDim, 2 * kFfn, DType::BF16, wg, DType::BF16}));
    cases.push_back(op_gemm_full({"ffn_down", kRows, kFfn, kDim, DType::BF16, wg, DType::BF16}));
    cases.push_back(op_gemm_full({"q/k/v/o@512", kRows512, kDim, kDim, DType::BF16, wg}));
    cases.push_back(op_gemm_full(
        {"q/k/v/o@512", kRows512, kDim, kDim, DType::BF16, {GemmTiles::Medium, GemmKernel::Mma}}));
    cases.push_back(op_gemm_full({"q/k/v/o@1456", kRows1456, kDim, kDim, DType::BF16, wg}));
    cases.push_back(op_gemm_full({"ffn_up_gate@1456", kRows1456, kDim, 2 * kFfn, DType::BF16, wg}));
  }
  kcheck::run_cases(e, cases);
}

// CoreOps::linear_gated_unit (SiTU) on both backends, every element compared (timed full-size
// cases: 64 sampled rows): the DiT's ffn_up_gate shape with a bf16 x and out (the fused
// epilogue), tails, a K the GEMM pads, a misaligned x slice, F not a multiple of 128 and f32
// weights (the unfused fallbacks through scratch).
struct UnitSpec {
  std::string name;
  int64_t m, k, f;
  DType x = DType::F32, w = DType::BF16, out = DType::F32;
  bool bias = false;
  int64_t x_offset = 0;
  bool timed = false;  // 64 sampled rows compared (else all), timed
};
void linear_gated_unit_case(Env& e, const UnitSpec& s) {
  const bool timed = s.timed;
  const int64_t width = s.k + s.x_offset + (s.x_offset ? 3 : 0);
  Pair xp = random_pair(e, s.x, {s.m, width});
  Pair wp = random_pair(e, s.w, {2 * s.f, s.k}, float(3.0 / std::sqrt(double(s.k))));
  Pair bp = random_pair(e, s.w, {2 * s.f}, 0.5f);
  const Tensor xh = xp.h.slice_cols(s.x_offset, s.k), xd = xp.d.slice_cols(s.x_offset, s.k);
  const Tensor wh = host_as(wp.h, s.w), bh = host_as(bp.h, s.w);
  Tensor od = poisoned(e, s.out, {s.m, s.f});
  e.gpu.core().linear_gated_unit(GatedUnit::Situ, xd, wp.d, s.bias ? &bp.d : nullptr, od);
  const std::vector<float> got = fetch(e, od);
  std::vector<int64_t> rows = sampled_rows(s.m);
  if (!timed) {  // small cases check every row
    rows.resize(size_t(s.m));
    for (int64_t i = 0; i < s.m; ++i) rows[size_t(i)] = i;
  }
  const int64_t nr = int64_t(rows.size());
  Tensor xs = host_tensor(DType::F32, {nr, s.k}), os = host_tensor(DType::F32, {nr, s.f});
  for (int64_t i = 0; i < nr; ++i)
    std::memcpy(xs.row<float>(i), xh.row<const float>(rows[size_t(i)]), size_t(s.k) * sizeof(float));
  std::vector<float> got_rows = gather_rows(got, rows, s.f);
  e.host.core().linear_gated_unit(GatedUnit::Situ, xs, wh, s.bias ? &bh : nullptr, os);
  std::vector<float> want = to_f32_vector(os);
  if (s.out == DType::BF16)
    for (float& v : want) v = round_bf16(v);
  carry_unwritten(got, s.f, "linear_gated_unit " + s.name, got_rows);
  const std::string shape = shape_of({s.m, s.k, 2 * s.f}) + (s.x == DType::BF16 ? " x:bf16" : "") +
                            (s.w == DType::F32 ? " w:f32" : "") + (s.out == DType::BF16 ? " out:bf16" : "") +
                            (s.x_offset ? " x:slice" : "") + (s.bias ? " +b" : "");
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.core().linear_gated_unit(GatedUnit::Situ, xd, wp.d, nullptr, od); });
  const double flops = 2.0 * s.m * 2 * s.f * s.k;
  report(e, "linear_gated_unit " + s.name, shape, got_rows, want, s.f, kBf16Tol, ms, flops);
  if (timed) record(e, "linear_gated_unit " + s.name, shape, ms, flops, 0);
}
const kcheck::Op<UnitSpec> op_linear_gated_unit{"linear_gated_unit", linear_gated_unit_case};  // tolerance 1e-2

void check_gemm_gated_unit(Env& e) {
  std::vector<Case> cases;
  cases.push_back(op_linear_gated_unit({"ffn", 512, kDim, kFfn, DType::BF16, DType::BF16, DType::BF16}));
  cases.push_back(op_linear_gated_unit({"ffn f32 out", 300, kDim, 1024, DType::BF16, DType::BF16, DType::F32, true}));
  cases.push_back(op_linear_gated_unit({"tail", 129, 264, 256, DType::BF16, DType::BF16, DType::BF16, true}));
  cases.push_back(op_linear_gated_unit({"f%128", 200, 256, 200, DType::BF16, DType::BF16, DType::BF16, true}));
  cases.push_back(op_linear_gated_unit({"f32 x", 200, 192, 384}));
  cases.push_back(op_linear_gated_unit({"K pad", 77, 100, 45}));  // K % 8 != 0: packed into scratch
  cases.push_back(op_linear_gated_unit({"slice", 130, 128, 256, DType::BF16, DType::BF16, DType::BF16, false, 3}));
  cases.push_back(op_linear_gated_unit({"f32 w", 100, 96, 72, DType::F32, DType::F32, DType::F32, true}));
  // The Wgmma kernel's gated epilogue forced, on tails (M, the k-steps) with a bf16 bias and f32 y,
  // and with more tiles than multiprocessors (blocks walking two tiles).
  if (kPlatformNvidia) {
    const GemmPlan wg = {GemmTiles::Auto, GemmKernel::Wgmma};
    cases.push_back(op_gemm_plan(
        {wg, DType::BF16, DType::BF16, 300, 512, 192, {DType::F32, DType::F32, 0, true, true}}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 129, 256, 320, {DType::BF16, DType::BF16, 0, true}}));
    cases.push_back(op_gemm_plan({wg, DType::BF16, DType::BF16, 2200, 1024, 256, {DType::BF16, DType::F32, 0, true}}));
  }
  // The portable kernel's gated epilogue (wide tiles, bf16 weights; what AMD runs for the DiT's
  // FFN), forced on every platform: M not a multiple of its 128 rows, n not a multiple of its 32
  // output columns (and n = 40: a tile of 8 real columns, the rest zeros), the last k-step
  // partial, bf16 and f32 x, bf16 and f32 y and bias, no bias, each unit.
  {
    const GemmPlan pw = {GemmTiles::Medium, GemmKernel::Portable};
    PlanCaseOptions o;
    o.unit = true;
    for (GatedUnit kind : {GatedUnit::Situ, GatedUnit::SwiGlu, GatedUnit::SigmoidGate}) {
      o.kind = kind;
      o.y = DType::BF16, o.bias = DType::F32, o.no_bias = false;
      cases.push_back(op_gemm_plan({pw, DType::BF16, DType::BF16, 300, 200, 136, o}));
      o.y = DType::F32, o.bias = DType::BF16;
      cases.push_back(op_gemm_plan({pw, DType::F32, DType::BF16, 129, 40, 72, o}));
      o.no_bias = true;
      cases.push_back(op_gemm_plan({pw, DType::BF16, DType::BF16, 77, 96, 24, o}));
      cases.push_back(op_gemm_plan({pw, DType::F32, DType::BF16, 250, 72, 40, o}));
    }
    o.kind = GatedUnit::Situ, o.no_bias = false, o.repeat = true, o.y = DType::BF16;
    cases.push_back(op_gemm_plan({pw, DType::BF16, DType::BF16, 1100, 544, 264, o}));  // many tiles, reruns same bits
  }
  // Timed at the DiT's 1024x1024 shape: compare with the plain ffn_up_gate GEMM (y:bf16) of the
  // gemm group plus gated_unit situ.
  cases.push_back(op_linear_gated_unit(
      {"ffn_up_gate", kRows, kDim, kFfn, DType::BF16, DType::BF16, DType::BF16, false, 0, true}));
  cases.push_back(op_linear_gated_unit(
      {"ffn_up_gate@1456", 91 * 91 + kText, kDim, kFfn, DType::BF16, DType::BF16, DType::BF16, false, 0, true}));
  kcheck::run_cases(e, cases);
}

// Few-row GEMMs (the text encoder: M = 10..512, f32 or bf16 x, bf16 weights): split-K through
// thread-block clusters on tails (K runs that do not divide evenly, M and N tails, one k-step per
// split), bit-reproducible reruns; then the text encoder's shapes timed in weight GB/s.
void check_gemm_skinny(Env& e) {
  std::vector<Case> cases;
  if (!kPlatformNvidia) return;
  for (int split : {2, 4, 8})
    for (GemmTiles t : {GemmTiles::Skinny, GemmTiles::Small, GemmTiles::Medium})
      for (DType x : {DType::F32, DType::BF16})
        cases.push_back(op_gemm_plan({{t, GemmKernel::Mma, split}, x, DType::BF16, 70, 300, 520,
                                      {DType::F32, DType::F32, 0, false, true}}));
  const GemmPlan s8 = {GemmTiles::Skinny, GemmKernel::Mma, 8};
  cases.push_back(op_gemm_plan({s8, DType::F32, DType::BF16, 10, 4096, 256, {DType::F32, DType::F32, 0, false, true}}));
  cases.push_back(op_gemm_plan({s8, DType::F32, DType::BF16, 1, 33, 264, {DType::BF16, DType::BF16, 8, false, true}}));
  cases.push_back(op_gemm_plan(
      {s8, DType::BF16, DType::BF16, 129, 1001, 256, {DType::F32, DType::BF16, 24, false, true}}));
  // Auto at the text encoder's shapes (N x K: 4096x4096, 12288x4096, 4096x12288, 1024x4096,
  // 8192x4096, 32x4096) at 64, 128 and 512 rows; 64 sampled rows compared. Before split-K, 4096x12288
  // at 64 rows ran 64x64 tiles at ~578 GB/s (the "before" row below); target >= 2500 GB/s.
  struct Shape {
    int64_t n, k;
  };
  const Shape shapes[] = {{4096, 4096}, {12288, 4096}, {4096, 12288}, {1024, 4096}, {8192, 4096}, {32, 4096}};
  cases.push_back(op_gemm_full({"te before", 64, 12288, 4096, DType::F32,
                                {GemmTiles::Small, GemmKernel::Mma, 1}, DType::F32, true}));
  for (int64_t m : {64, 128, 512})
    for (const Shape& sh : shapes) cases.push_back(op_gemm_full(
          {"te", m, sh.k, sh.n, DType::F32, {}, DType::F32, true}));
  for (const Shape& sh : shapes) cases.push_back(op_gemm_full(
        {"te", 64, sh.k, sh.n, DType::BF16, {}, DType::F32, true}));
  cases.push_back(op_gemm_full({"te", 10, 4096, 12288, DType::F32, {}, DType::F32, true}));
  kcheck::run_cases(e, cases);
}

// ---- row kernels ---------------------------------------------------------------------------------
double tol_for(DType dt) { return dt == DType::BF16 ? kBf16Tol : kF32Tol; }

void rms_norm_case(Env& e, const std::string& name, int64_t rows, int64_t cols, int64_t group, NormWeight mode,
                   DType dt = DType::F32, int64_t offset = 0, bool in_place = false, bool timed = false) {
  const int64_t width = cols + offset + (offset ? 5 : 0);
  Pair xp = random_pair(e, dt, {rows, width}, 2.0f);
  Pair wp = random_pair(e, DType::BF16, {group}, 0.5f);
  const Tensor xh = xp.h.slice_cols(offset, cols);
  Tensor xd = xp.d.slice_cols(offset, cols);
  const Tensor wh = host_as(wp.h, DType::BF16);
  Tensor yh = in_place ? xh : host_tensor(DType::F32, {rows, cols});
  Tensor yd_full = in_place ? xd : poisoned(e, dt, {rows, cols});
  Tensor yd = in_place ? xd : yd_full;
  e.host.core().rms_norm(xh, mode == NormWeight::None ? nullptr : &wh, mode, 1e-6f, group, yh);
  e.gpu.core().rms_norm(xd, mode == NormWeight::None ? nullptr : &wp.d, mode, 1e-6f, group, yd);
  const std::vector<float> got = fetch(e, yd);
  double ms = 0;
  const double bytes = 2.0 * rows * cols * double(dtype_size(dt));
  if (timed) ms = time_it(e, [&] { e.gpu.core().rms_norm(xd, &wp.d, mode, 1e-6f, group, yd); });
  const std::string shape = shape_of({rows, cols}) + " g" + std::to_string(group) +
                            (mode == NormWeight::OnePlus ? " 1+w" : mode == NormWeight::None ? " no-w" : "") +
                            (dt == DType::BF16 ? " bf16" : "") + (offset ? " slice" : "") +
                            (in_place ? " in-place" : "");
  report(e, "rms_norm " + name, shape, got, to_f32_vector(yh), cols, tol_for(dt), ms, 0, bytes);
  if (timed) record(e, "rms_norm " + name, shape, ms, 0, bytes);
}
struct RmsNormCase {
  std::string name; int64_t rows, cols, group; NormWeight mode; DType dt = DType::F32; int64_t offset = 0;
  bool in_place = false, timed = false;
};
void rms_norm_case(Env& e, const RmsNormCase& c) {
  rms_norm_case(e, c.name, c.rows, c.cols, c.group, c.mode, c.dt, c.offset, c.in_place, c.timed);
}
const kcheck::Op<RmsNormCase> op_rms_norm{"rms_norm", rms_norm_case};  // tolerance 1e-5, bf16 1e-2

void add_case(Env& e, int64_t rows, int64_t cols, bool gated, bool timed = false) {
  Pair xp = random_pair(e, DType::F32, {rows, cols});
  Pair dp = random_pair(e, DType::F32, {rows, cols});
  Pair gp = random_pair(e, DType::F32, {1, cols}, 0.5f);
  e.host.core().add(xp.h, dp.h, gated ? &gp.h : nullptr);
  e.gpu.core().add(xp.d, dp.d, gated ? &gp.d : nullptr);
  const std::vector<float> got = fetch(e, xp.d);
  const double bytes = 3.0 * rows * cols * 4;
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.core().add(xp.d, dp.d, gated ? &gp.d : nullptr); });
  const std::string shape = shape_of({rows, cols}) + (gated ? " gated" : "");
  report(e, "add", shape, got, to_f32_vector(xp.h), cols, kF32Tol, ms, 0, bytes);
  if (timed) record(e, "add" + std::string(gated ? " (gated)" : ""), shape, ms, 0, bytes);
}
struct AddCase { int64_t rows, cols; bool gated, timed = false; };
void add_case(Env& e, const AddCase& c) { add_case(e, c.rows, c.cols, c.gated, c.timed); }
const kcheck::Op<AddCase> op_add{"add", add_case};  // tolerance 1e-5

// a and b as the two halves of one [rows, 2·cols] matrix (the DiT's fused up|gate output).
void gated_case(Env& e, GatedUnit kind, int64_t rows, int64_t cols, bool timed = false) {
  Pair ab = random_pair(e, DType::F32, {rows, 2 * cols}, 3.0f);
  const Tensor ah = ab.h.slice_cols(0, cols), bh = ab.h.slice_cols(cols, cols);
  const Tensor ad = ab.d.slice_cols(0, cols), bd = ab.d.slice_cols(cols, cols);
  Tensor oh = host_tensor(DType::F32, {rows, cols});
  Tensor od = poisoned(e, DType::F32, {rows, cols});
  e.host.core().gated_unit(kind, ah, bh, oh);
  e.gpu.core().gated_unit(kind, ad, bd, od);
  const std::vector<float> got = fetch(e, od);
  const double bytes = 3.0 * rows * cols * 4;
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.core().gated_unit(kind, ad, bd, od); });
  const char* name = kind == GatedUnit::Situ ? "gated_unit situ" : kind == GatedUnit::SwiGlu ? "gated_unit swiglu"
                                                                                            : "gated_unit sigmoid";
  report(e, name, shape_of({rows, cols}), got, to_f32_vector(oh), cols, kF32Tol, ms, 0, bytes);
  if (timed) record(e, name, shape_of({rows, cols}), ms, 0, bytes);
}
struct GatedCase { GatedUnit kind; int64_t rows, cols; bool timed = false; };
void gated_case(Env& e, const GatedCase& c) { gated_case(e, c.kind, c.rows, c.cols, c.timed); }
const kcheck::Op<GatedCase> op_gated_unit{"gated_unit", gated_case};  // tolerance 1e-5

void silu_case(Env& e, int64_t rows, int64_t cols, bool in_place) {
  Pair xp = random_pair(e, DType::F32, {rows, cols}, 3.0f);
  Tensor yh = in_place ? xp.h : host_tensor(DType::F32, {rows, cols});
  Tensor yd = in_place ? xp.d : poisoned(e, DType::F32, {rows, cols});
  e.host.core().silu(xp.h, yh);
  e.gpu.core().silu(xp.d, yd);
  report(e, "silu", shape_of({rows, cols}) + (in_place ? " in-place" : ""), fetch(e, yd), to_f32_vector(yh), cols,
         kF32Tol);
}
struct SiluCase { int64_t rows, cols; bool in_place; };
void silu_case(Env& e, const SiluCase& c) { silu_case(e, c.rows, c.cols, c.in_place); }
const kcheck::Op<SiluCase> op_silu{"silu", silu_case};  // tolerance 1e-5

// sin/cos tables with equal halves ([f | f]), as the DiT's rope tables.
void rope_case(Env& e, int64_t rows, int64_t cols, int64_t head_dim, int64_t rot_dim, DType dt = DType::F32,
               bool timed = false) {
  Pair xp = random_pair(e, dt, {rows, cols});
  Tensor sin_h = host_tensor(DType::F32, {rows, rot_dim}), cos_h = host_tensor(DType::F32, {rows, rot_dim});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < rot_dim / 2; ++i) {
      const double a = double(r % 97) * std::pow(10000.0, -2.0 * double(i) / double(rot_dim));
      for (int64_t j : {i, i + rot_dim / 2}) {
        sin_h.row<float>(r)[j] = float(std::sin(a));
        cos_h.row<float>(r)[j] = float(std::cos(a));
      }
    }
  const Tensor sin_d = e.gpu.upload(sin_h), cos_d = e.gpu.upload(cos_h);
  e.host.core().rope(xp.h, sin_h, cos_h, head_dim, rot_dim);
  e.gpu.core().rope(xp.d, sin_d, cos_d, head_dim, rot_dim);
  const std::vector<float> got = fetch(e, xp.d);
  const double bytes = (2.0 * rows * cols * double(rot_dim) / double(head_dim)) * double(dtype_size(dt)) +
                       2.0 * rows * rot_dim * 4;
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.core().rope(xp.d, sin_d, cos_d, head_dim, rot_dim); });
  const std::string shape = shape_of({rows, cols}) + " hd" + std::to_string(head_dim) + " rot" +
                            std::to_string(rot_dim) + (dt == DType::BF16 ? " bf16" : "");
  report(e, "rope", shape, got, to_f32_vector(xp.h), cols, tol_for(dt), ms, 0, bytes);
  if (timed) record(e, "rope", shape, ms, 0, bytes);
}
struct RopeCase { int64_t rows, cols, head_dim, rot_dim; DType dt = DType::F32; bool timed = false; };
void rope_case(Env& e, const RopeCase& c) { rope_case(e, c.rows, c.cols, c.head_dim, c.rot_dim, c.dt, c.timed); }
const kcheck::Op<RopeCase> op_rope{"rope", rope_case};  // tolerance 1e-5, bf16 1e-2

void embedding_case(Env& e, int64_t vocab, int64_t cols, int64_t n, DType table_dt, bool device_table) {
  Pair tp = random_pair(e, table_dt, {vocab, cols});
  const Tensor table_h = host_as(tp.h, table_dt);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[size_t(i)] = int32_t((i * 7919 + 13) % vocab);
  ids.back() = int32_t(vocab - 1);
  Tensor oh = host_tensor(DType::F32, {n, cols});
  Tensor od = poisoned(e, DType::F32, {n, cols});
  e.host.core().embedding(ids, table_h, oh);
  e.gpu.core().embedding(ids, device_table ? tp.d : table_h, od);
  report(e, "embedding", shape_of({vocab, cols}) + " n" + std::to_string(n) + " " + dtype_name(table_dt) +
                             (device_table ? " dev" : " host"),
         fetch(e, od), to_f32_vector(oh), cols, kF32Tol);
}
struct EmbeddingCase { int64_t vocab, cols, n; DType table_dt; bool device_table; };
void embedding_case(Env& e, const EmbeddingCase& c) {
  embedding_case(e, c.vocab, c.cols, c.n, c.table_dt, c.device_table);
}
const kcheck::Op<EmbeddingCase> op_embedding{"embedding", embedding_case};  // tolerance 1e-5

// src [rows, cols] into rows dst_row0.. of a taller dst, any dtypes; optional odd column offsets.
void copy_case(Env& e, int64_t rows, int64_t cols, DType src_dt, DType dst_dt, int64_t dst_rows, int64_t dst_row0,
               int64_t offset = 0, bool timed = false) {
  const int64_t width = cols + offset + (offset ? 3 : 0);
  Pair sp = random_pair(e, src_dt, {rows, width});
  const Tensor sh = sp.h.slice_cols(offset, cols), sd = sp.d.slice_cols(offset, cols);
  Tensor dh_full = host_tensor(DType::F32, {dst_rows, width}), dd_full = poisoned(e, dst_dt, {dst_rows, width});
  Tensor dh = dh_full.slice_rows(dst_row0, rows).slice_cols(offset, cols);
  Tensor dd = dd_full.slice_rows(dst_row0, rows).slice_cols(offset, cols);
  e.host.core().copy(sh, dh);
  e.gpu.core().copy(sd, dd);
  std::vector<float> want = to_f32_vector(dh);
  if (dst_dt == DType::BF16)
    for (float& v : want) v = round_bf16(v);  // the device rounds once; so must the reference
  const double bytes = double(rows * cols) * double(dtype_size(src_dt) + dtype_size(dst_dt));
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.core().copy(sd, dd); });
  const std::string shape = shape_of({rows, cols}) + " " + dtype_name(src_dt) + "->" + dtype_name(dst_dt) +
                            (offset ? " slice" : "");
  report(e, "copy", shape, fetch(e, dd), want, cols, kF32Tol, ms, 0, bytes);
  if (timed) record(e, "copy (text rows)", shape, ms, 0, bytes);
}
struct CopyCase {
  int64_t rows, cols; DType src_dt, dst_dt; int64_t dst_rows, dst_row0, offset = 0; bool timed = false;
};
void copy_case(Env& e, const CopyCase& c) {
  copy_case(e, c.rows, c.cols, c.src_dt, c.dst_dt, c.dst_rows, c.dst_row0, c.offset, c.timed);
}
// tolerance 1e-5 (against the reference rounded as the destination)
const kcheck::Op<CopyCase> op_copy{"copy", copy_case};

void check_rows(Env& e) {
  kcheck::run_cases(e, {
    op_rms_norm({"norm1", kRows, kDim, kDim, NormWeight::Mul, DType::F32, 0, false, true}),
    op_rms_norm({"q_norm", kRows, kDim, kHeadDim, NormWeight::Mul, DType::F32, 0, false, true}),
    op_rms_norm({"q_norm (qkv slice)", kText, kDim, kHeadDim, NormWeight::Mul, DType::F32, kDim}),
    op_rms_norm({"onePlus", 77, 256, 64, NormWeight::OnePlus}),
    op_rms_norm({"plain", 33, 96, 96, NormWeight::None}),
    op_rms_norm({"in place", 65, 3072, 128, NormWeight::Mul, DType::F32, 0, true}),
    op_rms_norm({"odd", 5, 36, 12, NormWeight::Mul, DType::F32, 1}),
    op_rms_norm({"bf16", 129, 3072, 3072, NormWeight::Mul, DType::BF16}),

    op_add({kRows, kDim, true, true}),
    op_add({kRows, kDim, false}),
    op_add({33, 99, true}),

    op_gated_unit({GatedUnit::Situ, kRows, kFfn, true}),
    op_gated_unit({GatedUnit::Situ, 31, 77}),
    op_gated_unit({GatedUnit::SwiGlu, 333, 1000}),
    op_gated_unit({GatedUnit::SigmoidGate, 333, 1003}),

    op_silu({1, kDim, false}),
    op_silu({77, 101, true}),

    op_rope({kRows, kDim, kHeadDim, kHeadDim, DType::F32, true}),
    op_rope({64, 2048, 256, 64}),
    op_rope({7, 96, 32, 32}),
    op_rope({40, 3072, 128, 128, DType::BF16}),

    op_embedding({2048, kDim, kText, DType::BF16, true}),
    op_embedding({500, 256, 33, DType::F32, true}),
    op_embedding({500, 1000, 17, DType::BF16, false}),

    op_copy({kText, kDim, DType::F32, DType::F32, kRows, kRows - kText, 0, true}),
    op_copy({100, 3072, DType::F32, DType::BF16, 100, 0}),
    op_copy({100, 3072, DType::BF16, DType::F32, 130, 17}),
    op_copy({37, 101, DType::F32, DType::F32, 40, 2, 1}),
  });
}

// ---- fused DiT passes (CoreOps::norm_modulate, norm_rope; gated units writing bf16) ------------
// bf16 outputs are compared with the host's f32 result rounded once: only elements whose fp32
// values straddle a rounding boundary differ (by one bf16 ulp), far below this tolerance.
constexpr double kRoundedTol = 1e-3;

std::vector<float> rounded_as(const Tensor& host_f32, DType dt) {
  std::vector<float> v = to_f32_vector(host_f32);
  if (dt == DType::BF16)
    for (float& x : v) x = round_bf16(x);
  return v;
}
double fused_tol(DType out) { return out == DType::BF16 ? kRoundedTol : kF32Tol; }

// x [rows, cols] (f32, optionally a column slice at `offset`) -> y of dtype `out`; shift and
// scale as rows of one [1, 6·cols] tensor, as the DiT's modulation.
void norm_modulate_case(Env& e, int64_t rows, int64_t cols, DType out, int64_t offset = 0, bool in_place = false,
                        bool timed = false) {
  const int64_t width = cols + offset + (offset ? 5 : 0);
  Pair xp = random_pair(e, DType::F32, {rows, width}, 2.0f);
  Pair wp = random_pair(e, DType::BF16, {cols}, 0.5f);
  Pair mod = random_pair(e, DType::F32, {1, 6 * cols}, 0.5f);
  const Tensor xh = xp.h.slice_cols(offset, cols), xd = xp.d.slice_cols(offset, cols);
  const Tensor wh = host_as(wp.h, DType::BF16);
  const Tensor sh_h = mod.h.slice_cols(0, cols), sc_h = mod.h.slice_cols(cols, cols);
  const Tensor sh_d = mod.d.slice_cols(0, cols), sc_d = mod.d.slice_cols(cols, cols);
  Tensor yh = in_place ? xh : host_tensor(DType::F32, {rows, cols});
  Tensor yd = in_place ? xd : poisoned(e, out, {rows, cols});
  e.host.core().norm_modulate(xh, wh, 1e-6f, sh_h, sc_h, yh);
  e.gpu.core().norm_modulate(xd, wp.d, 1e-6f, sh_d, sc_d, yd);
  const std::vector<float> got = fetch(e, yd);
  const double bytes = double(rows * cols) * double(4 + dtype_size(out));
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.core().norm_modulate(xd, wp.d, 1e-6f, sh_d, sc_d, yd); });
  const std::string shape = shape_of({rows, cols}) + " f32->" + dtype_name(out) + (offset ? " slice" : "") +
                            (in_place ? " in-place" : "");
  report(e, "norm_modulate", shape, got, rounded_as(yh, out), cols, fused_tol(out), ms, 0, bytes);
  if (timed) record(e, "norm_modulate", shape, ms, 0, bytes);
}
struct NormModulateCase { int64_t rows, cols; DType out; int64_t offset = 0; bool in_place = false, timed = false; };
void norm_modulate_case(Env& e, const NormModulateCase& c) {
  norm_modulate_case(e, c.rows, c.cols, c.out, c.offset, c.in_place, c.timed);
}
// tolerance 1e-5, bf16 out 1e-3 (against the rounded reference)
const kcheck::Op<NormModulateCase> op_norm_modulate{"norm_modulate", norm_modulate_case};

// CoreOps::add_norm_modulate: the norm of x (f32) + d₀·gate₀ (+ d₁·gate₁) (d of dtype `din`)
// into y (dtype `out`), the sum stored in x or not; x and y compared with the host's (x left
// as it was, bit for bit, when the sum is not stored).
struct AddNormModulateCase {
  int64_t rows, cols;
  DType din, out;
  int64_t offset = 0;
  bool timed = false;
  int updates = 1;
  SumTo sum = SumTo::X;
};
void add_norm_modulate_case(Env& e, const AddNormModulateCase& c) {
  const int64_t rows = c.rows, cols = c.cols, offset = c.offset;
  const int64_t width = cols + offset + (offset ? 5 : 0);
  Pair xp = random_pair(e, DType::F32, {rows, width}, 2.0f);
  Pair dp[2] = {random_pair(e, c.din, {rows, cols}, 1.0f), random_pair(e, c.din, {rows, cols}, 1.0f)};
  Pair wp = random_pair(e, DType::BF16, {cols}, 0.5f);
  Pair mod = random_pair(e, DType::F32, {1, 6 * cols}, 0.5f);
  Tensor xh = xp.h.slice_cols(offset, cols), xd = xp.d.slice_cols(offset, cols);
  const std::vector<float> x_before = to_f32_vector(xh);
  const Tensor wh = host_as(wp.h, DType::BF16);  // the host's add takes an f32 d
  const Tensor sh_h = mod.h.slice_cols(0, cols), sc_h = mod.h.slice_cols(cols, cols);
  const Tensor sh_d = mod.d.slice_cols(0, cols), sc_d = mod.d.slice_cols(cols, cols);
  const Tensor g_h[2] = {mod.h.slice_cols(2 * cols, cols), mod.h.slice_cols(5 * cols, cols)};
  const Tensor g_d[2] = {mod.d.slice_cols(2 * cols, cols), mod.d.slice_cols(5 * cols, cols)};
  GatedUpdates uh, ud;
  for (int i = 0; i < c.updates; ++i) {
    uh.then(dp[i].h, g_h[i]);
    ud.then(dp[i].d, g_d[i]);
  }
  Tensor yh = host_tensor(DType::F32, {rows, cols});
  Tensor yd = poisoned(e, c.out, {rows, cols});
  e.host.core().add_norm_modulate(xh, uh, c.sum, wh, 1e-6f, sh_h, sc_h, yh);
  e.gpu.core().add_norm_modulate(xd, ud, c.sum, wp.d, 1e-6f, sh_d, sc_d, yd);
  const std::string shape = shape_of({rows, cols}) + " d:" + dtype_name(c.din) + " ->" + dtype_name(c.out) +
                            (offset ? " slice" : "") + (c.updates == 2 ? " 2 updates" : "") +
                            (c.sum == SumTo::X ? "" : " sum not stored");
  const std::vector<float> got_x = fetch(e, xd), got_y = fetch(e, yd);
  // Timed after the results are fetched (a timed run with the sum stored updates x again): x
  // read (and written), each d read, y written.
  const double bytes = double(rows * cols) * double(4 + (c.sum == SumTo::X ? 4 : 0) +
                                                    c.updates * dtype_size(c.din) + dtype_size(c.out));
  double ms = 0;
  if (c.timed) ms = time_it(e, [&] { e.gpu.core().add_norm_modulate(xd, ud, c.sum, wp.d, 1e-6f, sh_d, sc_d, yd); });
  if (c.sum == SumTo::X) report(e, "add_norm_modulate x", shape, got_x, to_f32_vector(xh), cols, kF32Tol);
  else report(e, "add_norm_modulate x (unchanged)", shape, got_x, x_before, cols, 0.0);
  report(e, "add_norm_modulate y", shape, got_y, rounded_as(yh, c.out), cols, fused_tol(c.out), ms, 0, bytes);
  if (c.timed) record(e, "add_norm_modulate", shape, ms, 0, bytes);
}
// tolerance x 1e-5 (0 when not stored: the bits); y 1e-5, bf16 out 1e-3 (rounded reference)
const kcheck::Op<AddNormModulateCase> op_add_norm_modulate{"add_norm_modulate", add_norm_modulate_case};

// The projection output x (dtype `in`; a column slice at `offset` of a wider matrix, like q of a
// fused qkv) -> per-head norm + RoPE -> y of dtype `out` (in place: out == in); [f | f] sin/cos
// tables.
void norm_rope_case(Env& e, int64_t rows, int64_t cols, int64_t head_dim, DType out, int64_t offset = 0,
                    bool in_place = false, bool timed = false, DType in = DType::F32) {
  const int64_t width = cols + offset + (offset ? 3 : 0), half = head_dim / 2;
  if (in_place) out = in;
  Pair xp = random_pair(e, in, {rows, width}, 2.0f);
  Pair wp = random_pair(e, DType::BF16, {head_dim}, 0.5f);
  const Tensor xh = xp.h.slice_cols(offset, cols), xd = xp.d.slice_cols(offset, cols);
  const Tensor wh = host_as(wp.h, DType::BF16);
  Tensor sin_h = host_tensor(DType::F32, {rows, head_dim}), cos_h = host_tensor(DType::F32, {rows, head_dim});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < half; ++i) {
      const double a = double(r % 89) * std::pow(10000.0, -2.0 * double(i) / double(head_dim));
      for (int64_t j : {i, i + half}) {
        sin_h.row<float>(r)[j] = float(std::sin(a));
        cos_h.row<float>(r)[j] = float(std::cos(a));
      }
    }
  const Tensor sin_d = e.gpu.upload(sin_h), cos_d = e.gpu.upload(cos_h);
  Tensor yh = in_place ? xh : host_tensor(DType::F32, {rows, cols});
  Tensor yd = in_place ? xd : poisoned(e, out, {rows, cols});
  e.host.core().norm_rope(xh, wh, 1e-6f, head_dim, sin_h, cos_h, yh);
  e.gpu.core().norm_rope(xd, wp.d, 1e-6f, head_dim, sin_d, cos_d, yd);
  const std::vector<float> got = fetch(e, yd);
  const double bytes =
      double(rows * cols) * double(dtype_size(in) + dtype_size(out)) + 2.0 * double(rows * head_dim) * 4;
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.core().norm_rope(xd, wp.d, 1e-6f, head_dim, sin_d, cos_d, yd); });
  const std::string shape = shape_of({rows, cols}) + " hd" + std::to_string(head_dim) + " " + dtype_name(in) + "->" +
                            dtype_name(out) +
                            (offset ? " slice" : "") + (in_place ? " in-place" : "");
  report(e, "norm_rope", shape, got, rounded_as(yh, out), cols, fused_tol(out), ms, 0, bytes);
  if (timed) record(e, "norm_rope", shape, ms, 0, bytes);
}
struct NormRopeCase {
  int64_t rows, cols, head_dim; DType out; int64_t offset = 0; bool in_place = false, timed = false;
  DType in = DType::F32;
};
void norm_rope_case(Env& e, const NormRopeCase& c) {
  norm_rope_case(e, c.rows, c.cols, c.head_dim, c.out, c.offset, c.in_place, c.timed, c.in);
}
// tolerance 1e-5, bf16 out 1e-3 (rounded reference)
const kcheck::Op<NormRopeCase> op_norm_rope{"norm_rope", norm_rope_case};

// SiTU on the two halves (dtype `in`) of the fused up|gate output, written in bf16 (ffn_down's
// input).
void gated_bf16_case(Env& e, int64_t rows, int64_t cols, bool timed = false, DType in = DType::F32) {
  Pair ab = random_pair(e, in, {rows, 2 * cols}, 3.0f);
  const Tensor ah = ab.h.slice_cols(0, cols), bh = ab.h.slice_cols(cols, cols);
  const Tensor ad = ab.d.slice_cols(0, cols), bd = ab.d.slice_cols(cols, cols);
  Tensor oh = host_tensor(DType::F32, {rows, cols});
  Tensor od = poisoned(e, DType::BF16, {rows, cols});
  e.host.core().gated_unit(GatedUnit::Situ, ah, bh, oh);
  e.gpu.core().gated_unit(GatedUnit::Situ, ad, bd, od);
  const std::vector<float> got = fetch(e, od);
  const double bytes = double(rows * cols) * double(2 * dtype_size(in) + 2);
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.core().gated_unit(GatedUnit::Situ, ad, bd, od); });
  const std::string shape = shape_of({rows, cols}) + " " + dtype_name(in) + "->bf16";
  report(e, "gated_unit situ", shape, got, rounded_as(oh, DType::BF16), cols, kRoundedTol, ms, 0, bytes);
  if (timed) record(e, "gated_unit situ", shape, ms, 0, bytes);
}
struct GatedBf16Case { int64_t rows, cols; bool timed = false; DType in = DType::F32; };
void gated_bf16_case(Env& e, const GatedBf16Case& c) { gated_bf16_case(e, c.rows, c.cols, c.timed, c.in); }
// tolerance 1e-3 (rounded reference)
const kcheck::Op<GatedBf16Case> op_gated_unit_bf16{"gated_unit_bf16", gated_bf16_case};

void check_fused(Env& e) {
  kcheck::run_cases(e, {
    // The DiT at 1024x1024, as it runs them (timed): norm1/norm2 and the head; q and k (bf16
    // projections normalised and rotated in place); SiTU on the bf16 up|gate projection. Then the
    // f32-input forms (MOSSINFER_DIT_F32_PROJECTIONS=1) for comparison.
    op_norm_modulate({kRows, kDim, DType::BF16, 0, false, true}),
    op_add_norm_modulate({kRows, kDim, DType::BF16, DType::BF16, 0, true}),
    op_add_norm_modulate({kRows, kDim, DType::BF16, DType::BF16, 0, true, 2}),  // the DiT's first norm
    op_add_norm_modulate({kRows, kDim, DType::BF16, DType::BF16, 0, true, 1, SumTo::Nowhere}),  // its second
    op_norm_rope({kRows, kDim, kHeadDim, DType::BF16, 0, true, true, DType::BF16}),
    op_gated_unit_bf16({kRows, kFfn, true, DType::BF16}),
    op_norm_rope({kRows, kDim, kHeadDim, DType::BF16, 0, false, true}),
    op_gated_unit_bf16({kRows, kFfn, true}),
    // The f32 forms (the host's dtype), tails, slices and in-place.
    op_norm_modulate({1024, kDim, DType::F32}),
    op_norm_modulate({77, 101, DType::BF16, 1}),
    op_norm_modulate({33, 99, DType::F32, 0, true}),
    op_norm_modulate({3, 3, DType::BF16}),
    op_norm_rope({1024, kDim, kHeadDim, DType::F32}),
    op_norm_rope({kText, kDim, kHeadDim, DType::BF16, kDim}),  // q of a fused [T, 3d] qkv
    op_norm_rope({7, 96, 32, DType::BF16}),                    // half a wave of pairs per head
    op_norm_rope({9, 60, 12, DType::F32, 1}),                  // odd half, misaligned slice
    op_norm_rope({65, 2048, 256, DType::BF16}),                // several pairs per lane
    op_norm_rope({40, 3072, 128, DType::F32, 0, true}),
    op_norm_rope({9, 60, 12, DType::BF16, 0, true, false, DType::BF16}),  // bf16 fallback kernel, in place
    op_norm_rope({33, 1024, 64, DType::BF16, 0, true, false, DType::BF16}),
    op_norm_rope({5, 512, 8, DType::F32}),                                 // one lane per head
    op_norm_modulate({17, 4096, DType::BF16}),                             // wider than the register kernel
    op_norm_modulate({17, 260, DType::BF16}),                              // a partial last chunk
    op_add_norm_modulate({300, kDim, DType::F32, DType::F32}),
    op_add_norm_modulate({17, 260, DType::BF16, DType::BF16}),             // a partial last chunk
    op_add_norm_modulate({9, 101, DType::F32, DType::BF16, 1}),            // misaligned: two passes
    op_add_norm_modulate({5, 4096, DType::BF16, DType::BF16}),             // wider than the register kernel
    // two updates, the sum stored or not, on both kernels (register; misaligned or too wide)
    op_add_norm_modulate({300, kDim, DType::F32, DType::F32, 0, false, 2}),
    op_add_norm_modulate({17, 260, DType::BF16, DType::BF16, 0, false, 2, SumTo::Nowhere}),
    op_add_norm_modulate({9, 101, DType::F32, DType::BF16, 1, false, 2}),
    op_add_norm_modulate({9, 101, DType::F32, DType::BF16, 1, false, 2, SumTo::Nowhere}),
    op_add_norm_modulate({5, 4096, DType::BF16, DType::BF16, 0, false, 2, SumTo::Nowhere}),
    op_add_norm_modulate({5, 4096, DType::BF16, DType::BF16, 0, false, 1, SumTo::Nowhere}),
    op_gated_unit_bf16({31, 77}),
    op_gated_unit_bf16({31, 77, false, DType::BF16}),
  });
}

// The streamed DiT's unpacking (tensor/packed_bf16.h) at the FFN matrices' sizes and at a small
// one with every kind of special value: the values must come back bit for bit. The rate counts
// the bytes read and written.
void check_packed(Env& e) {
  struct Case {
    int64_t rows, cols;
    bool specials;
  };
  for (const Case& c : {Case{kFfn * 2, kDim, false}, Case{kDim, kFfn, false}, Case{37, 8 * 13, true}}) {
    if (e.max_elements > 0 && c.rows * c.cols > e.max_elements) {
      e.table.skipped++;
      continue;
    }
    std::vector<float> values(size_t(c.rows * c.cols));
    fill(values, e.seed++, 0.02f);
    std::vector<uint16_t> bits(values.size());
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = f32_to_bf16(values[i]);
    if (c.specials) {
      const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x7F80, 0xFF80, 0x7FC0, 0x7F7F, 0x3F80, 0x0080};
      for (size_t i = 0; i < bits.size(); i += 7) bits[i] = specials[(i / 7) % std::size(specials)];
    }
    const PackedBf16 layout = plan_bf16_packing(bits.data(), int64_t(bits.size()));
    Tensor packed_host = host_tensor(DType::U8, {int64_t(layout.bytes())});
    pack_bf16(bits.data(), layout, static_cast<uint8_t*>(packed_host.data));
    const Tensor packed = e.gpu.upload(packed_host);
    Tensor out = poisoned(e, DType::BF16, {c.rows, c.cols});
    e.gpu.unpack_bf16(layout, packed, out);
    const Tensor back = e.gpu.download(out);
    int64_t differ = 0;
    for (size_t i = 0; i < bits.size(); ++i) differ += back.ptr<const uint16_t>()[i] != bits[i];
    const bool timed = !c.specials;
    const double ms = timed ? time_it(e, [&] { e.gpu.unpack_bf16(layout, packed, out); }) : 0;
    const double bytes = double(layout.bytes()) + 2.0 * double(bits.size());
    const std::string shape = std::to_string(c.rows) + "x" + std::to_string(c.cols) + " " +
                              std::to_string(layout.exceptions) + " exceptions, " + std::to_string(differ) + " differ";
    e.table.row("unpack_bf16", shape, kcheck::Compare{differ ? 1.0 : 0.0, differ ? 1.0 : 0.0, true}, 0.0, ms, 0,
                timed ? bytes : 0);
    if (timed) record(e, "unpack_bf16", std::to_string(c.rows) + "x" + std::to_string(c.cols), ms, 0, bytes);
  }
}

}  // namespace

void kcheck::dit_family(Table& table, const Options& o) {
  if (!o.selects_any({"gemm", "gemm_gated_unit", "gemm_skinny", "rows", "fused", "attention", "packed", "int8",
                       "int8_attention", "fp8"}))
    return;
  Env env(table, o, 10);
  std::printf("moss-check kernels --family dit on %s (%d multiprocessors); GEMM auto tiles at %lld rows: %s\n",
              env.gpu.name().c_str(), env.ctx.multiprocessors(), (long long)kRows,
              gemm_tiles_name(gemm_auto_tiles(kRows, kDim, env.ctx.multiprocessors())));
  std::fflush(stdout);
  group(table, o, "dit", "gemm", [&] { check_gemms(env); });
  group(table, o, "dit", "gemm_gated_unit", [&] { check_gemm_gated_unit(env); });
  group(table, o, "dit", "gemm_skinny", [&] { check_gemm_skinny(env); });
  group(table, o, "dit", "rows", [&] { check_rows(env); });
  group(table, o, "dit", "fused", [&] { check_fused(env); });
  group(table, o, "dit", "attention", [&] { check_attention_cases(table, env.ctx, env.host, "dit", env.sustain_s, env.max_elements); });
  group(table, o, "dit", "packed", [&] { check_packed(env); });
  group(table, o, "dit", "int8", [&] {
    int8_check::check_int8_linear(env);
    int8_check::check_int8_quantized(env);
  });
  group(table, o, "dit", "int8_attention", [&] { check_int8_attention(env); });
  group(table, o, "dit", "fp8", [&] { fp8_check::check_fp8_values(env); });
  print_time_table(env.timings, device_peaks(env.ctx.device()), "1024x1024 DiT shapes");
}
