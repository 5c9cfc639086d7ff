// Group-norm kernels of the VAE: the statistics (the decoder's only reduction) and the
// per-channel form every consumer applies while it loads its input (conv2d, map_to_tokens).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/portability.h"

namespace moss {

// y = (x − mean)·scale + shift for one channel, scale = rstd_g·gamma_c, shift = beta_c: the
// host replay's ChannelNorm (ops/host/vae_ops_host.cpp), operation for operation.
struct alignas(16) ChannelNorm {
  float mean, scale, shift, unused;
};

// Device scratch bytes group_norm_stats needs for `groups` groups of `span` values each.
size_t group_norm_stats_scratch_bytes(int64_t span, int groups);

// stats[g] = (mean, 1/sqrt(var + eps)) of x[g·span, (g+1)·span) (biased variance). Two passes
// over the data: fp32 partial sums per block, combined in double; then fp32 sums of (x − mean)²
// around that mean, combined in double (no Σx² − (Σx)² cancellation). `scratch` holds
// group_norm_stats_scratch_bytes(span, groups) bytes of device memory.
void group_norm_stats(const float* x, int64_t span, int groups, float eps, float* stats, void* scratch,
                      hipStream_t stream);

// out[c] for c < channels from stats [groups, 2], gamma [channels], beta [channels]; channel c
// belongs to group c / (channels / groups).
void group_norm_channels(const float* stats, const float* gamma, const float* beta, int channels, int groups,
                         ChannelNorm* out, hipStream_t stream);

}  // namespace moss
