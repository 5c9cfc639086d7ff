// The DiT's fused core ops on the host reference (norm_modulate, norm_rope) against plain loops
// that spell out the unfused ops' fp32 operations in order: the results must be bit-identical,
// since the host goldens were made with the unfused ops. Also the backends' choice of GEMM-input
// dtype and the op profiler's table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/measure/measuring_backend.h"
#include "ops/op_profile_table.h"
#include "test_support.h"

namespace moss {
namespace {

// Bitwise equality of two f32 matrices (NaN-safe, -0 distinct: the op order must match exactly).
void expect_same_bits(const Tensor& got, const std::vector<float>& want, int64_t cols) {
  ASSERT_EQ(got.rows() * got.cols(), int64_t(want.size()));
  for (int64_t r = 0; r < got.rows(); ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float g = got.row<const float>(r)[c], w = want[size_t(r * cols + c)];
      uint32_t gb, wb;
      std::memcpy(&gb, &g, 4);
      std::memcpy(&wb, &w, 4);
      ASSERT_EQ(gb, wb) << "at [" << r << ", " << c << "]: got " << g << ", want " << w;
    }
}

// rms_norm(Mul) over runs of `group` columns, in the host's order (squares summed in column
// order, n = x·inv, then n·w).
std::vector<float> norm_loops(const Tensor& x, const std::vector<float>& w, float eps, int64_t group) {
  const int64_t C = x.cols();
  std::vector<float> y(size_t(x.rows() * C));
  for (int64_t r = 0; r < x.rows(); ++r) {
    const float* xr = x.row<const float>(r);
    for (int64_t g0 = 0; g0 < C; g0 += group) {
      float ss = 0.0f;
      for (int64_t c = 0; c < group; ++c) ss += xr[g0 + c] * xr[g0 + c];
      const float inv = 1.0f / std::sqrt(ss / float(group) + eps);
      for (int64_t c = 0; c < group; ++c) {
        const float n = xr[g0 + c] * inv;
        y[size_t(r * C + g0 + c)] = n * w[size_t(c)];
      }
    }
  }
  return y;
}

std::vector<float> values(const Tensor& t) {
  std::vector<float> v(size_t(t.numel()));
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  return v;
}

TEST(DitFusedOps, NormModulateIsRmsNormThenModulate) {
  std::unique_ptr<Backend> be = make_host_backend();
  for (int64_t cols : {int64_t(1), int64_t(7), int64_t(96), int64_t(301)}) {
    const int64_t rows = 5;
    // x is a column slice of a wider matrix (any row stride), as the DiT's operands may be.
    Tensor wide = random_normal({rows, cols + 3}, 1, 2.0f);
    const Tensor x = wide.slice_cols(2, cols);
    Tensor w = random_normal({cols}, 2, 0.5f);
    Tensor mod = random_normal({1, 2 * cols}, 3, 0.5f);  // [shift | scale] as rows of one tensor
    const Tensor shift = mod.slice_cols(0, cols), scale = mod.slice_cols(cols, cols);

    std::vector<float> want = norm_loops(x, values(w), 1e-6f, cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float& y = want[size_t(r * cols + c)];
        y = y * (1.0f + scale.ptr<const float>()[c]) + shift.ptr<const float>()[c];
      }
    Tensor y = host_tensor(DType::F32, {rows, cols});
    be->core().norm_modulate(x, w, 1e-6f, shift, scale, y);
    expect_same_bits(y, want, cols);
  }
}

TEST(DitFusedOps, NormModulateInPlace) {
  std::unique_ptr<Backend> be = make_host_backend();
  Tensor x = random_normal({3, 40}, 4);
  Tensor w = random_normal({40}, 5), shift = random_normal({40}, 6), scale = random_normal({40}, 7);
  Tensor y = host_tensor(DType::F32, {3, 40});
  be->core().norm_modulate(x, w, 1e-6f, shift, scale, y);
  be->core().norm_modulate(x, w, 1e-6f, shift, scale, x);
  expect_same_bits(x, values(y), 40);
}

// add_norm_modulate with one or two updates, the sum stored or not, against its definition:
// the adds in order, then norm_modulate (bits); x a column slice of a wider stream whose other
// columns stay untouched.
TEST(DitFusedOps, AddNormModulateIsTheAddsThenNormModulate) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t rows = 4, cols = 37;
  const Tensor wide = random_normal({rows, cols + 3}, 8, 2.0f);
  const Tensor d0 = random_normal({rows, cols}, 9), g0 = random_normal({cols}, 10, 0.5f);
  const Tensor d1 = random_normal({rows, cols}, 14), g1 = random_normal({cols}, 15, 0.5f);
  const Tensor w = random_normal({cols}, 11, 0.5f), shift = random_normal({cols}, 12), scale = random_normal({cols}, 13);
  auto copy_of = [](const Tensor& t) {
    Tensor c = host_tensor(DType::F32, t.dims());
    std::memcpy(c.data, t.data, t.nbytes());
    return c;
  };
  for (int count : {1, 2}) {
    for (SumTo sum : {SumTo::X, SumTo::Nowhere}) {
      SCOPED_TRACE(std::to_string(count) + (sum == SumTo::X ? " updates, stored" : " updates, not stored"));
      Tensor want_wide = copy_of(wide), sum_wide = copy_of(wide);
      Tensor want_sum = sum_wide.slice_cols(1, cols), want_y = host_tensor(DType::F32, {rows, cols});
      be->core().add(want_sum, d0, &g0);
      if (count == 2) {
        be->core().add(want_sum, d1, &g1);
      }
      be->core().norm_modulate(want_sum, w, 1e-6f, shift, scale, want_y);
      if (sum == SumTo::X) want_wide = copy_of(sum_wide);

      Tensor got_wide = copy_of(wide);
      Tensor got_x = got_wide.slice_cols(1, cols), got_y = host_tensor(DType::F32, {rows, cols});
      GatedUpdates u;
      u.then(d0, g0);
      if (count == 2) {
        u.then(d1, g1);
      }
      be->core().add_norm_modulate(got_x, u, sum, w, 1e-6f, shift, scale, got_y);
      expect_same_bits(got_wide, values(want_wide), cols + 3);
      expect_same_bits(got_y, values(want_y), cols);
      if (sum == SumTo::X) {
        EXPECT_NE(values(got_wide), values(wide));  // x really was updated
      }
    }
  }
}

// Misfit operands are refused naming the op, before anything is written.
TEST(DitFusedOps, AddNormModulateRefusesMisfits) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t rows = 3, cols = 16;
  Tensor x = random_normal({rows, cols}, 20), y = host_tensor(DType::F32, {rows, cols});
  const Tensor d = random_normal({rows, cols}, 21), g = random_normal({cols}, 22);
  const Tensor d_short = random_normal({rows - 1, cols}, 23), g_long = random_normal({cols + 1}, 24);
  const Tensor w = random_normal({cols}, 25), shift = random_normal({cols}, 26), scale = random_normal({cols}, 27);
  const std::vector<float> x_before = values(x);
  auto refused = [&](const GatedUpdates& u, Tensor& out, const char* why) {
    SCOPED_TRACE(why);
    try {
      be->core().add_norm_modulate(x, u, SumTo::X, w, 1e-6f, shift, scale, out);
      ADD_FAILURE() << "accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("add_norm_modulate"), std::string::npos) << e.what();
    }
    EXPECT_EQ(values(x), x_before);
  };
  refused(GatedUpdates(), y, "no update");
  refused(GatedUpdates().then(d_short, g), y, "d of other rows");
  refused(GatedUpdates().then(d, g_long), y, "a gate of other columns");
  refused(GatedUpdates().then(d, g), x, "y is x");
  GatedUpdates two;
  two.then(d, g).then(d, g);
  EXPECT_THROW(two.then(d, g), std::exception);  // a third
}

