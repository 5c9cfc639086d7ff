// `moss-check kernels --family te`: every kernel the text encoder (Qwen3.5-9B) runs, on the GPU backend against
// the host replay (ops/host) on the same random inputs, at the real shapes (hidden 4096, MLP
// 12288; DeltaNet: 16 key heads and 32 value heads of 128, conv over 8192 channels; attention: 16
// query / 4 kv heads of 256, RoPE on 64 dims) and at odd sizes (T = 1, 37, 65, 200: tails of the
// 64-token DeltaNet blocks and of every tile), plus the tiny test model's DeltaNet dims (2 key /
// 4 value heads of 32). Operands are laid out as the model lays them out (v, q/k slices of the
// fused conv output, the gate half of q_proj's per-head rows), outputs are poisoned with NaN
// first, so an element a kernel forgets to write fails its case.
//
// Groups (--filter): "text family", "core family", attention.
//
// Text family (ops/hip/text_ops_hip): causal_conv1d_silu, deltanet_gates, l2_norm,
// gated_rms_norm, delta_rule_chunked (the op's split-bf16 products, and the plain-bf16 variant
// through kernels/deltanet.h). Core family at the encoder's shapes (ops/hip core ops): linear (every
// projection), zero-centred rms_norm (hidden, q_norm through the strided query half, k_norm),
// add, SwiGlu, SigmoidGate, partial RoPE, embedding; then the attention cases of
// cases/attention_cases.h for "te".
//
// Tolerances (relative L2): fp32 kernels 1e-5 (conv, gates, norms, elementwise);
// bf16-operand kernels 1e-2 (linear, plain-bf16 chunked rule); the split-bf16 chunked rule 1e-4
// (its products keep ~16 mantissa bits; host emulation measured 5e-6 to 8e-6 against the host).
// The T = 4096 cases are timed; their table rate is TFLOP/s (useful flops of the chunked form; the
// split form issues three leaf products for each) or GB/s (bytes read + written once). The full
// 4096-row projections are spot-checked on 64 sampled rows. A failing case prints its first bad
// element before its row; a case that throws is reported as failed and the run goes on. The
// closing summary lists the timed kernels at T = 4096 against the H200 ceilings.
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
#include "kernel_check.h"
#include "kernels/deltanet.h"
#include "ops/backend.h"
#include "ops/hip/hip_backend.h"

