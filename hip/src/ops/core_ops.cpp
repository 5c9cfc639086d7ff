// The core family's public ops: the operand checks every backend shares (shapes; where a
// tensor lives, its dtype and strides are the backend's to check), then the backend's body
// inside the hook (ops/op_hook.h). The names given to the hook are the op profiler's rows.
#include "ops/core_ops.h"

#include <string>

#include "tensor/int8_convrot.h"

namespace moss {
namespace {

const char* unit_name(GatedUnit kind) {
  return kind == GatedUnit::Situ ? "core.gated_unit situ" : kind == GatedUnit::SwiGlu ? "core.gated_unit swiglu"
                                                                                       : "core.gated_unit sigmoid";
}

// x [M, K], w [N, K], y [M, N / per_row] (per_row 2: the gated unit halves the product).
void check_gemm(const char* op, const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                int64_t per_row) {
  const int64_t M = x.rows(), K = x.cols(), N = w.rows();
  op_require(w.cols() == K, op, "weight " + w.shape_str() + " does not match x " + x.shape_str());
  op_require(y.rows() == M && y.cols() * per_row == N, op,
             "y " + y.shape_str() + (per_row == 2 ? " is not [M, N/2]" : " is not [M, N]"));
  op_require(!bias || bias->numel() == N, op, "bias " + (bias ? bias->shape_str() : "") + " is not [N]");
}

void check_same_shape(const char* op, const Tensor& a, const char* what, const Tensor& b) {
  op_require(b.rows() == a.rows() && b.cols() == a.cols(), op,
             std::string(what) + " " + b.shape_str() + " differs from " + a.shape_str());
}

constexpr const char* kNoInt8 = "this backend has no int8 kernels yet (issue 49); the host backend has the reference";

// xq holds M rows of K: I8 [M, K] and F32 [M, 1], both contiguous, a group that is a power of 4
// dividing K.
void check_quantized(const char* op, const QuantizedRows& xq, int64_t M, int64_t K) {
  op_require(xq.q.dtype == DType::I8 && xq.q.rank == 2 && xq.q.rows() == M && xq.q.cols() == K && xq.q.contiguous(),
             op, "quantized rows " + xq.q.shape_str() + " " + dtype_name(xq.q.dtype) + " are not contiguous I8 [" +
                     std::to_string(M) + ", " + std::to_string(K) + "]");
  op_require(xq.scale.dtype == DType::F32 && xq.scale.numel() == M && xq.scale.contiguous(), op,
             "quantized rows' scale " + xq.scale.shape_str() + " " + dtype_name(xq.scale.dtype) +
                 " is not contiguous F32 [" + std::to_string(M) + ", 1]");
  op_require(xq.q.where == xq.scale.where, op, "quantized rows and their scales live in different places");
  op_require(convrot::valid_group_size(xq.group) && K % xq.group == 0, op,
             "group size " + std::to_string(xq.group) + " is not a power of 4 dividing the width " + std::to_string(K));
}

void check_int8_weight(const char* op, const Tensor& q_w, const Tensor& w_scale, int64_t K) {
  op_require(q_w.dtype == DType::I8, op, std::string("weight must be I8, not ") + dtype_name(q_w.dtype));
  op_require(w_scale.dtype == DType::F32 && w_scale.numel() == q_w.rows() &&
                 (w_scale.rank == 1 || (w_scale.rank == 2 && w_scale.cols() == 1)),
             op, "weight_scale " + w_scale.shape_str() + " " + dtype_name(w_scale.dtype) +
                     " is not F32 [N] or [N, 1] for weight " + q_w.shape_str());
  // |q_x| <= 127 and |q_w| <= 128: the int32 sum cannot overflow below this width.
  constexpr int64_t kMaxWidth = (int64_t(1) << 31) / (127 * 128);
  op_require(K <= kMaxWidth, op,
             "width " + std::to_string(K) + " could overflow the int32 sum (at most " + std::to_string(kMaxWidth) + ")");
}

// The fp32 rows [M, K] a quantizing producer rotates and quantizes: a backend may hold them in
// its scratch between its passes (the HIP backend does), so the memory plan counts them.
OpCall quantizing_call(std::string name, const QuantizedRows& q) {
  return OpCall{std::move(name) + " g" + std::to_string(q.group), DType::F32, {q.rows(), q.cols()}};
}

}  // namespace

void CoreOps::linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  check_gemm("linear", x, w, bias, y, 1);
  // The weight's shape tells the projections apart ([out, in]); the x dtype shows whether the
  // GEMM got bf16 activations.
  run_op(hook_, [&] { return OpCall{"core.linear " + op_dims(w) + " x:" + dtype_name(x.dtype)}; },
         [&] { do_linear(x, w, bias, y); });
}

