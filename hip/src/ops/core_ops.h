// The op interface, core family: matrix products, norms, gates, RoPE, attention, gather.
// Every op is implemented twice: by the host reference (ops/host, plain C++, fp32
// accumulation, the kernels' operation order) and by the HIP kernels (ops/hip).
//
// Conventions shared by every op:
// - Activations are 2-D readings of tensors: rows x cols, unit column stride, any row stride
//   (so a column slice of a fused projection is a valid operand). Activations are f32 on the
//   host backend; the HIP backend may keep them in bf16 where its kernels say so.
// - Weights are [out, in] (PyTorch nn.Linear layout), bf16 or f32; biases bf16 or f32.
// - Output tensors are allocated by the caller; ops never allocate.
//
// Each public op is non-virtual: it checks the operands' shapes once for every backend
// (ops/core_ops.cpp), then runs the backend's body, the protected virtual do_<op>, inside the
// family's hook (ops/op_hook.h). A backend overrides the bodies; nothing overrides the ops.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/op_kinds.h"  // NormWeight, GatedUnit
#include "ops/op_hook.h"
#include "tensor/tensor.h"

namespace moss {

// A residual stream's pending gated updates, x + d₀·gate₀ (+ d₁·gate₁), added in that order,
// each as CoreOps::add computes x + d·gate (the DiT's o and ffn_down outputs; model/dit.cpp
// RowState). Holds pointers: the tensors must outlive it.
struct GatedUpdates {
  static constexpr int kMax = 2;
  const Tensor* d[kMax] = {nullptr, nullptr};
  const Tensor* gate[kMax] = {nullptr, nullptr};
  int count = 0;
  GatedUpdates& then(const Tensor& di, const Tensor& gi);  // one more, after the others
};

// Where CoreOps::add_norm_modulate puts x plus its updates: back into x, or nowhere.
enum class SumTo { X, Nowhere };

// An activation's rows rotated and quantized for the INT8 ConvRot linear (docs/int8_convrot.md
// sections 2-3, section 9 for who writes them): row r of the activation rotated by
// convrot::rotate_groups over groups of `group` columns, then convrot::quantize_row's int8 values
// q[r] and scale[r] (NaN with a row of zeros for a non-finite row). Written by rotate_quantize or
// straight by the op that produces the activation (norm_modulate_quantized,
// add_norm_modulate_quantized, gated_unit_quantized: from their fp32 values, before any bf16
// rounding), read by linear_int8; one quantization serves every layer of that input and group
// (the DiT's q, k and v). Allocated by the caller on the backend, like every output.
struct QuantizedRows {
  Tensor q;           // I8 [M, K], contiguous
  Tensor scale;       // F32 [M, 1], contiguous
  int64_t group = 0;  // a power of 4 dividing K
  int64_t rows() const { return q.rows(); }
  int64_t cols() const { return q.cols(); }
  QuantizedRows slice_rows(int64_t r0, int64_t n) const { return {q.slice_rows(r0, n), scale.slice_rows(r0, n), group}; }
};

class CoreOps : public OpFamily {
 public:

  // y[M,N] = x[M,K] · w[N,K]ᵀ (+ bias[N]); fp32 accumulation.
  void linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);

  // The INT8 ConvRot linear (docs/int8_convrot.md section 4): every row of x rotated by
  // convrot::rotate_groups over groups of `group` columns and quantized by convrot::quantize_row
  // (q_x, s_x[r]); then A = q_x·q_wᵀ in int32, exact, and y[r, o] = float(A[r, o])·(s_x[r]·
  // w_scale[o]) + bias[o], in that order. q_w: I8 [N, K], the rotated weight quantized per row;
  // w_scale: f32, N elements ([N] or ComfyUI's [N, 1]); bias: bf16 or f32 [N], or none; group: a
  // power of 4 dividing K; K at most 132104 (the int32 sum cannot overflow). The host reference
  // and the HIP backend (bit-identical, docs/int8_convrot.md section 9) have bodies; others refuse.
  void linear_int8(const Tensor& x, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias, int64_t group,
                   Tensor& y);
  // linear_int8's two halves, so that one quantization serves several layers and the op that
  // produces an activation can quantize it itself: rotate_quantize writes xq from x (f32 or, on
  // the GPU, bf16) with xq.group; the product reads xq (its group must be the weight's). The
  // x-taking linear_int8 is exactly the two in sequence (the same bits).
  void rotate_quantize(const Tensor& x, QuantizedRows& xq);
  void linear_int8(const QuantizedRows& xq, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias, Tensor& y);