namespace {

using namespace moss;
using kcheck::Case;
using kcheck::Env;
using kcheck::fetch;
using kcheck::mix;
using kcheck::poisoned;
using kcheck::record;
using kcheck::report;
using kcheck::shape_of;
using kcheck::time_it;
using kcheck::uniform;

constexpr double kBf16Tol = 1e-2, kF32Tol = 1e-5, kSplitTol = 1e-4;

// Qwen3.5-9B (docs/text_encoder.md section 1).
constexpr int64_t kHidden = 4096, kInter = 12288;
constexpr int64_t kKeyHeads = 16, kValueHeads = 32, kHeadDim = 128, kTaps = 4;
constexpr int64_t kKeyWidth = kKeyHeads * kHeadDim, kValueWidth = kValueHeads * kHeadDim;  // 2048, 4096
constexpr int64_t kConvWidth = 2 * kKeyWidth + kValueWidth;                             // 8192
constexpr int64_t kAttnHeads = 16, kKvHeads = 4, kAttnHeadDim = 256, kRotDim = 64;
constexpr double kRopeTheta = 1e7;
constexpr float kEps = 1e-6f;
constexpr int64_t kLongT = 4096;  // the timed length (the encoder's maximum)

// ---- random operands -------------------------------------------------------------------------
// A host f32 tensor of uniform values with standard deviation sd.
Tensor random_host(Env& e, const std::vector<int64_t>& dims, float sd) {
  kcheck::admit(e, dims);
  Tensor h = host_tensor(DType::F32, dims);
  const uint64_t seed = ++e.seed;
  const float a = sd * 1.7320508f;
  for (int64_t i = 0; i < h.numel(); ++i) h.ptr<float>()[i] = uniform(seed, uint64_t(i), -a, a);
  return h;
}

// The same values in dtype dt (bf16 rounds; then `h` is rounded too, so both sides see the same
// numbers).
Tensor as_dtype(Tensor& h, DType dt) {
  if (dt == DType::F32) return h;
  Tensor out = host_tensor(dt, h.dims());
  for (int64_t i = 0; i < h.numel(); ++i) {
    const uint16_t b = f32_to_bf16(h.ptr<float>()[i]);
    out.ptr<uint16_t>()[i] = b;
    h.ptr<float>()[i] = bf16_to_f32(b);
  }
  return out;
}

// ---- text family: row kernels ----------------------------------------------------------------
// x is a column slice of a wider buffer when `slice` (as qkv is a slice of nothing in the model,
// this covers strided callers); the weight is the checkpoint's bf16 [C, 1, K].
void conv_case(Env& e, int64_t T, int64_t C, bool slice, bool timed) {
  const int64_t offset = slice ? 3 : 0;
  Tensor xw = random_host(e, {T, C + offset + (slice ? 5 : 0)}, 1.0f);
  Tensor wh = random_host(e, {C, 1, kTaps}, 0.5f);
  const Tensor wb = as_dtype(wh, DType::BF16);
  const Tensor xd_wide = e.gpu.upload(xw), wd = e.gpu.upload(wb);
  const Tensor xh = xw.slice_cols(offset, C), xd = xd_wide.slice_cols(offset, C);
  Tensor yh = host_tensor(DType::F32, {T, C});
  e.host.text().causal_conv1d_silu(xh, wb, yh);
  Tensor yd = poisoned(e, {T, C});
  e.gpu.text().causal_conv1d_silu(xd, wd, yd);
  const std::vector<float> got = fetch(e, yd);
  const double bytes = 2.0 * T * C * 4;
  const double ms = timed ? time_it(e, [&] { e.gpu.text().causal_conv1d_silu(xd, wd, yd); }) : 0;
  const std::string shape = shape_of({T, C}) + " k" + std::to_string(kTaps) + (slice ? " slice" : "");
  report(e, "causal_conv1d_silu", shape, got, to_f32_vector(yh), C, kF32Tol, ms, 0, bytes);
  if (timed) record(e, "causal_conv1d_silu", shape, ms, 0, bytes);
}
struct ConvCase { int64_t T, C; bool slice, timed; };
void conv_case(Env& e, const ConvCase& c) { conv_case(e, c.T, c.C, c.slice, c.timed); }
const kcheck::Op<ConvCase> op_causal_conv1d_silu{"causal_conv1d_silu", conv_case};  // tolerance 1e-5

// Qwen-like gate parameters: A = exp(A_log) in [1, 16), dt = softplus(dt_bias) in [1e-3, 0.1)
// (log-uniform), so the decays run from nearly 1 (long memory) to fast.
struct GateParams {
  Tensor a_log, dt_bias;  // host f32 [H]
};
GateParams qwen_gate_params(Env& e, int64_t H) {
  GateParams p{host_tensor(DType::F32, {H}), host_tensor(DType::F32, {H})};
  const uint64_t seed = ++e.seed;
  for (int64_t h = 0; h < H; ++h) {
    p.a_log.ptr<float>()[h] = std::log(uniform(seed, uint64_t(2 * h), 1.0f, 16.0f));
    const float dt = std::exp(uniform(seed, uint64_t(2 * h + 1), std::log(1e-3f), std::log(0.1f)));
    p.dt_bias.ptr<float>()[h] = std::log(std::expm1(dt));  // softplus⁻¹
  }
  return p;
}

void gates_case(Env& e, int64_t T, int64_t H, DType a_log_dt, DType dt_bias_dt, bool timed) {
  GateParams p = qwen_gate_params(e, H);
  Tensor ah = random_host(e, {T, H}, 2.0f), bh = random_host(e, {T, H}, 2.0f);
  ah.ptr<float>()[0] = 25.0f;  // beyond softplus's threshold of 20
  const Tensor al = as_dtype(p.a_log, a_log_dt), db = as_dtype(p.dt_bias, dt_bias_dt);
  Tensor gh = host_tensor(DType::F32, {T, H}), betah = host_tensor(DType::F32, {T, H});
  e.host.text().deltanet_gates(ah, bh, al, db, gh, betah);
  const Tensor ad = e.gpu.upload(ah), bd = e.gpu.upload(bh), ald = e.gpu.upload(al), dbd = e.gpu.upload(db);
  Tensor gd = poisoned(e, {T, H}), betad = poisoned(e, {T, H});
  e.gpu.text().deltanet_gates(ad, bd, ald, dbd, gd, betad);
  const std::vector<float> g = fetch(e, gd), beta = fetch(e, betad);
  const double bytes = 4.0 * T * H * 4;
  const double ms = timed ? time_it(e, [&] { e.gpu.text().deltanet_gates(ad, bd, ald, dbd, gd, betad); }) : 0;
  const std::string shape = shape_of({T, H}) + " " + dtype_name(a_log_dt) + "/" + dtype_name(dt_bias_dt);
  report(e, "deltanet_gates g", shape, g, to_f32_vector(gh), H, kF32Tol, ms, 0, bytes);
  report(e, "deltanet_gates beta", shape, beta, to_f32_vector(betah), H, kF32Tol);
  if (timed) record(e, "deltanet_gates", shape, ms, 0, bytes);
}
struct GatesCase { int64_t T, H; DType a_log_dt, dt_bias_dt; bool timed; };
void gates_case(Env& e, const GatesCase& c) { gates_case(e, c.T, c.H, c.a_log_dt, c.dt_bias_dt, c.timed); }
const kcheck::Op<GatesCase> op_deltanet_gates{"deltanet_gates", gates_case};  // tolerance 1e-5

// q (or k) as the model normalises it: the first key-width columns of the conv output.
void l2_case(Env& e, int64_t T, int64_t conv_width, int64_t width, int64_t group, bool in_place, bool timed) {
  Tensor conv_h = random_host(e, {T, conv_width}, 1.0f);
  const Tensor conv_d = e.gpu.upload(conv_h);
  const Tensor xh = conv_h.slice_cols(0, width), xd = conv_d.slice_cols(0, width);
  Tensor yh = host_tensor(DType::F32, {T, width});
  e.host.text().l2_norm(xh, kEps, group, yh);
  Tensor yd = in_place ? xd : poisoned(e, {T, width});
  e.gpu.text().l2_norm(xd, kEps, group, yd);
  const std::vector<float> got = fetch(e, yd);
  const double bytes = 2.0 * T * width * 4;
  double ms = 0;
  if (timed) ms = time_it(e, [&] { e.gpu.text().l2_norm(xd, kEps, group, yd); });
  const std::string shape = shape_of({T, width}) + " g" + std::to_string(group) + " slice" + (in_place ? " in-place" : "");
  report(e, "l2_norm", shape, got, to_f32_vector(yh), width, kF32Tol, ms, 0, bytes);
  if (timed) record(e, "l2_norm", shape, ms, 0, bytes);
}
struct L2Case { int64_t T, conv_width, width, group; bool in_place, timed; };
void l2_case(Env& e, const L2Case& c) { l2_case(e, c.T, c.conv_width, c.width, c.group, c.in_place, c.timed); }
const kcheck::Op<L2Case> op_l2_norm{"l2_norm", l2_case};  // tolerance 1e-5

void gated_norm_case(Env& e, int64_t T, int64_t width, int64_t group, bool timed) {
  Tensor xh = random_host(e, {T, width}, 1.0f), zh = random_host(e, {T, width}, 2.0f);
  Tensor wh = random_host(e, {group}, 0.3f);
  for (int64_t i = 0; i < group; ++i) wh.ptr<float>()[i] += 1.0f;  // a plain weight near 1
  const Tensor wb = as_dtype(wh, DType::BF16);
  Tensor yh = host_tensor(DType::F32, {T, width});
  e.host.text().gated_rms_norm(xh, zh, wb, kEps, group, yh);
  const Tensor xd = e.gpu.upload(xh), zd = e.gpu.upload(zh), wd = e.gpu.upload(wb);
  Tensor yd = poisoned(e, {T, width});
  e.gpu.text().gated_rms_norm(xd, zd, wd, kEps, group, yd);
  const std::vector<float> got = fetch(e, yd);
  const double bytes = 3.0 * T * width * 4;
  const double ms = timed ? time_it(e, [&] { e.gpu.text().gated_rms_norm(xd, zd, wd, kEps, group, yd); }) : 0;
  const std::string shape = shape_of({T, width}) + " g" + std::to_string(group);
  report(e, "gated_rms_norm", shape, got, to_f32_vector(yh), width, kF32Tol, ms, 0, bytes);
  if (timed) record(e, "gated_rms_norm", shape, ms, 0, bytes);
}
struct GatedNormCase { int64_t T, width, group; bool timed; };
void gated_norm_case(Env& e, const GatedNormCase& c) { gated_norm_case(e, c.T, c.width, c.group, c.timed); }
const kcheck::Op<GatedNormCase> op_gated_rms_norm{"gated_rms_norm", gated_norm_case};  // tolerance 1e-5

// ---- text family: the gated delta rule ---------------------------------------------------------
enum class Form { ChunkedSplit, ChunkedBf16 };
const char* form_name(Form f) { return f == Form::ChunkedSplit ? "delta_rule_chunked" : "delta_rule_chunked bf16"; }

struct DeltaSpec {
  int64_t T, key_heads, value_heads, dim;  // dk = dv = dim
  bool state = false;                      // start from a random state and check the final one
  bool fast_decay = false;                 // decays of the unit tests (exp(g) ~ 0.5) instead of Qwen's
  bool timed = false;
};

// One set of inputs, on both sides, as the encoder makes them: q and k l2-normalised (host op),
// v a column slice of the fused conv output, g and beta from the gates op.
struct DeltaInputs {
  DeltaSpec s;
  Tensor qh, kh, vh, gh, betah, stateh;  // host
  Tensor qd, kd, vd, gd, betad;          // device
  float scale;
};

DeltaInputs delta_inputs(Env& e, const DeltaSpec& s) {
  DeltaInputs in;
  in.s = s;
  const int64_t T = s.T, kw = s.key_heads * s.dim, vw = s.value_heads * s.dim, H = s.value_heads;
  in.qh = host_tensor(DType::F32, {T, kw});
  in.kh = host_tensor(DType::F32, {T, kw});
  e.host.text().l2_norm(random_host(e, {T, kw}, 1.0f), kEps, s.dim, in.qh);
  e.host.text().l2_norm(random_host(e, {T, kw}, 1.0f), kEps, s.dim, in.kh);
  Tensor conv = random_host(e, {T, 2 * kw + vw}, 1.0f);
  in.vh = conv.slice_cols(2 * kw, vw);
  in.gh = host_tensor(DType::F32, {T, H});
  in.betah = host_tensor(DType::F32, {T, H});
  GateParams p = qwen_gate_params(e, H);
  if (s.fast_decay) {
    p.a_log = random_host(e, {H}, 0.5f);
    p.dt_bias = random_host(e, {H}, 0.5f);
  }
  e.host.text().deltanet_gates(random_host(e, {T, H}, s.fast_decay ? 1.5f : 1.0f), random_host(e, {T, H}, 1.5f),
                               p.a_log, p.dt_bias, in.gh, in.betah);
  if (s.state) in.stateh = random_host(e, {H, s.dim, s.dim}, 0.1f);
  in.qd = e.gpu.upload(in.qh);
  in.kd = e.gpu.upload(in.kh);
  in.vd = e.gpu.upload(conv).slice_cols(2 * kw, vw);
  in.gd = e.gpu.upload(in.gh);
  in.betad = e.gpu.upload(in.betah);
  in.scale = float(1.0 / std::sqrt(double(s.dim)));
  return in;
}

// The host replay (the chunked form), with its final state when there is one.
struct DeltaResult {
  std::vector<float> out, state;
};
DeltaResult host_delta(Env& e, const DeltaInputs& in) {
  Tensor out = host_tensor(DType::F32, {in.s.T, in.s.value_heads * in.s.dim});
  Tensor state;
  if (in.s.state) {
    state = host_tensor(DType::F32, in.stateh.dims());
    std::memcpy(state.data, in.stateh.data, state.nbytes());
  }
  e.host.text().delta_rule_chunked(in.qh, in.kh, in.vh, in.gh, in.betah, in.s.key_heads, in.scale, kDeltaRuleChunk,
                                   in.s.state ? &state : nullptr, out);
  return {to_f32_vector(out), in.s.state ? to_f32_vector(state) : std::vector<float>()};
}

// The kernels' arguments for device tensors (the plain-bf16 variant has no op of its own).
DeltaRuleArgs delta_args(const DeltaInputs& in, Tensor& out, Tensor* state) {
  DeltaRuleArgs a;
  a.q = in.qd.ptr<const float>(), a.k = in.kd.ptr<const float>(), a.v = in.vd.ptr<const float>();
  a.g = in.gd.ptr<const float>(), a.beta = in.betad.ptr<const float>(), a.out = out.ptr<float>();
  a.state = state ? state->ptr<float>() : nullptr;
  a.ldq = in.qd.row_stride(), a.ldk = in.kd.row_stride(), a.ldv = in.vd.row_stride(), a.ldg = in.gd.row_stride();
  a.ldbeta = in.betad.row_stride(), a.ldo = out.row_stride();
  a.T = int(in.s.T), a.key_heads = int(in.s.key_heads), a.value_heads = int(in.s.value_heads);
  a.dk = a.dv = int(in.s.dim), a.scale = in.scale;
  return a;
}

// One call of a form on the GPU (state: null, or the device state it reads and updates).
void launch_delta(Env& e, const DeltaInputs& in, Form form, Tensor& out, Tensor* state) {
  switch (form) {
    case Form::ChunkedSplit:
      e.gpu.text().delta_rule_chunked(in.qd, in.kd, in.vd, in.gd, in.betad, in.s.key_heads, in.scale, kDeltaRuleChunk,
                                      state, out);
      break;
    case Form::ChunkedBf16: {
      const DeltaRuleArgs a = delta_args(in, out, state);
      void* scratch = e.ctx.scratch(delta_rule_chunked_scratch_bytes(a.T, a.value_heads, a.dk, a.dv));
      delta_rule_chunked(a, DeltaPrecision::Bf16, scratch, e.stream());
      break;
    }
  }
}

// One checked call: poisoned output, the initial state copied in; returns output and final state.
DeltaResult gpu_delta(Env& e, const DeltaInputs& in, Form form, Tensor& out, Tensor* state) {
  kcheck::poison(out, e.stream());
  if (state) e.ctx.copy_to_device(state->data, in.stateh.data, in.stateh.nbytes());
  launch_delta(e, in, form, out, state);
  return {fetch(e, out), state ? fetch(e, *state) : std::vector<float>()};
}

// Useful flops of one call: the chunked form's products per (block, head), counted dense --
// five c·c·d (A, M, U, W, M·v_new) and three c·d·d (W·S, q·S, kᵀ·v_new).
double delta_flops(const DeltaSpec& s) {
  const double d = double(s.dim), c = kDeltaRuleChunk, heads = double(s.value_heads);
  const double blocks = std::ceil(double(s.T) / c);
  return blocks * heads * 2.0 * (5 * c * c * d + 3 * c * d * d);
}

std::string delta_shape(const DeltaSpec& s) {
  return "T" + std::to_string(s.T) + " " + std::to_string(s.key_heads) + "k/" + std::to_string(s.value_heads) +
         "v x" + std::to_string(s.dim) + (s.state ? " +state" : "") + (s.fast_decay ? " fast" : "");
}

void delta_case(Env& e, const DeltaSpec& s, Form form) {
  const DeltaInputs in = delta_inputs(e, s);
  const DeltaResult want = host_delta(e, in);
  const int64_t vw = s.value_heads * s.dim;
  Tensor out = e.gpu.alloc(DType::F32, {s.T, vw});
  Tensor state = s.state ? e.gpu.alloc(DType::F32, in.stateh.dims()) : Tensor();
  const DeltaResult got = gpu_delta(e, in, form, out, s.state ? &state : nullptr);
  const double tol = form == Form::ChunkedSplit ? kSplitTol : kBf16Tol;
  const double flops = delta_flops(s);
  double ms = 0;
  if (s.timed) ms = time_it(e, [&] { launch_delta(e, in, form, out, nullptr); }, 3);
  const std::string shape = delta_shape(s);
  report(e, form_name(form), shape, got.out, want.out, vw, tol, ms, flops);
  if (s.state) report(e, std::string(form_name(form)) + " state", shape, got.state, want.state, s.dim, tol);
  if (s.timed) record(e, form_name(form), shape, ms, flops, 0);
}

void delta_split_case(Env& e, const DeltaSpec& s) { delta_case(e, s, Form::ChunkedSplit); }
void delta_bf16_case(Env& e, const DeltaSpec& s) { delta_case(e, s, Form::ChunkedBf16); }
// tolerance 1e-4 (split-bf16 products)
const kcheck::Op<DeltaSpec> op_delta_split{form_name(Form::ChunkedSplit), delta_split_case};
const kcheck::Op<DeltaSpec> op_delta_bf16{form_name(Form::ChunkedBf16), delta_bf16_case};  // tolerance 1e-2

void check_text_family(Env& e) {
  const auto real = [](int64_t T) { return DeltaSpec{T, kKeyHeads, kValueHeads, kHeadDim}; };
  const auto tiny = [](int64_t T) { return DeltaSpec{T, 2, 4, 32}; };
  const auto with = [](DeltaSpec s, bool state, bool fast, bool timed) {
    s.state = state, s.fast_decay = fast, s.timed = timed;
    return s;
  };
  kcheck::run_cases(e, {
    op_causal_conv1d_silu({1, kConvWidth, false, false}),
    op_causal_conv1d_silu({37, kConvWidth, false, false}),
    op_causal_conv1d_silu({200, kConvWidth, false, false}),
    op_causal_conv1d_silu({65, kConvWidth, true, false}),
    op_causal_conv1d_silu({37, 2 * 64 + 128, true, false}),  // tiny model's width
    op_causal_conv1d_silu({kLongT, kConvWidth, false, true}),

    op_deltanet_gates({37, kValueHeads, DType::F32, DType::BF16, false}),
    op_deltanet_gates({200, kValueHeads, DType::BF16, DType::BF16, false}),
    op_deltanet_gates({37, 4, DType::F32, DType::F32, false}),
    op_deltanet_gates({kLongT, kValueHeads, DType::F32, DType::BF16, true}),

    op_l2_norm({37, kConvWidth, kKeyWidth, kHeadDim, false, false}),
    op_l2_norm({200, kConvWidth, kKeyWidth, kHeadDim, true, false}),
    op_l2_norm({37, 2 * 64 + 128, 64, 32, false, false}),
    op_l2_norm({kLongT, kConvWidth, kKeyWidth, kHeadDim, false, true}),

    op_gated_rms_norm({37, kValueWidth, kHeadDim, false}),
    op_gated_rms_norm({37, 128, 32, false}),
    op_gated_rms_norm({kLongT, kValueWidth, kHeadDim, true}),

    op_delta_split(real(1)),
    op_delta_split(real(37)),
    op_delta_split(real(64)),
    op_delta_split(real(200)),
    op_delta_split(with(real(65), true, false, false)),
    op_delta_split(with(real(512), true, false, false)),
    op_delta_split(with(real(200), false, true, false)),
    op_delta_split(with(tiny(37), false, false, false)),
    op_delta_split(with(tiny(200), true, true, false)),
    op_delta_bf16(with(real(200), true, false, false)),
    op_delta_bf16(with(tiny(65), false, false, false)),
    op_delta_split(with(real(kLongT), false, false, true)),
    op_delta_bf16(with(real(kLongT), false, false, true)),
  });
}

// ---- core family at the encoder's shapes ------------------------------------------------------
// All rows compared, or (sample > 0) every element checked for being written and `sample` rows
// compared with a host replay of those rows only.
void linear_case(Env& e, const std::string& name, int64_t m, int64_t k, int64_t n, int sample = 0) {
  Tensor xh = random_host(e, {m, k}, 1.0f);
  Tensor wh = random_host(e, {n, k}, float(1.0 / std::sqrt(double(k))));
  const Tensor wb = as_dtype(wh, DType::BF16);
  const Tensor xd = e.gpu.upload(xh), wd = e.gpu.upload(wb);
  Tensor yd = poisoned(e, {m, n});
  e.gpu.core().linear(xd, wd, nullptr, yd);
  std::vector<float> got = fetch(e, yd), want;
  if (sample == 0) {
    Tensor yh = host_tensor(DType::F32, {m, n});
    e.host.core().linear(xh, wb, nullptr, yh);
    want = to_f32_vector(yh);
  } else {
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < sample; ++i) rows.push_back(i == sample - 1 ? m - 1 : i * (m / sample) + i % 7);
    Tensor xs = host_tensor(DType::F32, {sample, k});
    for (int64_t i = 0; i < sample; ++i)
      std::memcpy(xs.row<float>(i), xh.row<const float>(rows[size_t(i)]), size_t(k) * sizeof(float));
    Tensor ys = host_tensor(DType::F32, {sample, n});
    e.host.core().linear(xs, wb, nullptr, ys);
    want = to_f32_vector(ys);
    std::vector<float> picked(size_t(sample * n));
    for (int64_t i = 0; i < sample; ++i) std::copy_n(got.begin() + rows[size_t(i)] * n, n, picked.begin() + i * n);
    for (size_t i = 0; i < got.size(); ++i)  // an unwritten element anywhere fails the case
      if (!std::isfinite(got[i])) {
        std::printf("  linear %s: element [%lld, %lld] not written\n", name.c_str(), (long long)(int64_t(i) / n),
                    (long long)(int64_t(i) % n));
        picked[0] = got[i];
        break;
      }
    got = std::move(picked);
  }
  const double flops = 2.0 * m * n * k;
  const double ms = time_it(e, [&] { e.gpu.core().linear(xd, wd, nullptr, yd); }, sample ? 5 : 2);
  const std::string shape = shape_of({m, k, n}) + (sample ? " sampled" : "");
  report(e, "linear " + name, shape, got, want, n, kBf16Tol, ms, flops);
  if (m == kLongT) record(e, "linear " + name, shape, ms, flops, 0);
}
struct LinearCase { std::string name; int64_t m, k, n; int sample = 0; };
void linear_case(Env& e, const LinearCase& c) { linear_case(e, c.name, c.m, c.k, c.n, c.sample); }
const kcheck::Op<LinearCase> op_linear{"linear", linear_case};  // tolerance 1e-2 (bf16 weights)

