// The host reference of the int8 QKᵀ attention (CoreOps::quantize_keys and
// norm_rope_attention_int8_qk; docs/attention_int8_qk.md):
// - quantize_keys against the arithmetic written out here independently (the smoothing's fp32
//   mean, each block's scale and rounding, the padding), over shapes with partial and empty key
//   blocks and Tk < 32, and a non-finite key poisoning its head only;
// - the smoothing: a per-channel constant added to every key changes no bit of kq where the
//   arithmetic is exact, and elsewhere moves the output by roundings only;
// - the whole op against the same arithmetic written out here (bit for bit, both V layouts),
//   against the f32 attention (bit for bit where the operands quantize exactly; elsewhere within
//   the quantization's derived error), partial query and key blocks;
// - every class of bad operand refused by the public ops, by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "ops/backend.h"
#include "test_support.h"

namespace moss {
namespace {

constexpr int64_t kKB = CoreOps::kInt8KeyBlock, kQB = CoreOps::kInt8QueryBlock;
constexpr float kInv127 = 1.0f / 127.0f;

CoreOps::QuantizedKeys keys_for(int64_t tk, int64_t heads, int64_t hd) {
  const int64_t pad = CoreOps::transposed_v_keys(tk);
  return {host_tensor(DType::I8, {heads * pad, hd}), host_tensor(DType::F32, {heads * pad / kKB, 1}), tk};
}

// The block quantization of the document, written out: s = max(fl(amax·fl(1/127)), 1e-30),
// q = clamp(rint(v / s)) (float division, half to even); NaN and zeros for a non-finite block.
float quantize_block(const std::vector<float>& v, std::vector<int8_t>& q) {
  float amax = 0.0f;
  bool finite = true;
  for (float x : v) {
    finite = finite && std::isfinite(x);
    amax = std::max(amax, std::fabs(x));
  }
  q.assign(v.size(), 0);
  if (!finite) return NAN;
  const float s = std::max(amax * kInv127, 1e-30f);
  for (size_t i = 0; i < v.size(); ++i) q[i] = int8_t(std::clamp(std::nearbyint(v[i] / s), -128.0f, 127.0f));
  return s;
}

struct Expected {
  std::vector<int8_t> q;   // [heads·pad, hd]
  std::vector<float> scale;
};

Expected expected_keys(const Tensor& k, int64_t heads, int64_t hd) {
  const int64_t tk = k.rows(), pad = CoreOps::transposed_v_keys(tk);
  Expected e{std::vector<int8_t>(size_t(heads * pad * hd), 0), {}};
  for (int64_t h = 0; h < heads; ++h) {
    std::vector<float> mean(static_cast<size_t>(hd));
    for (int64_t c = 0; c < hd; ++c) {
      float sum = 0.0f;
      for (int64_t j = 0; j < tk; ++j) sum += k.row<const float>(j)[h * hd + c];
      mean[size_t(c)] = sum / float(tk);
    }
    for (int64_t j0 = 0; j0 < pad; j0 += kKB) {
      std::vector<float> v;
      for (int64_t j = j0; j < std::min(j0 + kKB, tk); ++j)
        for (int64_t c = 0; c < hd; ++c) v.push_back(k.row<const float>(j)[h * hd + c] - mean[size_t(c)]);
      std::vector<int8_t> q;
      e.scale.push_back(quantize_block(v, q));
      std::copy(q.begin(), q.end(), e.q.begin() + (h * pad + j0) * hd);
    }
  }
  return e;
}

std::vector<int8_t> i8_values(const Tensor& t) {
  return std::vector<int8_t>(t.ptr<const int8_t>(), t.ptr<const int8_t>() + t.numel());
}
std::vector<float> f32_values(const Tensor& t) { return to_f32_vector(t); }
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

Tensor copy_of(const Tensor& t) {
  Tensor c = host_tensor(t.dtype, t.dims());
  std::memcpy(c.data, t.data, t.nbytes());
  return c;
}

// Keys with an outlier offset per channel, as the DiT's keys have (what the smoothing removes).
Tensor offset_keys(int64_t tk, int64_t heads, int64_t hd, uint32_t seed) {
  Tensor k = random_normal({tk, heads * hd}, seed);
  for (int64_t j = 0; j < tk; ++j)
    for (int64_t c = 0; c < heads * hd; ++c) k.row<float>(j)[c] += float(c % 5) - 2.0f;
  return k;
}

const std::vector<std::tuple<int64_t, int64_t, int64_t>> kKeyShapes = {
    // Tk, heads, head_dim: one key, Tk < 32, one full block, partial blocks, empty blocks in the padding
    {1, 1, 8}, {5, 2, 8}, {31, 3, 16}, {32, 1, 16}, {33, 2, 8}, {64, 2, 16}, {77, 3, 8}, {130, 2, 16}};

TEST(AttentionInt8Qk, QuantizeKeysIsTheDocumentsArithmetic) {
  auto be = make_host_backend();
  for (const auto& [tk, heads, hd] : kKeyShapes) {
    SCOPED_TRACE("Tk " + std::to_string(tk) + " heads " + std::to_string(heads) + " head_dim " + std::to_string(hd));
    const Tensor k = offset_keys(tk, heads, hd, uint32_t(tk * 7 + hd));
    CoreOps::QuantizedKeys kq = keys_for(tk, heads, hd);
    std::fill(kq.q.ptr<int8_t>(), kq.q.ptr<int8_t>() + kq.q.numel(), int8_t(99));  // the padding must be written
    be->core().quantize_keys(k, heads, hd, kq);
    const Expected e = expected_keys(k, heads, hd);
    EXPECT_EQ(i8_values(kq.q), e.q);
    EXPECT_TRUE(same_bits(f32_values(kq.scale), e.scale));
    // Blocks with no key hold the floor, and so does a lone key (minus its own mean: zeros);
    // the others use their range.
    const int64_t pad = CoreOps::transposed_v_keys(tk);
    for (int64_t b = 0; b < pad / kKB; ++b) {
      if (b * kKB >= tk || tk == 1) EXPECT_EQ(kq.scale.ptr<float>()[b], 1e-30f) << "block " << b;
      else EXPECT_GT(kq.scale.ptr<float>()[b], 1e-3f) << "block " << b;
    }
  }
}

TEST(AttentionInt8Qk, NonFiniteKeyPoisonsItsHeadOnly) {
  auto be = make_host_backend();
  const int64_t tk = 40, heads = 2, hd = 8, pad = CoreOps::transposed_v_keys(tk);
  for (float bad : {NAN, INFINITY}) {
    Tensor k = offset_keys(tk, heads, hd, 3);
    k.row<float>(35)[hd + 2] = bad;  // head 1, the second block
    CoreOps::QuantizedKeys kq = keys_for(tk, heads, hd);
    be->core().quantize_keys(k, heads, hd, kq);
    const float* s = kq.scale.ptr<const float>();
    // Head 1's mean of that channel is non-finite, so every block of head 1 holding keys is NaN.
    EXPECT_TRUE(std::isnan(s[pad / kKB + 0]) && std::isnan(s[pad / kKB + 1]));
    for (int64_t i = pad * hd; i < 2 * pad * hd; ++i) ASSERT_EQ(kq.q.ptr<int8_t>()[i], 0);
    EXPECT_TRUE(std::isfinite(s[0]) && std::isfinite(s[1]));  // head 0 untouched
    EXPECT_EQ(i8_values(kq.q), expected_keys(k, heads, hd).q);
  }
}

// Keys of multiples of 1/64 in [-4, 4] and Tk a power of two: every sum, mean and difference is
// exact, so keys + c (an integer per channel) smooth to the very same values.
TEST(AttentionInt8Qk, SmoothingRemovesAChannelConstantExactly) {
  auto be = make_host_backend();
  const int64_t heads = 2, hd = 16;
  for (int64_t tk : {32, 64, 128}) {
    Tensor k = host_tensor(DType::F32, {tk, heads * hd});
    Tensor shifted = host_tensor(DType::F32, {tk, heads * hd});
    std::mt19937 gen{uint32_t(tk)};
    std::uniform_int_distribution<int> steps(-256, 256), offset(-100, 100);
    std::vector<float> c(static_cast<size_t>(heads * hd));
    for (float& x : c) x = float(offset(gen));
    for (int64_t j = 0; j < tk; ++j)
      for (int64_t i = 0; i < heads * hd; ++i) {
        k.row<float>(j)[i] = float(steps(gen)) / 64.0f;
        shifted.row<float>(j)[i] = k.row<float>(j)[i] + c[size_t(i)];
      }
    CoreOps::QuantizedKeys a = keys_for(tk, heads, hd), b = keys_for(tk, heads, hd);
    be->core().quantize_keys(k, heads, hd, a);
    be->core().quantize_keys(shifted, heads, hd, b);
    EXPECT_EQ(i8_values(a.q), i8_values(b.q)) << "Tk " << tk;
    EXPECT_TRUE(same_bits(f32_values(a.scale), f32_values(b.scale))) << "Tk " << tk;
  }
}

// Keys that are not exact: a channel offset (as the DiT's keys carry, what SageAttention smooths)
// moves the smoothed values by roundings of the mean only, so the int8 attention's output moves
// by a few rare rounding flips: at most a tenth of its own quantization error against the f32
// attention. Without the smoothing the offset would set every block's scale (3 + the keys' own
// range) and the error would grow with it.
TEST(AttentionInt8Qk, AChannelOffsetLeavesTheOutputWithinRounding) {
  auto be = make_host_backend();
  CoreOps& ops = be->core();
  const int64_t tq = 40, tk = 77, heads = 2, hd = 16;
  const Tensor q0 = random_normal({tq, heads * hd}, 21), k = random_normal({tk, heads * hd}, 22),
               v = random_normal({tk, heads * hd}, 23);
  Tensor shifted = host_tensor(DType::F32, k.dims());
  for (int64_t j = 0; j < tk; ++j)
    for (int64_t i = 0; i < heads * hd; ++i) shifted.row<float>(j)[i] = k.row<const float>(j)[i] + 3.0f + 0.25f * float(i % 4);
  Tensor w = host_tensor(DType::F32, {hd}), sin = host_tensor(DType::F32, {tq, hd}), cos = host_tensor(DType::F32, {tq, hd});
  std::fill(w.ptr<float>(), w.ptr<float>() + hd, 1.0f);
  std::fill(sin.ptr<float>(), sin.ptr<float>() + sin.numel(), 0.0f);
  std::fill(cos.ptr<float>(), cos.ptr<float>() + cos.numel(), 1.0f);
  auto int8_out = [&](const Tensor& keys) {
    CoreOps::QuantizedKeys kq = keys_for(tk, heads, hd);
    ops.quantize_keys(keys, heads, hd, kq);
    Tensor q = copy_of(q0), out = host_tensor(DType::F32, q0.dims());
    ops.norm_rope_attention_int8_qk(q, w, 1e-6f, sin, cos, kq, v, out, heads, hd, 0.25f);
    return f32_values(out);
  };
  Tensor q = copy_of(q0), f32_out = host_tensor(DType::F32, q0.dims());
  ops.norm_rope_attention(q, w, 1e-6f, sin, cos, k, v, f32_out, heads, hd, 0.25f);
  const std::vector<float> plain = int8_out(k), offset = int8_out(shifted), f = f32_values(f32_out);
  double moved = 0.0, error = 0.0;
  for (size_t i = 0; i < plain.size(); ++i) {
    moved += std::pow(double(offset[i]) - plain[i], 2);
    error += std::pow(double(plain[i]) - f[i], 2);
  }
  std::printf("offset keys moved the int8 output by %.3g (L2); its error against f32: %.3g\n", std::sqrt(moved),
              std::sqrt(error));
  EXPECT_GT(error, 0.0);
  EXPECT_LE(std::sqrt(moved), 0.1 * std::sqrt(error));
}

struct AttentionCase {
  int64_t tq, tk, heads, hd;
};
const std::vector<AttentionCase> kCases = {
    {1, 1, 1, 8}, {5, 7, 2, 8}, {16, 32, 2, 16}, {17, 33, 3, 8}, {37, 45, 2, 16}, {40, 100, 3, 8}};

struct Operands {
  Tensor q, w, sin, cos, k, v, vt;
};

Operands operands(const AttentionCase& c, uint32_t seed) {
  Operands o;
  o.q = random_normal({c.tq, c.heads * c.hd}, seed);
  o.w = random_normal({c.hd}, seed + 1, 0.2f);
  for (int64_t i = 0; i < c.hd; ++i) o.w.ptr<float>()[i] += 1.0f;
  Tensor angles = random_normal({c.tq, c.hd}, seed + 2, 3.0f);
  o.sin = host_tensor(DType::F32, {c.tq, c.hd});
  o.cos = host_tensor(DType::F32, {c.tq, c.hd});
  for (int64_t i = 0; i < angles.numel(); ++i) {
    o.sin.ptr<float>()[i] = std::sin(angles.ptr<float>()[i]);
    o.cos.ptr<float>()[i] = std::cos(angles.ptr<float>()[i]);
  }
  o.k = offset_keys(c.tk, c.heads, c.hd, seed + 3);
  o.v = random_normal({c.tk, c.heads * c.hd}, seed + 4);
  const int64_t pad = CoreOps::transposed_v_keys(c.tk);
  o.vt = host_tensor(DType::F32, {c.heads * c.hd, pad});
  std::fill(o.vt.ptr<float>(), o.vt.ptr<float>() + o.vt.numel(), 0.0f);
  for (int64_t j = 0; j < c.tk; ++j)
    for (int64_t i = 0; i < c.heads * c.hd; ++i) o.vt.row<float>(i)[j] = o.v.row<const float>(j)[i];
  return o;
}

// The document's arithmetic after norm_rope, written out: q·scale quantized per head and block of
// 16 queries, int32 scores, logit = float(S)·fl(s_q·s_k), then the host softmax (max-subtracted,
// exp, fp32 sum in key order) and P·V in double, divided by the sum.
Tensor expected_attention(const Tensor& qn, const Tensor& k, const Tensor& v, const AttentionCase& c, float scale) {
  const Expected kq = expected_keys(k, c.heads, c.hd);
  const int64_t pad = CoreOps::transposed_v_keys(c.tk), hd = c.hd;
  Tensor out = host_tensor(DType::F32, {c.tq, c.heads * hd});
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t i0 = 0; i0 < c.tq; i0 += kQB) {
      std::vector<float> y;
      const int64_t n = std::min(kQB, c.tq - i0);
      for (int64_t i = i0; i < i0 + n; ++i)
        for (int64_t d = 0; d < hd; ++d) y.push_back(qn.row<const float>(i)[h * hd + d] * scale);
      std::vector<int8_t> q8;
      const float sq = quantize_block(y, q8);
      for (int64_t i = 0; i < n; ++i) {
        std::vector<float> p(static_cast<size_t>(c.tk));
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < c.tk; ++j) {
          int32_t s = 0;
          for (int64_t d = 0; d < hd; ++d) s += int32_t(q8[size_t(i * hd + d)]) * kq.q[size_t((h * pad + j) * hd + d)];
          p[size_t(j)] = float(s) * (sq * kq.scale[size_t(h * pad / kKB + j / kKB)]);
          mx = std::max(mx, p[size_t(j)]);
        }
        for (float& x : p) {
          x = std::exp(x - mx);
          sum += x;
        }
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < c.tk; ++j) acc += double(p[size_t(j)] * v.row<const float>(j)[h * hd + d]);
          out.row<float>(i0 + i)[h * hd + d] = float(acc / double(sum));
        }
      }
    }
  return out;
}

