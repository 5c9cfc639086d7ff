// The core op family on the GPU: CoreOps (ops/core_ops.h) over the kernels of kernels/gemm
// (linear), kernels/rows (norms, gates, RoPE, gathers) and ops/hip/attention_op.h. Each op
// checks its operands (device tensors, f32 or bf16, unit column stride, shapes) with messages
// that name the op and operand, then launches on the context's stream without synchronising.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention_int8_keys.h"
#include "kernels/attention_fp8_values.h"
#include "kernels/gemm.h"
#include "kernels/int8_linear.h"
#include "kernels/kernel_path.h"
#include "kernels/linear_f32.h"
#include "kernels/rows.h"
#include "ops/hip/attention_op.h"
#include "ops/hip/hip_context.h"
#include "runtime/device_families.h"

namespace moss {
namespace {

void require(bool ok, const char* op, const std::string& why) {
  if (!ok) throw failure(std::string("hip ") + op + ": " + why);
}

bool float_dtype(DType t) { return t == DType::F32 || t == DType::BF16; }

// The 2-D reading of a tensor: rows x cols with one row stride (leading dims contiguous over
// each other), unit column stride.
bool two_d_readable(const Tensor& t) {
  if (t.rank == 0) return true;
  if (t.shape[t.rank - 1] > 1 && t.stride[t.rank - 1] != 1) return false;
  for (int i = 0; i + 2 < t.rank; ++i)
    if (t.shape[i] > 1 && t.stride[i] != t.stride[i + 1] * t.shape[i + 1]) return false;
  return true;
}

RowsMatrix device_matrix(const Tensor& t, const char* op, const char* name) {
  require(t.where == Where::Device, op, std::string(name) + " must be a device tensor");
  require(float_dtype(t.dtype), op, std::string(name) + " must be f32 or bf16, not " + dtype_name(t.dtype));
  require(two_d_readable(t), op, std::string(name) + " " + t.shape_str() + " is not a row-strided matrix");
  RowsMatrix m;
  m.data = t.data;
  m.bf16 = t.dtype == DType::BF16;
  m.rows = t.rows();
  m.cols = t.cols();
  m.ld = t.rank >= 2 ? t.row_stride() : t.cols();
  return m;
}

RowsVector device_vector(const Tensor* t, int64_t n, const char* op, const char* name) {
  if (!t) return {};
  require(t->where == Where::Device, op, std::string(name) + " must be a device tensor");
  require(float_dtype(t->dtype), op, std::string(name) + " must be f32 or bf16");
  require(t->numel() == n && t->contiguous(), op,
          std::string(name) + " " + t->shape_str() + " must be " + std::to_string(n) + " contiguous elements");
  return {t->data, t->dtype == DType::BF16};
}

GemmType gemm_type(bool bf16) { return bf16 ? GemmType::BF16 : GemmType::F32; }
size_t elem_bytes(bool bf16) { return bf16 ? 2 : 4; }
size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

class HipCoreOps : public CoreOps {
 public:
  explicit HipCoreOps(HipContext& ctx) : ctx_(ctx) {}

  void do_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) override {
    gemm_op("linear", x, w, bias, nullptr, y);
  }

  // The INT8 ConvRot linear (kernels/int8_linear.h): x's rows rotated and quantized into the
  // context's scratch (q_x int8 [M, K], then s_x f32 [M]), then the int8 GEMM with the two scales
  // and the bias in its epilogue; bit-identical to the host op (moss-check kernels, group int8).
  void do_linear_int8(const Tensor& x, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias, int64_t group,
                      Tensor& y) override {
    const char* name = "linear_int8";
    const RowsMatrix xm = device_matrix(x, name, "x");
    require_group(name, group);
    const int64_t M = xm.rows, K = xm.cols;
    if (M == 0 || q_w.rows() == 0) return;
    // Exactly the op's declared scratch, M·(K + 4) bytes (CoreOps::linear_int8's OpCall): q_x at
    // the arena's start (aligned for the GEMM's 16-byte chunks), s_x after it (K is a multiple of 4).
    const size_t q_bytes = size_t(M * K);
    char* scratch = static_cast<char*>(ctx_.scratch(q_bytes + size_t(M) * sizeof(float)));
    int8_t* qx = reinterpret_cast<int8_t*>(scratch);
    float* sx = reinterpret_cast<float*>(scratch + q_bytes);
    int8_rotate_quantize(xm, group, qx, sx, ctx_.stream());
    int8_product(qx, sx, M, K, q_w, w_scale, bias, y);
  }

