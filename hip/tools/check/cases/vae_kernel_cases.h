// VAE kernel cases of `moss-check kernels --family vae`: every HIP VaeOps op against the host replay
// (ops/host/vae_ops_host.cpp) on random inputs, at the small decoder's real shapes, at odd sizes
// and (for the convolution) at one full 1024x1024 resolution where the host replays bands of
// output rows. Outputs are poisoned with NaN first, so an unwritten element fails the case.
// A failing case prints where: the first non-finite element or the largest error, as (c, y, x).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../kernel_check.h"
#include "kernels/conv2d.h"
#include "ops/backend.h"
#include "ops/hip/hip_context.h"
#include "ops/vae_ops.h"

namespace vae_check {

using moss::DType;
using moss::Tensor;

// What the cases run on.
struct Env {
  kcheck::Table& table;
  moss::Backend& be;       // the HIP backend: allocation and transfers
  moss::HipContext& ctx;   // its stream (timing, poisoning)
  moss::VaeOps& host;      // the host replay
  moss::VaeOps& x3;        // HIP ops, bf16x3 convolutions
  moss::VaeOps& bf16;      // HIP ops, plain bf16 convolutions
  moss::VaeOps& f16;       // HIP ops, fp16 convolutions (the decode's, on both kernel paths)
  int64_t max_elements = 0;  // kcheck::Options::max_elements: larger outputs skip their case

  moss::VaeOps& ops(moss::ConvPrecision p) {
    return p == moss::ConvPrecision::Bf16x3 ? x3 : p == moss::ConvPrecision::Bf16 ? bf16 : f16;
  }
};

constexpr double kFp32Tolerance = 1e-5;  // fp32 kernels
// The bf16x3 convolution splits each fp32 operand into two bf16 parts and drops the lo·lo
// product: about 2^-16 relative per product, measured 1.2e-5 at K = 384·9 on the H200. Still a
// hundred times inside the 1e-2 the issue allows bf16-operand kernels.
constexpr double kBf16x3Tolerance = 1e-4;
constexpr double kBf16Tolerance = 1e-2;  // bf16-operand kernels
// fp16 operands (11-bit significands, like TF32): two roundings of at most 2^-12 relative, ~4e-4
// relative L2 expected; 2e-3 is a margin of five. (Plain bf16 lands at ~2e-3 too, so the bound
// alone does not prove fp16 operands: compare the f16 and bf16 rows of a case.)
constexpr double kF16Tolerance = 2e-3;

inline double conv_tolerance(moss::ConvPrecision p) {
  return p == moss::ConvPrecision::Bf16x3 ? kBf16x3Tolerance : p == moss::ConvPrecision::Bf16 ? kBf16Tolerance
                                                                                               : kF16Tolerance;
}

// Deterministic values of mean `mean` and standard deviation `sd` (uniform; splitmix64, fast
// enough for the 200 M-value maps of the full-resolution cases).
inline Tensor random_host(const std::vector<int64_t>& dims, uint64_t seed, float sd, float mean = 0.0f) {
  Tensor t = moss::host_tensor(DType::F32, dims);
  float* p = t.ptr<float>();
  const float half_width = sd * 1.7320508f;
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * uint64_t(i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    p[i] = mean + (float(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * half_width;
  }
  return t;
}

inline std::vector<float> values(const Tensor& host) { return moss::to_f32_vector(host); }

inline Tensor poisoned(Env& e, const std::vector<int64_t>& dims) {
  kcheck::admit(e.max_elements, dims);
  Tensor t = e.be.alloc(DType::F32, dims);
  kcheck::poison(t, e.ctx.stream());
  return t;
}

inline std::string dims_text(const std::vector<int64_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "x" : "") + std::to_string(d[i]);
  return s;
}

// Compares and, when the case fails, prints the first non-finite element or the largest error
// with its (c, y, x) position in a map of `dims` (any rank: the index is unravelled).
inline kcheck::Compare compare_where(const std::string& what, const std::vector<float>& got,
                                     const std::vector<float>& want, const std::vector<int64_t>& dims, double tol) {
  const kcheck::Compare c = kcheck::compare(got, want);
  if (c.finite && c.rel_l2 <= tol) return c;
  size_t at = 0;
  double worst = -1;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (!std::isfinite(got[i])) {
      at = i;
      break;
    }
    const double d = std::fabs(double(got[i]) - double(want[i]));
    if (d > worst) worst = d, at = i;
  }
  std::string pos;
  size_t rest = at;
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = int64_t(rest % size_t(dims[k]));
    rest /= size_t(dims[k]);
  }
  for (size_t k = 0; k < idx.size(); ++k) pos += (k ? ", " : "") + std::to_string(idx[k]);
  std::printf("  %s: %s at [%s] (flat %zu): got %.6g want %.6g\n", what.c_str(),
              at < got.size() && !std::isfinite(got[at]) ? "first non-finite" : "largest error", pos.c_str(), at,
              at < got.size() ? double(got[at]) : 0.0, at < want.size() ? double(want[at]) : 0.0);
  return c;
}