TEST(AttentionInt8Qk, AttentionIsTheDocumentsArithmetic) {
  auto be = make_host_backend();
  CoreOps& ops = be->core();
  for (const AttentionCase& c : kCases) {
    SCOPED_TRACE("Tq " + std::to_string(c.tq) + " Tk " + std::to_string(c.tk) + " heads " + std::to_string(c.heads) +
                 " head_dim " + std::to_string(c.hd));
    const Operands o = operands(c, uint32_t(c.tq * 31 + c.tk));
    const float scale = 1.0f / std::sqrt(float(c.hd));
    Tensor qn = host_tensor(DType::F32, o.q.dims());
    ops.norm_rope(o.q, o.w, 1e-6f, c.hd, o.sin, o.cos, qn);
    const Tensor expected = expected_attention(qn, o.k, o.v, c, scale);
    CoreOps::QuantizedKeys kq = keys_for(c.tk, c.heads, c.hd);
    ops.quantize_keys(o.k, c.heads, c.hd, kq);
    for (bool vt : {false, true}) {
      Tensor q = copy_of(o.q), out = host_tensor(DType::F32, o.q.dims());
      ops.norm_rope_attention_int8_qk(q, o.w, 1e-6f, o.sin, o.cos, kq, vt ? o.vt : o.v, out, c.heads, c.hd, scale, vt);
      EXPECT_TRUE(same_bits(f32_values(out), f32_values(expected))) << "v_transposed " << vt;
    }
  }
}

