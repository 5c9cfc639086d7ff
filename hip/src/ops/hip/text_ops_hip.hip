// The HIP text-encoder op family (ops/text_ops.h) on device tensors: each op checks its operands
// (messages name the op and the operand, as the host replay's do) and launches its kernel on
// ctx.stream() — kernels/text_rows for the row-wise ops, kernels/deltanet for the delta rule.
// Activations are f32 device matrices (any row stride, unit column stride); parameters (conv
// weight, A_log, dt_bias, norm weight) are f32 or bf16 device tensors.
#include <initializer_list>
#include <string>

#include "kernels/deltanet.h"
#include "kernels/text_rows.h"
#include "ops/hip/hip_context.h"

namespace moss {
namespace {

// An f32 activation matrix on the device in the ops' 2-D reading.
void check_matrix(const Tensor& t, const char* op, const char* what) {
  op_require(t.where == Where::Device, op, std::string(what) + " must be on the device");
  op_require(t.dtype == DType::F32, op, std::string(what) + " must be f32, not " + dtype_name(t.dtype));
  op_require(t.rank >= 1 && (t.stride[t.rank - 1] == 1 || t.cols() == 1), op,
             std::string(what) + " " + t.shape_str() + " needs a unit column stride");
  op_require(t.rank <= 2 || t.contiguous(), op, std::string(what) + " " + t.shape_str() + " must be 2-D or contiguous");
  op_require(t.rows() <= 0x7fffffff && t.cols() <= 0x7fffffff, op, std::string(what) + " is too large");
}

// An operand and its name in the op's messages.
struct Named {
  const Tensor& t;
  const char* what;
};

// check_matrix for each operand, in the order given (the first bad one is the one named).
void check_matrices(const char* op, std::initializer_list<Named> operands) {
  for (const Named& m : operands) check_matrix(m.t, op, m.what);
}

// A parameter tensor (weights, per-head vectors): device, f32 or bf16, contiguous.
void check_param(const Tensor& t, const char* op, const char* what) {
  op_require(t.where == Where::Device, op,
             std::string(what) + " must be on the device (upload it through the backend)");
  op_require(t.dtype == DType::F32 || t.dtype == DType::BF16, op,
             std::string(what) + " must be f32 or bf16, not " + dtype_name(t.dtype));
  op_require(t.contiguous(), op, std::string(what) + " " + t.shape_str() + " must be contiguous");
}

// Calls fn with the parameter's device pointer typed by its dtype (float or bf16).
template <class Fn>
void with_param(const Tensor& t, Fn fn) {
  if (t.dtype == DType::BF16) fn(static_cast<const bf16*>(t.data));
  else fn(static_cast<const float*>(t.data));
}

const float* in(const Tensor& t) { return static_cast<const float*>(t.data); }
float* out(const Tensor& t) { return static_cast<float*>(t.data); }

// The gated delta rule's operands as kernel arguments (their shapes checked by the public op,
// ops/text_ops.cpp; here what the device needs).
DeltaRuleArgs delta_args(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                         const Tensor& beta, int64_t key_heads, float scale, Tensor* state, Tensor& o) {
  check_matrices(op, {{q, "q"}, {k, "k"}, {v, "v"}, {g, "g"}, {beta, "beta"}, {o, "out"}});
  const int64_t T = q.rows(), value_heads = g.cols();
  DeltaRuleArgs a;
  a.q = in(q), a.k = in(k), a.v = in(v), a.g = in(g), a.beta = in(beta), a.out = out(o);
  a.ldq = q.row_stride(), a.ldk = k.row_stride(), a.ldv = v.row_stride(), a.ldg = g.row_stride();
  a.ldbeta = beta.row_stride(), a.ldo = o.row_stride();
  a.T = int(T), a.key_heads = int(key_heads), a.value_heads = int(value_heads);
  a.dk = int(q.cols() / key_heads), a.dv = int(v.cols() / value_heads);
  a.scale = scale;
  op_require(delta_rule_dims_supported(a.dk, a.dv), op,
             "head dims dk=" + std::to_string(a.dk) + " dv=" + std::to_string(a.dv) +
                 " have no GPU kernel (128/128 and 32/32 are built)");
  if (state) {
    op_require(state->where == Where::Device && state->dtype == DType::F32, op, "state must be an f32 device tensor");
    a.state = out(*state);
  }
  return a;
}

class HipTextOps : public TextOps {
 public:
  explicit HipTextOps(HipContext& ctx) : ctx_(ctx) {}