  // linear_int8's halves: the activation pass into the caller's rows, and the product from them.
  void do_rotate_quantize(const Tensor& x, QuantizedRows& xq) override {
    const RowsMatrix xm = device_matrix(x, "rotate_quantize", "x");
    require_quantized("rotate_quantize", xq);
    int8_rotate_quantize(xm, xq.group, xq.q.ptr<int8_t>(), xq.scale.ptr<float>(), ctx_.stream());
  }

  void do_linear_int8_quantized(const QuantizedRows& xq, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias,
                                Tensor& y) override {
    require_quantized("linear_int8", xq);
    if (xq.rows() == 0 || q_w.rows() == 0) return;
    int8_product(xq.q.ptr<const int8_t>(), xq.scale.ptr<const float>(), xq.rows(), xq.cols(), q_w, w_scale, bias, y);
  }

  // The unit in the int8 leaf GEMM's epilogue, every shape and path (kernels/int8_linear.h: the
  // leaf kernels pair hidden and gate rows at any F; the wgmma kernel takes no unit): no [M, 2F]
  // product, no scratch. The same bits as linear_int8 then
  // gated_unit (moss-check kernels, group int8: linear_int8_gated_unit).
  void do_linear_int8_gated_unit(GatedUnit kind, const QuantizedRows& xq, const Tensor& q_w, const Tensor& w_scale,
                                 const Tensor* bias, Tensor& out) override {
    require_quantized("linear_int8_gated_unit", xq);
    if (xq.rows() == 0 || q_w.rows() == 0) return;
    int8_product(xq.q.ptr<const int8_t>(), xq.scale.ptr<const float>(), xq.rows(), xq.cols(), q_w, w_scale, bias, out,
                 &kind);
  }

  // The quantizing producers, in one pass where a kernel holds the row: the norms' register
  // kernel (rows_add_norm_modulate_quantized: the rows' fp32 values rotated and quantized in LDS,
  // y stored from the same values), the unit's row kernel (rows_gated_unit_quantized, rows up to
  // 8192). Elsewhere the producer's kernel writes
  // its fp32 rows into the context's scratch (the op's declared scratch, f32 [M, K]), the
  // activation pass rotates and quantizes them, and y, when asked, is those rows converted once
  // (rows_gather: f32 -> y's dtype, the rounding the producer's own bf16 store applies). Either
  // way the quantized rows are the activation pass's arithmetic on the fp32 values the producer's
  // kernel computes.
  void do_add_norm_modulate_quantized(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w, float eps,
                                      const Tensor& shift, const Tensor& scale, QuantizedRows& yq,
                                      Tensor* y) override {
    const char* name = "add_norm_modulate_quantized";
    const RowsMatrix xm = device_matrix(x, name, "x");
    require_quantized(name, yq);
    RowsUpdates u;
    u.count = updates.count;
    u.store = sum == SumTo::X && updates.count > 0;  // no update (norm_modulate_quantized): x only read
    for (int i = 0; i < updates.count; ++i) {
      u.d[i] = device_matrix(*updates.d[i], name, "d");
      u.gate[i] = device_vector(updates.gate[i], xm.cols, name, "gate");
    }
    const RowsMatrix ym = y ? device_matrix(*y, name, "y") : RowsMatrix{};
    if (xm.rows == 0) return;
    const RowsVector wv = device_vector(&w, xm.cols, name, "weight"), sh = device_vector(&shift, xm.cols, name, "shift"),
                     sc = device_vector(&scale, xm.cols, name, "scale");
    // One pass where the register kernel holds the row (the DiT's width): its fp32 rows rotated
    // and quantized in LDS.
    if (rows_add_norm_modulate_quantized(xm, u, wv, eps, sh, sc, ym, yq.group, yq.q.ptr<int8_t>(),
                                         yq.scale.ptr<float>(), ctx_.stream()))
      return;
    const RowsMatrix rows = f32_rows_scratch(xm.rows, xm.cols);
    rows_add_norm_modulate(xm, u, wv, eps, sh, sc, rows, ctx_.stream());
    quantize_and_copy(rows, yq, y ? &ym : nullptr);
  }

