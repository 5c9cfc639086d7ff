#include "ops/hip/attention_op.h"

#include <limits>
#include <string>

#include "kernels/attention_int8_keys.h"
#include "kernels/attention_pack.h"

namespace moss {
namespace {

// A device tensor read as a matrix: rows x cols with unit column stride and row stride ld.
struct MatrixView {
  int64_t rows = 0, cols = 0, ld = 0;
};

MatrixView matrix_view(const Tensor& t, const char* what) {
  const std::string name = std::string("attention: ") + what + " " + t.shape_str();
  if (t.where != Where::Device) throw failure(name + " is not on the device");
  if (t.dtype != DType::F32 && t.dtype != DType::BF16)
    throw failure(name + " is " + dtype_name(t.dtype) + ", expected F32 or BF16");
  if (t.rank < 1) throw failure(name + " has no dimensions");
  if (t.cols() > 1 && t.stride[t.rank - 1] != 1) throw failure(name + " has a non-unit column stride");
  // Leading dimensions must fold into rows of one stride.
  for (int i = 0; i + 2 < t.rank; ++i)
    if (t.shape[i] > 1 && t.stride[i] != t.stride[i + 1] * t.shape[i + 1])
      throw failure(name + " does not read as a matrix (leading dimensions not contiguous)");
  MatrixView m{t.rows(), t.cols(), t.row_stride()};
  if (m.rows > 1 && m.ld < m.cols) throw failure(name + " has rows that overlap (row stride below the width)");
  return m;
}

std::string n(int64_t x) { return std::to_string(x); }

// A device f32 or bf16 matrix (rank 2, unit column stride) whose rows start on `bytes` boundaries.
bool aligned_device_rows(const Tensor& t, size_t bytes) {
  if (t.where != Where::Device || (t.dtype != DType::F32 && t.dtype != DType::BF16) || t.rank != 2) return false;
  if (t.cols() > 1 && t.stride[1] != 1) return false;
  return reinterpret_cast<uintptr_t>(t.data) % bytes == 0 && size_t(t.row_stride()) * dtype_size(t.dtype) % bytes == 0;
}

// The query side and the output of AttentionParams, as both attention entries set them: q (f32 or
// bf16 rows), its norm and RoPE fused into the kernel where q_rope is given (the caller checked
// hip_attention_fuses_q_rope), and out.
void set_q_and_out(AttentionParams& p, const Tensor& q, const MatrixView& mq, const QNormRope* q_rope,
                   const Tensor& out, const MatrixView& mo) {
  p.q = q.data;
  p.q_bf16 = q.dtype == DType::BF16;
  p.ldq = mq.ld;
  if (q_rope) {
    p.q_rope.w = q_rope->w.data;
    p.q_rope.w_bf16 = q_rope->w.dtype == DType::BF16;
    p.q_rope.eps = q_rope->eps;
    p.q_rope.sin = static_cast<const float*>(q_rope->sin.data);
    p.q_rope.ld_sin = q_rope->sin.row_stride();
    p.q_rope.cos = static_cast<const float*>(q_rope->cos.data);
    p.q_rope.ld_cos = q_rope->cos.row_stride();
  }
  p.out = out.data;
  p.out_bf16 = out.dtype == DType::BF16;
  p.ld_out = mo.ld;
}

}  // namespace

bool hip_attention_fuses_q_rope(const Tensor& q, const QNormRope& r, int64_t head_dim, AttentionTiling tiling) {
  if (head_dim <= 0 || head_dim > 128 || !attention_fuses_q_rope(int(head_dim), tiling)) return false;
  const size_t q_bytes = 4 * dtype_size(q.dtype), w_bytes = 4 * dtype_size(r.w.dtype);
  const bool tables = r.sin.dtype == DType::F32 && r.cos.dtype == DType::F32 && aligned_device_rows(r.sin, 16) &&
                      aligned_device_rows(r.cos, 16) && r.sin.rows() == q.rows() && r.cos.rows() == q.rows() &&
                      r.sin.cols() >= head_dim && r.cos.cols() >= head_dim;
  const bool weight = r.w.where == Where::Device && (r.w.dtype == DType::F32 || r.w.dtype == DType::BF16) &&
                      r.w.numel() == head_dim && r.w.contiguous() &&
                      reinterpret_cast<uintptr_t>(r.w.data) % w_bytes == 0;
  return tables && weight && aligned_device_rows(q, q_bytes);
}

bool hip_attention_reads_transposed_v(int64_t head_dim, AttentionTiling tiling) {
  if (head_dim <= 0 || head_dim > 384 || attention_padded_head_dim(int(head_dim)) != head_dim) return false;
  const AttentionKvLayout layout = attention_kv_layout(int(head_dim), tiling);
  return layout.k_in_place && layout.v_transposed;
}

void hip_attention(HipContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads,
                   int64_t kv_heads, int64_t head_dim, float scale, bool causal, AttentionTiling tiling,
                   const QNormRope* q_rope, bool v_transposed) {
  const MatrixView mq = matrix_view(q, "q"), mk = matrix_view(k, "k"), mv = matrix_view(v, "v"),
                   mo = matrix_view(out, "out");
  if (q.dtype != k.dtype || q.dtype != v.dtype)
    throw failure(std::string("attention: q, k and v must share a dtype (") + dtype_name(q.dtype) + ", " +
                  dtype_name(k.dtype) + ", " + dtype_name(v.dtype) + ")");
  if (heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0)
    throw failure("attention: heads " + n(heads) + " is not a positive multiple of kv heads " + n(kv_heads));
  const int d_pad = head_dim <= std::numeric_limits<int>::max() ? attention_padded_head_dim(int(head_dim)) : 0;
  if (d_pad == 0) throw failure("attention: head dim " + n(head_dim) + " is not a multiple of 16 in [16, 384]");
  const AttentionKvLayout layout = attention_kv_layout(int(head_dim), tiling);
  if (mq.cols != heads * head_dim || mo.cols != heads * head_dim || mo.rows != mq.rows)
    throw failure("attention: q " + q.shape_str() + " / out " + out.shape_str() + " are not [Tq, " +
                  n(heads * head_dim) + "]");
  const int64_t tk_pad = (mk.rows + kAttentionKeyPadding - 1) / kAttentionKeyPadding * kAttentionKeyPadding;
  if (v_transposed) {
    if (mk.cols != kv_heads * head_dim || mv.rows != kv_heads * head_dim || mv.cols < tk_pad)
      throw failure("attention: k " + k.shape_str() + " / transposed v " + v.shape_str() + " are not [Tk, " +
                    n(kv_heads * head_dim) + "] / [" + n(kv_heads * head_dim) + ", >= " + n(tk_pad) + "]");
  } else if (mk.cols != kv_heads * head_dim || mv.cols != kv_heads * head_dim || mv.rows != mk.rows) {
    throw failure("attention: k " + k.shape_str() + " / v " + v.shape_str() + " are not [Tk, " +
                  n(kv_heads * head_dim) + "]");
  }
  if (causal && mq.rows != mk.rows)
    throw failure("attention: causal attention needs Tq == Tk (" + n(mq.rows) + " vs " + n(mk.rows) + ")");
  if (mk.rows == 0) throw failure("attention: no keys");
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (mq.rows > kIntMax || tk_pad > kIntMax || kv_heads * tk_pad * layout.d_pad > kIntMax || heads > 65535)
    throw failure("attention: shape too large (Tq " + n(mq.rows) + ", Tk " + n(mk.rows) + ", heads " + n(heads) + ")");
  if (mq.rows == 0) return;

  AttentionParams p;
  // K and V straight from bf16 activations when the kernel reads [key][d] rows and they are
  // 16-byte aligned at the kernel's head width (the flash kernels; the portable one at head dim
  // 256); K alone so where the kernel wants only V packed (the portable direct tiling); else
  // packed into bf16 tiles (kv_heads · tk_pad · d_pad elements of scratch for each).
  auto aligned_rows = [](const Tensor& t, int64_t ld) {
    return ld % 8 == 0 && reinterpret_cast<uintptr_t>(t.data) % 16 == 0;
  };
  const bool k_rows = k.dtype == DType::BF16 && head_dim == layout.d_pad && aligned_rows(k, mk.ld);
  if (v_transposed) {
    // Vᵀ as the caller wrote it (CoreOps::linear_transposed), K's rows in place: no pack at all.
    if (!hip_attention_reads_transposed_v(head_dim, tiling) || !k_rows || !aligned_rows(v, mv.ld))
      throw failure("attention: this kernel cannot read a transposed v as it is (head dim " + n(head_dim) + ", k " +
                    k.shape_str() + ", v " + v.shape_str() + "; see hip_attention_reads_transposed_v)");
    p.k = static_cast<const bf16*>(k.data);
    p.ldk = mk.ld;
    p.k_head_stride = head_dim;
    p.k_in_place = true;
    p.v = static_cast<const bf16*>(v.data);
    p.ldv = mv.ld;
    p.v_head_stride = head_dim * mv.ld;
    p.tk_pad = int(tk_pad);
  } else if (layout.in_place && k_rows && aligned_rows(v, mv.ld)) {
    p.k = static_cast<const bf16*>(k.data);
    p.v = static_cast<const bf16*>(v.data);
    p.ldk = mk.ld;
    p.ldv = mv.ld;
    p.k_head_stride = p.v_head_stride = head_dim;
    p.tk_pad = int(tk_pad);
    p.kv_in_place = true;
  } else {
    const bool k_in_place = layout.k_in_place && k_rows;
    const size_t packed = size_t(kv_heads) * size_t(tk_pad) * size_t(layout.d_pad);
    bf16* const vp = static_cast<bf16*>(ctx.scratch((k_in_place ? 1 : 2) * packed * sizeof(bf16)));
    bf16* const kp = k_in_place ? nullptr : vp + packed;
    attention_pack_kv(k.data, mk.ld, v.data, mv.ld, k.dtype == DType::BF16, int(mk.rows), int(kv_heads),
                      int(head_dim), layout.d_pad, int(tk_pad), layout.v_transposed, kp, vp, ctx.stream());
    if (k_in_place) {
      p.k = static_cast<const bf16*>(k.data);
      p.ldk = mk.ld;
      p.k_head_stride = head_dim;
      p.k_in_place = true;
    } else {
      p.k = kp;
      p.ldk = layout.d_pad;
      p.k_head_stride = int64_t(tk_pad) * layout.d_pad;
    }
    p.v = vp;
    p.ldv = layout.v_transposed ? tk_pad : layout.d_pad;
    p.v_head_stride = int64_t(tk_pad) * layout.d_pad;
    p.tk_pad = int(tk_pad);
  }
  if (q_rope && !hip_attention_fuses_q_rope(q, *q_rope, head_dim, tiling))
    throw failure("attention: q's norm and RoPE cannot be applied in this kernel (head dim " + n(head_dim) +
                  ", q " + q.shape_str() + ", tables " + q_rope->sin.shape_str() + ")");
  set_q_and_out(p, q, mq, q_rope, out, mo);
  p.tq = int(mq.rows);
  p.tk = int(mk.rows);
  p.heads = int(heads);
  p.kv_heads = int(kv_heads);
  p.head_dim = int(head_dim);
  p.scale = scale;
  p.causal = causal;
  p.tiling = tiling;
  attention_forward(p, ctx.stream());
}

bool hip_attention_runs_int8_qk(int64_t head_dim, AttentionTiling tiling) {
  return head_dim > 0 && head_dim <= 128 && attention_int8_qk(int(head_dim), tiling);
}

namespace {

// The quantized keys' two tensors as the kernels read them: contiguous device I8 [rows, head_dim]
// and F32 [rows / 32] (the shapes themselves: CoreOps checked them).
void check_int8_keys(const char* op, const Tensor& kq_q, const Tensor& kq_scale) {
  if (kq_q.where != Where::Device || kq_scale.where != Where::Device)
    throw failure(std::string(op) + ": the quantized keys are not on the device");
  if (kq_q.dtype != DType::I8 || !kq_q.contiguous() || kq_scale.dtype != DType::F32 || !kq_scale.contiguous())
    throw failure(std::string(op) + ": the quantized keys are not contiguous I8 values and F32 scales (" +
                  dtype_name(kq_q.dtype) + " " + kq_q.shape_str() + ", " + dtype_name(kq_scale.dtype) + " " +
                  kq_scale.shape_str() + ")");
}

}  // namespace

void hip_quantize_keys(HipContext& ctx, const Tensor& k, int64_t heads, int64_t head_dim, int64_t keys_pad,
                       Tensor& kq_q, Tensor& kq_scale) {
  const MatrixView mk = matrix_view(k, "k");
  check_int8_keys("quantize_keys", kq_q, kq_scale);
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (mk.rows == 0) throw failure("quantize_keys: no keys");
  if (mk.cols != heads * head_dim || keys_pad < mk.rows || keys_pad % kAttentionInt8KeyBlock != 0)
    throw failure("quantize_keys: k " + k.shape_str() + " is not [Tk, " + n(heads) + " x " + n(head_dim) +
                  "] with keys padded to " + n(keys_pad));
  if (heads > 65535 || keys_pad > kIntMax || heads * keys_pad * head_dim > kIntMax)
    throw failure("quantize_keys: shape too large (Tk " + n(mk.rows) + ", heads " + n(heads) + ", head dim " +
                  n(head_dim) + ")");
  if (kq_q.numel() != heads * keys_pad * head_dim || kq_scale.numel() != heads * keys_pad / kAttentionInt8KeyBlock)
    throw failure("quantize_keys: quantized keys " + kq_q.shape_str() + " / scales " + kq_scale.shape_str() +
                  " do not hold " + n(heads) + " heads of " + n(keys_pad) + " keys");
  float* const means = static_cast<float*>(ctx.scratch(size_t(heads * head_dim) * sizeof(float)));
  attention_quantize_keys(k.data, mk.ld, k.dtype == DType::BF16, int(mk.rows), int(heads), int(head_dim),
                          int(keys_pad), means, static_cast<int8_t*>(kq_q.data), static_cast<float*>(kq_scale.data),
                          ctx.stream());
}

void hip_attention_int8_qk(HipContext& ctx, const Tensor& q, const QNormRope& q_rope, const Tensor& kq_q,
                           const Tensor& kq_scale, int64_t keys, int64_t keys_pad, const Tensor& v, Tensor& out,
                           int64_t heads, int64_t head_dim, float scale, bool v_transposed, AttentionTiling tiling) {
  const char* op = "norm_rope_attention_int8_qk";
  if (!hip_attention_runs_int8_qk(head_dim, tiling))
    throw failure(std::string(op) + ": this kernel path has no int8 QK^T attention at head dim " + n(head_dim) +
                  " (the portable direct tiling: head dims 32, 64, 128; on NVIDIA under MOSSINFER_KERNELS=portable)");
  if (!hip_attention_fuses_q_rope(q, q_rope, head_dim, tiling))
    throw failure(std::string(op) + ": q " + q.shape_str() + " " + dtype_name(q.dtype) + " / tables " +
                  q_rope.sin.shape_str() + " are not laid out for the kernel's norm and RoPE "
                  "(device rows aligned for 4-element loads, f32 tables; see hip_attention_fuses_q_rope)");
  check_int8_keys(op, kq_q, kq_scale);
  const MatrixView mq = matrix_view(q, "q"), mv = matrix_view(v, "v"), mo = matrix_view(out, "out");
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  const int64_t tk_pad = (keys + kAttentionKeyPadding - 1) / kAttentionKeyPadding * kAttentionKeyPadding;
  if (keys <= 0 || keys_pad < tk_pad || keys_pad % kAttentionInt8KeyBlock != 0 ||
      kq_q.numel() != heads * keys_pad * head_dim || kq_scale.numel() != heads * keys_pad / kAttentionInt8KeyBlock)
    throw failure(std::string(op) + ": quantized keys " + kq_q.shape_str() + " / scales " + kq_scale.shape_str() +
                  " do not hold " + n(heads) + " heads of " + n(keys) + " keys padded to " + n(keys_pad));
  if (mq.cols != heads * head_dim || mo.cols != heads * head_dim || mo.rows != mq.rows)
    throw failure(std::string(op) + ": q " + q.shape_str() + " / out " + out.shape_str() + " are not [Tq, " +
                  n(heads * head_dim) + "]");
  if (mq.rows > kIntMax || keys_pad > kIntMax || heads * keys_pad * head_dim > kIntMax || heads > 65535)
    throw failure(std::string(op) + ": shape too large (Tq " + n(mq.rows) + ", Tk " + n(keys) + ", heads " +
                  n(heads) + ")");
  if (mq.rows == 0) return;

  AttentionParams p;
  if (v_transposed) {
    if (v.dtype != DType::BF16 || mv.rows != heads * head_dim || mv.cols < tk_pad || mv.ld % 8 != 0 ||
        reinterpret_cast<uintptr_t>(v.data) % 16 != 0)
      throw failure(std::string(op) + ": transposed v " + v.shape_str() + " " + dtype_name(v.dtype) +
                    " is not bf16 [" + n(heads * head_dim) + ", >= " + n(tk_pad) + "] with 16-byte aligned rows");
    p.v = static_cast<const bf16*>(v.data);
    p.ldv = mv.ld;
    p.v_head_stride = head_dim * mv.ld;
  } else {
    if (mv.rows != keys || mv.cols != heads * head_dim)
      throw failure(std::string(op) + ": v " + v.shape_str() + " is not [" + n(keys) + ", " + n(heads * head_dim) +
                    "]");
    // Vᵀ packed as the direct tiling reads it (attention_pack_kv with no K: K is k8 here).
    bf16* const vp = static_cast<bf16*>(ctx.scratch(size_t(heads * tk_pad * head_dim) * sizeof(bf16)));
    attention_pack_kv(nullptr, 0, v.data, mv.ld, v.dtype == DType::BF16, int(keys), int(heads), int(head_dim),
                      int(head_dim), int(tk_pad), true, nullptr, vp, ctx.stream());
    p.v = vp;
    p.ldv = tk_pad;
    p.v_head_stride = tk_pad * head_dim;
  }
  p.tk_pad = int(tk_pad);
  p.k8.q = static_cast<const int8_t*>(kq_q.data);
  p.k8.scale = static_cast<const float*>(kq_scale.data);
  p.k8.keys_pad = int(keys_pad);
  set_q_and_out(p, q, mq, &q_rope, out, mo);
  p.tq = int(mq.rows);
  p.tk = int(keys);
  p.heads = p.kv_heads = int(heads);
  p.head_dim = int(head_dim);
  p.scale = scale;
  p.tiling = tiling;
  attention_forward(p, ctx.stream());
}

}  // namespace moss