// ---- group_norm_stats ------------------------------------------------------------------------------
struct StatsCase {
  int64_t c, h, w, groups;
  float sd, mean;
  int reps;
};

inline void check_group_norm_stats(Env& e, const StatsCase& s, uint64_t seed) {
  const Tensor x = random_host({s.c, s.h, s.w}, seed, s.sd, s.mean);
  Tensor want = moss::host_tensor(DType::F32, {s.groups, 2});
  e.host.group_norm_stats(x, s.groups, 1e-6f, want);
  const Tensor dx = e.be.upload(x);
  Tensor got = poisoned(e, {s.groups, 2});
  auto run = [&] { e.x3.group_norm_stats(dx, s.groups, 1e-6f, got); };
  run();
  const std::string shape = dims_text({s.c, s.h, s.w}) + " g" + std::to_string(s.groups) +
                            (s.mean != 0.0f ? " mean" + std::to_string(int(s.mean)) : "");
  const kcheck::Compare c = compare_where("group_norm_stats " + shape, values(e.be.download(got)), values(want),
                                          {s.groups, 2}, kFp32Tolerance);
  const double ms = s.reps ? kcheck::time_ms(e.ctx.stream(), run, s.reps) : 0.0;
  e.table.row("group_norm_stats", shape, c, kFp32Tolerance, ms, 0, 2.0 * double(x.nbytes()));
}

inline void check_group_norm_stats_cases(Env& e) {
  const StatsCase cases[] = {
      {384, 128, 128, 32, 1.0f, 0.3f, 10},   // mid block / up_blocks.0 at 1024²
      {192, 512, 512, 32, 1.0f, 0.3f, 5},    // up_blocks.2 at 1024²
      {96, 1024, 1024, 32, 1.0f, 0.3f, 3},   // up_blocks.3 at 1024²: 3.1 M values per group
      {96, 1024, 1024, 32, 0.01f, 5.0f, 0},  // the same with mean 500x the spread (cancellation)
      {96, 24, 24, 8, 1.0f, 0.0f, 0},        // tiny model
      {24, 13, 17, 8, 1.0f, 0.2f, 0},        // odd
      {48, 7, 5, 8, 2.0f, -1.0f, 0},         // odd
      {96, 1, 1, 32, 1.0f, 0.0f, 0},         // 3 values per group
  };
  uint64_t seed = 0x6E0001;
  for (const StatsCase& s : cases) check_group_norm_stats(e, s, seed++);
}

// ---- conv2d ----------------------------------------------------------------------------------------
enum class Residual { None, Separate, Out };  // Out: the residual is the output buffer itself