  void do_gated_unit_quantized(GatedUnit kind, const Tensor& a, const Tensor& b, QuantizedRows& outq,
                               Tensor* out) override {
    const char* name = "gated_unit_quantized";
    const RowsMatrix am = device_matrix(a, name, "a"), bm = device_matrix(b, name, "b");
    const RowsMatrix om = out ? device_matrix(*out, name, "out") : RowsMatrix{};
    require_quantized(name, outq);
    if (am.rows == 0) return;
    if (rows_gated_unit_quantized(kind, am, bm, om, outq.group, outq.q.ptr<int8_t>(), outq.scale.ptr<float>(),
                                  ctx_.stream()))
      return;
    const RowsMatrix rows = f32_rows_scratch(am.rows, am.cols);
    rows_gated_unit(kind, am, bm, rows, ctx_.stream());
    quantize_and_copy(rows, outq, out ? &om : nullptr);
  }

  // The GEMM's transposed epilogue (GemmOperands::y_transposed): the Portable kernel on AMD and
  // under MOSSINFER_KERNELS=portable, NVIDIA's Leaf kernel otherwise.
  void do_linear_transposed(const Tensor& x, const Tensor& w, Tensor& yt) override {
    gemm_op("linear_transposed", x, w, nullptr, nullptr, yt, true);
  }

  // The op's padded Vᵀ must cover what the kernel reads: keys up to Tk rounded to its padding.
  static_assert(CoreOps::kTransposedVKeys % kAttentionKeyPadding == 0,
                "a transposed V padded as CoreOps says holds every key the attention kernel reads");
  bool attention_reads_transposed_v(int64_t head_dim) const override {
    return hip_attention_reads_transposed_v(head_dim);
  }
  // The leaf kernels take the unit in their epilogue; the native wgmma GEMM does not
  // (int8_gemm_wgmma_fits: its epilogue would cost more than gated_unit_quantized's pass).
  bool int8_unit_in_gemm_epilogue() const override { return portable_kernels(); }

  // The unit in the GEMM's epilogue where the kernel can (gemm_fuses_unit: NVIDIA Hopper with F a
  // multiple of 128; the portable kernel, AMD's, on its wide tiles with bf16 weights); elsewhere
  // the product goes through scratch in out's dtype first.
  void do_linear_gated_unit(GatedUnit kind, const Tensor& x, const Tensor& w, const Tensor* bias,
                            Tensor& out) override {
    gemm_op("linear_gated_unit", x, w, bias, &kind, out);
  }

