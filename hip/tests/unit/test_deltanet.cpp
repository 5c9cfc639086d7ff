// The gated delta rule of the text-op family: the chunked form (the encoder's prefill path)
// against the token-by-token recurrence (a host reference kept here: the product never runs
// it, so the op interface has no such op), and both against a double-precision statement of
// the rule, on random inputs whose lengths are and are not multiples of the chunk.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "test_support.h"

using namespace moss;

namespace {

struct DeltaInputs {
  int64_t T, key_heads, value_heads, dk, dv;
  Tensor q, k, v, g, beta;
};

Tensor random_matrix(std::mt19937& rng, int64_t rows, int64_t cols, float stddev) {
  Tensor t = host_tensor(DType::F32, {rows, cols});
  std::normal_distribution<float> n(0.0f, stddev);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = n(rng);
  return t;
}

// Inputs as the encoder makes them: l2-normalised q and k, gates from random projections.
DeltaInputs make_inputs(Backend& be, uint32_t seed, int64_t T, int64_t key_heads, int64_t value_heads, int64_t dk,
                        int64_t dv) {
  std::mt19937 rng(seed);
  DeltaInputs in{T, key_heads, value_heads, dk, dv, {}, {}, {}, {}, {}};
  in.q = host_tensor(DType::F32, {T, key_heads * dk});
  in.k = host_tensor(DType::F32, {T, key_heads * dk});
  be.text().l2_norm(random_matrix(rng, T, key_heads * dk, 1.0f), 1e-6f, dk, in.q);
  be.text().l2_norm(random_matrix(rng, T, key_heads * dk, 1.0f), 1e-6f, dk, in.k);
  in.v = random_matrix(rng, T, value_heads * dv, 1.0f);
  Tensor a_log = random_matrix(rng, 1, value_heads, 0.5f), dt_bias = random_matrix(rng, 1, value_heads, 0.5f);
  in.g = host_tensor(DType::F32, {T, value_heads});
  in.beta = host_tensor(DType::F32, {T, value_heads});
  be.text().deltanet_gates(random_matrix(rng, T, value_heads, 1.5f), random_matrix(rng, T, value_heads, 1.5f), a_log,
                           dt_bias, in.g, in.beta);
  return in;
}

// The rule as stated, in double: S ← exp(g)·S; S ← S + k·(beta·(v − Sᵀk))ᵀ; o = Sᵀ(scale·q).
Tensor reference_double(const DeltaInputs& in, float scale) {
  Tensor out = host_tensor(DType::F32, {in.T, in.value_heads * in.dv});
  const int64_t group = in.value_heads / in.key_heads;
  for (int64_t h = 0; h < in.value_heads; ++h) {
    std::vector<double> S(size_t(in.dk * in.dv), 0.0);
    const int64_t kh = h / group;
    for (int64_t t = 0; t < in.T; ++t) {
      const float* q = in.q.row<const float>(t) + kh * in.dk;
      const float* k = in.k.row<const float>(t) + kh * in.dk;
      const float* v = in.v.row<const float>(t) + h * in.dv;
      const double decay = std::exp(double(in.g.row<const float>(t)[h])), beta = in.beta.row<const float>(t)[h];
      for (double& e : S) e *= decay;
      for (int64_t b = 0; b < in.dv; ++b) {
        double mem = 0;
        for (int64_t a = 0; a < in.dk; ++a) mem += S[size_t(a * in.dv + b)] * k[a];
        const double u = beta * (v[b] - mem);
        for (int64_t a = 0; a < in.dk; ++a) S[size_t(a * in.dv + b)] += k[a] * u;
      }
      for (int64_t b = 0; b < in.dv; ++b) {
        double o = 0;
        for (int64_t a = 0; a < in.dk; ++a) o += S[size_t(a * in.dv + b)] * double(scale) * q[a];
        out.row<float>(t)[h * in.dv + b] = float(o);
      }
    }
  }
  return out;
}

// The recurrent form in fp32, token by token (the former host op's operation order): per value
// head, S ← exp(g)·S; δ = (v − Sᵀk)·beta; S ← S + k δᵀ; o = Sᵀ(scale·q). `state` (f32
// [value_heads, dk, dv] or null) gives the initial state and receives the final one.
void delta_rule_recurrent(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, const Tensor& beta,
                          int64_t key_heads, float scale, Tensor* state, Tensor& out) {
  const int64_t T = q.rows(), value_heads = g.cols(), dk = q.cols() / key_heads, dv = v.cols() / value_heads;
  const int64_t group = value_heads / key_heads;
  for (int64_t h = 0; h < value_heads; ++h) {
    const int64_t kh = h / group;
    std::vector<float> S(static_cast<size_t>(dk * dv), 0.0f), qs(static_cast<size_t>(dk)), delta(static_cast<size_t>(dv));
    if (state) std::copy_n(state->ptr<const float>() + h * dk * dv, S.size(), S.data());
    for (int64_t t = 0; t < T; ++t) {
      const float* kt = k.row<const float>(t) + kh * dk;
      const float* qt = q.row<const float>(t) + kh * dk;
      const float* vt = v.row<const float>(t) + h * dv;
      const float decay = std::exp(g.row<const float>(t)[h]), bt = beta.row<const float>(t)[h];
      for (int64_t a = 0; a < dk; ++a) qs[size_t(a)] = qt[a] * scale;
      for (float& e : S) e *= decay;
      for (int64_t b = 0; b < dv; ++b) {
        float mem = 0.0f;
        for (int64_t a = 0; a < dk; ++a) mem += S[size_t(a * dv + b)] * kt[a];
        delta[size_t(b)] = (vt[b] - mem) * bt;
      }
      for (int64_t a = 0; a < dk; ++a)
        for (int64_t b = 0; b < dv; ++b) S[size_t(a * dv + b)] += kt[a] * delta[size_t(b)];
      float* ot = out.row<float>(t) + h * dv;
      for (int64_t b = 0; b < dv; ++b) {
        float acc = 0.0f;
        for (int64_t a = 0; a < dk; ++a) acc += S[size_t(a * dv + b)] * qs[size_t(a)];
        ot[b] = acc;
      }
    }
    if (state) std::copy(S.begin(), S.end(), state->ptr<float>() + h * dk * dv);
  }
}

struct Case {
  int64_t T, key_heads, value_heads, dk, dv;
};
std::string case_name(const Case& c) {
  return "T" + std::to_string(c.T) + "_k" + std::to_string(c.key_heads) + "x" + std::to_string(c.dk) + "_v" +
         std::to_string(c.value_heads) + "x" + std::to_string(c.dv);
}
void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

class DeltaRule : public testing::TestWithParam<Case> {};

TEST_P(DeltaRule, ChunkedMatchesRecurrent) {
  const Case c = GetParam();
  std::unique_ptr<Backend> be = make_host_backend();
  const DeltaInputs in = make_inputs(*be, 1234u + uint32_t(c.T), c.T, c.key_heads, c.value_heads, c.dk, c.dv);
  const float scale = float(1.0 / std::sqrt(double(c.dk)));
  Tensor chunked = host_tensor(DType::F32, {c.T, c.value_heads * c.dv});
  Tensor recurrent = host_tensor(DType::F32, {c.T, c.value_heads * c.dv});
  Tensor s_chunked = host_tensor(DType::F32, {c.value_heads, c.dk, c.dv});
  Tensor s_recurrent = host_tensor(DType::F32, {c.value_heads, c.dk, c.dv});
  be->text().delta_rule_chunked(in.q, in.k, in.v, in.g, in.beta, c.key_heads, scale, 64, &s_chunked, chunked);
  delta_rule_recurrent(in.q, in.k, in.v, in.g, in.beta, c.key_heads, scale, &s_recurrent, recurrent);
  const Tensor exact = reference_double(in, scale);

  const double chunk_vs_rec = rel_l2(chunked, recurrent), state_diff = rel_l2(s_chunked, s_recurrent);
  std::printf("T=%lld: chunked vs recurrent %.3e (state %.3e); vs double: chunked %.3e, recurrent %.3e\n",
              (long long)c.T, chunk_vs_rec, state_diff, rel_l2(chunked, exact), rel_l2(recurrent, exact));
  EXPECT_LT(chunk_vs_rec, 1e-6);
  EXPECT_LT(state_diff, 1e-6);
  EXPECT_LT(rel_l2(chunked, exact), 1e-6);
  EXPECT_LT(rel_l2(recurrent, exact), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Lengths, DeltaRule,
                         testing::Values(Case{1, 2, 4, 32, 32}, Case{37, 2, 4, 32, 32}, Case{64, 2, 4, 32, 32},
                                         Case{65, 2, 4, 32, 32}, Case{200, 2, 4, 32, 32},
                                         Case{150, 1, 2, 128, 128}),
                         [](const testing::TestParamInfo<Case>& i) { return case_name(i.param); });

// A state handed from one call to the next continues the sequence exactly as one call would:
// chunked over the first part (ending mid-chunk), then recurrent or chunked over the rest.
TEST(DeltaRuleState, CarriesAcrossCalls) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t T = 150, split = 100, hk = 2, hv = 4, dk = 32, dv = 32;
  const DeltaInputs in = make_inputs(*be, 99u, T, hk, hv, dk, dv);
  const float scale = float(1.0 / std::sqrt(double(dk)));
  Tensor whole = host_tensor(DType::F32, {T, hv * dv});
  be->text().delta_rule_chunked(in.q, in.k, in.v, in.g, in.beta, hk, scale, 64, nullptr, whole);

  for (bool recurrent_tail : {true, false}) {
    Tensor parts = host_tensor(DType::F32, {T, hv * dv});
    Tensor state = host_tensor(DType::F32, {hv, dk, dv});
    Tensor head = parts.slice_rows(0, split), tail = parts.slice_rows(split, T - split);
    be->text().delta_rule_chunked(in.q.slice_rows(0, split), in.k.slice_rows(0, split), in.v.slice_rows(0, split),
                                  in.g.slice_rows(0, split), in.beta.slice_rows(0, split), hk, scale, 64, &state, head);
    const int64_t n = T - split;
    if (recurrent_tail)
      delta_rule_recurrent(in.q.slice_rows(split, n), in.k.slice_rows(split, n), in.v.slice_rows(split, n),
                           in.g.slice_rows(split, n), in.beta.slice_rows(split, n), hk, scale, &state, tail);
    else
      be->text().delta_rule_chunked(in.q.slice_rows(split, n), in.k.slice_rows(split, n), in.v.slice_rows(split, n),
                                    in.g.slice_rows(split, n), in.beta.slice_rows(split, n), hk, scale, 64, &state,
                                    tail);
    EXPECT_LT(rel_l2(parts, whole), 1e-6) << (recurrent_tail ? "recurrent tail" : "chunked tail");
  }
}

// The chunk length is an implementation choice: the GPU kernel may pick another.
TEST(DeltaRuleState, ChunkLengthDoesNotMatter) {
  std::unique_ptr<Backend> be = make_host_backend();
  const DeltaInputs in = make_inputs(*be, 7u, 130, 2, 4, 32, 32);
  const float scale = float(1.0 / std::sqrt(32.0));
  Tensor c64 = host_tensor(DType::F32, {130, 128}), c16 = host_tensor(DType::F32, {130, 128});
  be->text().delta_rule_chunked(in.q, in.k, in.v, in.g, in.beta, 2, scale, 64, nullptr, c64);
  be->text().delta_rule_chunked(in.q, in.k, in.v, in.g, in.beta, 2, scale, 16, nullptr, c16);
  EXPECT_LT(rel_l2(c16, c64), 1e-6);
}

}  // namespace