TEST(DitFusedOps, NormRopeIsPerHeadRmsNormThenRope) {
  std::unique_ptr<Backend> be = make_host_backend();
  struct Case {
    int64_t rows, heads, head_dim;
  };
  for (const Case& k : {Case{4, 3, 8}, Case{7, 2, 12}, Case{3, 24, 128}}) {
    const int64_t cols = k.heads * k.head_dim, hd = k.head_dim, half = hd / 2;
    Tensor x = random_normal({k.rows, cols}, 11, 3.0f);
    Tensor w = random_normal({hd}, 12, 0.5f);
    // [f | f] tables, as the DiT's.
    Tensor sin = host_tensor(DType::F32, {k.rows, hd}), cos = host_tensor(DType::F32, {k.rows, hd});
    for (int64_t r = 0; r < k.rows; ++r)
      for (int64_t i = 0; i < half; ++i) {
        const double a = double(r + 1) * std::pow(100.0, -double(i) / double(half));
        for (int64_t j : {i, i + half}) {
          sin.row<float>(r)[j] = float(std::sin(a));
          cos.row<float>(r)[j] = float(std::cos(a));
        }
      }
    std::vector<float> n = norm_loops(x, values(w), 1e-6f, hd), want = n;
    for (int64_t r = 0; r < k.rows; ++r)
      for (int64_t h0 = 0; h0 < cols; h0 += hd)
        for (int64_t i = 0; i < half; ++i) {
          const float a = n[size_t(r * cols + h0 + i)], b = n[size_t(r * cols + h0 + i + half)];
          const float* s = sin.row<const float>(r);
          const float* c = cos.row<const float>(r);
          want[size_t(r * cols + h0 + i)] = a * c[i] + (-b) * s[i];
          want[size_t(r * cols + h0 + i + half)] = b * c[i + half] + a * s[i + half];
        }
    Tensor y = host_tensor(DType::F32, {k.rows, cols});
    be->core().norm_rope(x, w, 1e-6f, hd, sin, cos, y);
    expect_same_bits(y, want, cols);
    // In place gives the same.
    be->core().norm_rope(x, w, 1e-6f, hd, sin, cos, x);
    expect_same_bits(x, want, cols);
  }
}