struct ConvCase {
  int64_t cin, cout, h, w, k;
  bool norm, upsample;
  Residual residual;
  int64_t groups;
  bool bands;  // full resolution: the host replays three bands of output rows, not the whole map
  int reps;    // timed launches (0: not timed)
  float x_sd = 1.0f;  // spread of the input values (large: fp16's range, see kernels/conv2d.h)
};

inline std::string conv_shape(const ConvCase& c) {
  const int64_t up = c.upsample ? 2 : 1;
  std::string s = std::to_string(c.cin) + ">" + std::to_string(c.cout) + " " + std::to_string(c.h * up) + "x" +
                  std::to_string(c.w * up) + " k" + std::to_string(c.k);
  if (c.x_sd != 1.0f) s += " sd" + std::to_string(int(c.x_sd));
  if (c.norm) s += " gn";
  if (c.upsample) s += " up";
  if (c.residual == Residual::Separate) s += " +r";
  if (c.residual == Residual::Out) s += " +r=out";
  return s;
}

// Rows [r0, r1) of a host map [C, H, W], as a map of their own.
inline Tensor host_rows(const Tensor& m, int64_t r0, int64_t r1) {
  const int64_t C = m.shape[0], H = m.shape[1], W = m.shape[2];
  Tensor out = moss::host_tensor(DType::F32, {C, r1 - r0, W});
  for (int64_t c = 0; c < C; ++c)
    std::memcpy(out.ptr<float>() + c * (r1 - r0) * W, m.ptr<const float>() + (c * H + r0) * W,
                size_t((r1 - r0) * W) * 4);
  return out;
}

// Rows [r0, r1) of a device map, downloaded.
inline Tensor device_rows(Env& e, const Tensor& d, int64_t r0, int64_t r1) {
  const int64_t C = d.shape[0], H = d.shape[1], W = d.shape[2];
  Tensor out = moss::host_tensor(DType::F32, {C, r1 - r0, W});
  const size_t band = size_t((r1 - r0) * W) * 4;
  MOSS_HIP_CHECK(hipMemcpy2DAsync(out.data, band, d.ptr<const float>() + r0 * W, size_t(H * W) * 4, band, size_t(C),
                                  hipMemcpyDeviceToHost, e.ctx.stream()));
  MOSS_HIP_CHECK(hipStreamSynchronize(e.ctx.stream()));
  return out;
}

// The host replay, whole or in bands: for each band of input rows [a, b) the host convolves
// that band alone, and the output rows whose 3x3 window stays inside the band (or leaves the
// image, where both pad with zeros) are exact. Returns (rows of the output compared, values).
struct Replay {
  std::vector<std::pair<int64_t, int64_t>> out_rows;  // [begin, end) per band, in output rows
  std::vector<std::vector<float>> want;               // [cout, end - begin, Wo] per band
};

inline Replay replay_conv(Env& e, const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b,
                          const Tensor& stats, const Tensor& gamma, const Tensor& beta, const Tensor& res) {
  const int64_t up = c.upsample ? 2 : 1, Ho = c.h * up, Wo = c.w * up, pad = c.k / 2;
  moss::GroupNormInput n{&stats, &gamma, &beta, true};
  Replay r;
  std::vector<std::pair<int64_t, int64_t>> in_bands;
  if (!c.bands) in_bands.push_back({0, c.h});
  else in_bands = {{0, 6}, {c.h / 2 - 3, c.h / 2 + 3}, {c.h - 6, c.h}};
  for (const auto& [a, bnd] : in_bands) {
    const Tensor xb = c.bands ? host_rows(x, a, bnd) : x;
    const Tensor rb = c.residual != Residual::None ? (c.bands ? host_rows(res, a * up, bnd * up) : res) : Tensor();
    moss::Conv2dOptions o;
    o.norm = c.norm ? &n : nullptr;
    o.upsample2x = c.upsample;
    o.residual = c.residual != Residual::None ? &rb : nullptr;
    Tensor ob = moss::host_tensor(DType::F32, {c.cout, (bnd - a) * up, Wo});
    e.host.conv2d(xb, w, b, o, ob);
    // Output row y reads input rows (y ± pad) / up: exact when those lie in the band or outside the image.
    int64_t y0 = a * up, y1 = bnd * up;
    while (y0 < y1 && y0 - pad >= 0 && (y0 - pad) / up < a) ++y0;
    while (y1 > y0 && y1 - 1 + pad < Ho && (y1 - 1 + pad) / up >= bnd) --y1;
    const Tensor kept = host_rows(ob, y0 - a * up, y1 - a * up);
    r.out_rows.push_back({y0, y1});
    r.want.push_back(values(kept));
  }
  return r;
}

