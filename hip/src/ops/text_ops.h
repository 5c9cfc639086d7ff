// The op interface, text-encoder family (Qwen3.5): what the Gated DeltaNet layers need beyond
// the core family. Each op is one kernel on the GPU backend. Conventions are those of
// core_ops.h: activations are f32 row-major matrices (any row stride, unit column stride),
// weights/parameters bf16 or f32, outputs allocated by the caller, no aliasing unless stated.
//
// DeltaNet shapes, per token row: q and k hold `key_heads` heads of dk columns, v and the
// output `value_heads` heads of dv columns; value head h reads key head h / (value_heads /
// key_heads) (consecutive value heads share a key head). g and beta are [T, value_heads].
#pragma once
#include <cstdint>

#include "tensor/tensor.h"

namespace moss {

class TextOps {
 public:
  virtual ~TextOps() = default;

  // Causal depthwise convolution over time followed by SiLU, zero history before row 0:
  //   y[t, c] = silu( Σ_{j<K} w[c, j] · x[t − (K−1) + j, c] )
  // x, y [T, C]; w [C, K] (the checkpoint's conv1d.weight [C, 1, K] read as rows x cols).
  virtual void causal_conv1d_silu(const Tensor& x, const Tensor& w, Tensor& y) = 0;

  // The DeltaNet gates, in fp32: g = −exp(A_log) · softplus(a + dt_bias) (the log-decay,
  // softplus with threshold 20) and beta = σ(b). a, b, g, beta [T, H]; A_log, dt_bias [H].
  virtual void deltanet_gates(const Tensor& a, const Tensor& b, const Tensor& a_log, const Tensor& dt_bias,
                              Tensor& g, Tensor& beta) = 0;

  // L2 normalisation over each run of `group` columns: y = x · rsqrt(Σ x² + eps). Note the
  // eps inside the root of the plain sum (not the mean). y may alias x.
  virtual void l2_norm(const Tensor& x, float eps, int64_t group, Tensor& y) = 0;

  // The gated delta rule, per value head with an fp32 state S [dk, dv] (S₀ = `state` or 0):
  //   S ← exp(g_t)·S;  u = beta_t·(v_t − Sᵀk_t);  S ← S + k_t uᵀ;  out_t = Sᵀ(scale·q_t).
  // q and k come l2-normalised; `scale` (dk^−½) multiplies q inside, as the reference does.
  // `state` (optional, f32 [value_heads, dk, dv], contiguous) gives the initial state and
  // receives the final one. The two forms are the same algebra:
  //  - chunked: blocks of `chunk` tokens, intra-block terms through a unit lower-triangular
  //    solve, the state carried block to block (the prefill form, C = 64 in the reference);
  //  - recurrent: token by token (the cross-check, and the form for decoding one token).
  virtual void delta_rule_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                  const Tensor& beta, int64_t key_heads, float scale, int64_t chunk, Tensor* state,
                                  Tensor& out) = 0;
  virtual void delta_rule_recurrent(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                                    const Tensor& beta, int64_t key_heads, float scale, Tensor* state,
                                    Tensor& out) = 0;

  // The DeltaNet output norm, over each run of `group` columns (one head):
  //   y = (x · rsqrt(mean(x²) + eps)) · w · silu(z)
  // with the plain weight w of `group` elements shared by every head. z like x.
  virtual void gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, int64_t group,
                              Tensor& y) = 0;
};

}  // namespace moss