void CoreOps::linear_int8(const Tensor& x, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias,
                          int64_t group, Tensor& y) {
  check_gemm("linear_int8", x, q_w, bias, y, 1);
  check_int8_weight("linear_int8", q_w, w_scale, x.cols());
  op_require(convrot::valid_group_size(group) && x.cols() % group == 0, "linear_int8",
             "group size " + std::to_string(group) + " is not a power of 4 dividing the width " +
                 std::to_string(x.cols()));
  // The scratch: x's rows rotated and quantized (int8, plus a 4-byte scale per row), which a
  // backend holds between the quantization and the product.
  run_op(hook_,
         [&] {
           return OpCall{"core.linear_int8 " + op_dims(q_w) + " g" + std::to_string(group), DType::I8,
                         {x.rows(), x.cols() + 4}};
         },
         [&] { do_linear_int8(x, q_w, w_scale, bias, group, y); });
}

void CoreOps::do_linear_int8(const Tensor&, const Tensor&, const Tensor&, const Tensor*, int64_t, Tensor&) {
  op_require(false, "linear_int8", kNoInt8);
}
void CoreOps::do_rotate_quantize(const Tensor&, QuantizedRows&) { op_require(false, "rotate_quantize", kNoInt8); }
void CoreOps::do_linear_int8_quantized(const QuantizedRows&, const Tensor&, const Tensor&, const Tensor*, Tensor&) {
  op_require(false, "linear_int8", kNoInt8);
}
void CoreOps::do_add_norm_modulate_quantized(Tensor&, const GatedUpdates&, SumTo, const Tensor&, float, const Tensor&,
                                             const Tensor&, QuantizedRows&, Tensor*) {
  op_require(false, "add_norm_modulate_quantized", kNoInt8);
}
void CoreOps::do_gated_unit_quantized(GatedUnit, const Tensor&, const Tensor&, QuantizedRows&, Tensor*) {
  op_require(false, "gated_unit_quantized", kNoInt8);
}

void CoreOps::do_linear_int8_gated_unit(GatedUnit, const QuantizedRows&, const Tensor&, const Tensor&, const Tensor*,
                                        Tensor&) {
  op_require(false, "linear_int8_gated_unit", kNoInt8);
}

void CoreOps::rotate_quantize(const Tensor& x, QuantizedRows& xq) {
  check_quantized("rotate_quantize", xq, x.rows(), x.cols());
  run_op(hook_, [&] { return OpCall{"core.rotate_quantize g" + std::to_string(xq.group) + " x:" + dtype_name(x.dtype)}; },
         [&] { do_rotate_quantize(x, xq); });
}

