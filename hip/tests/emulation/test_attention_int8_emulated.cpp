// The portable direct-tiling attention kernel's own source (kernels/attention.hip: the int8 QKᵀ
// variant, attention_kernel<..., kInt8Qk>, and the bf16 scores' kernel beside it) run on the host
// through the device emulation of tests/emulation/runtime/portability.h, once per emulated leaf
// (MOSS_LEAF_EMULATED_TARGET: NVIDIA's mma.sync, gfx11's and gfx12's WMMA, each with its attention
// scheme -- the AMD ones transposed, gfx11's with the P exchange between half-waves), against the
// host backend's ops on the same inputs: bf16-valued q normalised and rotated in the kernel, keys
// quantized by the host's quantize_keys (the int8 variant) or read in place as bf16 rows (the
// bf16 one), V as the DiT's transposed Vᵀ (bf16, zeros past Tk, NaN past its padded keys) and as
// f32 rows (with bf16 q), packed into Vᵀ by the op's pack kernel (kernels/attention_pack.hip, also
// emulated), the kernel's two ways of getting V.
//
// Tolerance: the bf16 attention's 1e-2 relative L2 (tools/check/cases/attention_int8_cases.h, the
// same comparison on a GPU). The int8 operands are the same bits on both sides and the scores exact
// int32 sums, so what may differ is P rounded to bf16 for P·V (the host keeps fp32 P), the online
// softmax's order and the fp32 sums' order; on the emulation exp2 is the host's, and the measured
// errors are 1.1-1.3e-3 (int8) and 1.9-2.3e-3 (bf16) on every leaf, so a second, tighter bound
// (5e-3) catches a kernel that is off by a fraction of the tolerance. Tighter still, the int8
// variant's scores: the emulation records each exact int32 sum and each key tile's scale factor
// (emu::int8_scores, kernels/attention.hip's emulated-build hook), compared with the host op's
// arithmetic (expect_exact_scores: the sums bit for bit). Shapes: Tq = Tk = 77 and 100 (partial
// query and key blocks), head dims 32, 64 and 128, two heads. Each case also
// asserts that no output element is left unwritten (the output starts as NaN) and, on gfx11, that
// both half-waves' operand copies agree (the instruction's precondition). The portable
// configuration's other kernel instances (no q_rope: the staged tilings at head dims 192, 256 in
// place and 384, the direct one with packed K; causal, grouped kv heads) run against the host's
// CoreOps::attention in StagedAndPackedTilingsMatchTheHostOp (measured 7-8e-4). Beside them, the
// emulated bf16 leaf itself against a plain product (Bf16LeafIsTheMatrixProduct), so a wrong
// instruction model shows as such. A wrong key block's scale (k8_scale[0] for every tile) fails the int8 test
// at 0.14-0.24 relative L2; gfx12's K numbering mixed between A and B fails all three.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/portability.h"  // the emulation: tests/emulation comes first on the include path
#include "same_bits.h"

#include "kernels/attention.hip"
#include "kernels/attention_pack.hip"
#include "ops/backend.h"
#include "ops/core_ops.h"
#include "tensor/int8_convrot.h"
#include "tensor/tensor.h"

namespace {

using namespace moss;

constexpr float kEps = 1e-6f;  // the DiT's RMS norm epsilon

// The kernel runs the emulated platform's scheme and leaf (not NVIDIA's everywhere).
static_assert(Scheme::kTransposed == (MOSS_LEAF_EMULATED_TARGET != 0), "the AMD leaves run the transposed schemes");
using EmulatedLayout = std::conditional_t<MOSS_LEAF_EMULATED_TARGET == 0, mma_layout::Nvidia,
                                          std::conditional_t<MOSS_LEAF_EMULATED_TARGET == 11, mma_layout::Gfx11,
                                                             mma_layout::Gfx12>>;
static_assert(std::is_same<leaf::Layout, EmulatedLayout>::value, "the bf16 leaf's lane maps are the emulated platform's");

struct Case {
  int64_t t, heads, hd;
  bool v_rows = false;  // V as rows (f32), packed into Vᵀ by attention_pack_kv as the op does; q bf16
};

std::string name(const Case& c, bool int8) {
  return std::string(int8 ? "int8 QK^T" : "bf16") + " T " + std::to_string(c.t) + " " + std::to_string(c.heads) + "x" +
         std::to_string(c.hd) + (c.v_rows ? " v rows, q bf16" : " vt");
}

double relative_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  return std::sqrt(num / den);
}