  // The product stored transposed: yt [N, P] (P >= M >= 1, any row stride) receives
  // yt[c][r] = (x·wᵀ)[r][c] for r < M and 0 for M <= r < P; fp32 accumulation, no bias. The
  // DiT's v projection written as the zero-padded Vᵀ its attention reads, where
  // attention_reads_transposed_v says the backend's attention wants it so.
  void linear_transposed(const Tensor& x, const Tensor& w, Tensor& yt);

  // A gated unit on a product's two halves in one: with w [2F, K] (bias [2F]) and
  // t = x·wᵀ + bias [M, 2F], out[M, F] = gated_unit(kind, t[:, :F], t[:, F:]) (the DiT's fused
  // ffn_up_gate weight: hidden rows, then gate rows). Defined as linear then gated_unit in fp32;
  // a backend may apply the unit in the GEMM's epilogue, straight from the fp32 accumulators, or
  // materialise t first, in out's dtype (the HIP backend's fallback, bf16 like the official
  // pipeline's projection outputs).
  void linear_gated_unit(GatedUnit kind, const Tensor& x, const Tensor& w, const Tensor* bias,
                         Tensor& out);
  // The same on the INT8 ConvRot linear: with q_w I8 [2F, K] (hidden rows, then gate rows),
  // w_scale F32 of 2F elements and bias [2F] or none, out (F32 [M, F]) gets gated_unit(kind,
  // t[:, :F], t[:, F:]) of t = linear_int8(xq, q_w, w_scale, bias) in fp32: defined as those two
  // ops in sequence, the same bits (the unit's fp32 operations in gated_unit's order, applied to
  // linear_int8's fp32 outputs). The HIP backend applies the unit in the int8 leaf GEMM's
  // epilogue, so no [M, 2F] product is written and read back (docs/int8_convrot.md section 9);
  // the INT8 DiT's FFN then quantizes out for ffn_down with rotate_quantize.
  void linear_int8_gated_unit(GatedUnit kind, const QuantizedRows& xq, const Tensor& q_w, const Tensor& w_scale,
                              const Tensor* bias, Tensor& out);
  // Whether an INT8 FFN should take its unit from linear_int8_gated_unit (then rotate_quantize)
  // rather than from linear_int8's f32 product and gated_unit_quantized: the same bits either way,
  // a question of speed. Yes by default and on the portable kernels (AMD's: a leaf GEMM bound by
  // its matrix rate takes the unit's instructions nearly free, and writes half the bytes); no on
  // NVIDIA's native path, whose wgmma GEMM would run the unit while its tensor cores idle (H100,
  // session 25: 0.7555 ms in the epilogue against 0.5851 for the GEMM and a pass at 4160x3072x16384).
  virtual bool int8_unit_in_gemm_epilogue() const;

  // RMS norm over each run of `group` consecutive columns of each row (group = cols for a
  // whole-row norm, head_dim for per-head norms): n = x·rsqrt(mean(x²)+eps) in fp32, then
  // n·w (Mul) or n·(1+w) (OnePlus) with w of `group` elements, or n alone (None). y may be x.
  void rms_norm(const Tensor& x, const Tensor* w, NormWeight mode, float eps, int64_t group,
                Tensor& y);

  // The DiT's pre-GEMM pass in one: rms_norm(x, w, Mul, eps, group = cols) then
  // y·(1+scale) + shift per column (shift and scale: f32 vectors of cols elements), in that
  // operation order (n = x·inv, n·w, then ·(1+scale)+shift).
  // y may be bf16 where the backend keeps GEMM inputs in bf16 (Backend::gemm_input_dtype); y may
  // be x when both have one dtype.
  void norm_modulate(const Tensor& x, const Tensor& w, float eps, const Tensor& shift, const Tensor& scale,
                     Tensor& y);

  // The DiT's pending gated residual updates and the next pre-GEMM pass in one: s = x, then
  // add(s, d, &gate) for each update in order, then norm_modulate(s, w, eps, shift, scale, y),
  // the same fp32 operations in that order. SumTo::X stores s in x (the residual stream,
  // updated in place, read and written once); SumTo::Nowhere leaves x as it was, only read, so
  // the updates stay pending and a later pass that adds them again gets the same bits (one
  // write of the stream fewer). y must not be x.
  void add_norm_modulate(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w, float eps,
                         const Tensor& shift, const Tensor& scale, Tensor& y);

