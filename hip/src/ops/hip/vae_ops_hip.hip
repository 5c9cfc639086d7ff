// VaeOps on the HIP backend: checks the operands like the host replay does (with messages that
// name the op and operand), takes its temporaries from the context's scratch arena, and launches
// the kernels on the context's stream (kernels/group_norm, conv_weights, conv2d, vae_layout).
// Temporaries per call: the convolution's packed weights (2 bytes per weight, twice for bf16x3's
// hi + lo: at most 5.3 MiB for a 384x384x3x3 layer) and per-channel norm terms; the group-norm
// partial sums. Nothing scales with the image beyond the caller's own tensors.
#include "ops/hip/vae_ops_hip.h"

#include <stdexcept>
#include <string>

#include "kernels/conv2d_layout.h"
#include "kernels/conv_weights.h"
#include "kernels/group_norm.h"
#include "kernels/vae_layout.h"

namespace moss {
namespace {

// The shapes and dtypes are checked by the public ops (ops/vae_ops.cpp); the device's own
// conditions: device storage, and sizes that fit the kernels' 32-bit indices.
void check_device(const Tensor& t, const char* op, const char* what) {
  op_require(t.data != nullptr, op, std::string(what) + " has no storage");
  op_require(t.where == Where::Device, op, std::string(what) + " must be on the device");
}

void check_map(const Tensor& t, const char* op, const char* what) {
  check_device(t, op, what);
  op_require(t.shape[0] < (int64_t(1) << 31) && t.shape[1] < (int64_t(1) << 30) && t.shape[2] < (int64_t(1) << 30), op,
             std::string(what) + " " + t.shape_str() + " is too large");
}

// One scratch request carved into 256-byte aligned pieces.
class ScratchPlan {
 public:
  size_t add(size_t bytes) {
    const size_t at = total_;
    total_ += (bytes + 255) / 256 * 256;
    return at;
  }
  size_t total() const { return total_; }

