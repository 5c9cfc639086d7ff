// The text family's public ops: the operand checks every backend shares (shapes; where a tensor
// lives and its dtype are the backend's to check), then the backend's body inside the hook
// (ops/op_hook.h).
#include "ops/text_ops.h"

#include <initializer_list>
#include <string>

namespace moss {

void TextOps::causal_conv1d_silu(const Tensor& x, const Tensor& w, Tensor& y) {
  const char* op = "causal_conv1d_silu";
  op_require(w.rows() == x.cols() && w.cols() > 0, op, "weight " + w.shape_str() + " for " + x.shape_str());
  op_require(y.rows() == x.rows() && y.cols() == x.cols(), op, "y shape");
  run_op(hook_, "text.causal_conv1d_silu", [&] { do_causal_conv1d_silu(x, w, y); });
}

void TextOps::deltanet_gates(const Tensor& a, const Tensor& b, const Tensor& a_log, const Tensor& dt_bias, Tensor& g,
                             Tensor& beta) {
  const char* op = "deltanet_gates";
  const int64_t T = a.rows(), H = a.cols();
  for (const Tensor* t : std::initializer_list<const Tensor*>{&b, &g, &beta})
    op_require(t->rows() == T && t->cols() == H, op, "shape " + t->shape_str() + " vs " + a.shape_str());
  op_require(a_log.numel() == H && dt_bias.numel() == H, op, "A_log/dt_bias size");
  run_op(hook_, "text.deltanet_gates", [&] { do_deltanet_gates(a, b, a_log, dt_bias, g, beta); });
}

void TextOps::l2_norm(const Tensor& x, float eps, int64_t group, Tensor& y) {
  op_require(group > 0 && x.cols() % group == 0, "l2_norm", "group must divide the columns");
  op_require(y.rows() == x.rows() && y.cols() == x.cols(), "l2_norm", "y shape");
  run_op(hook_, "text.l2_norm", [&] { do_l2_norm(x, eps, group, y); });
}

void TextOps::delta_rule_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                 const Tensor& beta, int64_t key_heads, float scale, int64_t chunk, Tensor* state,
                                 Tensor& out) {
  const char* op = "delta_rule_chunked";
  const int64_t T = q.rows(), value_heads = g.cols();
  op_require(key_heads > 0 && value_heads > 0 && value_heads % key_heads == 0, op,
             "value heads must be a multiple of key heads");
  op_require(q.cols() % key_heads == 0 && k.cols() == q.cols(), op,
             "q/k columns " + q.shape_str() + " " + k.shape_str());
  op_require(v.cols() % value_heads == 0 && out.cols() == v.cols(), op, "v/out columns");
  for (const Tensor* t : std::initializer_list<const Tensor*>{&k, &v, &g, &beta, &out})
    op_require(t->rows() == T, op, "row counts differ");
  op_require(beta.cols() == value_heads, op, "beta columns");
  op_require(chunk > 0, op, "chunk must be positive");
  const int64_t dk = q.cols() / key_heads, dv = v.cols() / value_heads;
  op_require(!state || (state->contiguous() && state->numel() == value_heads * dk * dv), op,
             "state must be contiguous f32 [value_heads, dk, dv]");
  run_op(hook_, "text.delta_rule_chunked",
         [&] { do_delta_rule_chunked(q, k, v, g, beta, key_heads, scale, chunk, state, out); });
}

void TextOps::gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, int64_t group, Tensor& y) {
  const char* op = "gated_rms_norm";
  const int64_t M = x.rows(), C = x.cols();
  op_require(group > 0 && C % group == 0 && w.numel() == group, op, "group/weight size");
  op_require(z.rows() == M && z.cols() == C && y.rows() == M && y.cols() == C, op, "shapes");
  run_op(hook_, "text.gated_rms_norm", [&] { do_gated_rms_norm(x, z, w, eps, group, y); });
}

}  // namespace moss