void CoreOps::linear_int8(const QuantizedRows& xq, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias,
                          Tensor& y) {
  const int64_t M = xq.rows(), K = xq.cols(), N = q_w.rows();
  check_quantized("linear_int8", xq, M, K);
  op_require(q_w.cols() == K, "linear_int8", "weight " + q_w.shape_str() + " does not match x " + xq.q.shape_str());
  op_require(y.rows() == M && y.cols() == N, "linear_int8", "y " + y.shape_str() + " is not [M, N]");
  op_require(!bias || bias->numel() == N, "linear_int8", "bias " + (bias ? bias->shape_str() : "") + " is not [N]");
  check_int8_weight("linear_int8", q_w, w_scale, K);
  run_op(hook_, [&] { return OpCall{"core.linear_int8 " + op_dims(q_w) + " g" + std::to_string(xq.group) + " xq"}; },
         [&] { do_linear_int8_quantized(xq, q_w, w_scale, bias, y); });
}

void CoreOps::linear_int8_gated_unit(GatedUnit kind, const QuantizedRows& xq, const Tensor& q_w,
                                     const Tensor& w_scale, const Tensor* bias, Tensor& out) {
  const char* op = "linear_int8_gated_unit";
  const int64_t M = xq.rows(), K = xq.cols(), N = q_w.rows();
  check_quantized(op, xq, M, K);
  op_require(q_w.cols() == K, op, "weight " + q_w.shape_str() + " does not match x " + xq.q.shape_str());
  op_require(N % 2 == 0, op, "weight " + q_w.shape_str() + " has an odd number of rows (hidden rows, then as many gate rows)");
  op_require(out.dtype == DType::F32 && out.rows() == M && 2 * out.cols() == N, op,
             "out " + out.shape_str() + " " + dtype_name(out.dtype) + " is not F32 [" + std::to_string(M) + ", " +
                 std::to_string(N / 2) + "]");
  op_require(!bias || bias->numel() == N, op, "bias " + (bias ? bias->shape_str() : "") + " is not [" + std::to_string(N) + "]");
  check_int8_weight(op, q_w, w_scale, K);
  // No scratch: every backend body writes out alone (the HIP one from the GEMM's epilogue).
  run_op(hook_,
         [&] { return OpCall{"core.linear_int8_gated_unit " + op_dims(q_w) + " g" + std::to_string(xq.group) + " xq"}; },
         [&] { do_linear_int8_gated_unit(kind, xq, q_w, w_scale, bias, out); });
}

void CoreOps::linear_transposed(const Tensor& x, const Tensor& w, Tensor& yt) {
  op_require(w.cols() == x.cols(), "linear_transposed", "weight " + w.shape_str() + " does not match x " + x.shape_str());
  op_require(x.rows() > 0, "linear_transposed", "x " + x.shape_str() + " has no rows");
  op_require(yt.rows() == w.rows() && yt.cols() >= x.rows(), "linear_transposed",
             "yt " + yt.shape_str() + " is not [N, >= M] for x " + x.shape_str() + " and weight " + w.shape_str());
  run_op(hook_, [&] { return OpCall{"core.linear_transposed " + op_dims(w) + " x:" + dtype_name(x.dtype)}; },
         [&] { do_linear_transposed(x, w, yt); });
}

bool CoreOps::attention_reads_transposed_v(int64_t) const { return false; }
bool CoreOps::int8_unit_in_gemm_epilogue() const { return true; }

void CoreOps::linear_gated_unit(GatedUnit kind, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& out) {
  check_gemm("linear_gated_unit", x, w, bias, out, 2);
  // The scratch: the product [M, 2F] that a backend without the fused epilogue materialises (the
  // HIP fallback), so that the memory plan holds on every GPU.
  run_op(hook_,
         [&] {
           return OpCall{"core.linear_gated_unit " + op_dims(w) + " x:" + dtype_name(x.dtype), out.dtype,
                         {out.rows(), 2 * out.cols()}};
         },
         [&] { do_linear_gated_unit(kind, x, w, bias, out); });
}

void CoreOps::rms_norm(const Tensor& x, const Tensor* w, NormWeight mode, float eps, int64_t group, Tensor& y) {
  op_require(group > 0 && x.cols() % group == 0, "rms_norm", "group must divide the columns");
  check_same_shape("rms_norm", x, "y", y);
  op_require(mode == NormWeight::None || (w && w->numel() == group), "rms_norm", "weight missing or not [group]");
  run_op(hook_, "core.rms_norm", [&] { do_rms_norm(x, w, mode, eps, group, y); });
}