 private:
  size_t total_ = 0;
};

template <class T>
T* at(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

// A GroupNormInput's tensors on the device; returns its group count.
int check_norm(const GroupNormInput& n, const char* op) {
  check_device(*n.stats, op, "group norm stats");
  check_device(*n.gamma, op, "group norm gamma");
  check_device(*n.beta, op, "group norm beta");
  return int(n.stats->numel() / 2);
}

class HipVaeOps : public VaeOps {
 public:
  HipVaeOps(HipContext& ctx, ConvPrecision precision) : ctx_(ctx), precision_(precision) {}

  void do_group_norm_stats(const Tensor& x, int64_t groups, float eps, Tensor& stats) override {
    check_map(x, "group_norm_stats", "x");
    check_device(stats, "group_norm_stats", "stats");
    // NCHW keeps a group's channels adjacent: group g is one contiguous span.
    const int64_t span = x.numel() / groups;
    void* scratch = ctx_.scratch(group_norm_stats_scratch_bytes(span, int(groups)));
    moss::group_norm_stats(x.ptr<const float>(), span, int(groups), eps, stats.ptr<float>(), scratch, ctx_.stream());
  }

  void do_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& opt, Tensor& out) override {
    check_map(x, "conv2d", "x");
    check_map(out, "conv2d", "out");
    check_device(w, "conv2d", "weight");
    check_device(bias, "conv2d", "bias");
    const int64_t Cin = x.shape[0], H = x.shape[1], W = x.shape[2];
    const int64_t Cout = w.shape[0], k = w.shape[3];
    op_require(out.data != x.data, "conv2d", "out must not alias the input");
    if (opt.residual) {
      check_map(*opt.residual, "conv2d", "residual");
      op_require(opt.residual->data != x.data, "conv2d", "the residual must not alias the input");
    }
    const int groups = opt.norm ? check_norm(*opt.norm, "conv2d") : 0;

    const bool split = precision_ == ConvPrecision::Bf16x3;
    const size_t plane_bytes = size_t(conv::packed_words(int(Cout), int(Cin), int(k))) * sizeof(uint32_t);
    ScratchPlan plan;
    const size_t hi_at = plan.add(plane_bytes), lo_at = split ? plan.add(plane_bytes) : 0;
    const size_t norm_at = opt.norm ? plan.add(size_t(Cin) * sizeof(ChannelNorm)) : 0;
    void* scratch = ctx_.scratch(plan.total());

    Conv2dArgs a;
    a.x = x.ptr<const float>();
    a.cin = int(Cin);
    a.h = int(H);
    a.w = int(W);
    a.w_hi = at<uint32_t>(scratch, hi_at);
    a.w_lo = split ? at<uint32_t>(scratch, lo_at) : nullptr;
    a.cout = int(Cout);
    a.ksize = int(k);
    a.bias = bias.ptr<const float>();
    conv_pack_weights(w.ptr<const float>(), a.cout, a.cin, a.ksize, precision_, at<uint32_t>(scratch, hi_at),
                      split ? at<uint32_t>(scratch, lo_at) : nullptr, ctx_.stream());
    if (opt.norm) {
      ChannelNorm* norms = at<ChannelNorm>(scratch, norm_at);
      group_norm_channels(opt.norm->stats->ptr<const float>(), opt.norm->gamma->ptr<const float>(),
                          opt.norm->beta->ptr<const float>(), a.cin, groups, norms, ctx_.stream());
      a.norm = norms;
      a.silu = opt.norm->silu;
    }
    a.upsample2x = opt.upsample2x;
    a.residual = opt.residual ? opt.residual->ptr<const float>() : nullptr;
    a.out = out.ptr<float>();
    moss::conv2d(a, precision_, ctx_.stream());
  }

  void do_batch_norm_unpatchify(const Tensor& packed, const Tensor& running_mean, const Tensor& running_var, float eps,
                                int64_t patch, Tensor& out) override {
    check_map(packed, "batch_norm_unpatchify", "packed");
    check_map(out, "batch_norm_unpatchify", "out");
    check_device(running_mean, "batch_norm_unpatchify", "running_mean");
    check_device(running_var, "batch_norm_unpatchify", "running_var");
    const int64_t p = patch, K = packed.shape[0], h = packed.shape[1], w = packed.shape[2], C = K / (p * p);
    moss::batch_norm_unpatchify(packed.ptr<const float>(), running_mean.ptr<const float>(),
                                running_var.ptr<const float>(), eps, int(C), int(h), int(w), int(p), out.ptr<float>(),
                                ctx_.stream());
  }

  void do_group_norm_to_tokens(const Tensor& x, const GroupNormInput& norm, Tensor& tokens) override {
    check_map(x, "group_norm_to_tokens", "x");
    check_device(tokens, "group_norm_to_tokens", "tokens");
    const int64_t C = x.shape[0], P = x.shape[1] * x.shape[2];
    const int groups = check_norm(norm, "group_norm_to_tokens");
    ChannelNorm* norms = static_cast<ChannelNorm*>(ctx_.scratch(size_t(C) * sizeof(ChannelNorm)));
    group_norm_channels(norm.stats->ptr<const float>(), norm.gamma->ptr<const float>(), norm.beta->ptr<const float>(),
                        int(C), groups, norms, ctx_.stream());
    map_to_tokens(x.ptr<const float>(), int(C), P, norms, norm.silu, tokens.ptr<float>(), tokens.row_stride(),
                  ctx_.stream());
  }

  void do_add_tokens(Tensor& x, const Tensor& tokens) override {
    check_map(x, "add_tokens", "x");
    check_device(tokens, "add_tokens", "tokens");
    const int64_t C = x.shape[0], P = x.shape[1] * x.shape[2];
    add_tokens_to_map(x.ptr<float>(), int(C), P, tokens.ptr<const float>(), tokens.row_stride(), ctx_.stream());
  }

 private:
  HipContext& ctx_;
  ConvPrecision precision_;
};

}  // namespace

std::unique_ptr<VaeOps> make_hip_vae_ops(HipContext& ctx, ConvPrecision conv_precision) {
  return std::make_unique<HipVaeOps>(ctx, conv_precision);
}

// The decode's choice on every platform and kernel path: fp16 operands (TF32-class, the
// reference's own precision; one product). Why, and the errors measured: kernels/conv2d.h.
std::unique_ptr<VaeOps> make_hip_vae_ops(HipContext& ctx) { return make_hip_vae_ops(ctx, ConvPrecision::F16); }

}  // namespace moss