// Every projection at 37 rows, two at 256/200 rows and the tiny model's, then the wide ones at
// T = 4096 (sampled rows).
std::vector<Case> linear_cases() {
  struct Proj {
    const char* name;
    int64_t k, n;
  };
  const Proj projs[] = {{"in_proj_qkv", kHidden, kConvWidth},
                        {"in_proj_z/out_proj/o_proj", kHidden, kHidden},
                        {"in_proj_a/b", kHidden, kValueHeads},
                        {"q_proj", kHidden, 2 * kAttnHeads * kAttnHeadDim},
                        {"k_proj/v_proj", kHidden, kKvHeads * kAttnHeadDim},
                        {"gate_proj/up_proj", kHidden, kInter},
                        {"down_proj", kInter, kHidden}};
  std::vector<Case> cases;
  for (const Proj& p : projs) cases.push_back(op_linear(p.name, {p.name, 37, p.k, p.n}));
  cases.push_back(op_linear("in_proj_qkv", {"in_proj_qkv", 256, kHidden, kConvWidth}));
  cases.push_back(op_linear("down_proj", {"down_proj", 200, kInter, kHidden}));
  cases.push_back(op_linear("tiny in_proj_qkv", {"tiny in_proj_qkv", 65, 256, 2 * 64 + 128}));
  for (const Proj& p : projs)
    if (p.n >= kHidden) cases.push_back(op_linear(p.name, {p.name, kLongT, p.k, p.n, 64}));
  return cases;
}

