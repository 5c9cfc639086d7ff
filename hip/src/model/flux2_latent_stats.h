// FLUX.2's latent normalisation statistics as published, for a VAE file that does not carry its
// own bn.running_mean / bn.running_var (single LDM files such as Comfy-Org's flux2-vae). Source:
// stable-diffusion.cpp, src/model/vae/auto_encoder_kl.hpp, get_latents_mean_std_vec (the per-channel
// mean and standard deviation of the 128 packed channels, four decimals). docs/model_files.md says
// how far an image from these values lies from one made with a file's own statistics.
#pragma once
#include "tensor/tensor.h"

namespace moss {

constexpr int kFlux2PackedChannels = 128;

// bn.running_mean [128] and bn.running_var [128] (f32): var = std² - eps, so that the decoder's
// sqrt(var + eps) gives back the published std.
Tensor flux2_published_running_mean();
Tensor flux2_published_running_var(float batch_norm_eps);

}  // namespace moss