void CoreOps::norm_modulate(const Tensor& x, const Tensor& w, float eps, const Tensor& shift, const Tensor& scale,
                            Tensor& y) {
  check_same_shape("norm_modulate", x, "y", y);
  run_op(hook_, "core.norm_modulate", [&] { do_norm_modulate(x, w, eps, shift, scale, y); });
}

GatedUpdates& GatedUpdates::then(const Tensor& di, const Tensor& gi) {
  op_require(count < kMax, "add_norm_modulate", "at most " + std::to_string(kMax) + " pending updates");
  d[count] = &di;
  gate[count] = &gi;
  ++count;
  return *this;
}

void CoreOps::add_norm_modulate(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w, float eps,
                                const Tensor& shift, const Tensor& scale, Tensor& y) {
  check_same_shape("add_norm_modulate", x, "y", y);
  op_require(updates.count >= 1 && updates.count <= GatedUpdates::kMax, "add_norm_modulate",
             "1 to " + std::to_string(GatedUpdates::kMax) + " updates, got " + std::to_string(updates.count));
  for (int i = 0; i < updates.count; ++i) {
    op_require(updates.d[i] && updates.gate[i], "add_norm_modulate", "an update without its tensor or gate");
    check_same_shape("add_norm_modulate", x, "d", *updates.d[i]);
    op_require(updates.gate[i]->numel() == x.cols(), "add_norm_modulate", "gate size");
  }
  run_op(hook_, sum == SumTo::X ? "core.add_norm_modulate" : "core.add_norm_modulate (sum not stored)",
         [&] { do_add_norm_modulate(x, updates, sum, w, eps, shift, scale, y); });
}

void CoreOps::norm_modulate_quantized(const Tensor& x, const Tensor& w, float eps, const Tensor& shift,
                                      const Tensor& scale, QuantizedRows& yq, Tensor* y) {
  check_quantized("norm_modulate_quantized", yq, x.rows(), x.cols());
  if (y) check_same_shape("norm_modulate_quantized", x, "y", *y);
  // add_norm_modulate's body with no update: x is only read (nothing to store).
  Tensor& xs = const_cast<Tensor&>(x);
  run_op(hook_, [&] { return quantizing_call("core.norm_modulate_quantized", yq); },
         [&] { do_add_norm_modulate_quantized(xs, GatedUpdates(), SumTo::X, w, eps, shift, scale, yq, y); });
}

void CoreOps::add_norm_modulate_quantized(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w,
                                          float eps, const Tensor& shift, const Tensor& scale, QuantizedRows& yq,
                                          Tensor* y) {
  const char* op = "add_norm_modulate_quantized";
  check_quantized(op, yq, x.rows(), x.cols());
  if (y) check_same_shape(op, x, "y", *y);
  // (a measuring backend's tensors have no storage: null data is no alias)
  op_require(!y || !x.data || y->data != x.data, op, "y must not be x");
  op_require(updates.count >= 1 && updates.count <= GatedUpdates::kMax, op,
             "1 to " + std::to_string(GatedUpdates::kMax) + " updates, got " + std::to_string(updates.count));
  for (int i = 0; i < updates.count; ++i) {
    op_require(updates.d[i] && updates.gate[i], op, "an update without its tensor or gate");
    check_same_shape(op, x, "d", *updates.d[i]);
    op_require(updates.gate[i]->numel() == x.cols(), op, "gate size");
  }
  run_op(hook_,
         [&] {
           return quantizing_call(sum == SumTo::X ? "core.add_norm_modulate_quantized"
                                                  : "core.add_norm_modulate_quantized (sum not stored)",
                                  yq);
         },
         [&] { do_add_norm_modulate_quantized(x, updates, sum, w, eps, shift, scale, yq, y); });
}