inline void check_conv(Env& e, const ConvCase& c, uint64_t seed) {
  const int64_t up = c.upsample ? 2 : 1, Ho = c.h * up, Wo = c.w * up;
  const Tensor x = random_host({c.cin, c.h, c.w}, seed, c.x_sd, 0.3f);
  const Tensor w = random_host({c.cout, c.cin, c.k, c.k}, seed + 1, 1.0f / std::sqrt(float(c.cin * c.k * c.k)));
  const Tensor b = random_host({c.cout}, seed + 2, 0.1f);
  const Tensor gamma = random_host({c.cin}, seed + 3, 0.2f, 1.0f), beta = random_host({c.cin}, seed + 4, 0.2f);
  const Tensor res = c.residual != Residual::None ? random_host({c.cout, Ho, Wo}, seed + 5, 1.0f) : Tensor();
  Tensor stats = moss::host_tensor(DType::F32, {c.groups, 2});
  if (c.norm) e.host.group_norm_stats(x, c.groups, 1e-6f, stats);
  const Replay want = replay_conv(e, c, x, w, b, stats, gamma, beta, res);

  const Tensor dx = e.be.upload(x), dw = e.be.upload(w), db = e.be.upload(b);
  const Tensor dstats = e.be.upload(stats), dgamma = e.be.upload(gamma), dbeta = e.be.upload(beta);
  const moss::GroupNormInput n{&dstats, &dgamma, &dbeta, true};
  const std::string shape = conv_shape(c);
  const double flops = 2.0 * double(c.cout * c.cin * c.k * c.k) * double(Ho * Wo);
  for (moss::ConvPrecision p : {moss::ConvPrecision::F16, moss::ConvPrecision::Bf16x3, moss::ConvPrecision::Bf16}) {
    moss::VaeOps& ops = e.ops(p);
    const double tol = conv_tolerance(p);
    Tensor out = c.residual == Residual::Out ? e.be.upload(res) : poisoned(e, {c.cout, Ho, Wo});
    const Tensor dres = c.residual == Residual::Separate ? e.be.upload(res) : out;
    moss::Conv2dOptions o;
    o.norm = c.norm ? &n : nullptr;
    o.upsample2x = c.upsample;
    o.residual = c.residual != Residual::None ? &dres : nullptr;
    auto run = [&] { ops.conv2d(dx, dw, db, o, out); };
    run();
    const std::string kernel = std::string("conv2d ") + moss::conv_precision_name(p);
    std::vector<std::vector<float>> got(want.out_rows.size());
    std::vector<float> got_all, want_all;
    for (size_t i = 0; i < got.size(); ++i) {
      got[i] = values(device_rows(e, out, want.out_rows[i].first, want.out_rows[i].second));
      got_all.insert(got_all.end(), got[i].begin(), got[i].end());
      want_all.insert(want_all.end(), want.want[i].begin(), want.want[i].end());
    }
    const kcheck::Compare cmp = kcheck::compare(got_all, want_all);
    if (!cmp.finite || cmp.rel_l2 > tol)  // say where, band by band ([c, row within the band, x])
      for (size_t i = 0; i < got.size(); ++i) {
        const auto [y0, y1] = want.out_rows[i];
        compare_where(kernel + " " + shape + " rows " + std::to_string(y0) + "-" + std::to_string(y1), got[i],
                      want.want[i], {c.cout, y1 - y0, Wo}, tol);
      }
    const double ms = c.reps ? kcheck::time_ms(e.ctx.stream(), run, c.reps) : 0.0;  // (in place: values drift)
    e.table.row(kernel, shape + (c.bands ? " (rows)" : ""), cmp, tol, ms, flops);
  }
}