  // The same two passes producing an INT8 layer's input: the fp32 rows norm_modulate /
  // add_norm_modulate compute (before the rounding to y's dtype) rotated and quantized into yq
  // (rotate_quantize's arithmetic on those fp32 values), and written to y as well where y is not
  // null (in y's dtype, rounded once: for what reads the unrotated rows, e.g. a LoRA beside the
  // layer). Quantizing the fp32 rows, not their bf16 roundings, is what the format's reference
  // does (docs/int8_convrot.md section 9). x: as add_norm_modulate's.
  void norm_modulate_quantized(const Tensor& x, const Tensor& w, float eps, const Tensor& shift, const Tensor& scale,
                               QuantizedRows& yq, Tensor* y);
  void add_norm_modulate_quantized(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w, float eps,
                                   const Tensor& shift, const Tensor& scale, QuantizedRows& yq, Tensor* y);

  // Per-head q/k preparation in one: rms_norm(x, w, Mul, eps, group = head_dim) then
  // rope(·, sin, cos, head_dim, rot_dim = head_dim), in that operation order. Reads the f32
  // projection output, writes y (bf16 where the backend's attention takes bf16); y may be x
  // when both have one dtype.
  void norm_rope(const Tensor& x, const Tensor& w, float eps, int64_t head_dim, const Tensor& sin,
                 const Tensor& cos, Tensor& y);

  // x += d, or x += d·gate when gate (f32, cols elements) is given.
  void add(Tensor& x, const Tensor& d, const Tensor* gate);

  // Elementwise two-input units, out may alias neither input:
  //   Situ:        out = (4·tanh(b/4)·σ(b)) · (25·tanh(a/25))   (a = hidden, b = gate)
  //   SwiGlu:      out = silu(a) · b                           (a = gate, b = up)
  //   SigmoidGate: out = a · σ(b)
  void gated_unit(GatedUnit kind, const Tensor& a, const Tensor& b, Tensor& out);
  // The unit's fp32 values rotated and quantized into outq (an INT8 ffn_down's input from the
  // unit itself, never rounded to bf16 first), and written to out as well where out is not null
  // (in out's dtype, rounded once).
  void gated_unit_quantized(GatedUnit kind, const Tensor& a, const Tensor& b, QuantizedRows& outq,
                            Tensor* out = nullptr);

  // y = x·σ(x); y may alias x.
  void silu(const Tensor& x, Tensor& y);

  // In place split-half rotation of the first rot_dim columns of every head (heads are runs of
  // head_dim columns): for i < rot_dim/2, (x_i, x_{i+r/2}) ← (x_i·c − x_{i+r/2}·s,
  // x_{i+r/2}·c + x_i·s) with c = cos[row, i], s = sin[row, i]. sin and cos are f32
  // [rows, rot_dim] whose two halves are equal (the usual [f | f] tables).
  void rope(Tensor& x, const Tensor& sin, const Tensor& cos, int64_t head_dim, int64_t rot_dim);