// attention_forward on the emulation into `got` (NaN before), and the checks every case makes.
void run_kernel(const AttentionParams& p, const std::vector<float>& got) {
  leaf_violation() = false;
  attention_forward(p, nullptr);
  EXPECT_FALSE(leaf_violation()) << "gfx11: the half-waves' copies of an operand differ";
  int64_t unwritten = 0;
  for (float x : got) unwritten += std::isnan(x);
  EXPECT_EQ(unwritten, 0) << "output elements not written (or NaN)";
}

// The int8 scores bit for bit: q normalised and rotated by the host's norm_rope, times the softmax
// scale, quantized per head and 16-query block by convrot::quantize_row (CoreOps::
// norm_rope_attention_int8_qk's arithmetic, docs/attention_int8_qk.md), the exact int32 sums with
// the host's int8 keys, and each key tile's factor fl(fl(s_q·s_k)·log2 e), floored at the smallest
// normal, as the kernel folds it into exp2's argument. The sums must be the same bits. The factor
// may differ by a few ulps: the kernel's norm reduces q's sum of squares in its lanes' butterfly
// order (kernels/norm_rope_lane.h), the host in row order, so a block's absmax, and s_q = absmax /
// 127, can differ in the last bits without moving any int8 value (measured: at most 4 ulps, the
// factors of 50-90% of the (query, key tile) pairs the same bits; the bound leaves twice that); a
// wrong block's scale is off by far more.
constexpr int64_t kScaleUlps = 8;
void expect_exact_scores(const Case& c, const Tensor& q, const Tensor& w, const Tensor& sin, const Tensor& cos,
                         const CoreOps::QuantizedKeys& kq, float scale, const std::vector<int32_t>& sums,
                         const std::vector<float>& tile_c, CoreOps& host) {
  const int64_t t = c.t, hd = c.hd, width = c.heads * hd, keys = CoreOps::transposed_v_keys(t);
  const int64_t tiles = (t + kAttentionInt8KeyBlock - 1) / kAttentionInt8KeyBlock, qb = CoreOps::kInt8QueryBlock;
  Tensor y = host_tensor(DType::F32, {t, width});
  host.norm_rope(q, w, kEps, hd, sin, cos, y);
  int64_t sum_differ = 0, c_differ = 0, c_exact = 0, max_ulps = 0;
  std::vector<float> block(static_cast<size_t>(qb * hd));
  std::vector<int8_t> q8(static_cast<size_t>(qb * hd));
  for (int64_t h = 0; h < c.heads; ++h)
    for (int64_t i0 = 0; i0 < t; i0 += qb) {
      const int64_t n = std::min(qb, t - i0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t d = 0; d < hd; ++d) block[size_t(i * hd + d)] = y.row<const float>(i0 + i)[h * hd + d] * scale;
      const float s_q = convrot::quantize_row(block.data(), n * hd, q8.data());
      for (int64_t i = 0; i < n; ++i) {
        const int64_t query = i0 + i;
        for (int64_t key = 0; key < t; ++key) {
          int32_t want = 0;
          for (int64_t d = 0; d < hd; ++d)
            want += int32_t(q8[size_t(i * hd + d)]) * int32_t(kq.q.ptr<const int8_t>()[(h * keys + key) * hd + d]);
          const int32_t got = sums[size_t((h * t + query) * t + key)];
          if (got != want && sum_differ++ == 0)
            ADD_FAILURE() << "head " << h << " query " << query << " key " << key << ": int32 score " << got
                          << ", host " << want;
        }
        for (int64_t tile = 0; tile < tiles; ++tile) {
          const float s_k = kq.scale.ptr<const float>()[h * keys / kAttentionInt8KeyBlock + tile];
          float want = (s_q * s_k) * 1.4426950408889634f;
          if (want < std::numeric_limits<float>::min()) want = std::numeric_limits<float>::min();
          const float got = tile_c[size_t((h * t + query) * tiles + tile)];
          const int64_t ulps = std::llabs(int64_t(f32_bits(got)) - int64_t(f32_bits(want)));
          max_ulps = std::max(max_ulps, std::isnan(got) ? INT64_MAX : ulps);
          c_exact += ulps == 0;
          if (!(ulps <= kScaleUlps) && c_differ++ == 0)
            ADD_FAILURE() << "head " << h << " query " << query << " key tile " << tile << ": scale " << got
                          << ", host " << want;
        }
      }
    }
  EXPECT_EQ(sum_differ, 0) << "int32 scores differing from the host's";
  EXPECT_EQ(c_differ, 0) << "key tiles' scale factors more than " << kScaleUlps << " ulps from the host's";
  std::printf("  scale factors: %lld of %lld the same bits, at most %lld ulps apart\n", (long long)c_exact,
              (long long)(c.heads * t * tiles), (long long)max_ulps);
}

