// Host reference of the VAE op family: plain C++, fp32 products and sums (group-norm
// statistics in double), threaded with the deterministic pool. The convolution works like the
// GPU's implicit GEMM: each task gathers the input rows one output row needs (through padding,
// upsampling and the group norm) into a small per-thread band, never a full im2col matrix.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

#include "ops/host/host_factories.h"
#include "ops/host/host_op_parts.h"
#include "util/cancel.h"

namespace moss {
namespace {

inline float silu(float v) { return v * (1.0f / (1.0f + std::exp(-v))); }

// The per-channel form of GroupNormInput: y = (x − mean_c)·scale_c + beta_c (+ SiLU), with
// mean_c the group mean and scale_c = rstd_g·gamma_c. Identity when no norm is given.
class ChannelNorm {
 public:
  ChannelNorm(const GroupNormInput* norm, int64_t channels, const char* op) {
    if (!norm) return;
    check_host(*norm->stats, op, "group norm stats");
    check_host(*norm->gamma, op, "group norm gamma");
    check_host(*norm->beta, op, "group norm beta");
    const int64_t groups = norm->stats->numel() / 2;
    const float* st = norm->stats->ptr<const float>();
    const float* g = norm->gamma->ptr<const float>();
    const float* b = norm->beta->ptr<const float>();
    const int64_t per_group = channels / groups;
    mean_.resize(size_t(channels));
    scale_.resize(size_t(channels));
    shift_.assign(b, b + channels);
    for (int64_t c = 0; c < channels; ++c) {
      mean_[size_t(c)] = st[2 * (c / per_group)];
      scale_[size_t(c)] = st[2 * (c / per_group) + 1] * g[c];
    }
    silu_ = norm->silu;
    active_ = true;
  }

  // n consecutive values of channel c, from src to dst (dst may be src).
  void apply(int64_t c, const float* src, int64_t n, float* dst) const {
    if (!active_) {
      std::copy_n(src, n, dst);
      return;
    }
    const float m = mean_[size_t(c)], s = scale_[size_t(c)], b = shift_[size_t(c)];
    for (int64_t i = 0; i < n; ++i) {
      const float y = (src[i] - m) * s + b;
      dst[i] = silu_ ? silu(y) : y;
    }
  }
  float apply(int64_t c, float v) const {
    apply(c, &v, 1, &v);
    return v;
  }

 private:
  bool active_ = false, silu_ = false;
  std::vector<float> mean_, scale_, shift_;
};

class HostVaeOps : public VaeOps {
 public:
  explicit HostVaeOps(ThreadPool& pool) : pool_(pool) {}

  void do_group_norm_stats(const Tensor& x, int64_t groups, float eps, Tensor& stats) override {
    check_host(x, "group_norm_stats", "x");
    check_host(stats, "group_norm_stats", "stats");
    // NCHW keeps a group's channels adjacent: group g is one contiguous span.
    const int64_t span = x.numel() / groups;
    pool_.parallel_for(groups, [&](int64_t g0, int64_t g1) {
      for (int64_t g = g0; g < g1; ++g) {
        const float* v = x.ptr<const float>() + g * span;
        double sum = 0.0;
        for (int64_t i = 0; i < span; ++i) sum += v[i];
        const double mean = sum / double(span);
        double ss = 0.0;  // second pass around the mean: no cancellation
        for (int64_t i = 0; i < span; ++i) ss += (v[i] - mean) * (v[i] - mean);
        const double var = ss / double(span);
        stats.ptr<float>()[2 * g] = float(mean);
        stats.ptr<float>()[2 * g + 1] = float(1.0 / std::sqrt(var + double(eps)));
      }
    });
  }

