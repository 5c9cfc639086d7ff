// Host reference of the core op family: plain C++, fp32 accumulation, threaded over rows or
// output columns with the deterministic pool. Each op accumulates in the order its kernel
// does: a dot product runs k = 0..K-1 in one fp32 sum; norms sum squares in column order.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "ops/host/host_factories.h"
#include "kernels/fp8_e4m3.h"
#include "ops/host/host_op_parts.h"
#include "tensor/int8_convrot.h"
#include "util/cancel.h"

namespace moss {
namespace {

// Reads element i of a 1-D host vector of any float dtype.
float vec_at(const Tensor& v, int64_t i) {
  switch (v.dtype) {
    case DType::F32: return v.ptr<const float>()[i];
    case DType::BF16: return bf16_to_f32(v.ptr<const uint16_t>()[i]);
    default: throw std::invalid_argument("unsupported vector dtype");
  }
}

std::vector<float> vec_f32(const Tensor& v) {
  std::vector<float> out(size_t(v.numel()));
  for (int64_t i = 0; i < v.numel(); ++i) out[size_t(i)] = vec_at(v, i);
  return out;
}

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

class HostCoreOps : public CoreOps {
 public:
  HostCoreOps(ThreadPool& pool, bool transposed_v, bool int8_unit_in_epilogue, bool int8_qk_attention)
      : pool_(pool),
        transposed_v_(transposed_v),
        int8_unit_in_epilogue_(int8_unit_in_epilogue),
        int8_qk_attention_(int8_qk_attention) {}

  bool attention_reads_transposed_v(int64_t) const override { return transposed_v_; }
  bool int8_unit_in_gemm_epilogue() const override { return int8_unit_in_epilogue_; }
  bool attention_int8_qk(int64_t) const override { return int8_qk_attention_; }

  void do_linear(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) override {
    check_f32_matrix(x, "linear", "x");
    check_f32_matrix(y, "linear", "y");
    const int64_t M = x.rows(), K = x.cols(), N = w.rows();
    op_require(w.contiguous(), "linear", "weight " + w.shape_str() + " must be contiguous");
    std::vector<float> b = bias ? vec_f32(*bias) : std::vector<float>();
    // Threads take blocks of output columns; each converts its weight rows to f32 once.
    constexpr int64_t kBlock = 16;
    const int64_t blocks = (N + kBlock - 1) / kBlock;
    pool_.parallel_for(blocks, [&](int64_t b0, int64_t b1) {
      std::vector<float> wf(size_t(kBlock * K));
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t n0 = blk * kBlock, nn = std::min(kBlock, N - n0);
        for (int64_t j = 0; j < nn; ++j) {
          float* dst = wf.data() + j * K;
          if (w.dtype == DType::BF16) {
            const uint16_t* src = w.ptr<const uint16_t>() + (n0 + j) * K;
            for (int64_t k = 0; k < K; ++k) dst[k] = bf16_to_f32(src[k]);
          } else {
            op_require(w.dtype == DType::F32, "linear", "weight must be bf16 or f32");
            std::copy_n(w.ptr<const float>() + (n0 + j) * K, K, dst);
          }
        }
        for (int64_t m = 0; m < M; ++m) {
          if (m % 64 == 0 && cancel_requested()) return;  // util/cancel.h: the caller throws
          const float* xr = x.row<const float>(m);
          float* yr = y.row<float>(m);
          for (int64_t j = 0; j < nn; ++j) {
            const float* wr = wf.data() + j * K;
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) acc += xr[k] * wr[k];
            yr[n0 + j] = bias ? acc + b[size_t(n0 + j)] : acc;
          }
        }
      }
    });
  }

  // Rows of x rotated and quantized (convrot::, the format's one definition), then the int32
  // products: linear_int8's two halves in sequence.
  void do_linear_int8(const Tensor& x, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias, int64_t group,
                      Tensor& y) override {
    QuantizedRows xq{host_tensor(DType::I8, {x.rows(), x.cols()}), host_tensor(DType::F32, {x.rows(), 1}), group};
    do_rotate_quantize(x, xq);  // the bodies: the hook sees one op, as on the GPU
    do_linear_int8_quantized(xq, q_w, w_scale, bias, y);
  }