// One case on the kernel (attention_forward, as HipBackend's ops fill AttentionParams) and on the
// host op; returns the relative L2 distance.
double run_case(const Case& c, bool int8, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t t = c.t, hd = c.hd, width = c.heads * hd, keys = CoreOps::transposed_v_keys(t), ldv = keys + 64;
  const float scale = float(1.0 / std::sqrt(double(hd)));
  auto bf16_valued = [&](float sd, float offset) { return round_bf16(sd * normal(rng) + offset); };

  // q (the raw projection), k (normalised and rotated keys, a channel offset), v: bf16 values.
  Tensor q = host_tensor(DType::F32, {t, width}), k = host_tensor(DType::F32, {t, width}),
         v = host_tensor(DType::F32, {t, width});
  std::vector<float> offset(static_cast<size_t>(width));
  for (float& f : offset) f = 2.0f * normal(rng);
  for (int64_t i = 0; i < t * width; ++i) {
    q.ptr<float>()[i] = bf16_valued(2.0f, 0.0f);
    k.ptr<float>()[i] = bf16_valued(1.0f, offset[size_t(i % width)]);
    v.ptr<float>()[i] = bf16_valued(1.0f, 0.0f);
  }
  // The norm weight around 1 and [f | f] RoPE tables of random angles.
  Tensor w = host_tensor(DType::F32, {hd}), sin = host_tensor(DType::F32, {t, hd}), cos = host_tensor(DType::F32, {t, hd});
  for (int64_t i = 0; i < hd; ++i) w.ptr<float>()[i] = 1.0f + 0.3f * normal(rng);
  for (int64_t r = 0; r < t; ++r)
    for (int64_t i = 0; i < hd / 2; ++i) {
      const float a = 3.0f * normal(rng);
      for (int64_t j : {i, i + hd / 2}) {
        sin.ptr<float>()[r * hd + j] = std::sin(a);
        cos.ptr<float>()[r * hd + j] = std::cos(a);
      }
    }
  // The DiT's Vᵀ: bf16 [width, ldv], zeros from Tk to the padded keys, NaN past them (never read).
  std::vector<uint16_t> vt(static_cast<size_t>(width * ldv));
  Tensor vt_host = host_tensor(DType::F32, {width, keys});
  for (int64_t d = 0; d < width; ++d)
    for (int64_t j = 0; j < ldv; ++j) {
      const float x = j < t ? v.ptr<float>()[j * width + d] : j < keys ? 0.0f : std::nanf("");
      vt[size_t(d * ldv + j)] = f32_to_bf16(x);
      if (j < keys) vt_host.ptr<float>()[d * keys + j] = x;
    }
  std::vector<uint16_t> kb(static_cast<size_t>(t * width)), qb(static_cast<size_t>(t * width));
  for (size_t i = 0; i < kb.size(); ++i) kb[i] = f32_to_bf16(k.ptr<float>()[i]);
  for (size_t i = 0; i < qb.size(); ++i) qb[i] = f32_to_bf16(q.ptr<float>()[i]);
  // V as rows: the op's pack (attention_pack_kv, V only) turns them into Vᵀ of tk_pad keys.
  const int64_t tk_pad = (t + kAttentionKeyPadding - 1) / kAttentionKeyPadding * kAttentionKeyPadding;
  std::vector<uint16_t> vp(static_cast<size_t>(c.heads * tk_pad * hd), 0x7fc0);
  if (c.v_rows)
    attention_pack_kv(nullptr, 0, v.data, width, false, int(t), int(c.heads), int(hd), int(hd), int(tk_pad), true,
                      nullptr, reinterpret_cast<bf16*>(vp.data()), nullptr);

  std::unique_ptr<Backend> host = make_host_backend(true, true, true);
  CoreOps::QuantizedKeys kq{host_tensor(DType::I8, {c.heads * keys, hd}),
                            host_tensor(DType::F32, {c.heads * keys / CoreOps::kInt8KeyBlock, 1}), t};
  if (int8) host->core().quantize_keys(k, c.heads, hd, kq);

  // The kernel, as hip_attention_int8_qk / the bf16 norm_rope_attention fill its parameters.
  std::vector<float> got(static_cast<size_t>(t * width), std::nanf(""));
  AttentionParams p;
  p.q = c.v_rows ? static_cast<const void*>(qb.data()) : q.data;
  p.q_bf16 = c.v_rows;
  p.ldq = width;
  p.q_rope.w = w.data;
  p.q_rope.eps = kEps;
  p.q_rope.sin = sin.ptr<float>();
  p.q_rope.ld_sin = hd;
  p.q_rope.cos = cos.ptr<float>();
  p.q_rope.ld_cos = hd;
  p.v = reinterpret_cast<const bf16*>(c.v_rows ? vp.data() : vt.data());
  p.ldv = c.v_rows ? tk_pad : ldv;
  p.v_head_stride = hd * p.ldv;
  p.tk_pad = int(c.v_rows ? tk_pad : keys);
  if (int8) {
    p.k8.q = kq.q.ptr<int8_t>();
    p.k8.scale = kq.scale.ptr<float>();
    p.k8.keys_pad = int(keys);
  } else {  // K's bf16 rows read in place (the DiT's flow)
    p.k = reinterpret_cast<const bf16*>(kb.data());
    p.ldk = width;
    p.k_head_stride = hd;
    p.k_in_place = true;
  }
  p.out = got.data();
  p.ld_out = width;
  p.tq = p.tk = int(t);
  p.heads = p.kv_heads = int(c.heads);
  p.head_dim = int(hd);
  p.scale = scale;
  p.tiling = AttentionTiling::Portable;
  // The int8 variant's int32 scores and tile scales as the kernel computed them (NaN / a marker:
  // an element never recorded shows).
  const int64_t tiles = (t + kAttentionInt8KeyBlock - 1) / kAttentionInt8KeyBlock;
  std::vector<int32_t> sums(static_cast<size_t>(c.heads * t * t), INT32_MIN);
  std::vector<float> tile_c(static_cast<size_t>(c.heads * t * tiles), std::nanf(""));
  if (int8) emu::int8_scores() = emu::Int8Scores{sums.data(), tile_c.data(), int(t), int(t), int(tiles)};
  run_kernel(p, got);
  emu::int8_scores() = emu::Int8Scores{};
  if (int8) expect_exact_scores(c, q, w, sin, cos, kq, scale, sums, tile_c, host->core());

  Tensor want = host_tensor(DType::F32, {t, width});
  if (int8)
    host->core().norm_rope_attention_int8_qk(q, w, kEps, sin, cos, kq, c.v_rows ? v : vt_host, want, c.heads, hd,
                                             scale, !c.v_rows);
  else
    host->core().norm_rope_attention(q, w, kEps, sin, cos, k, c.v_rows ? v : vt_host, want, c.heads, hd, scale,
                                     !c.v_rows);
  return relative_l2(got, std::vector<float>(want.ptr<float>(), want.ptr<float>() + t * width));
}