TEST(DitFusedOps, NormRopeAttentionIsNormRopeThenAttention) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t T = 9, heads = 3, hd = 16, cols = heads * hd;
  Tensor q = random_normal({T, cols}, 21, 2.0f), k = random_normal({T, cols}, 22), v = random_normal({T, cols}, 23);
  Tensor w = random_normal({hd}, 24, 0.5f), sin = random_normal({T, hd}, 25), cos = random_normal({T, hd}, 26);
  Tensor q2 = host_tensor(DType::F32, {T, cols});
  std::memcpy(q2.data, q.data, q.nbytes());
  Tensor want = host_tensor(DType::F32, {T, cols}), got = host_tensor(DType::F32, {T, cols});
  const float scale = 0.25f;
  be->core().norm_rope(q, w, 1e-6f, hd, sin, cos, q);
  be->core().attention(q, k, v, want, heads, heads, hd, scale, false);
  be->core().norm_rope_attention(q2, w, 1e-6f, sin, cos, k, v, got, heads, hd, scale);
  expect_same_bits(got, std::vector<float>(want.ptr<float>(), want.ptr<float>() + want.numel()), cols);
  // Tables, out and head counts that do not fit q are refused, naming the op.
  auto expect_refused = [](const char* what, const std::function<void()>& call) {
    try {
      call();
      ADD_FAILURE() << what << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("norm_rope_attention"), std::string::npos) << what << ": " << e.what();
    }
  };
  Tensor short_sin = sin.slice_rows(0, T - 1), narrow_out = host_tensor(DType::F32, {T, cols - hd});
  expect_refused("a table of T-1 rows",
                 [&] { be->core().norm_rope_attention(q2, w, 1e-6f, short_sin, cos, k, v, got, heads, hd, scale); });
  expect_refused("a narrower out",
                 [&] { be->core().norm_rope_attention(q2, w, 1e-6f, sin, cos, k, v, narrow_out, heads, hd, scale); });
  expect_refused("heads x head_dim other than q's width",
                 [&] { be->core().norm_rope_attention(q2, w, 1e-6f, sin, cos, k, v, got, heads + 1, hd, scale); });
}

// Vᵀ of v [T, C] as CoreOps::linear_transposed writes it: [C, P], zeros past T.
Tensor transposed_with_zeros(const Tensor& v, int64_t P) {
  Tensor t = host_tensor(DType::F32, {v.cols(), P});
  for (int64_t c = 0; c < v.cols(); ++c)
    for (int64_t j = 0; j < P; ++j) t.row<float>(c)[j] = j < v.rows() ? v.row<const float>(j)[c] : 0.0f;
  return t;
}