inline void check_conv_cases(Env& e) {
  using R = Residual;
  // The small decoder's layers at a 256x256 output (latent 32x32), then odd sizes, then full
  // 1024x1024 layers (timed; host replay on bands of rows). groups: 32 (real), 8 (tiny/odd).
  const ConvCase cases[] = {
      {32, 32, 32, 32, 1, false, false, R::None, 32, false, 10},      // post_quant_conv
      {32, 384, 32, 32, 3, false, false, R::None, 32, false, 10},     // conv_in
      {384, 384, 32, 32, 3, true, false, R::Out, 32, false, 10},      // mid resnet conv2 (over its input)
      {384, 384, 32, 32, 3, false, true, R::None, 32, false, 5},      // up_blocks.0 upsample
      {384, 384, 64, 64, 3, true, false, R::None, 32, false, 5},      // up_blocks.1 resnet conv1
      {384, 384, 64, 64, 3, false, true, R::None, 32, false, 5},      // up_blocks.1 upsample
      {384, 192, 128, 128, 3, true, false, R::None, 32, false, 5},    // up_blocks.2 resnet 0 conv1
      {384, 192, 128, 128, 1, false, false, R::None, 32, false, 5},   // up_blocks.2 resnet 0 shortcut
      {192, 192, 128, 128, 3, true, false, R::Separate, 32, false, 5},  // up_blocks.2 resnet 0 conv2
      {192, 192, 128, 128, 3, false, true, R::None, 32, false, 5},    // up_blocks.2 upsample
      {192, 96, 256, 256, 3, true, false, R::None, 32, false, 5},     // up_blocks.3 resnet 0 conv1
      {192, 96, 256, 256, 1, false, false, R::None, 32, false, 5},    // up_blocks.3 resnet 0 shortcut
      {96, 96, 256, 256, 3, true, false, R::Out, 32, false, 5},       // up_blocks.3 resnet 1 conv2
      {96, 3, 256, 256, 3, true, false, R::None, 32, false, 5},       // conv_out
      {24, 40, 7, 19, 3, true, false, R::Out, 8, false, 0},           // odd: channel, row, column tails
      {48, 20, 5, 6, 3, true, true, R::Separate, 8, false, 0},
      {40, 70, 9, 17, 1, false, false, R::Separate, 8, false, 0},
      {5, 3, 3, 33, 3, true, false, R::None, 1, false, 0},
      {32, 36, 1, 1, 3, false, true, R::Out, 8, false, 0},
      {96, 96, 8, 8, 3, true, false, R::Out, 8, false, 0},            // tiny model mid block
      // the 64-channel block: three channel tiles (the last of 2), 4 K-steps through the two
      // portable buffers, a row tail of 3 (k3) / 5 (k1) under the 8-row block
      {50, 130, 11, 21, 3, true, false, R::Separate, 5, false, 0},
      {50, 130, 13, 35, 1, false, false, R::Out, 5, false, 0},
      {64, 48, 12, 20, 3, false, true, R::None, 8, false, 0, 1e5f},   // raw inputs beyond fp16's 65504
      {64, 48, 12, 20, 1, false, false, R::Separate, 8, false, 0, 1e5f},
      {24, 3, 64, 64, 3, true, false, R::None, 8, false, 0},          // tiny model conv_out
      {192, 192, 512, 512, 3, false, true, R::None, 32, true, 3},     // up_blocks.2 upsample at 1024²
      {192, 96, 1024, 1024, 3, true, false, R::None, 32, true, 3},    // up_blocks.3 resnet 0 conv1 at 1024²
      {96, 96, 1024, 1024, 3, true, false, R::Out, 32, true, 3},      // up_blocks.3 resnet conv2 at 1024²
  };
  uint64_t seed = 0xC0000;
  for (const ConvCase& c : cases) check_conv(e, c, seed += 16);
}