void run_all(bool int8) {
  const Case cases[] = {{77, 2, 32},  {100, 2, 32},       {77, 2, 64},        {100, 2, 64},
                        {77, 2, 128}, {100, 2, 128},      {77, 2, 32, true},  {100, 2, 128, true}};
  uint64_t seed = int8 ? 4911 : 4931;
  for (const Case& c : cases) {
    SCOPED_TRACE(name(c, int8));
    const double err = run_case(c, int8, seed++);
    EXPECT_LE(err, 1e-2) << "the bf16 attention's tolerance";
    EXPECT_LE(err, 5e-3) << "the emulation's tighter bound";
    std::printf("  %s: relative L2 %.3g\n", name(c, int8).c_str(), err);
  }
}

// The emulated bf16 leaf through kernels/matrix_leaf.h's loaders and store (the kernel's lane maps)
// is the matrix product: random bf16 A and B, C = A·B + C0 against the sum in double, within the
// fp32 sum's rounding (17 additions: 1e-6 of the sum of magnitudes; a lane-map error moves a value
// by O(1)). Not bit for bit: gfx12's instruction numbers K differently from the kernel's map
// (kernels/matrix_layout.h Gfx12), which pairs the same products in another order.
void leaf_product_kernel(const float* a, const float* b, const float* c0, float* c) {
  leaf::FragA fa;
  leaf::FragB fb;
  leaf::FragC acc;
  leaf::load_a(fa, [&](int m, int k) { return to_bf16(a[m * 16 + k]); });
  leaf::load_b(fb, [&](int k, int n) { return to_bf16(b[k * 16 + n]); });
  leaf::zero(acc);
  leaf::store_c(acc, [&](int, int, float) {});
  const int lane = int(lane_id());
  for (int i = 0; i < leaf::Layout::kSlotsC; ++i) {
    const mma_layout::Elem e = leaf::Layout::c(lane, i);
    acc.x[i] = c0[e.row * 16 + e.col];
  }
  leaf::mma(acc, fa, fb);
  leaf::store_c(acc, [&](int m, int n, float v) { c[m * 16 + n] = v; });
}