// Zero-centred RMS norm (weight 1 + w): the whole hidden row, or per head through the query half
// of q_proj's per-head [query | gate] rows, as the encoder reads it.
void rms_case(Env& e, const std::string& name, int64_t rows, int64_t cols, int64_t group, int64_t parent_cols,
              bool timed) {
  Tensor parent_h = random_host(e, {rows, parent_cols}, 2.0f);
  Tensor wh = random_host(e, {group}, 0.2f);
  const Tensor wb = as_dtype(wh, DType::BF16);
  const Tensor parent_d = e.gpu.upload(parent_h), wd = e.gpu.upload(wb);
  const Tensor xh = parent_h.slice_cols(0, cols), xd = parent_d.slice_cols(0, cols);
  Tensor yh = host_tensor(DType::F32, {rows, cols});
  e.host.core().rms_norm(xh, &wb, NormWeight::OnePlus, kEps, group, yh);
  Tensor yd = poisoned(e, {rows, cols});
  e.gpu.core().rms_norm(xd, &wd, NormWeight::OnePlus, kEps, group, yd);
  const std::vector<float> got = fetch(e, yd);
  const double bytes = 2.0 * rows * cols * 4;
  const double ms = timed ? time_it(e, [&] { e.gpu.core().rms_norm(xd, &wd, NormWeight::OnePlus, kEps, group, yd); }) : 0;
  const std::string shape = shape_of({rows, cols}) + " g" + std::to_string(group) + " 1+w" +
                            (parent_cols != cols ? " slice" : "");
  report(e, "rms_norm " + name, shape, got, to_f32_vector(yh), cols, kF32Tol, ms, 0, bytes);
  if (timed) record(e, "rms_norm " + name, shape, ms, 0, bytes);
}
struct RmsCase { std::string name; int64_t rows, cols, group, parent_cols; bool timed; };
void rms_case(Env& e, const RmsCase& c) { rms_case(e, c.name, c.rows, c.cols, c.group, c.parent_cols, c.timed); }
const kcheck::Op<RmsCase> op_rms_norm{"rms_norm", rms_case};  // tolerance 1e-5

