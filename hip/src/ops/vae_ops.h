// The op interface, VAE family (FLUX.2 small decoder): convolutions, group norm, upsampling.
//
// Activations are single images in NCHW order without the batch dimension: contiguous f32
// tensors [C, H, W]. The split is chosen so that each op is one memory-lean GPU kernel:
// - group_norm_stats is the only reduction; everything that consumes a group norm applies it
//   while loading its input (no normalised copy of a feature map is ever stored);
// - conv2d is an implicit GEMM (M = output channels, N = output pixels, K = Cin·k·k) that
//   gathers its input through the padding, the optional nearest-2x upsampling and the
//   optional group norm + SiLU, and adds an optional residual in its epilogue: no im2col
//   buffer, no upsampled copy, no separate residual pass;
// - the mid-block attention reuses the core `linear` and `attention` ops on token rows; the
//   two ops below move between the NCHW map and the [pixels, channels] token matrix.
// Output tensors are allocated by the caller; ops never allocate.
// The public ops are non-virtual: each checks its operands once for every backend
// (ops/vae_ops.cpp), then runs the backend's body do_<op> inside the family's hook (ops/op_hook.h).
#pragma once
#include <cstdint>

#include "ops/op_hook.h"
#include "tensor/tensor.h"

namespace moss {

// A group norm applied to every input value as a conv loads it:
//   y = (x − mean_g)·rstd_g·gamma_c + beta_c, then y·σ(y) when silu is set,
// with (mean_g, rstd_g) = stats[g] for the group g = c / (C / groups) of channel c. Zero
// padding is applied after the norm (the conv sees zeros outside the map, as PyTorch pads the
// normalised tensor).
struct GroupNormInput {
  const Tensor* stats = nullptr;  // f32 [groups, 2] from VaeOps::group_norm_stats
  const Tensor* gamma = nullptr;  // f32 [C]
  const Tensor* beta = nullptr;   // f32 [C]
  bool silu = true;
};

struct Conv2dOptions {
  // Normalise (+ SiLU) the input on load; null: the input is used as it is.
  const GroupNormInput* norm = nullptr;
  // Read the input as its nearest 2x upsampling, in[c, ⌊y/2⌋, ⌊x/2⌋]: the output is
  // [Cout, 2H, 2W] and no upsampled copy exists.
  bool upsample2x = false;
  // Added to the result, f32 [Cout, Ho, Wo]. May alias `out` (each element is read before it
  // is written, by the same thread), which lets a ResNet block write its output over its
  // shortcut. Must not alias the conv input.
  const Tensor* residual = nullptr;
};

class VaeOps : public OpFamily {
 public:

  // stats[g] = (mean, 1/sqrt(var + eps)) over the (C/groups)·H·W values of group g of
  // x [C, H, W] (groups of consecutive channels; biased variance). stats: f32 [groups, 2].
  // The statistics must be accurate to fp32 rounding even over millions of values (double or
  // Welford partial sums, never a plain fp32 Σx² − (Σx)²/N).
  void group_norm_stats(const Tensor& x, int64_t groups, float eps, Tensor& stats);

  // Cross-correlation, stride 1, zero padding k/2, with bias:
  //   out[co, y, x] = bias[co] + Σ_{ci, ky, kx} w[co, ci, ky, kx] · in'[ci, y + ky − k/2, x + kx − k/2]
  //                   (+ residual[co, y, x])
  // where in' is x [Cin, H, W] seen through opt.norm and opt.upsample2x. w: f32
  // [Cout, Cin, k, k] with k = 1 or 3; bias: f32 [Cout]; out: f32 [Cout, Ho, Wo] with
  // (Ho, Wo) = (H, W), or (2H, 2W) when upsampling. out must not alias x.
  void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& opt,
              Tensor& out);

  // The latent contract (docs/model.md section 6): the batch-norm inverse on the packed latent,
  // then the p×p unpatchify, in one pass:
  //   out[c, p·i + dy, p·j + dx] = packed[k, i, j]·sqrt(running_var[k] + eps) + running_mean[k],
  //   k = p²·c + p·dy + dx.
  // packed: f32 [p²·C, h, w]; running_mean/var: f32 [p²·C]; out: f32 [C, p·h, p·w].
  void batch_norm_unpatchify(const Tensor& packed, const Tensor& running_mean, const Tensor& running_var,
                             float eps, int64_t patch, Tensor& out);

  // Token rows of a group-normalised map, for the mid-block attention:
  //   tokens[y·W + x, c] = norm(x)[c, y, x]   (norm as GroupNormInput, SiLU included if set)
  // x: f32 [C, H, W]; tokens: f32 [H·W, C], any row stride.
  void group_norm_to_tokens(const Tensor& x, const GroupNormInput& norm, Tensor& tokens);

  // The attention's residual: x[c, y, x] += tokens[y·W + x, c]. tokens: f32 [H·W, C], any row
  // stride (a column slice of a fused projection is fine).
  void add_tokens(Tensor& x, const Tensor& tokens);

 protected:
  // The backends' bodies, each called only by the public op of its name once that op's shared
  // checks have passed; a body checks only its own conditions (where the tensors live, the
  // dtypes its kernels take, storage).
  virtual void do_group_norm_stats(const Tensor& x, int64_t groups, float eps, Tensor& stats) = 0;
  virtual void do_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& opt,
                         Tensor& out) = 0;
  virtual void do_batch_norm_unpatchify(const Tensor& packed, const Tensor& running_mean, const Tensor& running_var,
                                        float eps, int64_t patch, Tensor& out) = 0;
  virtual void do_group_norm_to_tokens(const Tensor& x, const GroupNormInput& norm, Tensor& tokens) = 0;
  virtual void do_add_tokens(Tensor& x, const Tensor& tokens) = 0;
};

}  // namespace moss