  // y = x·wᵀ + bias, or with a unit y = unit(product's halves) (y then has half w's rows), or
  // transposed: y [N, P] = (x·wᵀ)ᵀ, zeros past M (CoreOps::linear_transposed).
  void gemm_op(const char* name, const Tensor& x, const Tensor& w, const Tensor* bias, const GatedUnit* unit,
               Tensor& y, bool transposed = false) {
    const RowsMatrix xm = device_matrix(x, name, "x"), wm = device_matrix(w, name, "weight");
    const RowsMatrix ym = device_matrix(y, name, "y");
    const int64_t M = xm.rows, K = xm.cols, N = wm.rows;
    const RowsVector b = device_vector(bias, N, name, "bias");
    if (M == 0 || N == 0) return;
    require(K > 0, name, "K is zero");
    // The product itself: y, or with an unfused unit scratch rows [M, N] (`product_bytes`, placed
    // after the packed operands' scratch).
    const size_t product_bytes = unit ? round_up(size_t(M * N) * elem_bytes(ym.bf16), 256) : 0;
    auto product_at = [&](void* p) { return RowsMatrix{p, ym.bf16, M, N, N}; };
    auto apply_unit = [&](const RowsMatrix& t) {
      rows_gated_unit(*unit, {t.data, t.bf16, M, N / 2, t.ld},
                      {static_cast<char*>(t.data) + size_t(N / 2) * elem_bytes(t.bf16), t.bf16, M, N / 2, t.ld}, ym,
                      ctx_.stream());
    };
    if (!transposed && !wm.bf16 && !xm.bf16 && !ym.bf16 && !b.bf16) {
      // fp32 weights (the VAE) keep fp32 operands: see kernels/linear_f32.h (no fused epilogue).
      const RowsMatrix out = unit ? product_at(ctx_.scratch(product_bytes)) : ym;
      linear_f32({static_cast<const float*>(xm.data), static_cast<const float*>(wm.data),
                  static_cast<const float*>(b.data), static_cast<float*>(out.data), M, N, K, xm.ld, wm.ld, out.ld},
                 ctx_.stream());
      if (unit) apply_unit(out);
      return;
    }

    GemmOperands op;
    op.x = xm.data;
    op.x_type = gemm_type(xm.bf16);
    op.ldx = xm.ld;
    op.w = wm.data;
    op.w_type = gemm_type(wm.bf16);
    op.ldw = wm.ld;
    op.bias = b.data;
    op.bias_type = gemm_type(b.bf16);
    op.y = ym.data;
    op.y_type = gemm_type(ym.bf16);
    op.ldy = ym.ld;
    op.y_transposed = transposed;
    op.y_rows = transposed ? ym.cols : 0;
    op.m = M;
    op.n = N;
    // The kernel reads aligned 16-byte chunks with K a multiple of 8: other operands (odd K,
    // column slices at odd offsets) are first copied into zero-padded scratch rows.
    const int64_t Kp = int64_t(round_up(size_t(K), size_t(kGemmKMultiple)));
    op.k = Kp;
    bool fused = false;
    if (unit) {  // the unit in the epilogue when the kernel takes it, else a pass over the product
      GemmOperands gated = op;
      gated.gated = true;
      gated.unit = *unit;
      gated.n = N / 2;
      fused = gemm_fuses_unit(gated, ctx_.multiprocessors());
      if (fused) op = gated;
    }
    const bool pack_x = Kp != K || !gemm_packed(xm.data, xm.ld, op.x_type);
    const bool pack_w = Kp != K || !gemm_packed(wm.data, wm.ld, op.w_type);
    const size_t x_bytes = pack_x ? round_up(size_t(M * Kp) * elem_bytes(xm.bf16), 256) : 0;
    const size_t w_bytes = pack_w ? round_up(size_t(N * Kp) * elem_bytes(wm.bf16), 256) : 0;
    const size_t t_bytes = unit && !fused ? product_bytes : 0;
    char* scratch = x_bytes + w_bytes + t_bytes ? static_cast<char*>(ctx_.scratch(x_bytes + w_bytes + t_bytes)) : nullptr;
    if (pack_x || pack_w) {
      MOSS_HIP_CHECK(hipMemsetAsync(scratch, 0, x_bytes + w_bytes, ctx_.stream()));
      if (pack_x) {
        op.x = pack(xm, scratch, Kp);
        op.ldx = Kp;
      }
      if (pack_w) {
        op.w = pack(wm, scratch + x_bytes, Kp);
        op.ldw = Kp;
      }
    }
    if (t_bytes) {
      const RowsMatrix t = product_at(scratch + x_bytes + w_bytes);
      op.y = t.data;
      op.ldy = t.ld;
      gemm(op, ctx_.stream(), ctx_.multiprocessors());
      apply_unit(t);
      return;
    }
    gemm(op, ctx_.stream(), ctx_.multiprocessors());
  }

  void do_rms_norm(const Tensor& x, const Tensor* w, NormWeight mode, float eps, int64_t group, Tensor& y) override {
    const RowsMatrix xm = device_matrix(x, "rms_norm", "x"), ym = device_matrix(y, "rms_norm", "y");
    const RowsVector wv = mode == NormWeight::None ? RowsVector{} : device_vector(w, group, "rms_norm", "weight");
    rows_rms_norm(xm, wv, mode, eps, group, ym, ctx_.stream());
  }

  void do_norm_modulate(const Tensor& x, const Tensor& w, float eps, const Tensor& shift, const Tensor& scale,
                        Tensor& y) override {
    const RowsMatrix xm = device_matrix(x, "norm_modulate", "x"), ym = device_matrix(y, "norm_modulate", "y");
    rows_norm_modulate(xm, device_vector(&w, xm.cols, "norm_modulate", "weight"), eps,
                       device_vector(&shift, xm.cols, "norm_modulate", "shift"),
                       device_vector(&scale, xm.cols, "norm_modulate", "scale"), ym, ctx_.stream());
  }

  void do_add_norm_modulate(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w, float eps,
                            const Tensor& shift, const Tensor& scale, Tensor& y) override {
    const char* name = "add_norm_modulate";
    const RowsMatrix xm = device_matrix(x, name, "x"), ym = device_matrix(y, name, "y");
    RowsUpdates u;
    u.count = updates.count;
    u.store = sum == SumTo::X;
    for (int i = 0; i < updates.count; ++i) {
      u.d[i] = device_matrix(*updates.d[i], name, "d");
      u.gate[i] = device_vector(updates.gate[i], xm.cols, name, "gate");
    }
    rows_add_norm_modulate(xm, u, device_vector(&w, xm.cols, name, "weight"), eps,
                           device_vector(&shift, xm.cols, name, "shift"), device_vector(&scale, xm.cols, name, "scale"),
                           ym, ctx_.stream());
  }