  // Each row copied as fp32, convrot::rotate_groups, convrot::quantize_row.
  void do_rotate_quantize(const Tensor& x, QuantizedRows& xq) override {
    check_f32_matrix(x, "rotate_quantize", "x");
    check_quantized_host(xq, "rotate_quantize");
    const int64_t K = x.cols();
    int8_t* q = xq.q.ptr<int8_t>();
    float* s = xq.scale.ptr<float>();
    pool_.parallel_for(x.rows(), [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(K));
      for (int64_t r = r0; r < r1; ++r) {
        std::copy_n(x.row<const float>(r), K, row.data());
        convrot::rotate_groups(row.data(), K, xq.group);
        s[r] = convrot::quantize_row(row.data(), K, q + r * K);
      }
    });
  }

  // The int32 products, each converted to fp32 and scaled by (s_x·s_w) before the bias, as the
  // document's section 4 orders it.
  void do_linear_int8_quantized(const QuantizedRows& xq, const Tensor& q_w, const Tensor& w_scale, const Tensor* bias,
                                Tensor& y) override {
    check_quantized_host(xq, "linear_int8");
    check_f32_matrix(y, "linear_int8", "y");
    check_host(q_w, "linear_int8", "weight");
    check_host(w_scale, "linear_int8", "weight_scale");
    op_require(q_w.contiguous() && w_scale.contiguous(), "linear_int8", "weight and weight_scale must be contiguous");
    const int64_t M = xq.rows(), K = xq.cols(), N = q_w.rows();
    const int8_t* qx = xq.q.ptr<const int8_t>();
    const float* sx = xq.scale.ptr<const float>();
    const float* sw = w_scale.ptr<const float>();
    std::vector<float> b = bias ? vec_f32(*bias) : std::vector<float>();
    const int8_t* qw = q_w.ptr<const int8_t>();
    pool_.parallel_for(N, [&](int64_t n0, int64_t n1) {
      for (int64_t m = 0; m < M; ++m) {
        if (m % 64 == 0 && cancel_requested()) return;  // util/cancel.h: the caller throws
        const int8_t* xr = qx + m * K;
        float* yr = y.row<float>(m);
        for (int64_t n = n0; n < n1; ++n) {
          const int8_t* wr = qw + n * K;
          int32_t acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += int32_t(xr[k]) * int32_t(wr[k]);
          const float v = float(acc) * (sx[m] * sw[n]);
          yr[n] = bias ? v + b[size_t(n)] : v;
        }
      }
    }, 16);
  }

  // The quantizing producers, by their definition: the producer's fp32 values into a host
  // matrix, then rotate_quantize on them, and y (when asked) from the same fp32 values.
  void do_add_norm_modulate_quantized(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w, float eps,
                                      const Tensor& shift, const Tensor& scale, QuantizedRows& yq,
                                      Tensor* y) override {
    Tensor rows = host_tensor(DType::F32, x.dims());
    if (updates.count == 0) norm_modulate(x, w, eps, shift, scale, rows);
    else add_norm_modulate(x, updates, sum, w, eps, shift, scale, rows);
    quantize_and_copy(rows, yq, y);
  }

  void do_gated_unit_quantized(GatedUnit kind, const Tensor& a, const Tensor& b, QuantizedRows& outq,
                               Tensor* out) override {
    Tensor rows = host_tensor(DType::F32, a.dims());
    gated_unit(kind, a, b, rows);
    quantize_and_copy(rows, outq, out);
  }

  // Its definition, literally: linear_int8 into an f32 product, then the unit on its halves (the
  // kernels' epilogue computes each element with exactly these fp32 operations in this order).
  void do_linear_int8_gated_unit(GatedUnit kind, const QuantizedRows& xq, const Tensor& q_w, const Tensor& w_scale,
                                 const Tensor* bias, Tensor& out) override {
    check_f32_matrix(out, "linear_int8_gated_unit", "out");
    const int64_t F = out.cols();
    Tensor t = host_tensor(DType::F32, {out.rows(), 2 * F});
    do_linear_int8_quantized(xq, q_w, w_scale, bias, t);  // the bodies: the hook sees one op, as on the GPU
    do_gated_unit(kind, t.slice_cols(0, F), t.slice_cols(F, F), out);
  }

  // Its definition, literally: the product, stored transposed, zeros past x's rows.
  void do_linear_transposed(const Tensor& x, const Tensor& w, Tensor& yt) override {
    check_f32_matrix(yt, "linear_transposed", "yt");
    const int64_t M = x.rows(), N = w.rows(), P = yt.cols();
    Tensor t = host_tensor(DType::F32, {M, N});
    linear(x, w, nullptr, t);
    for (int64_t c = 0; c < N; ++c) {
      float* dst = yt.row<float>(c);
      for (int64_t r = 0; r < P; ++r) dst[r] = r < M ? t.row<const float>(r)[c] : 0.0f;
    }
  }

  // Its definition, literally: the reference stays bit-identical to linear then gated_unit.
  void do_linear_gated_unit(GatedUnit kind, const Tensor& x, const Tensor& w, const Tensor* bias,
                            Tensor& out) override {
    check_f32_matrix(out, "linear_gated_unit", "out");
    const int64_t F = out.cols();
    Tensor t = host_tensor(DType::F32, {out.rows(), 2 * F});
    linear(x, w, bias, t);
    gated_unit(kind, t.slice_cols(0, F), t.slice_cols(F, F), out);
  }

  // Its definition, literally: the adds in order (on a copy of x when the sum goes nowhere),
  // then norm_modulate.
  void do_add_norm_modulate(Tensor& x, const GatedUpdates& updates, SumTo sum, const Tensor& w, float eps,
                            const Tensor& shift, const Tensor& scale, Tensor& y) override {
    op_require(x.data != y.data, "add_norm_modulate", "y must not be x");
    Tensor s = x;
    if (sum == SumTo::Nowhere) {
      s = host_tensor(DType::F32, x.dims());
      copy(x, s);
    }
    for (int i = 0; i < updates.count; ++i) add(s, *updates.d[i], updates.gate[i]);
    norm_modulate(s, w, eps, shift, scale, y);
  }

  void do_rms_norm(const Tensor& x, const Tensor* w, NormWeight mode, float eps, int64_t group, Tensor& y) override {
    check_f32_matrix(x, "rms_norm", "x");
    check_f32_matrix(y, "rms_norm", "y");
    std::vector<float> wf = (mode != NormWeight::None) ? vec_f32(*w) : std::vector<float>();
    if (mode == NormWeight::OnePlus)
      for (float& v : wf) v += 1.0f;
    for_each_group_sum_of_squares(pool_, x, group, [&](int64_t r, int64_t g0, float ss) {
      const float* xr = x.row<const float>(r);
      float* yr = y.row<float>(r);
      const float inv = 1.0f / std::sqrt(ss / float(group) + eps);
      for (int64_t c = 0; c < group; ++c) {
        float n = xr[g0 + c] * inv;
        yr[g0 + c] = mode == NormWeight::None ? n : n * wf[size_t(c)];
      }
    });
  }

  // y = y·(1+scale) + shift per column: norm_modulate's second half.
  void modulate(Tensor& y, const Tensor& shift, const Tensor& scale) {
    check_f32_matrix(y, "modulate", "y");
    const int64_t C = y.cols();
    op_require(shift.numel() == C && scale.numel() == C, "modulate", "shift/scale size");
    std::vector<float> sh = vec_f32(shift), sc = vec_f32(scale);
    pool_.parallel_for(y.rows(), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* yr = y.row<float>(r);
        for (int64_t c = 0; c < C; ++c) yr[c] = yr[c] * (1.0f + sc[size_t(c)]) + sh[size_t(c)];
      }
    }, 4);
  }

  // The fused ops' reference is their definition: the two ops they fuse, one after the other
  // (the kernels compute each element with exactly these fp32 operations in this order).
  void do_norm_modulate(const Tensor& x, const Tensor& w, float eps, const Tensor& shift, const Tensor& scale,
                        Tensor& y) override {
    rms_norm(x, &w, NormWeight::Mul, eps, x.cols(), y);
    modulate(y, shift, scale);
  }

  void do_norm_rope(const Tensor& x, const Tensor& w, float eps, int64_t head_dim, const Tensor& sin, const Tensor& cos,
                    Tensor& y) override {
    rms_norm(x, &w, NormWeight::Mul, eps, head_dim, y);
    rope(y, sin, cos, head_dim, head_dim);
  }

  void do_norm_rope_attention(Tensor& q, const Tensor& w, float eps, const Tensor& sin, const Tensor& cos,
                              const Tensor& k, const Tensor& v, Tensor& out, int64_t heads, int64_t head_dim,
                              float scale, bool v_transposed) override {
    norm_rope(q, w, eps, head_dim, sin, cos, q);
    attention(q, k, value_rows(v, k.rows(), v_transposed, "norm_rope_attention"), out, heads, heads, head_dim, scale,
              false);
  }

  // The smoothed keys' int8 blocks (CoreOps::quantize_keys; docs/attention_int8_qk.md): per head
  // and channel the mean over the keys (an fp32 sum in key order, then one division), then per
  // block of kInt8KeyBlock keys of one head convrot::quantize_row over the block's smoothed values
  // (its rows are consecutive in kq.q, so the block is one quantize_row call). A block with no key
  // is quantize_row of nothing: scale kScaleFloor, no values; the padding rows stay zero.
  void do_quantize_keys(const Tensor& k, int64_t heads, int64_t head_dim, QuantizedKeys& kq) override {
    check_f32_matrix(k, "quantize_keys", "k");
    check_host(kq.q, "quantize_keys", "quantized keys");
    const int64_t Tk = k.rows(), hd = head_dim, keys_pad = transposed_v_keys(Tk), blocks = keys_pad / kInt8KeyBlock;
    pool_.parallel_for(heads, [&](int64_t h0, int64_t h1) {
      std::vector<float> sum(static_cast<size_t>(hd)), block(static_cast<size_t>(kInt8KeyBlock * hd));
      for (int64_t h = h0; h < h1; ++h) {
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (int64_t j = 0; j < Tk; ++j) {
          const float* kj = k.row<const float>(j) + h * hd;
          for (int64_t c = 0; c < hd; ++c) sum[size_t(c)] += kj[c];
        }
        for (int64_t c = 0; c < hd; ++c) sum[size_t(c)] /= float(Tk);  // now the mean
        int8_t* q = kq.q.ptr<int8_t>() + h * keys_pad * hd;
        std::fill(q, q + keys_pad * hd, int8_t(0));
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t j0 = b * kInt8KeyBlock, n = std::max<int64_t>(0, std::min(kInt8KeyBlock, Tk - j0));
          for (int64_t j = 0; j < n; ++j) {
            const float* kj = k.row<const float>(j0 + j) + h * hd;
            for (int64_t c = 0; c < hd; ++c) block[size_t(j * hd + c)] = kj[c] - sum[size_t(c)];
          }
          kq.scale.ptr<float>()[h * blocks + b] = convrot::quantize_row(block.data(), n * hd, q + j0 * hd);
        }
      }
    });
  }

  // P.V in fp8's values (CoreOps::quantize_values_fp8): per row of Vᵀ the largest |v| over the
  // keys (a max: any order gives it), s = max(amax / 448, kScaleFloor), each code e4m3(v / s); a
  // row with a NaN or an infinity: scale NaN, codes 0. The padding columns' codes are 0.
  void do_quantize_values_fp8(const Tensor& vt, int64_t keys, Fp8Values& out) override {
    check_f32_matrix(vt, "quantize_values_fp8", "vt");
    check_host(out.codes, "quantize_values_fp8", "codes");
    const int64_t rows = vt.rows(), keys_pad = vt.cols();
    pool_.parallel_for(rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* v = vt.row<const float>(r);
        uint8_t* codes = out.codes.ptr<uint8_t>() + r * keys_pad;
        std::fill(codes, codes + keys_pad, uint8_t(0));
        float amax = 0.0f;
        bool finite = true;
        for (int64_t j = 0; j < keys; ++j) {
          finite = finite && std::isfinite(v[j]);
          amax = std::max(amax, std::fabs(v[j]));
        }
        float& scale = out.scale.ptr<float>()[r];
        if (!finite) {
          scale = std::nanf("");
          continue;
        }
        scale = std::max(amax / e4m3::kMax, convrot::kScaleFloor);
        for (int64_t j = 0; j < keys; ++j) codes[j] = e4m3::from_f32(v[j] / scale);
      }
    });
  }

  // norm_rope_attention with int8 scores (docs/attention_int8_qk.md): q normalised and rotated as
  // there, times `scale`, quantized per head and block of kInt8QueryBlock queries by
  // convrot::quantize_row; each score the exact int32 sum of q8·k8 as a float times
  // fl(s_q·s_k), then do_attention's softmax and P·V (softmax_pv).
  void do_norm_rope_attention_int8_qk(Tensor& q, const Tensor& w, float eps, const Tensor& sin, const Tensor& cos,
                                      const QuantizedKeys& kq, const Tensor& v, Tensor& out, int64_t heads,
                                      int64_t head_dim, float scale, bool v_transposed) override {
    const char* op = "norm_rope_attention_int8_qk";
    check_host(kq.q, op, "quantized keys");
    check_f32_matrix(out, op, "out");
    norm_rope(q, w, eps, head_dim, sin, cos, q);
    const Tensor values = value_rows(v, kq.keys, v_transposed, op);
    const int64_t Tq = q.rows(), Tk = kq.keys, hd = head_dim, keys_pad = transposed_v_keys(Tk);
    const int64_t q_blocks = (Tq + kInt8QueryBlock - 1) / kInt8QueryBlock, k_blocks = keys_pad / kInt8KeyBlock;
    // q8 [heads, Tq, hd] and s_q [heads, q_blocks]: each block's rows are consecutive.
    std::vector<int8_t> q8(size_t(heads * Tq * hd));
    std::vector<float> s_q(size_t(heads * q_blocks));
    pool_.parallel_for(heads * q_blocks, [&](int64_t t0, int64_t t1) {
      std::vector<float> block(size_t(kInt8QueryBlock * hd));
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t h = t / q_blocks, i0 = (t % q_blocks) * kInt8QueryBlock, n = std::min(kInt8QueryBlock, Tq - i0);
        for (int64_t i = 0; i < n; ++i) {
          const float* qi = q.row<const float>(i0 + i) + h * hd;
          for (int64_t d = 0; d < hd; ++d) block[size_t(i * hd + d)] = qi[d] * scale;
        }
        s_q[size_t(t)] = convrot::quantize_row(block.data(), n * hd, q8.data() + (h * Tq + i0) * hd);
      }
    });
    const int8_t* k8 = kq.q.ptr<const int8_t>();
    const float* s_k = kq.scale.ptr<const float>();
    pool_.parallel_for(heads * Tq, [&](int64_t t0, int64_t t1) {
      std::vector<float> p(static_cast<size_t>(Tk));
      std::vector<double> acc(static_cast<size_t>(hd));
      for (int64_t t = t0; t < t1; ++t) {
        if (cancel_requested()) return;  // util/cancel.h: the caller's next checkpoint throws
        const int64_t h = t / Tq, i = t % Tq;
        const int8_t* qi = q8.data() + (h * Tq + i) * hd;
        const float sq = s_q[size_t(h * q_blocks + i / kInt8QueryBlock)];
        for (int64_t j = 0; j < Tk; ++j) {
          const int8_t* kj = k8 + (h * keys_pad + j) * hd;
          int32_t s = 0;
          for (int64_t d = 0; d < hd; ++d) s += int32_t(qi[d]) * int32_t(kj[d]);
          p[size_t(j)] = float(s) * (sq * s_k[h * k_blocks + j / kInt8KeyBlock]);
        }
        softmax_pv(p, Tk, values, h * hd, hd, acc, out.row<float>(i) + h * hd);
      }
    });
  }

  void do_add(Tensor& x, const Tensor& d, const Tensor* gate) override {
    check_f32_matrix(x, "add", "x");
    check_f32_matrix(d, "add", "d");
    const int64_t C = x.cols();
    std::vector<float> g = gate ? vec_f32(*gate) : std::vector<float>();
    pool_.parallel_for(x.rows(), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* xr = x.row<float>(r);
        const float* dr = d.row<const float>(r);
        if (gate)
          for (int64_t c = 0; c < C; ++c) xr[c] += dr[c] * g[size_t(c)];
        else
          for (int64_t c = 0; c < C; ++c) xr[c] += dr[c];
      }
    }, 4);
  }

  void do_gated_unit(GatedUnit kind, const Tensor& a, const Tensor& b, Tensor& out) override {
    for (const Tensor* t : std::initializer_list<const Tensor*>{&a, &b, &out})
      check_f32_matrix(*t, "gated_unit", "operand");
    const int64_t C = a.cols();
    pool_.parallel_for(a.rows(), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* ar = a.row<const float>(r);
        const float* br = b.row<const float>(r);
        float* o = out.row<float>(r);
        for (int64_t c = 0; c < C; ++c) {
          const float x = ar[c], g = br[c];
          switch (kind) {
            case GatedUnit::Situ:
              o[c] = (4.0f * std::tanh(g / 4.0f) * sigmoid(g)) * (25.0f * std::tanh(x / 25.0f));
              break;
            case GatedUnit::SwiGlu: o[c] = x * sigmoid(x) * g; break;
            case GatedUnit::SigmoidGate: o[c] = x * sigmoid(g); break;
          }
        }
      }
    }, 4);
  }

  void do_silu(const Tensor& x, Tensor& y) override {
    check_f32_matrix(x, "silu", "x");
    check_f32_matrix(y, "silu", "y");
    const int64_t C = x.cols();
    pool_.parallel_for(x.rows(), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x.row<const float>(r);
        float* yr = y.row<float>(r);
        for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * sigmoid(xr[c]);
      }
    }, 4);
  }

  void do_rope(Tensor& x, const Tensor& sin, const Tensor& cos, int64_t head_dim, int64_t rot_dim) override {
    check_f32_matrix(x, "rope", "x");
    check_f32_matrix(sin, "rope", "sin");
    check_f32_matrix(cos, "rope", "cos");
    const int64_t C = x.cols(), half = rot_dim / 2;
    op_require(sin.cols() >= half && cos.cols() >= half, "rope",
               "table shape " + sin.shape_str() + " for x " + x.shape_str());
    pool_.parallel_for(x.rows(), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* xr = x.row<float>(r);
        const float* s = sin.row<const float>(r);
        const float* c = cos.row<const float>(r);
        for (int64_t h0 = 0; h0 < C; h0 += head_dim)
          for (int64_t i = 0; i < half; ++i) {
            const float a = xr[h0 + i], b = xr[h0 + i + half];
            // x·cos + rotate_half(x)·sin, each product rounded as the reference computes it.
            xr[h0 + i] = a * c[i] + (-b) * s[i];
            xr[h0 + i + half] = b * c[i + half] + a * s[i + half];
          }
      }
    }, 4);
  }

  void do_attention(const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out, int64_t heads, int64_t kv_heads,
                    int64_t head_dim, float scale, bool causal) override {
    check_f32_matrix(q, "attention", "q");
    check_f32_matrix(k, "attention", "k");
    check_f32_matrix(v, "attention", "v");
    check_f32_matrix(out, "attention", "out");
    const int64_t Tq = q.rows(), Tk = k.rows(), hd = head_dim;
    op_require(q.cols() == heads * hd && out.cols() == heads * hd && out.rows() == Tq, "attention", "q/out shape");
    op_require(k.cols() == kv_heads * hd && v.cols() == kv_heads * hd && v.rows() == Tk, "attention", "k/v shape");
    op_require(kv_heads > 0 && heads % kv_heads == 0, "attention", "heads must be a multiple of kv_heads");
    op_require(!causal || Tq == Tk, "attention", "causal attention needs Tq == Tk");
    const int64_t group = heads / kv_heads;
    // One task per (head, query row): scores in fp32, max-subtracted softmax, weighted sum.
    pool_.parallel_for(heads * Tq, [&](int64_t t0, int64_t t1) {
      std::vector<float> p(static_cast<size_t>(Tk));
      std::vector<double> acc(static_cast<size_t>(hd));
      for (int64_t t = t0; t < t1; ++t) {
        if (cancel_requested()) return;  // util/cancel.h: the caller's next checkpoint throws
        const int64_t h = t / Tq, i = t % Tq, kh = h / group;
        const float* qi = q.row<const float>(i) + h * hd;
        const int64_t n = causal ? i + 1 : Tk;
        for (int64_t j = 0; j < n; ++j) {
          const float* kj = k.row<const float>(j) + kh * hd;
          float s = 0.0f;
          for (int64_t d = 0; d < hd; ++d) s += qi[d] * kj[d];
          p[size_t(j)] = s * scale;
        }
        softmax_pv(p, n, v, kh * hd, hd, acc, out.row<float>(i) + h * hd);
      }
    });
  }

  void do_embedding(const std::vector<int32_t>& ids, const Tensor& table, Tensor& out) override {
    check_f32_matrix(out, "embedding", "out");
    const int64_t V = table.rows(), C = table.cols();
    for (size_t i = 0; i < ids.size(); ++i) {
      op_require(ids[i] >= 0 && ids[i] < V, "embedding", "token id " + std::to_string(ids[i]) + " outside the table");
      float* o = out.row<float>(int64_t(i));
      for (int64_t c = 0; c < C; ++c)
        o[c] = table.dtype == DType::BF16 ? bf16_to_f32(table.ptr<const uint16_t>()[ids[i] * C + c])
                                          : table.ptr<const float>()[ids[i] * C + c];
    }
  }

  void do_copy(const Tensor& src, Tensor& dst) override {
    op_require(src.where == Where::Host && dst.where == Where::Host, "copy", "host tensors only");
    const int64_t C = src.cols();
    for (int64_t r = 0; r < src.rows(); ++r)
      for (int64_t c = 0; c < C; ++c) {
        float v = src.dtype == DType::BF16 ? bf16_to_f32(src.row<const uint16_t>(r)[c]) : src.row<const float>(r)[c];
        if (dst.dtype == DType::BF16) dst.row<uint16_t>(r)[c] = f32_to_bf16(v);
        else dst.row<float>(r)[c] = v;
      }
  }

 private:
  // The attention's second half for one query row, shared by the fp32 and the int8 scores: the
  // logits p[0, n) to a max-subtracted fp32 softmax, its weights times V's rows (columns
  // col0 .. col0 + hd) summed in double in key order, divided by the softmax's fp32 sum into o.
  static void softmax_pv(std::vector<float>& p, int64_t n, const Tensor& v, int64_t col0, int64_t hd,
                         std::vector<double>& acc, float* o) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) mx = std::max(mx, p[size_t(j)]);
    float sum = 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      p[size_t(j)] = std::exp(p[size_t(j)] - mx);
      sum += p[size_t(j)];
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t j = 0; j < n; ++j) {
      const float* vj = v.row<const float>(j) + col0;
      const float pj = p[size_t(j)];
      for (int64_t d = 0; d < hd; ++d) acc[size_t(d)] += double(pj * vj[d]);
    }
    for (int64_t d = 0; d < hd; ++d) o[d] = float(acc[size_t(d)] / double(sum));
  }

  // V's rows [Tk, C] for the attention: v itself, or a transposed Vᵀ's first Tk columns turned
  // back into rows (the values, not rounded again).
  static Tensor value_rows(const Tensor& v, int64_t Tk, bool v_transposed, const char* op) {
    check_f32_matrix(v, op, "v");
    if (!v_transposed) return v;
    const int64_t C = v.rows();
    Tensor rows = host_tensor(DType::F32, {Tk, C});
    for (int64_t c = 0; c < C; ++c)
      for (int64_t j = 0; j < Tk; ++j) rows.row<float>(j)[c] = v.row<const float>(c)[j];
    return rows;
  }

  static void check_quantized_host(const QuantizedRows& xq, const char* op) {
    check_host(xq.q, op, "quantized rows");
    check_host(xq.scale, op, "quantized rows' scale");
  }

  void quantize_and_copy(const Tensor& rows, QuantizedRows& q, Tensor* y) {
    rotate_quantize(rows, q);
    if (y) copy(rows, *y);
  }

  ThreadPool& pool_;
  bool transposed_v_;
  bool int8_unit_in_epilogue_;
  bool int8_qk_attention_;
};

}  // namespace

std::unique_ptr<CoreOps> make_host_core_ops(ThreadPool& pool, bool transposed_v, bool int8_unit_in_epilogue,
                                           bool int8_qk_attention) {
  return std::make_unique<HostCoreOps>(pool, transposed_v, int8_unit_in_epilogue, int8_qk_attention);
}

}  // namespace moss