TEST(AttentionEmulated, Bf16LeafIsTheMatrixProduct) {
  std::mt19937_64 rng(4951);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int block = 0; block < 4; ++block) {
    std::vector<float> a(256), b(256), c0(256), got(256, std::nanf("")), want(256);
    for (float& x : a) x = round_bf16(normal(rng));
    for (float& x : b) x = round_bf16(normal(rng));
    for (float& x : c0) x = normal(rng);
    std::vector<double> magnitude(256);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        double sum = c0[size_t(m * 16 + n)], mag = std::fabs(sum);
        for (int k = 0; k < 16; ++k) {
          sum += double(a[size_t(m * 16 + k)]) * double(b[size_t(k * 16 + n)]);
          mag += std::fabs(double(a[size_t(m * 16 + k)]) * double(b[size_t(k * 16 + n)]));
        }
        want[size_t(m * 16 + n)] = float(sum);
        magnitude[size_t(m * 16 + n)] = mag;
      }
    leaf_violation() = false;
    hipLaunchKernelGGL(leaf_product_kernel, dim3(1), dim3(kWaveSize), 0, nullptr, a.data(), b.data(), c0.data(),
                       got.data());
    EXPECT_FALSE(leaf_violation());
    int64_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(double(got[i]) - double(want[i])) <= 1e-6 * magnitude[i]) && differ++ == 0)
        ADD_FAILURE() << "block " << block << " C[" << i / 16 << "][" << i % 16 << "] " << got[i] << ", want " << want[i];
    EXPECT_EQ(differ, 0);
  }
}

// The portable configuration's other instances, the bf16 attention with no q_rope as the text
// encoder and the VAE call it (CoreOps::attention): the direct tiling with K and V packed (a head
// dim padded to 96) or K in place (96), the LDS-staged tiling with K/V packed (192: one buffer, 4
// waves; 384: 2 waves) and K/V read in place (256, the text encoder's: the next tile held in
// registers, V transposed on its way into LDS), causal with grouped kv heads and not, f32 q.
// Parameters filled as ops/hip/attention_op.hip's hip_attention does; K and V bf16 rows.
struct PlainCase {
  int64_t t, heads, kv_heads, hd;
  bool causal;
};