// Where q·scale and the smoothed keys are integers with 127 in every block, both scales are
// fl(127·fl(1/127)) = 1 and the int8 scores are the f32 attention's exact integer sums: the two
// ops give the same bits. q's rows are ±1 (rms 1, eps 0) times a norm weight of 127, the rotation
// the identity (sin 0, cos 1); the keys are ±integers (a pair j, j + Tk/2 negated: mean 0) plus an
// integer per channel that the smoothing removes exactly.
TEST(AttentionInt8Qk, ExactOperandsGiveTheF32AttentionsBits) {
  ASSERT_EQ(127.0f * kInv127, 1.0f);
  auto be = make_host_backend();
  CoreOps& ops = be->core();
  const int64_t heads = 2, hd = 8;
  for (auto [tq, tk] : {std::pair<int64_t, int64_t>{20, 48}, {16, 64}, {3, 10}, {33, 96}}) {
    SCOPED_TRACE("Tq " + std::to_string(tq) + " Tk " + std::to_string(tk));
    std::mt19937 gen{uint32_t(tq + tk)};
    std::uniform_int_distribution<int> sign(0, 1), value(-126, 126), offset(-50, 50);
    Tensor q = host_tensor(DType::F32, {tq, heads * hd}), k = host_tensor(DType::F32, {tk, heads * hd});
    for (int64_t i = 0; i < q.numel(); ++i) q.ptr<float>()[i] = sign(gen) ? 1.0f : -1.0f;
    for (int64_t j = 0; j < tk / 2; ++j)
      for (int64_t i = 0; i < heads * hd; ++i) {
        const float x = (i % hd == j % hd) ? 127.0f : float(value(gen));  // 127 in every block
        k.row<float>(j)[i] = x;
        k.row<float>(j + tk / 2)[i] = -x;
      }
    Tensor shifted = copy_of(k);
    for (int64_t i = 0; i < heads * hd; ++i) {
      const float c = float(offset(gen));
      for (int64_t j = 0; j < tk; ++j) shifted.row<float>(j)[i] += c;
    }
    Tensor w = host_tensor(DType::F32, {hd}), sin = host_tensor(DType::F32, {tq, hd}), cos = host_tensor(DType::F32, {tq, hd});
    std::fill(w.ptr<float>(), w.ptr<float>() + hd, 127.0f);
    std::fill(sin.ptr<float>(), sin.ptr<float>() + sin.numel(), 0.0f);
    std::fill(cos.ptr<float>(), cos.ptr<float>() + cos.numel(), 1.0f);
    const Tensor v = random_normal({tk, heads * hd}, uint32_t(tk));
    CoreOps::QuantizedKeys kq = keys_for(tk, heads, hd);
    ops.quantize_keys(shifted, heads, hd, kq);
    for (int64_t b = 0; b < kq.scale.numel(); ++b) {
      if ((b % (CoreOps::transposed_v_keys(tk) / kKB)) * kKB < tk) {
        ASSERT_EQ(kq.scale.ptr<float>()[b], 1.0f) << b;
      }
    }
    Tensor q8 = copy_of(q), qf = copy_of(q), out8 = host_tensor(DType::F32, q.dims()), outf = host_tensor(DType::F32, q.dims());
    ops.norm_rope_attention_int8_qk(q8, w, 0.0f, sin, cos, kq, v, out8, heads, hd, 1.0f);
    ops.norm_rope_attention(qf, w, 0.0f, sin, cos, k, v, outf, heads, hd, 1.0f);
    EXPECT_TRUE(same_bits(f32_values(out8), f32_values(outf)));
  }
}

