// The VAE family's public ops: the operand checks every backend shares (f32, contiguous,
// shapes, the group norm's parameters), then the backend's body inside the hook
// (ops/op_hook.h). Where a tensor lives, its storage and aliasing are the backend's to check.
#include "ops/vae_ops.h"

#include <string>

namespace moss {
namespace {

void check_f32(const Tensor& t, const char* op, const char* what) {
  op_require(t.dtype == DType::F32, op, std::string(what) + " must be f32");
  op_require(t.contiguous(), op, std::string(what) + " must be contiguous");
}

void check_map(const Tensor& t, const char* op, const char* what) {
  check_f32(t, op, what);
  op_require(t.rank == 3, op, std::string(what) + " must be [C, H, W], got " + t.shape_str());
}

void check_rows(const Tensor& t, const char* op, const char* what) {
  op_require(t.dtype == DType::F32, op, std::string(what) + " must be an f32 matrix");
  op_require(t.rank == 2 && (t.shape[1] == 1 || t.stride[1] == 1), op, std::string(what) + " must be [rows, cols]");
}

void check_norm(const GroupNormInput* n, int64_t channels, const char* op) {
  if (!n) return;
  op_require(n->stats && n->gamma && n->beta, op, "group norm needs stats, gamma and beta");
  check_f32(*n->stats, op, "group norm stats");
  check_f32(*n->gamma, op, "group norm gamma");
  check_f32(*n->beta, op, "group norm beta");
  const int64_t groups = n->stats->numel() / 2;
  op_require(n->stats->numel() == 2 * groups && groups > 0 && channels % groups == 0, op,
             "group norm stats " + n->stats->shape_str() + " do not divide " + std::to_string(channels) + " channels");
  op_require(n->gamma->numel() == channels && n->beta->numel() == channels, op, "group norm gamma/beta size");
}

// tokens [H·W, C] for the map x [C, H, W].
void check_tokens(const Tensor& x, const Tensor& tokens, const char* op) {
  check_map(x, op, "x");
  check_rows(tokens, op, "tokens");
  op_require(tokens.shape[0] == x.shape[1] * x.shape[2] && tokens.shape[1] == x.shape[0], op,
             "tokens " + tokens.shape_str() + " for map " + x.shape_str());
}

}  // namespace

void VaeOps::group_norm_stats(const Tensor& x, int64_t groups, float eps, Tensor& stats) {
  check_map(x, "group_norm_stats", "x");
  check_f32(stats, "group_norm_stats", "stats");
  op_require(groups > 0 && x.shape[0] % groups == 0, "group_norm_stats",
             std::to_string(groups) + " groups do not divide " + std::to_string(x.shape[0]) + " channels");
  op_require(stats.numel() == 2 * groups, "group_norm_stats", "stats must be [groups, 2]");
  run_op(hook_, "vae.group_norm_stats", [&] { do_group_norm_stats(x, groups, eps, stats); });
}

void VaeOps::conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& opt, Tensor& out) {
  check_map(x, "conv2d", "x");
  check_map(out, "conv2d", "out");
  check_f32(w, "conv2d", "weight");
  check_f32(bias, "conv2d", "bias");
  const int64_t Cin = x.shape[0], H = x.shape[1], W = x.shape[2];
  const int64_t Cout = w.shape[0], k = w.rank == 4 ? w.shape[3] : 0;
  op_require(w.rank == 4 && w.shape[1] == Cin && w.shape[2] == k && (k == 1 || k == 3), "conv2d",
             "weight " + w.shape_str() + " is not [Cout, " + std::to_string(Cin) + ", k, k] with k 1 or 3");
  op_require(bias.numel() == Cout, "conv2d", "bias size");
  const int64_t up = opt.upsample2x ? 2 : 1;
  op_require(out.shape[0] == Cout && out.shape[1] == H * up && out.shape[2] == W * up, "conv2d",
             "out " + out.shape_str() + " for input " + x.shape_str() + " and weight " + w.shape_str());
  if (opt.residual) {
    check_map(*opt.residual, "conv2d", "residual");
    op_require(opt.residual->dims() == out.dims(), "conv2d", "residual shape");
  }
  check_norm(opt.norm, Cin, "conv2d");
  run_op(hook_, [&] { return OpCall{"vae.conv2d " + op_dims(w)}; }, [&] { do_conv2d(x, w, bias, opt, out); });
}

void VaeOps::batch_norm_unpatchify(const Tensor& packed, const Tensor& running_mean, const Tensor& running_var,
                                   float eps, int64_t patch, Tensor& out) {
  const char* op = "batch_norm_unpatchify";
  check_map(packed, op, "packed");
  check_map(out, op, "out");
  check_f32(running_mean, op, "running_mean");
  check_f32(running_var, op, "running_var");
  const int64_t p = patch, K = packed.shape[0], h = packed.shape[1], w = packed.shape[2];
  op_require(p > 0 && K % (p * p) == 0, op, "channels must be a multiple of patch²");
  op_require(out.shape[0] == K / (p * p) && out.shape[1] == p * h && out.shape[2] == p * w, op,
             "out " + out.shape_str() + " for packed " + packed.shape_str());
  op_require(running_mean.numel() == K && running_var.numel() == K, op, "statistics size");
  run_op(hook_, "vae.batch_norm_unpatchify",
         [&] { do_batch_norm_unpatchify(packed, running_mean, running_var, eps, patch, out); });
}

void VaeOps::group_norm_to_tokens(const Tensor& x, const GroupNormInput& norm, Tensor& tokens) {
  check_tokens(x, tokens, "group_norm_to_tokens");
  check_norm(&norm, x.shape[0], "group_norm_to_tokens");
  run_op(hook_, "vae.group_norm_to_tokens", [&] { do_group_norm_to_tokens(x, norm, tokens); });
}

void VaeOps::add_tokens(Tensor& x, const Tensor& tokens) {
  check_tokens(x, tokens, "add_tokens");
  run_op(hook_, "vae.add_tokens", [&] { do_add_tokens(x, tokens); });
}

}  // namespace moss