double run_plain_case(const PlainCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t t = c.t, hd = c.hd, width = c.heads * hd, kv_width = c.kv_heads * hd;
  const float scale = float(1.0 / std::sqrt(double(hd)));
  Tensor q = host_tensor(DType::F32, {t, width}), k = host_tensor(DType::F32, {t, kv_width}),
         v = host_tensor(DType::F32, {t, kv_width});
  std::vector<uint16_t> kb(static_cast<size_t>(t * kv_width)), vb(kb.size());
  for (int64_t i = 0; i < t * width; ++i) q.ptr<float>()[i] = round_bf16(2.0f * normal(rng));
  for (int64_t i = 0; i < t * kv_width; ++i) {
    k.ptr<float>()[i] = round_bf16(normal(rng));
    v.ptr<float>()[i] = round_bf16(normal(rng));
    kb[size_t(i)] = f32_to_bf16(k.ptr<float>()[i]);
    vb[size_t(i)] = f32_to_bf16(v.ptr<float>()[i]);
  }
  const AttentionKvLayout layout = attention_kv_layout(int(hd), AttentionTiling::Portable);
  const int64_t tk_pad = (t + kAttentionKeyPadding - 1) / kAttentionKeyPadding * kAttentionKeyPadding;
  const int64_t packed = c.kv_heads * tk_pad * layout.d_pad;
  std::vector<uint16_t> kp(static_cast<size_t>(packed), 0x7fc0), vp(static_cast<size_t>(packed), 0x7fc0);
  const bool k_rows = hd == layout.d_pad;
  AttentionParams p;
  if (layout.in_place && k_rows) {
    p.k = reinterpret_cast<const bf16*>(kb.data());
    p.v = reinterpret_cast<const bf16*>(vb.data());
    p.ldk = p.ldv = kv_width;
    p.k_head_stride = p.v_head_stride = hd;
    p.kv_in_place = true;
  } else {
    const bool k_in_place = layout.k_in_place && k_rows;
    attention_pack_kv(kb.data(), kv_width, vb.data(), kv_width, true, int(t), int(c.kv_heads), int(hd), layout.d_pad,
                      int(tk_pad), layout.v_transposed, k_in_place ? nullptr : reinterpret_cast<bf16*>(kp.data()),
                      reinterpret_cast<bf16*>(vp.data()), nullptr);
    if (k_in_place) {
      p.k = reinterpret_cast<const bf16*>(kb.data());
      p.ldk = kv_width;
      p.k_head_stride = hd;
      p.k_in_place = true;
    } else {
      p.k = reinterpret_cast<const bf16*>(kp.data());
      p.ldk = layout.d_pad;
      p.k_head_stride = tk_pad * layout.d_pad;
    }
    p.v = reinterpret_cast<const bf16*>(vp.data());
    p.ldv = layout.v_transposed ? tk_pad : layout.d_pad;
    p.v_head_stride = tk_pad * layout.d_pad;
  }
  p.tk_pad = int(tk_pad);
  std::vector<float> got(static_cast<size_t>(t * width), std::nanf(""));
  p.q = q.data;
  p.ldq = width;
  p.out = got.data();
  p.ld_out = width;
  p.tq = p.tk = int(t);
  p.heads = int(c.heads);
  p.kv_heads = int(c.kv_heads);
  p.head_dim = int(hd);
  p.scale = scale;
  p.causal = c.causal;
  p.tiling = AttentionTiling::Portable;
  run_kernel(p, got);
  std::unique_ptr<Backend> host = make_host_backend();
  Tensor want = host_tensor(DType::F32, {t, width});
  host->core().attention(q, k, v, want, c.heads, c.kv_heads, hd, scale, c.causal);
  return relative_l2(got, std::vector<float>(want.ptr<float>(), want.ptr<float>() + t * width));
}

TEST(AttentionEmulated, StagedAndPackedTilingsMatchTheHostOp) {
  const PlainCase cases[] = {{77, 2, 1, 96, true}, {50, 2, 2, 80, false}, {70, 2, 1, 192, false},
                             {77, 2, 1, 256, true}, {40, 1, 1, 384, false}};
  uint64_t seed = 4971;
  for (const PlainCase& c : cases) {
    const std::string what = "T " + std::to_string(c.t) + " " + std::to_string(c.heads) + "/" +
                             std::to_string(c.kv_heads) + "x" + std::to_string(c.hd) + (c.causal ? " causal" : "");
    SCOPED_TRACE(what);
    const double err = run_plain_case(c, seed++);
    EXPECT_LE(err, 1e-2) << "the bf16 attention's tolerance";
    EXPECT_LE(err, 5e-3) << "the emulation's tighter bound";
    std::printf("  bf16 %s: relative L2 %.3g\n", what.c_str(), err);
  }
}

TEST(AttentionEmulated, Int8QkMatchesTheHostOp) { run_all(true); }

TEST(AttentionEmulated, Bf16DirectTilingMatchesTheHostOp) { run_all(false); }

}  // namespace