void CoreOps::norm_rope(const Tensor& x, const Tensor& w, float eps, int64_t head_dim, const Tensor& sin,
                        const Tensor& cos, Tensor& y) {
  check_same_shape("norm_rope", x, "y", y);
  run_op(hook_, "core.norm_rope", [&] { do_norm_rope(x, w, eps, head_dim, sin, cos, y); });
}

void CoreOps::add(Tensor& x, const Tensor& d, const Tensor* gate) {
  check_same_shape("add", x, "d", d);
  op_require(!gate || gate->numel() == x.cols(), "add", "gate size");
  run_op(hook_, gate ? "core.add (gated)" : "core.add", [&] { do_add(x, d, gate); });
}

void CoreOps::gated_unit(GatedUnit kind, const Tensor& a, const Tensor& b, Tensor& out) {
  check_same_shape("gated_unit", a, "b", b);
  check_same_shape("gated_unit", a, "out", out);
  run_op(hook_, unit_name(kind), [&] { do_gated_unit(kind, a, b, out); });
}

void CoreOps::gated_unit_quantized(GatedUnit kind, const Tensor& a, const Tensor& b, QuantizedRows& outq,
                                   Tensor* out) {
  check_same_shape("gated_unit_quantized", a, "b", b);
  check_quantized("gated_unit_quantized", outq, a.rows(), a.cols());
  if (out) check_same_shape("gated_unit_quantized", a, "out", *out);
  run_op(hook_, [&] { return quantizing_call(std::string(unit_name(kind)) + " quantized", outq); },
         [&] { do_gated_unit_quantized(kind, a, b, outq, out); });
}

void CoreOps::silu(const Tensor& x, Tensor& y) {
  check_same_shape("silu", x, "y", y);
  run_op(hook_, "core.silu", [&] { do_silu(x, y); });
}

void CoreOps::rope(Tensor& x, const Tensor& sin, const Tensor& cos, int64_t head_dim, int64_t rot_dim) {
  op_require(head_dim > 0 && x.cols() % head_dim == 0 && rot_dim % 2 == 0 && rot_dim <= head_dim, "rope",
             "head_dim " + std::to_string(head_dim) + " / rot_dim " + std::to_string(rot_dim) + " do not fit x " +
                 x.shape_str());
  op_require(sin.rows() == x.rows() && cos.rows() == x.rows(), "rope",
             "table shape " + sin.shape_str() + " for x " + x.shape_str());
  run_op(hook_, "core.rope", [&] { do_rope(x, sin, cos, head_dim, rot_dim); });
}

void CoreOps::attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads,
                        int64_t kv_heads, int64_t head_dim, float scale, bool causal) {
  run_op(hook_,
         [&] { return OpCall{std::string("core.attention") + (causal ? " causal" : "") + " " + dtype_name(q.dtype)}; },
         [&] { do_attention(q, k, v, out, heads, kv_heads, head_dim, scale, causal); });
}

void CoreOps::norm_rope_attention(Tensor& q, const Tensor& w, float eps, const Tensor& sin, const Tensor& cos,
                                  const Tensor& k, const Tensor& v, Tensor& out, int64_t heads, int64_t head_dim,
                                  float scale, bool v_transposed) {
  op_require(heads > 0 && head_dim > 0 && q.cols() == heads * head_dim, "norm_rope_attention",
             "q " + q.shape_str() + " is not [T, " + std::to_string(heads) + " x " + std::to_string(head_dim) + "]");
  op_require(sin.rows() == q.rows() && cos.rows() == q.rows(), "norm_rope_attention",
             "table shape " + sin.shape_str() + " for q " + q.shape_str());
  check_same_shape("norm_rope_attention", q, "out", out);
  if (v_transposed) {
    const int64_t keys = transposed_v_keys(k.rows());
    op_require(v.rows() == heads * head_dim && v.cols() >= keys, "norm_rope_attention",
               "transposed v " + v.shape_str() + " is not [" + std::to_string(heads * head_dim) + ", >= " +
                   std::to_string(keys) + "] for k " + k.shape_str());
  }
  run_op(hook_,
         [&] {
           return OpCall{std::string("core.norm_rope_attention ") + dtype_name(q.dtype) + (v_transposed ? " vt" : "")};
         },
         [&] { do_norm_rope_attention(q, w, eps, sin, cos, k, v, out, heads, head_dim, scale, v_transposed); });
}