void add_case(Env& e, int64_t rows, int64_t cols, bool timed) {
  Tensor xh = random_host(e, {rows, cols}, 1.0f), dh = random_host(e, {rows, cols}, 1.0f);
  Tensor xd = e.gpu.upload(xh);
  const Tensor dd = e.gpu.upload(dh);
  e.host.core().add(xh, dh, nullptr);
  e.gpu.core().add(xd, dd, nullptr);
  const std::vector<float> got = fetch(e, xd);
  const double bytes = 3.0 * rows * cols * 4;
  const double ms = timed ? time_it(e, [&] { e.gpu.core().add(xd, dd, nullptr); }) : 0;
  const std::string shape = shape_of({rows, cols});
  report(e, "add (residual)", shape, got, to_f32_vector(xh), cols, kF32Tol, ms, 0, bytes);
  if (timed) record(e, "add (residual)", shape, ms, 0, bytes);
}
struct AddCase { int64_t rows, cols; bool timed; };
void add_case(Env& e, const AddCase& c) { add_case(e, c.rows, c.cols, c.timed); }
const kcheck::Op<AddCase> op_add{"add", add_case};  // tolerance 1e-5

// SwiGlu on the MLP's [T, 12288]; SigmoidGate with the gate as the second half of q_proj's
// per-head rows ([T·16, 512] read as a strided [T·16, 256]).
void gated_unit_case(Env& e, GatedUnit kind, int64_t rows, int64_t cols, bool timed) {
  const bool strided = kind == GatedUnit::SigmoidGate;
  Tensor ah = random_host(e, {rows, cols}, 2.0f);
  Tensor parent_h = random_host(e, {rows, strided ? 2 * cols : cols}, 2.0f);
  const Tensor ad = e.gpu.upload(ah), parent_d = e.gpu.upload(parent_h);
  const Tensor bh = strided ? parent_h.slice_cols(cols, cols) : parent_h;
  const Tensor bd = strided ? parent_d.slice_cols(cols, cols) : parent_d;
  Tensor oh = host_tensor(DType::F32, {rows, cols});
  e.host.core().gated_unit(kind, ah, bh, oh);
  Tensor od = poisoned(e, {rows, cols});
  e.gpu.core().gated_unit(kind, ad, bd, od);
  const std::vector<float> got = fetch(e, od);
  const double bytes = 3.0 * rows * cols * 4;
  const double ms = timed ? time_it(e, [&] { e.gpu.core().gated_unit(kind, ad, bd, od); }) : 0;
  const std::string name = strided ? "gated_unit sigmoid_gate" : "gated_unit swiglu";
  const std::string shape = shape_of({rows, cols}) + (strided ? " gate slice" : "");
  report(e, name, shape, got, to_f32_vector(oh), cols, kF32Tol, ms, 0, bytes);
  if (timed) record(e, name, shape, ms, 0, bytes);
}
struct GatedUnitCase { GatedUnit kind; int64_t rows, cols; bool timed; };
void gated_unit_case(Env& e, const GatedUnitCase& c) { gated_unit_case(e, c.kind, c.rows, c.cols, c.timed); }
const kcheck::Op<GatedUnitCase> op_sigmoid_gate{"sigmoid_gate", gated_unit_case};  // tolerance 1e-5
const kcheck::Op<GatedUnitCase> op_swiglu{"swiglu", gated_unit_case};  // tolerance 1e-5

