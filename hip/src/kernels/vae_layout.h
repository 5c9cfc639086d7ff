// The VAE's data-movement kernels: the latent's batch-norm inverse + unpatchify, and the moves
// between an NCHW map and the [pixels, channels] token rows of the mid-block attention (the
// group norm applied on the way in, the attention's residual added on the way back).
#pragma once

#include <cstdint>

#include "kernels/group_norm.h"
#include "runtime/portability.h"

namespace moss {

// out[c, p·i + dy, p·j + dx] = packed[k, i, j]·sqrt(var[k] + eps) + mean[k], k = p²·c + p·dy + dx.
// packed: [p²·channels, h, w]; out: [channels, p·h, p·w].
void batch_norm_unpatchify(const float* packed, const float* running_mean, const float* running_var, float eps,
                           int channels, int h, int w, int patch, float* out, hipStream_t stream);

// tokens[p·ld + c] = norm_c(x[c·pixels + p]) (then SiLU when silu), for c < channels, p < pixels.
void map_to_tokens(const float* x, int channels, int64_t pixels, const ChannelNorm* norm, bool silu, float* tokens,
                   int64_t ld, hipStream_t stream);

// x[c·pixels + p] += tokens[p·ld + c].
void add_tokens_to_map(float* x, int channels, int64_t pixels, const float* tokens, int64_t ld, hipStream_t stream);

}  // namespace moss