bool CoreOps::attention_int8_qk(int64_t) const { return false; }

namespace {
constexpr const char* kNoInt8Qk = "this backend has no int8 QK^T attention (docs/attention_int8_qk.md)";

void check_quantized_keys(const char* op, const CoreOps::QuantizedKeys& kq, int64_t keys, int64_t heads,
                          int64_t head_dim) {
  const int64_t keys_pad = CoreOps::transposed_v_keys(keys);
  op_require(keys > 0 && kq.keys == keys, op,
             "quantized keys hold " + std::to_string(kq.keys) + " keys, not " + std::to_string(keys));
  op_require(kq.q.dtype == DType::I8 && kq.q.rank == 2 && kq.q.rows() == heads * keys_pad &&
                 kq.q.cols() == head_dim && kq.q.contiguous(),
             op, "quantized keys " + kq.q.shape_str() + " " + dtype_name(kq.q.dtype) + " are not contiguous I8 [" +
                     std::to_string(heads * keys_pad) + ", " + std::to_string(head_dim) + "]");
  const int64_t blocks = heads * keys_pad / CoreOps::kInt8KeyBlock;
  op_require(kq.scale.dtype == DType::F32 && kq.scale.numel() == blocks && kq.scale.contiguous(), op,
             "quantized keys' scale " + kq.scale.shape_str() + " " + dtype_name(kq.scale.dtype) +
                 " is not contiguous F32 [" + std::to_string(blocks) + ", 1]");
  op_require(kq.q.where == kq.scale.where, op, "quantized keys and their scales live in different places");
}
}  // namespace

void CoreOps::quantize_keys(const Tensor& k, int64_t heads, int64_t head_dim, QuantizedKeys& kq) {
  op_require(heads > 0 && head_dim > 0 && k.cols() == heads * head_dim, "quantize_keys",
             "k " + k.shape_str() + " is not [T, " + std::to_string(heads) + " x " + std::to_string(head_dim) + "]");
  check_quantized_keys("quantize_keys", kq, k.rows(), heads, head_dim);
  run_op(hook_, [&] { return OpCall{std::string("core.quantize_keys ") + dtype_name(k.dtype)}; },
         [&] { do_quantize_keys(k, heads, head_dim, kq); });
}

void CoreOps::norm_rope_attention_int8_qk(Tensor& q, const Tensor& w, float eps, const Tensor& sin,
                                          const Tensor& cos, const QuantizedKeys& kq, const Tensor& v, Tensor& out,
                                          int64_t heads, int64_t head_dim, float scale, bool v_transposed) {
  const char* op = "norm_rope_attention_int8_qk";
  op_require(heads > 0 && head_dim > 0 && q.cols() == heads * head_dim, op,
             "q " + q.shape_str() + " is not [T, " + std::to_string(heads) + " x " + std::to_string(head_dim) + "]");
  op_require(sin.rows() == q.rows() && cos.rows() == q.rows(), op,
             "table shape " + sin.shape_str() + " for q " + q.shape_str());
  check_same_shape(op, q, "out", out);
  check_quantized_keys(op, kq, kq.keys, heads, head_dim);
  if (v_transposed) {
    const int64_t keys = transposed_v_keys(kq.keys);
    op_require(v.rows() == heads * head_dim && v.cols() >= keys, op,
               "transposed v " + v.shape_str() + " is not [" + std::to_string(heads * head_dim) + ", >= " +
                   std::to_string(keys) + "] for " + std::to_string(kq.keys) + " keys");
  } else {
    op_require(v.rows() == kq.keys && v.cols() == heads * head_dim, op,
               "v " + v.shape_str() + " is not [" + std::to_string(kq.keys) + ", " + std::to_string(heads * head_dim) +
                   "]");
  }
  run_op(hook_,
         [&] {
           return OpCall{std::string("core.norm_rope_attention_int8_qk ") + dtype_name(q.dtype) +
                         (v_transposed ? " vt" : "")};
         },
         [&] { do_norm_rope_attention_int8_qk(q, w, eps, sin, cos, kq, v, out, heads, head_dim, scale, v_transposed); });
}