  void do_causal_conv1d_silu(const Tensor& x, const Tensor& w, Tensor& y) override {
    const char* op = "causal_conv1d_silu";
    check_matrices(op, {{x, "x"}, {y, "y"}});
    check_param(w, op, "weight");
    const int64_t T = x.rows(), C = x.cols(), K = w.cols();
    with_param(w, [&](auto* wp) {
      text_causal_conv1d_silu(in(x), x.row_stride(), wp, w.row_stride(), out(y), y.row_stride(), int(T), int(C),
                              int(K), ctx_.stream());
    });
  }

  void do_deltanet_gates(const Tensor& a, const Tensor& b, const Tensor& a_log, const Tensor& dt_bias, Tensor& g,
                         Tensor& beta) override {
    const char* op = "deltanet_gates";
    check_matrices(op, {{a, "a"}, {b, "b"}, {g, "g"}, {beta, "beta"}});
    check_param(a_log, op, "A_log");
    check_param(dt_bias, op, "dt_bias");
    const int64_t T = a.rows(), H = a.cols();
    with_param(a_log, [&](auto* al) {
      with_param(dt_bias, [&](auto* db) {
        text_deltanet_gates(in(a), a.row_stride(), in(b), b.row_stride(), al, db, out(g), g.row_stride(), out(beta),
                            beta.row_stride(), int(T), int(H), ctx_.stream());
      });
    });
  }

  void do_l2_norm(const Tensor& x, float eps, int64_t group, Tensor& y) override {
    const char* op = "l2_norm";
    check_matrices(op, {{x, "x"}, {y, "y"}});
    text_l2_norm(in(x), x.row_stride(), out(y), y.row_stride(), int(x.rows()), int(x.cols()), int(group), eps,
                 ctx_.stream());
  }

  void do_delta_rule_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                             int64_t key_heads, float scale, int64_t chunk, Tensor* state, Tensor& o) override {
    const char* op = "delta_rule_chunked";
    const DeltaRuleArgs a = delta_args(op, q, k, v, g, beta, key_heads, scale, state, o);
    op_require(chunk == kDeltaRuleChunk, op,
               "chunk " + std::to_string(chunk) + ": the GPU kernels use blocks of " +
                   std::to_string(kDeltaRuleChunk));
    if (a.T == 0) return;
    void* scratch = ctx_.scratch(delta_rule_chunked_scratch_bytes(a.T, a.value_heads, a.dk, a.dv));
    moss::delta_rule_chunked(a, DeltaPrecision::SplitBf16, scratch, ctx_.stream());
  }

  void do_gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, int64_t group,
                         Tensor& y) override {
    const char* op = "gated_rms_norm";
    check_matrices(op, {{x, "x"}, {z, "z"}, {y, "y"}});
    check_param(w, op, "weight");
    const int64_t M = x.rows(), C = x.cols();
    with_param(w, [&](auto* wp) {
      text_gated_rms_norm(in(x), x.row_stride(), in(z), z.row_stride(), wp, out(y), y.row_stride(), int(M), int(C),
                          int(group), eps, ctx_.stream());
    });
  }

 private:
  HipContext& ctx_;
};

}  // namespace

std::unique_ptr<TextOps> make_hip_text_ops(HipContext& ctx) { return std::make_unique<HipTextOps>(ctx); }

}  // namespace moss