// ---- batch norm + unpatchify, map <-> tokens ---------------------------------------------------------
inline void check_unpatchify(Env& e, int64_t h, int64_t w, int reps, uint64_t seed) {
  const int64_t K = 128, C = 32, p = 2;
  const Tensor packed = random_host({K, h, w}, seed, 1.0f);
  const Tensor mean = random_host({K}, seed + 1, 0.5f), var = random_host({K}, seed + 2, 0.25f, 1.0f);
  Tensor want = moss::host_tensor(DType::F32, {C, p * h, p * w});
  e.host.batch_norm_unpatchify(packed, mean, var, 1e-4f, p, want);
  const Tensor dp = e.be.upload(packed), dm = e.be.upload(mean), dv = e.be.upload(var);
  Tensor got = poisoned(e, {C, p * h, p * w});
  auto run = [&] { e.x3.batch_norm_unpatchify(dp, dm, dv, 1e-4f, p, got); };
  run();
  const std::string shape = dims_text({K, h, w}) + ">" + dims_text({C, p * h, p * w});
  const kcheck::Compare c =
      compare_where("bn_unpatchify " + shape, values(e.be.download(got)), values(want), want.dims(), kFp32Tolerance);
  const double ms = reps ? kcheck::time_ms(e.ctx.stream(), run, reps) : 0.0;
  e.table.row("bn_unpatchify", shape, c, kFp32Tolerance, ms, 0, 2.0 * double(packed.nbytes()));
}

// Token rows live in a wider poisoned buffer at column `col0` (as a column slice of a fused
// projection would): the op must write its columns and nothing else.
inline void check_to_tokens(Env& e, int64_t C, int64_t H, int64_t W, int64_t groups, bool silu, int64_t width,
                            int64_t col0, int reps, uint64_t seed) {
  const int64_t P = H * W;
  const Tensor x = random_host({C, H, W}, seed, 1.0f, 0.3f);
  const Tensor gamma = random_host({C}, seed + 1, 0.2f, 1.0f), beta = random_host({C}, seed + 2, 0.2f);
  Tensor stats = moss::host_tensor(DType::F32, {groups, 2});
  e.host.group_norm_stats(x, groups, 1e-6f, stats);
  Tensor want_wide = moss::host_tensor(DType::F32, {P, width});
  Tensor want = want_wide.slice_cols(col0, C);
  e.host.group_norm_to_tokens(x, moss::GroupNormInput{&stats, &gamma, &beta, silu}, want);

  const Tensor dx = e.be.upload(x), ds = e.be.upload(stats), dg = e.be.upload(gamma), db = e.be.upload(beta);
  Tensor wide = poisoned(e, {P, width});
  Tensor got = wide.slice_cols(col0, C);
  const moss::GroupNormInput n{&ds, &dg, &db, silu};
  auto run = [&] { e.x3.group_norm_to_tokens(dx, n, got); };
  run();
  const Tensor back = e.be.download(wide);
  std::vector<float> g, wv;
  int64_t stray = 0;  // elements outside the slice that are no longer NaN
  for (int64_t r = 0; r < P; ++r)
    for (int64_t c = 0; c < width; ++c) {
      const float v = back.ptr<const float>()[r * width + c];
      if (c < col0 || c >= col0 + C) stray += !std::isnan(v);
      else g.push_back(v), wv.push_back(want.row<const float>(r)[c - col0]);
    }
  const std::string shape = dims_text({C, H, W}) + (silu ? " silu" : "") + (width > C ? " slice" : "");
  kcheck::Compare c = compare_where("gn_to_tokens " + shape, g, wv, {P, C}, kFp32Tolerance);
  if (stray) {
    std::printf("  gn_to_tokens %s: %lld elements written outside the token columns\n", shape.c_str(),
                (long long)stray);
    c.finite = false;
  }
  const double ms = reps ? kcheck::time_ms(e.ctx.stream(), run, reps) : 0.0;
  e.table.row("gn_to_tokens", shape, c, kFp32Tolerance, ms, 0, 2.0 * double(x.nbytes()));
}