TEST(DitFusedOps, NormRopeAttentionReadsTransposedV) {
  std::unique_ptr<Backend> be = make_host_backend();
  EXPECT_FALSE(be->core().attention_reads_transposed_v(128));  // the host reads V's rows fastest
  for (const int64_t T : {9, 64, 70}) {
    const int64_t heads = 3, hd = 16, cols = heads * hd;
    const int64_t keys = CoreOps::transposed_v_keys(T);
    Tensor q = random_normal({T, cols}, 31, 2.0f), k = random_normal({T, cols}, 32), v = random_normal({T, cols}, 33);
    Tensor w = random_normal({hd}, 34, 0.5f), sin = random_normal({T, hd}, 35), cos = random_normal({T, hd}, 36);
    Tensor q2 = host_tensor(DType::F32, {T, cols});
    std::memcpy(q2.data, q.data, q.nbytes());
    Tensor want = host_tensor(DType::F32, {T, cols}), got = host_tensor(DType::F32, {T, cols});
    be->core().norm_rope_attention(q, w, 1e-6f, sin, cos, k, v, want, heads, hd, 0.25f);
    const Tensor vt = transposed_with_zeros(v, keys);
    be->core().norm_rope_attention(q2, w, 1e-6f, sin, cos, k, vt, got, heads, hd, 0.25f, true);
    expect_same_bits(got, std::vector<float>(want.ptr<float>(), want.ptr<float>() + want.numel()), cols);
    // A Vᵀ without its padded keys, or of another width, is refused, naming the op.
    for (const Tensor& bad : {transposed_with_zeros(v, keys - 1), transposed_with_zeros(v.slice_cols(0, cols - hd), keys)}) {
      try {
        be->core().norm_rope_attention(q2, w, 1e-6f, sin, cos, k, bad, got, heads, hd, 0.25f, true);
        ADD_FAILURE() << "transposed v " << bad.shape_str() << " was accepted for T " << T;
      } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("norm_rope_attention"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(DitFusedOps, LinearTransposedIsTheProductTransposed) {
  std::unique_ptr<Backend> be = make_host_backend();
  const int64_t M = 7, K = 24, N = 10, P = 16, ld = 20;
  Tensor x = random_normal({M, K}, 41), w = random_normal({N, K}, 42, 0.2f);
  Tensor y = host_tensor(DType::F32, {M, N});
  be->core().linear(x, w, nullptr, y);
  // yt: the first P columns of an [N, ld] buffer of NaN; the rest must stay NaN.
  Tensor buf = host_tensor(DType::F32, {N, ld});
  for (int64_t i = 0; i < buf.numel(); ++i) buf.ptr<float>()[i] = std::nanf("");
  Tensor yt = buf.slice_cols(0, P);
  be->core().linear_transposed(x, w, yt);
  std::vector<float> want(size_t(N * P));
  for (int64_t c = 0; c < N; ++c)
    for (int64_t r = 0; r < P; ++r) want[size_t(c * P + r)] = r < M ? y.row<const float>(r)[c] : 0.0f;
  expect_same_bits(yt, want, P);
  for (int64_t c = 0; c < N; ++c)
    for (int64_t r = P; r < ld; ++r) EXPECT_TRUE(std::isnan(buf.row<const float>(c)[r])) << c << ", " << r;
  // Shapes that do not fit are refused, naming the op: fewer columns than x has rows, another
  // row count than w's, a weight of another K, an x of no rows.
  Tensor short_yt = host_tensor(DType::F32, {N, M - 1}), tall_yt = host_tensor(DType::F32, {N + 1, P});
  Tensor other_w = random_normal({N, K + 8}, 43), no_rows = host_tensor(DType::F32, {0, K});
  for (const auto& [what, call] : std::vector<std::pair<const char*, std::function<void()>>>{
           {"M-1 columns", [&] { be->core().linear_transposed(x, w, short_yt); }},
           {"N+1 rows", [&] { be->core().linear_transposed(x, w, tall_yt); }},
           {"a weight of another K", [&] { be->core().linear_transposed(x, other_w, yt); }},
           {"an x of no rows", [&] { be->core().linear_transposed(no_rows, w, yt); }}}) {
    try {
      call();
      ADD_FAILURE() << what << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("linear_transposed"), std::string::npos) << what << ": " << e.what();
    }
  }
}

TEST(DitFusedOps, GemmInputDtypePerBackend) {
  // The host reference keeps every activation f32 (its goldens); the memory planner's counting
  // backend stands for the GPU, whose GEMM inputs are bf16.
  EXPECT_EQ(make_host_backend()->gemm_input_dtype(), DType::F32);
  EXPECT_EQ(MeasuringBackend().gemm_input_dtype(), DType::BF16);
}

TEST(OpProfileTable, SortedByTotalWithSums) {
  const std::string t = format_op_profile("hip test", {{"core.rope", 10, 1.0}, {"core.linear 3072x3072 x:bf16", 4, 8.0},
                                                       {"core.add", 2, 3.0}});
  EXPECT_NE(t.find("op profile: hip test"), std::string::npos);
  const size_t lin = t.find("core.linear"), add = t.find("core.add"), rope = t.find("core.rope");
  ASSERT_NE(lin, std::string::npos);
  EXPECT_LT(lin, add);
  EXPECT_LT(add, rope);
  EXPECT_NE(t.find("2.0000"), std::string::npos);  // mean of the linear: 8 ms / 4 calls
  EXPECT_NE(t.find("66.7%"), std::string::npos);   // its share of 12 ms
  const size_t all = t.find("all ops");
  ASSERT_NE(all, std::string::npos);
  EXPECT_NE(t.find("16", all), std::string::npos);      // calls
  EXPECT_NE(t.find("12.000", all), std::string::npos);  // ms
}

}  // namespace
}  // namespace moss