// Qwen's partial RoPE: the first 64 of each 256-wide head, tables [f | f] of the real angles.
void rope_case(Env& e, int64_t T, int64_t heads, bool timed) {
  const int64_t cols = heads * kAttnHeadDim, half = kRotDim / 2;
  Tensor sin_h = host_tensor(DType::F32, {T, kRotDim}), cos_h = host_tensor(DType::F32, {T, kRotDim});
  for (int64_t p = 0; p < T; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(kRopeTheta, -2.0 * double(i) / double(kRotDim));
      const float a = float(double(p) * inv_freq);
      sin_h.row<float>(p)[i] = sin_h.row<float>(p)[i + half] = std::sin(a);
      cos_h.row<float>(p)[i] = cos_h.row<float>(p)[i + half] = std::cos(a);
    }
  Tensor xh = random_host(e, {T, cols}, 1.0f);
  Tensor xd = e.gpu.upload(xh);
  const Tensor sin_d = e.gpu.upload(sin_h), cos_d = e.gpu.upload(cos_h);
  e.host.core().rope(xh, sin_h, cos_h, kAttnHeadDim, kRotDim);
  e.gpu.core().rope(xd, sin_d, cos_d, kAttnHeadDim, kRotDim);
  const std::vector<float> got = fetch(e, xd);
  const double bytes = 2.0 * T * heads * kRotDim * 4;
  const double ms = timed ? time_it(e, [&] { e.gpu.core().rope(xd, sin_d, cos_d, kAttnHeadDim, kRotDim); }) : 0;
  const std::string shape = shape_of({T, cols}) + " hd" + std::to_string(kAttnHeadDim) + " rot" + std::to_string(kRotDim);
  report(e, "rope", shape, got, to_f32_vector(xh), cols, kF32Tol, ms, 0, bytes);
  if (timed) record(e, "rope", shape, ms, 0, bytes);
}
struct RopeCase { int64_t T, heads; bool timed; };
void rope_case(Env& e, const RopeCase& c) { rope_case(e, c.T, c.heads, c.timed); }
const kcheck::Op<RopeCase> op_rope{"rope", rope_case};  // tolerance 1e-5