inline void check_add_tokens(Env& e, int64_t C, int64_t H, int64_t W, int64_t width, int64_t col0, int reps,
                             uint64_t seed) {
  const int64_t P = H * W;
  Tensor x = random_host({C, H, W}, seed, 1.0f);
  const Tensor tokens_wide = random_host({P, width}, seed + 1, 1.0f);
  const Tensor tokens = tokens_wide.slice_cols(col0, C);
  Tensor dx = e.be.upload(x);
  const Tensor dtokens = e.be.upload(tokens_wide).slice_cols(col0, C);
  e.host.add_tokens(x, tokens);
  e.x3.add_tokens(dx, dtokens);
  const std::string shape = dims_text({C, H, W}) + (width > C ? " slice" : "");
  const kcheck::Compare c =
      compare_where("add_tokens " + shape, values(e.be.download(dx)), values(x), x.dims(), kFp32Tolerance);
  const double ms = reps ? kcheck::time_ms(e.ctx.stream(), [&] { e.x3.add_tokens(dx, dtokens); }, reps) : 0.0;
  e.table.row("add_tokens", shape, c, kFp32Tolerance, ms, 0, 3.0 * double(x.nbytes()));
}

// The layout cases: shapes, timed launches (0: not timed) and seed of each.
struct UnpatchifyCase {
  int64_t h, w;
  int reps;
  uint64_t seed;
};
struct ToTokensCase {
  int64_t c, h, w, groups;
  bool silu;
  int64_t width, col0;
  int reps;
  uint64_t seed;
};
struct AddTokensCase {
  int64_t c, h, w, width, col0;
  int reps;
  uint64_t seed;
};

inline void check_layout_cases(Env& e) {
  const UnpatchifyCase unpatchify[] = {
      {64, 64, 10, 0xB0001},    // 1024²
      {128, 128, 10, 0xB0002},  // 2048²
      {5, 7, 0, 0xB0003},       // odd
  };
  const ToTokensCase to_tokens[] = {
      {384, 128, 128, 32, false, 384, 0, 10, 0xB0010},  // the mid block at 1024²
      {96, 8, 8, 8, false, 96, 0, 0, 0xB0011},          // tiny model
      {40, 7, 9, 8, false, 120, 40, 0, 0xB0012},        // odd, slice of a wider buffer
      {40, 7, 9, 8, true, 120, 80, 0, 0xB0013},         // odd, SiLU
  };
  const AddTokensCase add_tokens[] = {
      {384, 128, 128, 3 * 384, 384, 10, 0xB0020},  // the mid block at 1024²
      {96, 8, 8, 96, 0, 0, 0xB0021},               // tiny model
      {40, 3, 11, 120, 40, 0, 0xB0022},            // odd
  };
  for (const UnpatchifyCase& c : unpatchify) check_unpatchify(e, c.h, c.w, c.reps, c.seed);
  for (const ToTokensCase& c : to_tokens)
    check_to_tokens(e, c.c, c.h, c.w, c.groups, c.silu, c.width, c.col0, c.reps, c.seed);
  for (const AddTokensCase& c : add_tokens) check_add_tokens(e, c.c, c.h, c.w, c.width, c.col0, c.reps, c.seed);
}

}  // namespace vae_check