  void do_norm_rope(const Tensor& x, const Tensor& w, float eps, int64_t head_dim, const Tensor& sin, const Tensor& cos,
                    Tensor& y) override {
    const RowsMatrix xm = device_matrix(x, "norm_rope", "x"), ym = device_matrix(y, "norm_rope", "y");
    const RowsMatrix sm = device_matrix(sin, "norm_rope", "sin"), cm = device_matrix(cos, "norm_rope", "cos");
    require(!sm.bf16 && !cm.bf16, "norm_rope", "sin and cos must be f32");
    require(head_dim > 0 && head_dim % 2 == 0 && xm.cols % head_dim == 0, "norm_rope",
            "head_dim " + std::to_string(head_dim) + " does not fit x " + x.shape_str());
    require(sm.rows == xm.rows && cm.rows == xm.rows && sm.cols >= head_dim && cm.cols >= head_dim, "norm_rope",
            "table shape " + sin.shape_str() + " for x " + x.shape_str());
    rows_norm_rope(xm, device_vector(&w, head_dim, "norm_rope", "weight"), eps, head_dim,
                   static_cast<const float*>(sm.data), sm.ld, static_cast<const float*>(cm.data), cm.ld, ym,
                   ctx_.stream());
  }

  void do_add(Tensor& x, const Tensor& d, const Tensor* gate) override {
    const RowsMatrix xm = device_matrix(x, "add", "x"), dm = device_matrix(d, "add", "d");
    rows_add(xm, dm, device_vector(gate, xm.cols, "add", "gate"), ctx_.stream());
  }

  void do_gated_unit(GatedUnit kind, const Tensor& a, const Tensor& b, Tensor& out) override {
    const RowsMatrix am = device_matrix(a, "gated_unit", "a"), bm = device_matrix(b, "gated_unit", "b");
    const RowsMatrix om = device_matrix(out, "gated_unit", "out");
    rows_gated_unit(kind, am, bm, om, ctx_.stream());
  }

  void do_silu(const Tensor& x, Tensor& y) override {
    const RowsMatrix xm = device_matrix(x, "silu", "x"), ym = device_matrix(y, "silu", "y");
    rows_silu(xm, ym, ctx_.stream());
  }

  void do_rope(Tensor& x, const Tensor& sin, const Tensor& cos, int64_t head_dim, int64_t rot_dim) override {
    const RowsMatrix xm = device_matrix(x, "rope", "x");
    const RowsMatrix sm = device_matrix(sin, "rope", "sin"), cm = device_matrix(cos, "rope", "cos");
    require(!sm.bf16 && !cm.bf16, "rope", "sin and cos must be f32");
    require(sm.cols >= rot_dim && cm.cols >= rot_dim, "rope",
            "table shape " + sin.shape_str() + " for x " + x.shape_str());
    rows_rope(xm, static_cast<const float*>(sm.data), sm.ld, static_cast<const float*>(cm.data), cm.ld, head_dim,
              rot_dim, ctx_.stream());
  }

  void do_attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads, int64_t kv_heads,
                    int64_t head_dim, float scale, bool causal) override {
    hip_attention(ctx_, q, k, v, out, heads, kv_heads, head_dim, scale, causal);
  }

  // q normalised and rotated on its way into the attention kernel where that kernel can (the
  // portable direct tiling: no norm_rope pass over q), else the two ops.
  void do_norm_rope_attention(Tensor& q, const Tensor& w, float eps, const Tensor& sin, const Tensor& cos,
                              const Tensor& k, const Tensor& v, Tensor& out, int64_t heads, int64_t head_dim,
                              float scale, bool v_transposed) override {
    const QNormRope rope{w, eps, sin, cos};
    if (hip_attention_fuses_q_rope(q, rope, head_dim))
      return hip_attention(ctx_, q, k, v, out, heads, heads, head_dim, scale, false, AttentionTiling::Default, &rope,
                           v_transposed);
    do_norm_rope(q, w, eps, head_dim, sin, cos, q);
    hip_attention(ctx_, q, k, v, out, heads, heads, head_dim, scale, false, AttentionTiling::Default, nullptr,
                  v_transposed);
  }