// The rows the prompt uses, uploaded as a small bf16 table (as TextEncoder::embed does).
void embedding_case(Env& e, int64_t T, int64_t table_rows) {
  Tensor th = random_host(e, {table_rows, kHidden}, 0.05f);
  const Tensor tb = as_dtype(th, DType::BF16);
  const Tensor td = e.gpu.upload(tb);
  std::vector<int32_t> ids(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) ids[size_t(i)] = int32_t(mix(uint64_t(i) + e.seed) % uint64_t(table_rows));
  ids.back() = int32_t(table_rows - 1);
  Tensor oh = host_tensor(DType::F32, {T, kHidden});
  e.host.core().embedding(ids, tb, oh);
  Tensor od = poisoned(e, {T, kHidden});
  e.gpu.core().embedding(ids, td, od);
  report(e, "embedding", shape_of({T, kHidden}) + " of " + std::to_string(table_rows) + " bf16", fetch(e, od),
         to_f32_vector(oh), kHidden, kF32Tol);
}
struct EmbeddingCase { int64_t T, table_rows; };
void embedding_case(Env& e, const EmbeddingCase& c) { embedding_case(e, c.T, c.table_rows); }
const kcheck::Op<EmbeddingCase> op_embedding{"embedding", embedding_case};  // tolerance 1e-5