  void do_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& opt, Tensor& out) override {
    for (const Tensor* t : std::initializer_list<const Tensor*>{&x, &out, &w, &bias})
      check_host(*t, "conv2d", "operand");
    const int64_t Cin = x.shape[0], H = x.shape[1], W = x.shape[2];
    const int64_t Cout = w.shape[0], k = w.shape[3];
    const int64_t up = opt.upsample2x ? 2 : 1, Ho = H * up, Wo = W * up, pad = k / 2;
    op_require(out.data != x.data, "conv2d", "out must not alias the input");
    if (opt.residual) check_host(*opt.residual, "conv2d", "residual");
    const ChannelNorm norm(opt.norm, Cin, "conv2d");
    const float* xp = x.ptr<const float>();
    const float* wp = w.ptr<const float>();
    const float* bp = bias.ptr<const float>();
    const float* rp = opt.residual ? opt.residual->ptr<const float>() : nullptr;
    float* op = out.ptr<float>();

    // The band holds, per input channel and kernel row, one padded row of the (upsampled,
    // normalised) input: band[(ci·k + ky)·BW + bx] = in'[ci, y + ky − pad, bx − pad].
    const int64_t BW = Wo + k - 1;
    auto gather = [&](int64_t y, std::vector<float>& band, std::vector<float>& src_row) {
      for (int64_t ci = 0; ci < Cin; ++ci)
        for (int64_t ky = 0; ky < k; ++ky) {
          float* dst = band.data() + (ci * k + ky) * BW;
          const int64_t iy = y + ky - pad;
          std::fill(dst, dst + BW, 0.0f);
          if (iy < 0 || iy >= Ho) continue;
          norm.apply(ci, xp + (ci * H + iy / up) * W, W, src_row.data());
          for (int64_t ix = 0; ix < Wo; ++ix) dst[ix + pad] = src_row[size_t(ix / up)];
        }
    };

    // Tasks: (output row, block of output channels), row-major so a thread's chunk reuses its
    // band across the channel blocks of a row.
    constexpr int64_t kBlock = 8;
    const int64_t blocks = (Cout + kBlock - 1) / kBlock;
    pool_.parallel_for(Ho * blocks, [&](int64_t t0, int64_t t1) {
      std::vector<float> band(size_t(Cin * k * BW));
      std::vector<float> acc(size_t(kBlock * Wo)), src_row(static_cast<size_t>(W));
      int64_t band_row = -1;
      for (int64_t t = t0; t < t1; ++t) {
        if (cancel_requested()) return;  // util/cancel.h: the caller's next checkpoint throws
        const int64_t y = t / blocks, co0 = (t % blocks) * kBlock, n = std::min(kBlock, Cout - co0);
        if (y != band_row) {
          gather(y, band, src_row);
          band_row = y;
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        // Each output sums ci, then ky, then kx, in one fp32 accumulator.
        for (int64_t ci = 0; ci < Cin; ++ci)
          for (int64_t ky = 0; ky < k; ++ky) {
            const float* row = band.data() + (ci * k + ky) * BW;
            for (int64_t j = 0; j < n; ++j) {
              const float* wr = wp + ((co0 + j) * Cin + ci) * k * k + ky * k;
              float* a = acc.data() + j * Wo;
              for (int64_t kx = 0; kx < k; ++kx) {
                const float wv = wr[kx];
                const float* s = row + kx;
                for (int64_t ix = 0; ix < Wo; ++ix) a[ix] += wv * s[ix];
              }
            }
          }
        for (int64_t j = 0; j < n; ++j) {
          const int64_t co = co0 + j;
          const float* a = acc.data() + j * Wo;
          float* o = op + (co * Ho + y) * Wo;
          const float* r = rp ? rp + (co * Ho + y) * Wo : nullptr;
          for (int64_t ix = 0; ix < Wo; ++ix) o[ix] = r ? (a[ix] + bp[co]) + r[ix] : a[ix] + bp[co];
        }
      }
    });
  }

  void do_batch_norm_unpatchify(const Tensor& packed, const Tensor& running_mean, const Tensor& running_var, float eps,
                                int64_t patch, Tensor& out) override {
    for (const Tensor* t : std::initializer_list<const Tensor*>{&packed, &out, &running_mean, &running_var})
      check_host(*t, "batch_norm_unpatchify", "operand");
    const int64_t p = patch, K = packed.shape[0], h = packed.shape[1], w = packed.shape[2];
    const float* in = packed.ptr<const float>();
    const float* mean = running_mean.ptr<const float>();
    const float* var = running_var.ptr<const float>();
    float* o = out.ptr<float>();
    pool_.parallel_for(K, [&](int64_t k0, int64_t k1) {
      for (int64_t kk = k0; kk < k1; ++kk) {
        const int64_t c = kk / (p * p), dy = (kk / p) % p, dx = kk % p;
        const float sd = std::sqrt(var[kk] + eps);
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j)
            o[(c * p * h + p * i + dy) * p * w + p * j + dx] = in[(kk * h + i) * w + j] * sd + mean[kk];
      }
    });
  }

  void do_group_norm_to_tokens(const Tensor& x, const GroupNormInput& norm_in, Tensor& tokens) override {
    check_host(x, "group_norm_to_tokens", "x");
    check_host(tokens, "group_norm_to_tokens", "tokens");
    const int64_t C = x.shape[0], P = x.shape[1] * x.shape[2];
    const ChannelNorm norm(&norm_in, C, "group_norm_to_tokens");
    pool_.parallel_for(P, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        float* t = tokens.row<float>(p);
        for (int64_t c = 0; c < C; ++c) t[c] = norm.apply(c, x.ptr<const float>()[c * P + p]);
      }
    }, 16);
  }

  void do_add_tokens(Tensor& x, const Tensor& tokens) override {
    check_host(x, "add_tokens", "x");
    check_host(tokens, "add_tokens", "tokens");
    const int64_t C = x.shape[0], P = x.shape[1] * x.shape[2];
    pool_.parallel_for(C, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        float* xc = x.ptr<float>() + c * P;
        for (int64_t p = 0; p < P; ++p) xc[p] += tokens.row<const float>(p)[c];
      }
    });
  }

 private:
  ThreadPool& pool_;
};

}  // namespace

std::unique_ptr<VaeOps> make_host_vae_ops(ThreadPool& pool) { return std::make_unique<HostVaeOps>(pool); }

}  // namespace moss
