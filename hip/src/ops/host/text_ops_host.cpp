// Host reference of the text-encoder op family: plain C++ in fp32, following the operation
// order of the reference (transformers' torch fallback for Qwen3.5's Gated DeltaNet), threaded
// with the deterministic pool over rows or value heads.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "ops/host/host_factories.h"
#include "ops/host/host_op_parts.h"

namespace moss {
namespace {

std::vector<float> buffer(int64_t n) { return std::vector<float>(static_cast<size_t>(n), 0.0f); }

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x * sigmoid(x); }
// torch.nn.functional.softplus with beta 1 and threshold 20.
inline float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

// The delta rule's dimensions (the public op has checked the shapes: ops/text_ops.cpp).
struct DeltaShape {
  int64_t T, key_heads, value_heads, dk, dv, group;
};

DeltaShape delta_shape(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g,
                       const Tensor& beta, int64_t key_heads, const Tensor* state, const Tensor& out) {
  for (const Tensor* t : std::initializer_list<const Tensor*>{&q, &k, &v, &g, &beta, &out}) check_f32_matrix(*t, op, "operand");
  DeltaShape s;
  s.T = q.rows();
  s.key_heads = key_heads;
  s.value_heads = g.cols();
  s.dk = q.cols() / key_heads;
  s.dv = v.cols() / s.value_heads;
  s.group = s.value_heads / key_heads;
  if (state) check_f32_matrix(*state, op, "state");
  return s;
}

class HostTextOps : public TextOps {
 public:
  explicit HostTextOps(ThreadPool& pool) : pool_(pool) {}