  // The int8 QKᵀ attention runs where the portable direct tiling does (AMD at head dims 32, 64,
  // 128; NVIDIA only under MOSSINFER_KERNELS=portable: the native path keeps its wgmma bf16
  // attention); an INT8 DiT takes it where int8 matrices are also faster (RDNA4, not RDNA3/3.5).
  bool attention_int8_qk(int64_t head_dim) const override {
    return hip_attention_runs_int8_qk(head_dim) && int8_matrix_faster(ctx_.arch());
  }
  static_assert(CoreOps::kInt8KeyBlock == kAttentionInt8KeyBlock, "one key block for the op and its kernels");
  static_assert(CoreOps::kInt8QueryBlock == 16, "a query block is one wave's 16-query tile (kernels/attention.hip)");
  void do_quantize_keys(const Tensor& k, int64_t heads, int64_t head_dim, QuantizedKeys& kq) override {
    hip_quantize_keys(ctx_, k, heads, head_dim, transposed_v_keys(k.rows()), kq.q, kq.scale);
  }
  void do_norm_rope_attention_int8_qk(Tensor& q, const Tensor& w, float eps, const Tensor& sin, const Tensor& cos,
                                      const QuantizedKeys& kq, const Tensor& v, Tensor& out, int64_t heads,
                                      int64_t head_dim, float scale, bool v_transposed) override {
    const QNormRope rope{w, eps, sin, cos};
    hip_attention_int8_qk(ctx_, q, rope, kq.q, kq.scale, kq.keys, transposed_v_keys(kq.keys), v, out, heads,
                          head_dim, scale, v_transposed);
  }

  // P.V in fp8's values (kernels/attention_fp8_values.h): Vᵀ on the device, f32 or bf16.
  void do_quantize_values_fp8(const Tensor& vt, int64_t keys, Fp8Values& out) override {
    const char* op = "quantize_values_fp8";
    const RowsMatrix m = device_matrix(vt, op, "vt");
    Fp8ValuesArgs a;
    a.vt = m.data;
    a.bf16 = m.bf16;
    a.rows = m.rows;
    a.ld = m.ld;
    a.keys = keys;
    a.keys_pad = m.cols;
    a.codes = out.codes.ptr<uint8_t>();
    a.scale = out.scale.ptr<float>();
    fp8_values_quantize(a, ctx_.stream());
  }

  void do_embedding(const std::vector<int32_t>& ids, const Tensor& table, Tensor& out) override {
    const RowsMatrix om = device_matrix(out, "embedding", "out");
    require(float_dtype(table.dtype) && two_d_readable(table), "embedding", "table must be an f32 or bf16 matrix");
    const int64_t V = table.rows(), C = table.cols(), n = int64_t(ids.size());
    for (int32_t id : ids)
      require(id >= 0 && id < V, "embedding", "token id " + std::to_string(id) + " outside the table");
    if (n == 0 || C == 0) return;
    if (table.where == Where::Host) {
      // Gather on the host (only the rows used cross the bus), then convert on the device.
      const size_t es = dtype_size(table.dtype), row_bytes = size_t(C) * es;
      std::vector<char> rows(size_t(n) * row_bytes);
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(rows.data() + size_t(i) * row_bytes,
                    static_cast<const char*>(table.data) + size_t(ids[size_t(i)] * table.row_stride()) * es, row_bytes);
      void* staged = ctx_.scratch(rows.size());
      ctx_.copy_to_device(staged, rows.data(), rows.size());
      RowsMatrix src{staged, table.dtype == DType::BF16, n, C, C};
      rows_gather(src, nullptr, om, ctx_.stream());
      return;
    }
    const RowsMatrix tm = device_matrix(table, "embedding", "table");
    void* dev_ids = ctx_.scratch(ids.size() * sizeof(int32_t));
    ctx_.copy_to_device(dev_ids, ids.data(), ids.size() * sizeof(int32_t));
    rows_gather(tm, static_cast<const int32_t*>(dev_ids), om, ctx_.stream());
  }