void check_core_family(Env& e) {
  kcheck::run_cases(e, linear_cases());
  kcheck::run_cases(e, {
    op_rms_norm({"hidden", 37, kHidden, kHidden, kHidden, false}),
    op_rms_norm({"q_norm", 37 * kAttnHeads, kAttnHeadDim, kAttnHeadDim, 2 * kAttnHeadDim, false}),
    op_rms_norm({"k_norm", 37, kKvHeads * kAttnHeadDim, kAttnHeadDim, kKvHeads * kAttnHeadDim, false}),
    op_rms_norm({"hidden", kLongT, kHidden, kHidden, kHidden, true}),
    op_rms_norm({"q_norm", kLongT * kAttnHeads, kAttnHeadDim, kAttnHeadDim, 2 * kAttnHeadDim, true}),
    op_add({37, kHidden, false}),
    op_add({kLongT, kHidden, true}),
    op_swiglu({GatedUnit::SwiGlu, 37, kInter, false}),
    op_swiglu({GatedUnit::SwiGlu, kLongT, kInter, true}),
    op_sigmoid_gate({GatedUnit::SigmoidGate, 37 * kAttnHeads, kAttnHeadDim, false}),
    op_sigmoid_gate({GatedUnit::SigmoidGate, kLongT * kAttnHeads, kAttnHeadDim, true}),
    op_rope({37, kAttnHeads, false}),
    op_rope({37, kKvHeads, false}),
    op_rope({kLongT, kAttnHeads, true}),
    op_embedding({37, 1024}),
    op_embedding({512, 4096}),
  });
}

}  // namespace

void kcheck::te_family(Table& table, const Options& o) {
  if (!o.selects_any({"text family", "core family", "attention"})) return;
  Env env(table, o, 5);
  std::printf("moss-check kernels --family te on %s (%d multiprocessors)\n", env.gpu.name().c_str(),
              env.ctx.multiprocessors());
  group(table, o, "te", "text family", [&] { check_text_family(env); });
  group(table, o, "te", "core family", [&] { check_core_family(env); });
  group(table, o, "te", "attention", [&] { check_attention_cases(table, env.ctx, env.host, "te", env.sustain_s, env.max_elements); });
  print_timed_list(env.timings, device_peaks(env.ctx.device()));
}