// Against the f32 attention on random operands. Each int8 value is within s/2 of its operand
// (rounding to nearest; no clamping, as |v| <= 127·s), so a logit moves by δ = Σ_d (y_d·e_k + k_d·e_q
// + e_q·e_k) with |e_q| <= s_q/2, |e_k| <= s_k/2 (k smoothed: the mean's shift of every logit of a
// row is the same and the softmax does not see it). Treating the rounding errors as independent
// and uniform (variance s²/12), δ has a standard deviation of about σ = sqrt(hd·(rms(y)²·s_k²/12 +
// rms(k)²·s_q²/12)), taking the largest scales; the output moves by Σ_j p_j·δ_j·(v_j − o), whose
// rms is at most about σ·rms(v). The test asserts rms(out8 − outf) <= 2·σ·rms(v), and that int8
// is not the f32 result (the comparison can see a difference).
TEST(AttentionInt8Qk, WithinTheQuantizationErrorOfTheF32Attention) {
  auto be = make_host_backend();
  CoreOps& ops = be->core();
  for (const AttentionCase& c : kCases) {
    if (c.tk < 32) continue;  // a handful of scores says nothing statistical
    SCOPED_TRACE("Tq " + std::to_string(c.tq) + " Tk " + std::to_string(c.tk));
    const Operands o = operands(c, uint32_t(c.tq + 5 * c.tk));
    const float scale = 1.0f / std::sqrt(float(c.hd));
    Tensor qn = host_tensor(DType::F32, o.q.dims());
    ops.norm_rope(o.q, o.w, 1e-6f, c.hd, o.sin, o.cos, qn);
    CoreOps::QuantizedKeys kq = keys_for(c.tk, c.heads, c.hd);
    ops.quantize_keys(o.k, c.heads, c.hd, kq);
    const std::vector<float> ks = f32_values(kq.scale);
    const float s_k = *std::max_element(ks.begin(), ks.end());
    double y2 = 0.0, k2 = 0.0;
    float y_max = 0.0f;
    for (float x : f32_values(qn)) {
      y2 += double(x * scale) * double(x * scale);
      y_max = std::max(y_max, std::fabs(x * scale));
    }
    const Expected e = expected_keys(o.k, c.heads, c.hd);  // the smoothed keys, as their int8 values times s
    for (size_t i = 0; i < e.q.size(); ++i) k2 += std::pow(double(e.q[i]) * s_k, 2);
    const double rms_y2 = y2 / double(qn.numel()), rms_k2 = k2 / double(o.k.numel()), s_q = y_max * kInv127;
    const double sigma = std::sqrt(double(c.hd) * (rms_y2 * s_k * s_k + rms_k2 * s_q * s_q) / 12.0);
    Tensor q8 = copy_of(o.q), qf = copy_of(o.q), out8 = host_tensor(DType::F32, o.q.dims()),
           outf = host_tensor(DType::F32, o.q.dims());
    ops.norm_rope_attention_int8_qk(q8, o.w, 1e-6f, o.sin, o.cos, kq, o.v, out8, c.heads, c.hd, scale);
    ops.norm_rope_attention(qf, o.w, 1e-6f, o.sin, o.cos, o.k, o.v, outf, c.heads, c.hd, scale);
    const std::vector<float> a = f32_values(out8), b = f32_values(outf), v = f32_values(o.v);
    double d2 = 0.0, v2 = 0.0;
    for (size_t i = 0; i < a.size(); ++i) d2 += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    for (float x : v) v2 += double(x) * x;
    const double rms_d = std::sqrt(d2 / double(a.size())), rms_v = std::sqrt(v2 / double(v.size()));
    std::printf("Tq %lld Tk %lld: rms(int8 - f32) %.3g, sigma·rms(v) %.3g\n", (long long)c.tq, (long long)c.tk, rms_d,
                sigma * rms_v);
    EXPECT_LE(rms_d, 2.0 * sigma * rms_v) << "sigma " << sigma;
    EXPECT_GT(rms_d, 0.0);
  }
}