  void do_copy(const Tensor& src, Tensor& dst) override {
    const RowsMatrix dm = device_matrix(dst, "copy", "dst");
    if (src.where == Where::Host) {
      require(float_dtype(src.dtype) && two_d_readable(src), "copy", "src must be an f32 or bf16 matrix");
      const size_t es = dtype_size(src.dtype), row_bytes = size_t(src.cols()) * es;
      std::vector<char> rows(size_t(src.rows()) * row_bytes);
      for (int64_t r = 0; r < src.rows(); ++r)
        std::memcpy(rows.data() + size_t(r) * row_bytes,
                    static_cast<const char*>(src.data) + size_t(r * src.row_stride()) * es, row_bytes);
      void* staged = ctx_.scratch(rows.size());
      ctx_.copy_to_device(staged, rows.data(), rows.size());
      rows_gather(RowsMatrix{staged, src.dtype == DType::BF16, src.rows(), src.cols(), src.cols()}, nullptr, dm,
                  ctx_.stream());
      return;
    }
    rows_gather(device_matrix(src, "copy", "src"), nullptr, dm, ctx_.stream());
  }

 private:
  void require_group(const char* name, int64_t group) {
    require(group <= kInt8MaxGroup, name,
            "group size " + std::to_string(group) + " is larger than the kernels' " + std::to_string(kInt8MaxGroup));
  }
  void require_quantized(const char* name, const QuantizedRows& xq) {
    require(xq.q.where == Where::Device && xq.scale.where == Where::Device, name,
            "the quantized rows and their scales must be device tensors");
    require_group(name, xq.group);
  }

  // y = the int8 GEMM of the quantized rows (qx [M, K], sx [M]) and the weight, the scales and
  // the bias in its epilogue; with a unit, y [M, N/2] = the unit of the product's two halves
  // (Int8GemmArgs::gated).
  void int8_product(const int8_t* qx, const float* sx, int64_t M, int64_t K, const Tensor& q_w, const Tensor& w_scale,
                    const Tensor* bias, Tensor& y, const GatedUnit* unit = nullptr) {
    const char* name = unit ? "linear_int8_gated_unit" : "linear_int8";
    const RowsMatrix ym = device_matrix(y, name, "y");
    require(q_w.where == Where::Device && w_scale.where == Where::Device, name,
            "weight and weight_scale must be device tensors");
    require(q_w.contiguous() && w_scale.contiguous(), name, "weight and weight_scale must be contiguous");
    const int64_t N = q_w.rows();
    Int8GemmArgs a;
    a.qx = qx;
    a.sx = sx;
    a.qw = q_w.ptr<const int8_t>();
    a.sw = w_scale.ptr<const float>();
    a.bias = device_vector(bias, N, name, "bias");
    a.y = ym;
    a.m = M;
    a.n = unit ? N / 2 : N;
    a.k = K;
    a.gated = unit != nullptr;
    if (unit) a.unit = *unit;
    // NVIDIA's native path: the wgmma kernel where the operands fit it (every DiT projection);
    // else, and on AMD and under MOSSINFER_KERNELS=portable, the matrix leaf's kernels. Same bits.
    if (int8_gemm_wgmma_fits(a)) int8_gemm_wgmma(a, ctx_.stream(), ctx_.multiprocessors());
    else int8_gemm(a, ctx_.stream());
  }

  // f32 [rows, cols] in the context's scratch: a quantizing producer's declared scratch.
  RowsMatrix f32_rows_scratch(int64_t rows, int64_t cols) {
    RowsMatrix m;
    m.data = ctx_.scratch(size_t(rows * cols) * sizeof(float));
    m.rows = rows;
    m.cols = cols;
    m.ld = cols;
    return m;
  }
  void quantize_and_copy(const RowsMatrix& rows, QuantizedRows& q, const RowsMatrix* y) {
    int8_rotate_quantize(rows, q.group, q.q.ptr<int8_t>(), q.scale.ptr<float>(), ctx_.stream());
    if (y) rows_gather(rows, nullptr, *y, ctx_.stream());
  }

  // Copies m into zero-filled scratch rows of `ld` elements at `dst` (same dtype).
  const void* pack(const RowsMatrix& m, void* dst, int64_t ld) {
    RowsMatrix packed{dst, m.bf16, m.rows, m.cols, ld};
    rows_gather(m, nullptr, packed, ctx_.stream());
    return dst;
  }

  HipContext& ctx_;
};

}  // namespace

std::unique_ptr<CoreOps> make_hip_core_ops(HipContext& ctx) { return std::make_unique<HipCoreOps>(ctx); }

}  // namespace moss
