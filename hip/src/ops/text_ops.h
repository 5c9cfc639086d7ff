// The op interface, text-encoder family (Qwen3.5): what the Gated DeltaNet layers need beyond
// the core family. Each op is one kernel on the GPU backend. Conventions are those of
// core_ops.h: activations are f32 row-major matrices (any row stride, unit column stride),
// weights/parameters bf16 or f32, outputs allocated by the caller, no aliasing unless stated.
//
// DeltaNet shapes, per token row: q and k hold `key_heads` heads of dk columns, v and the
// output `value_heads` heads of dv columns; value head h reads key head h / (value_heads /
// key_heads) (consecutive value heads share a key head). g and beta are [T, value_heads].
// The public ops are non-virtual: each checks its operands once for every backend
// (ops/text_ops.cpp), then runs the backend's body do_<op> inside the family's hook (ops/op_hook.h).
#pragma once
#include <cstdint>

#include "ops/op_hook.h"
#include "tensor/tensor.h"

namespace moss {

class TextOps : public OpFamily {
 public:

  // Causal depthwise convolution over time followed by SiLU, zero history before row 0:
  //   y[t, c] = silu( Σ_{j<K} w[c, j] · x[t − (K−1) + j, c] )
  // x, y [T, C]; w [C, K] (the checkpoint's conv1d.weight [C, 1, K] read as rows x cols).
  void causal_conv1d_silu(const Tensor& x, const Tensor& w, Tensor& y);

  // The DeltaNet gates, in fp32: g = −exp(A_log) · softplus(a + dt_bias) (the log-decay,
  // softplus with threshold 20) and beta = σ(b). a, b, g, beta [T, H]; A_log, dt_bias [H].
  void deltanet_gates(const Tensor& a, const Tensor& b, const Tensor& a_log, const Tensor& dt_bias,
                      Tensor& g, Tensor& beta);

  // L2 normalisation over each run of `group` columns: y = x · rsqrt(Σ x² + eps). Note the
  // eps inside the root of the plain sum (not the mean). y may alias x.
  void l2_norm(const Tensor& x, float eps, int64_t group, Tensor& y);

  // The gated delta rule, per value head with an fp32 state S [dk, dv] (S₀ = `state` or 0):
  //   S ← exp(g_t)·S;  u = beta_t·(v_t − Sᵀk_t);  S ← S + k_t uᵀ;  out_t = Sᵀ(scale·q_t).
  // q and k come l2-normalised; `scale` (dk^−½) multiplies q inside, as the reference does.
  // `state` (optional, f32 [value_heads, dk, dv], contiguous) gives the initial state and
  // receives the final one. Computed in blocks of `chunk` tokens, intra-block terms through a
  // unit lower-triangular solve, the state carried block to block (the prefill form, C = 64 in
  // the reference). The token-by-token form of the same algebra is the tests' cross-check
  // (tests/unit/test_deltanet.cpp); the product never decodes, so no backend carries it.
  void delta_rule_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                          const Tensor& beta, int64_t key_heads, float scale, int64_t chunk, Tensor* state,
                          Tensor& out);

  // The DeltaNet output norm, over each run of `group` columns (one head):
  //   y = (x · rsqrt(mean(x²) + eps)) · w · silu(z)
  // with the plain weight w of `group` elements shared by every head. z like x.
  void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, int64_t group,
                      Tensor& y);

 protected:
  // The backends' bodies, each called only by the public op of its name once that op's shared
  // checks have passed; a body checks only its own conditions (where the tensors live, the
  // dtypes its kernels take, storage).
  virtual void do_causal_conv1d_silu(const Tensor& x, const Tensor& w, Tensor& y) = 0;
  virtual void do_deltanet_gates(const Tensor& a, const Tensor& b, const Tensor& a_log, const Tensor& dt_bias,
                                 Tensor& g, Tensor& beta) = 0;
  virtual void do_l2_norm(const Tensor& x, float eps, int64_t group, Tensor& y) = 0;
  virtual void do_delta_rule_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                     const Tensor& beta, int64_t key_heads, float scale, int64_t chunk, Tensor* state,
                                     Tensor& out) = 0;
  virtual void do_gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, int64_t group,
                                 Tensor& y) = 0;
};

}  // namespace moss