// Every class of bad operand is refused by the public op, naming the op and the operand.
TEST(AttentionInt8Qk, BadOperandsAreRefusedByName) {
  auto be = make_host_backend();
  CoreOps& ops = be->core();
  const int64_t tk = 40, heads = 2, hd = 8, pad = CoreOps::transposed_v_keys(tk);
  const Tensor k = offset_keys(tk, heads, hd, 9);
  auto refused = [&](const char* what, auto&& fn, const std::string& words) {
    try {
      fn();
      ADD_FAILURE() << what << ": not refused";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << what << ": " << e.what();
    }
  };
  using KQ = CoreOps::QuantizedKeys;
  const std::vector<std::tuple<const char*, KQ, std::string>> bad_keys = {
      {"q dtype", {host_tensor(DType::F32, {heads * pad, hd}), host_tensor(DType::F32, {heads * pad / kKB, 1}), tk},
       "quantized keys"},
      {"q rows (unpadded)", {host_tensor(DType::I8, {heads * tk, hd}), host_tensor(DType::F32, {heads * pad / kKB, 1}), tk},
       "quantized keys"},
      {"q cols", {host_tensor(DType::I8, {heads * pad, hd + 1}), host_tensor(DType::F32, {heads * pad / kKB, 1}), tk},
       "quantized keys"},
      {"scale count", {host_tensor(DType::I8, {heads * pad, hd}), host_tensor(DType::F32, {heads * pad / kKB - 1, 1}), tk},
       "scale"},
      {"scale dtype", {host_tensor(DType::I8, {heads * pad, hd}), host_tensor(DType::BF16, {heads * pad / kKB, 1}), tk},
       "scale"},
      {"keys", {host_tensor(DType::I8, {heads * pad, hd}), host_tensor(DType::F32, {heads * pad / kKB, 1}), tk - 1},
       "keys"},
      {"places", {host_tensor(DType::I8, {heads * pad, hd}), Tensor(nullptr, DType::F32, {heads * pad / kKB, 1}, Where::Device), tk},
       "different places"},
  };
  for (const auto& [what, kq0, words] : bad_keys) {
    KQ kq = kq0;
    refused(what, [&] { ops.quantize_keys(k, heads, hd, kq); }, "quantize_keys: ");
    refused(what, [&] { ops.quantize_keys(k, heads, hd, kq); }, words);
  }
  KQ good = keys_for(tk, heads, hd);
  refused("k width", [&] { ops.quantize_keys(k, heads, hd + 1, good); }, "quantize_keys: k");
  refused("k dtype", [&] { ops.quantize_keys(host_tensor(DType::BF16, {tk, heads * hd}), heads, hd, good); },
          "quantize_keys");
  ops.quantize_keys(k, heads, hd, good);

  const AttentionCase c{20, tk, heads, hd};
  const Operands o = operands(c, 11);
  Tensor out = host_tensor(DType::F32, o.q.dims());
  const std::string op = "norm_rope_attention_int8_qk: ";
  auto attend = [&](Tensor q, const KQ& kq, const Tensor& v, Tensor& y, bool vt) {
    ops.norm_rope_attention_int8_qk(q, o.w, 1e-6f, o.sin, o.cos, kq, v, y, heads, hd, 0.3f, vt);
  };
  for (const auto& [what, kq0, words] : bad_keys) {
    if (std::string(what) == "keys") continue;  // the op takes Tk from kq: a mismatch shows in v's check below
    refused(what, [&] { attend(copy_of(o.q), kq0, o.v, out, false); }, op);
    refused(what, [&] { attend(copy_of(o.q), kq0, o.v, out, false); }, words);
  }
  refused("q width", [&] { attend(host_tensor(DType::F32, {20, heads * hd + 1}), good, o.v, out, false); }, "q ");
  refused("v rows", [&] { attend(copy_of(o.q), good, random_normal({tk + 1, heads * hd}, 1), out, false); }, "v ");
  refused("transposed v keys", [&] { attend(copy_of(o.q), good, host_tensor(DType::F32, {heads * hd, tk}), out, true); },
          "transposed v");
  Tensor wrong_out = host_tensor(DType::F32, {19, heads * hd});
  refused("out shape", [&] { attend(copy_of(o.q), good, o.v, wrong_out, false); }, "out");
  Tensor bf16_out = host_tensor(DType::BF16, o.q.dims());
  refused("out dtype", [&] { attend(copy_of(o.q), good, o.v, bf16_out, false); }, "out");
  refused("tables", [&] {
    Tensor q = copy_of(o.q);
    ops.norm_rope_attention_int8_qk(q, o.w, 1e-6f, o.sin.slice_rows(0, 5), o.cos.slice_rows(0, 5), good, o.v, out,
                                    heads, hd, 0.3f);
  }, "table");
}

// The backend flag: the host answers attention_int8_qk as it was made (no by default, so every
// existing host result stays), at any head_dim; the base class's refusal stays for other backends.
TEST(AttentionInt8Qk, HostBackendFlag) {
  EXPECT_FALSE(make_host_backend()->core().attention_int8_qk(128));
  auto on = make_host_backend(false, true, true);
  for (int64_t hd : {8, 64, 128, 256}) EXPECT_TRUE(on->core().attention_int8_qk(hd)) << hd;
}

}  // namespace
}  // namespace moss