  // Softmax attention without a materialised score matrix. q [Tq, heads·hd], k and v
  // [Tk, kv_heads·hd], out [Tq, heads·hd]; query head h reads kv head h / (heads/kv_heads).
  // causal: query i sees keys j ≤ i (Tq == Tk).
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads,
                 int64_t kv_heads, int64_t head_dim, float scale, bool causal);

  // The DiT's q preparation and attention in one: norm_rope(q, w, eps, head_dim, sin, cos, q) then
  // attention(q, k, v, out, heads, heads, head_dim, scale, bidirectional), the same operations in
  // that order. q (the raw projection) is consumed: afterwards it holds the raw or the normalised
  // values, as the backend chose (the HIP backend normalises and rotates q on its way into the
  // attention kernel where that kernel can, so no pass writes it back).
  // v_transposed: v is Vᵀ, [heads·head_dim, P] with column j holding key j's values, P at least
  // Tk rounded up to kTransposedVKeys and columns Tk..P-1 zero (linear_transposed writes it so);
  // where attention_reads_transposed_v(head_dim) holds (the host reference takes it everywhere; the
  // HIP backend elsewhere refuses it, naming the reason).
  void norm_rope_attention(Tensor& q, const Tensor& w, float eps, const Tensor& sin, const Tensor& cos,
                           const Tensor& k, const Tensor& v, Tensor& out, int64_t heads, int64_t head_dim,
                           float scale, bool v_transposed = false);

  // int8 QKᵀ attention (SageAttention's idea; docs/attention_int8_qk.md has the arithmetic, its
  // fidelity measurement and why it is on where it is): the scores from int8 Q and K with exact
  // int32 sums, the softmax and P·V as norm_rope_attention's. quantize_keys writes kq from the
  // normalised and rotated keys k [Tk, heads·head_dim] (f32, or bf16 on the GPU): each head's
  // channels smoothed by their mean over the Tk keys (sum in key order, then divided by Tk), then
  // quantized per block of kInt8KeyBlock keys of one head (convrot::quantize_row's scale over the
  // block's values and its rounding); kq.q is I8 [heads·keys_pad, head_dim] with keys_pad =
  // transposed_v_keys(Tk), row h·keys_pad + j holding key j of head h, zeros past Tk; kq.scale
  // is F32 [heads·keys_pad / kInt8KeyBlock, 1] (convrot::kScaleFloor, 1e-30, for a block with no
  // key or all zeros).
  static constexpr int64_t kInt8KeyBlock = 32;
  struct QuantizedKeys {
    Tensor q;
    Tensor scale;
    int64_t keys = 0;  // Tk
  };
  void quantize_keys(const Tensor& k, int64_t heads, int64_t head_dim, QuantizedKeys& kq);
  // norm_rope_attention with int8 scores: q normalised and rotated as there, times `scale`,
  // then quantized per head and block of kInt8QueryBlock consecutive queries (one wave's query
  // tile in the kernel), and S = float(q8·k8ᵀ)·(s_q·s_k) from exact int32 sums.
  static constexpr int64_t kInt8QueryBlock = 16;
  void norm_rope_attention_int8_qk(Tensor& q, const Tensor& w, float eps, const Tensor& sin, const Tensor& cos,
                                   const QuantizedKeys& kq, const Tensor& v, Tensor& out, int64_t heads,
                                   int64_t head_dim, float scale, bool v_transposed = false);
  // Whether an INT8 DiT should use the two ops above at head_dim: the backend runs them there and
  // they pay (a question of speed against a measured fidelity cost; docs/attention_int8_qk.md).
  // No by default. The HIP backend runs them wherever its portable direct tiling does (every AMD
  // target, NVIDIA under portable kernels) but says yes only where int8 matrices multiply faster
  // than bf16 ones (runtime/device_families.h int8_matrix_faster: RDNA4, Hopper): on RDNA3/3.5
  // the keys' pass would cost more than the scores save (bench/amd_model.md section 6).
  virtual bool attention_int8_qk(int64_t head_dim) const;

  // P.V in fp8's values (SageAttention2's idea, the next step after int8 QKᵀ; docs/attention_int8_qk.md
  // "P.V in fp8"): each row of Vᵀ vt [rows, keys_pad] (a row = one channel of one head over the keys:
  // rows = heads·head_dim; f32, or bf16 on the GPU; keys_pad = transposed_v_keys(keys), as
  // linear_transposed writes it) scaled into OCP e4m3 by s = max(amax / 448, convrot::kScaleFloor),
  // amax the largest |v| of the row's first `keys` values and the division IEEE; codes[r][j] =
  // e4m3(v / s) (kernels/fp8_e4m3.h: to nearest even, saturating) for j < keys, 0 past them. A row
  // holding a NaN or an infinity gets scale NaN and zero codes (as convrot::quantize_row), so
  // whatever it feeds is NaN. out.codes U8 [rows, keys_pad], out.scale F32 [rows, 1].
  struct Fp8Values {
    Tensor codes;
    Tensor scale;
    int64_t keys = 0;  // Tk
  };
  void quantize_values_fp8(const Tensor& vt, int64_t keys, Fp8Values& out);

  // Whether this backend's attention at head_dim reads a transposed V (norm_rope_attention's
  // v_transposed) as it is, where V's rows would first be packed into that layout by a pass of
  // their own: the HIP backend's portable direct tiling (AMD's DiT attention). Then the DiT writes
  // its v projection transposed (linear_transposed) and saves the pass.
  virtual bool attention_reads_transposed_v(int64_t head_dim) const;
  // A transposed V's columns (keys) come in multiples of this (zeros past Tk): for Tk keys,
  // transposed_v_keys(Tk) of them.
  static constexpr int64_t kTransposedVKeys = 64;
  static constexpr int64_t transposed_v_keys(int64_t tk) {
    return (tk + kTransposedVKeys - 1) / kTransposedVKeys * kTransposedVKeys;
  }

  // out[i, :] = table[ids[i], :] (table on the host or this backend, bf16 or f32)
  void embedding(const std::vector<int32_t>& ids, const Tensor& table, Tensor& out);

  // dst = src (same rows and cols; any row strides; f32 <-> bf16 converted, rounding to nearest
  // even). Places cached rows into a longer sequence without a host round trip.
  void copy(const Tensor& src, Tensor& dst);

 protected:
  // The backends' bodies, each called only by the public op of its name once that op's shared
  // checks have passed; a body checks only its own conditions (where the tensors live, the
  // dtypes its kernels take, storage).
  virtual void do_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) = 0;
  virtual void do_linear_transposed(const Tensor& x, const Tensor& w, Tensor& yt) = 0;
  // Not pure: a backend without int8 kernels inherits the refusal (ops/core_ops.cpp).
  virtual void do_linear_int8(const Tensor& x, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias,
                              int64_t group, Tensor& y);
  // linear_int8's halves and the quantizing producers: not pure either (the same refusal).
  virtual void do_rotate_quantize(const Tensor& x, QuantizedRows& xq);
  virtual void do_linear_int8_quantized(const QuantizedRows& xq, const Tensor& q_w, const Tensor& w_scale,
                                        const Tensor* bias, Tensor& y);
  virtual void do_add_norm_modulate_quantized(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w,
                                              float eps, const Tensor& shift, const Tensor& scale, QuantizedRows& yq,
                                              Tensor* y);
  virtual void do_gated_unit_quantized(GatedUnit kind, const Tensor& a, const Tensor& b, QuantizedRows& outq,
                                       Tensor* out);
  virtual void do_linear_int8_gated_unit(GatedUnit kind, const QuantizedRows& xq, const Tensor& q_w,
                                         const Tensor& w_scale, const Tensor* bias, Tensor& out);

  virtual void do_linear_gated_unit(GatedUnit kind, const Tensor& x, const Tensor& w, const Tensor* bias,
                                    Tensor& out) = 0;
  virtual void do_rms_norm(const Tensor& x, const Tensor* w, NormWeight mode, float eps, int64_t group, Tensor& y) = 0;
  virtual void do_norm_modulate(const Tensor& x, const Tensor& w, float eps, const Tensor& shift, const Tensor& scale,
                                Tensor& y) = 0;
  virtual void do_add_norm_modulate(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w, float eps,
                                    const Tensor& shift, const Tensor& scale, Tensor& y) = 0;
  virtual void do_norm_rope(const Tensor& x, const Tensor& w, float eps, int64_t head_dim, const Tensor& sin,
                            const Tensor& cos, Tensor& y) = 0;
  virtual void do_add(Tensor& x, const Tensor& d, const Tensor* gate) = 0;
  virtual void do_gated_unit(GatedUnit kind, const Tensor& a, const Tensor& b, Tensor& out) = 0;
  virtual void do_silu(const Tensor& x, Tensor& y) = 0;
  virtual void do_rope(Tensor& x, const Tensor& sin, const Tensor& cos, int64_t head_dim, int64_t rot_dim) = 0;
  virtual void do_attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads,
                            int64_t kv_heads, int64_t head_dim, float scale, bool causal) = 0;
  virtual void do_norm_rope_attention(Tensor& q, const Tensor& w, float eps, const Tensor& sin, const Tensor& cos,
                                      const Tensor& k, const Tensor& v, Tensor& out, int64_t heads,
                                      int64_t head_dim, float scale, bool v_transposed) = 0;
  // int8 QKᵀ attention's bodies: not pure (a backend without them inherits the refusal).
  virtual void do_quantize_keys(const Tensor& k, int64_t heads, int64_t head_dim, QuantizedKeys& kq);
  virtual void do_norm_rope_attention_int8_qk(Tensor& q, const Tensor& w, float eps, const Tensor& sin,
                                              const Tensor& cos, const QuantizedKeys& kq, const Tensor& v,
                                              Tensor& out, int64_t heads, int64_t head_dim, float scale,
                                              bool v_transposed);
  // P.V in fp8's values: not pure (a backend without it inherits the refusal).
  virtual void do_quantize_values_fp8(const Tensor& vt, int64_t keys, Fp8Values& out);
  virtual void do_embedding(const std::vector<int32_t>& ids, const Tensor& table, Tensor& out) = 0;
  virtual void do_copy(const Tensor& src, Tensor& dst) = 0;
};

}  // namespace moss