  void do_causal_conv1d_silu(const Tensor& x, const Tensor& w, Tensor& y) override {
    check_f32_matrix(x, "causal_conv1d_silu", "x");
    check_f32_matrix(y, "causal_conv1d_silu", "y");
    const int64_t T = x.rows(), C = x.cols(), K = w.cols();
    const std::vector<float> wf = to_f32_vector(w);
    pool_.parallel_for(T, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        float* yr = y.row<float>(t);
        for (int64_t c = 0; c < C; ++c) {
          const float* wc = wf.data() + c * K;
          float acc = 0.0f;
          for (int64_t j = 0; j < K; ++j) {
            const int64_t src = t - (K - 1) + j;
            if (src >= 0) acc += wc[j] * x.row<const float>(src)[c];
          }
          yr[c] = silu(acc);
        }
      }
    }, 4);
  }

  void do_deltanet_gates(const Tensor& a, const Tensor& b, const Tensor& a_log, const Tensor& dt_bias, Tensor& g,
                         Tensor& beta) override {
    for (const Tensor* t : std::initializer_list<const Tensor*>{&a, &b, &g, &beta}) check_f32_matrix(*t, "deltanet_gates", "operand");
    const int64_t T = a.rows(), H = a.cols();
    const std::vector<float> al = to_f32_vector(a_log), db = to_f32_vector(dt_bias);
    std::vector<float> neg_a(size_t(H), 0.0f);
    for (int64_t h = 0; h < H; ++h) neg_a[size_t(h)] = -std::exp(al[size_t(h)]);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        g.row<float>(t)[h] = neg_a[size_t(h)] * softplus(a.row<const float>(t)[h] + db[size_t(h)]);
        beta.row<float>(t)[h] = sigmoid(b.row<const float>(t)[h]);
      }
  }

  void do_l2_norm(const Tensor& x, float eps, int64_t group, Tensor& y) override {
    check_f32_matrix(x, "l2_norm", "x");
    check_f32_matrix(y, "l2_norm", "y");
    for_each_group_sum_of_squares(pool_, x, group, [&](int64_t r, int64_t g0, float ss) {
      const float* xr = x.row<const float>(r);
      float* yr = y.row<float>(r);
      const float inv = 1.0f / std::sqrt(ss + eps);
      for (int64_t c = 0; c < group; ++c) yr[g0 + c] = xr[g0 + c] * inv;
    });
  }

  void do_delta_rule_chunked(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                             int64_t key_heads, float scale, int64_t chunk, Tensor* state, Tensor& out) override {
    const DeltaShape s = delta_shape("delta_rule_chunked", q, k, v, g, beta, key_heads, state, out);
    pool_.parallel_for(s.value_heads, [&](int64_t h0, int64_t h1) {
      for (int64_t h = h0; h < h1; ++h) chunked_head(q, k, v, g, beta, s, h, scale, chunk, state, out);
    });
  }

  void do_gated_rms_norm(const Tensor& x, const Tensor& z, const Tensor& w, float eps, int64_t group,
                         Tensor& y) override {
    for (const Tensor* t : std::initializer_list<const Tensor*>{&x, &z, &y}) check_f32_matrix(*t, "gated_rms_norm", "operand");
    const std::vector<float> wf = to_f32_vector(w);
    for_each_group_sum_of_squares(pool_, x, group, [&](int64_t r, int64_t g0, float ss) {
      const float* xr = x.row<const float>(r);
      const float* zr = z.row<const float>(r);
      float* yr = y.row<float>(r);
      const float inv = 1.0f / std::sqrt(ss / float(group) + eps);
      for (int64_t c = 0; c < group; ++c) yr[g0 + c] = wf[size_t(c)] * (xr[g0 + c] * inv) * silu(zr[g0 + c]);
    });
  }

 private:
  // The initial state of head h (zero without a state tensor) and where its final one goes.
  static std::vector<float> load_state(const Tensor* state, const DeltaShape& s, int64_t h) {
    std::vector<float> S = buffer(s.dk * s.dv);
    if (state) std::copy_n(state->ptr<const float>() + h * s.dk * s.dv, S.size(), S.data());
    return S;
  }
  static void store_state(Tensor* state, const DeltaShape& s, int64_t h, const std::vector<float>& S) {
    if (state) std::copy(S.begin(), S.end(), state->ptr<float>() + h * s.dk * s.dv);
  }

  // One value head through the chunked form. A short last block is processed as it is: the
  // reference's zero padding (beta = 0, g = 0, k = v = 0) adds nothing to any kept output.
  static void chunked_head(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                           const DeltaShape& s, int64_t h, float scale, int64_t chunk, Tensor* state, Tensor& out) {
    const int64_t dk = s.dk, dv = s.dv, kh = h / s.group, C = chunk;
    std::vector<float> S = load_state(state, s, h);
    // Per-block scratch: scaled q, k, beta·k, beta·v; the log-decay g and its cumulative sum Γ;
    // the decay matrix; the inverted (I + A); u (new values), w (decayed keys), beta·k·exp(Γ)
    // and the corrected values.
    std::vector<float> Q = buffer(C * dk), K = buffer(C * dk), KB = buffer(C * dk), VB = buffer(C * dv);
    std::vector<float> GR = buffer(C), G = buffer(C), D = buffer(C * C), L = buffer(C * C);
    std::vector<float> U = buffer(C * dv), W = buffer(C * dk), KBG = buffer(C * dk), VN = buffer(C * dv);
    std::vector<float> row = buffer(C);
    for (int64_t t0 = 0; t0 < s.T; t0 += C) {
      const int64_t n = std::min(C, s.T - t0);
      float cum = 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        const float* qt = q.row<const float>(t0 + i) + kh * dk;
        const float* kt = k.row<const float>(t0 + i) + kh * dk;
        const float* vt = v.row<const float>(t0 + i) + h * dv;
        const float bt = beta.row<const float>(t0 + i)[h];
        for (int64_t a = 0; a < dk; ++a) {
          Q[size_t(i * dk + a)] = qt[a] * scale;
          K[size_t(i * dk + a)] = kt[a];
          KB[size_t(i * dk + a)] = kt[a] * bt;
        }
        for (int64_t b = 0; b < dv; ++b) VB[size_t(i * dv + b)] = vt[b] * bt;
        GR[size_t(i)] = g.row<const float>(t0 + i)[h];
        cum += GR[size_t(i)];
        G[size_t(i)] = cum;
      }
      // decay D[i][j] = exp(Σ_{j<m≤i} g_m) for j ≤ i. The sum runs over the gap itself
      // rather than Γ_i − Γ_j: the difference of two long cumulative sums cancels and costs
      // about 4x the error (measured against the rule in double; see test_deltanet.cpp).
      for (int64_t j = 0; j < n; ++j) {
        float gap = 0.0f;
        for (int64_t i = 0; i < n; ++i) {
          if (i > j) gap += GR[size_t(i)];
          D[size_t(i * C + j)] = i >= j ? std::exp(gap) : 0.0f;
        }
      }

      // L = −(beta·k kᵀ ⊙ decay), strictly lower; then forward substitution turns it into
      // (I + A)⁻¹ − I row by row (each row uses the already finished rows above it).
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          float acc = 0.0f;
          if (j < i)
            for (int64_t a = 0; a < dk; ++a) acc += KB[size_t(i * dk + a)] * K[size_t(j * dk + a)];
          L[size_t(i * C + j)] = j < i ? -(acc * D[size_t(i * C + j)]) : 0.0f;
        }
      for (int64_t i = 1; i < n; ++i) {
        for (int64_t j = 0; j < i; ++j) row[size_t(j)] = L[size_t(i * C + j)];
        for (int64_t j = 0; j < i; ++j) {
          float acc = 0.0f;
          for (int64_t m = j + 1; m < i; ++m) acc += row[size_t(m)] * L[size_t(m * C + j)];
          L[size_t(i * C + j)] = row[size_t(j)] + acc;
        }
      }
      for (int64_t i = 0; i < n; ++i) L[size_t(i * C + i)] = 1.0f;

      // u = L·(beta·v), w = L·(beta·k·exp(Γ)).
      for (int64_t j = 0; j < n; ++j) {
        const float eg = std::exp(G[size_t(j)]);
        for (int64_t a = 0; a < dk; ++a) KBG[size_t(j * dk + a)] = KB[size_t(j * dk + a)] * eg;
      }
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t b = 0; b < dv; ++b) {
          float acc = 0.0f;
          for (int64_t j = 0; j <= i; ++j) acc += L[size_t(i * C + j)] * VB[size_t(j * dv + b)];
          U[size_t(i * dv + b)] = acc;
        }
        for (int64_t a = 0; a < dk; ++a) {
          float acc = 0.0f;
          for (int64_t j = 0; j <= i; ++j) acc += L[size_t(i * C + j)] * KBG[size_t(j * dk + a)];
          W[size_t(i * dk + a)] = acc;
        }
      }

      // Against the state carried in: v_new = u − w·S; out = (q·exp(Γ))·S + (q kᵀ ⊙ decay)·v_new.
      for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < dv; ++b) {
          float acc = 0.0f;
          for (int64_t a = 0; a < dk; ++a) acc += W[size_t(i * dk + a)] * S[size_t(a * dv + b)];
          VN[size_t(i * dv + b)] = U[size_t(i * dv + b)] - acc;
        }
      for (int64_t i = 0; i < n; ++i) {
        const float eg = std::exp(G[size_t(i)]);
        for (int64_t j = 0; j <= i; ++j) {
          float acc = 0.0f;
          for (int64_t a = 0; a < dk; ++a) acc += Q[size_t(i * dk + a)] * K[size_t(j * dk + a)];
          row[size_t(j)] = acc * D[size_t(i * C + j)];
        }
        float* ot = out.row<float>(t0 + i) + h * dv;
        for (int64_t b = 0; b < dv; ++b) {
          float inter = 0.0f;
          for (int64_t a = 0; a < dk; ++a) inter += (Q[size_t(i * dk + a)] * eg) * S[size_t(a * dv + b)];
          float intra = 0.0f;
          for (int64_t j = 0; j <= i; ++j) intra += row[size_t(j)] * VN[size_t(j * dv + b)];
          ot[b] = inter + intra;
        }
      }

      // S ← exp(Γ_last)·S + (k·exp(Γ_last − Γ))ᵀ·v_new; exp(Γ_last − Γ_i) is D's last row.
      const float elast = std::exp(G[size_t(n - 1)]);
      const float* to_end = D.data() + (n - 1) * C;
      for (int64_t a = 0; a < dk; ++a)
        for (int64_t b = 0; b < dv; ++b) {
          float acc = 0.0f;
          for (int64_t i = 0; i < n; ++i) acc += (K[size_t(i * dk + a)] * to_end[i]) * VN[size_t(i * dv + b)];
          S[size_t(a * dv + b)] = S[size_t(a * dv + b)] * elast + acc;
        }
    }
    store_state(state, s, h, S);
  }

  ThreadPool& pool_;
};

}  // namespace

std::unique_ptr<TextOps> make_host_text_ops(ThreadPool& pool) { return std::make_unique<HostTextOps>(pool); }

}  // namespace moss