void CoreOps::do_quantize_keys(const Tensor&, int64_t, int64_t, QuantizedKeys&) {
  op_require(false, "quantize_keys", kNoInt8Qk);
}
void CoreOps::do_norm_rope_attention_int8_qk(Tensor&, const Tensor&, float, const Tensor&, const Tensor&,
                                             const QuantizedKeys&, const Tensor&, Tensor&, int64_t, int64_t, float,
                                             bool) {
  op_require(false, "norm_rope_attention_int8_qk", kNoInt8Qk);
}

void CoreOps::quantize_values_fp8(const Tensor& vt, int64_t keys, Fp8Values& out) {
  const char* op = "quantize_values_fp8";
  const int64_t keys_pad = transposed_v_keys(keys);
  op_require(keys > 0, op, "keys must be positive, not " + std::to_string(keys));
  op_require(vt.rank == 2 && vt.cols() == keys_pad && vt.rows() > 0, op,
             "vt " + vt.shape_str() + " is not V^T [rows, " + std::to_string(keys_pad) + "] for " +
                 std::to_string(keys) + " keys");
  op_require(out.keys == keys, op, "fp8 values hold " + std::to_string(out.keys) + " keys, not " + std::to_string(keys));
  op_require(out.codes.dtype == DType::U8 && out.codes.rank == 2 && out.codes.rows() == vt.rows() &&
                 out.codes.cols() == keys_pad && out.codes.contiguous(),
             op, "codes " + out.codes.shape_str() + " " + dtype_name(out.codes.dtype) + " are not contiguous U8 [" +
                     std::to_string(vt.rows()) + ", " + std::to_string(keys_pad) + "]");
  op_require(out.scale.dtype == DType::F32 && out.scale.numel() == vt.rows() && out.scale.contiguous(), op,
             "scale " + out.scale.shape_str() + " " + dtype_name(out.scale.dtype) + " is not contiguous F32 [" +
                 std::to_string(vt.rows()) + ", 1]");
  op_require(out.codes.where == out.scale.where && out.codes.where == vt.where, op,
             "vt, codes and scale live in different places");
  run_op(hook_, [&] { return OpCall{std::string("core.quantize_values_fp8 ") + dtype_name(vt.dtype)}; },
         [&] { do_quantize_values_fp8(vt, keys, out); });
}

void CoreOps::do_quantize_values_fp8(const Tensor&, int64_t, Fp8Values&) {
  op_require(false, "quantize_values_fp8", "this backend has no fp8 P.V values (docs/attention_int8_qk.md)");
}

void CoreOps::embedding(const std::vector<int32_t>& ids, const Tensor& table, Tensor& out) {
  op_require(out.rows() == int64_t(ids.size()) && out.cols() == table.cols(), "embedding",
             "out " + out.shape_str() + " is not [ids, table columns]");
  run_op(hook_, "core.embedding", [&] { do_embedding(ids, table, out); });
}

void CoreOps::copy(const Tensor& src, Tensor& dst) {
  check_same_shape("copy", src, "dst", dst);
  run_op(hook_, src.where == Where::Host ? "core.copy (from host)" : "core.copy", [&] { do_copy(src, dst); });
}

}  // namespace moss
