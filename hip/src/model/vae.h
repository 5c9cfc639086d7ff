// The FLUX.2 (small) VAE decoder (docs/model.md section 6, docs/vae.md): the batch-norm inverse
// and unpatchify of the DiT's packed latent, post_quant_conv, the decoder (conv_in, mid block
// with one single-head global attention, up blocks of ResNets with nearest-2x upsampling,
// GroupNorm + SiLU, conv_out). fp32 throughout. Written once against Backend&.
//
// Memory (docs/vae.md section 5): no normalised copy of any feature map (convs apply the
// group norm on load), no upsampled copy (the upsample conv reads through it), a ResNet block
// writes its output over its input when the widths agree and accumulates conv2 onto the
// shortcut otherwise. The peak is the block input + conv1 output + block output of the first
// full-resolution block: 1.5 GiB at 1024x1024 for the small decoder.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "io/safetensors.h"
#include "model/vae_config.h"
#include "ops/backend.h"

namespace moss {

class VaeDecoder {
 public:
  // Checks the folder's tensors against the config, then uploads the decoder weights once
  // (widened to f32; the attention's q/k/v projections fused into one [3C, C] matrix).
  VaeDecoder(Backend& be, const WeightFiles& weights, const VaeConfig& cfg);

  // latent_packed: host [p²·latent_channels, h/16, w/16] (the DiT's output space; f32, or any
  // float dtype, widened). Returns host f32 [out_channels, h, w], roughly in [-1, 1].
  Tensor decode(const Tensor& latent_packed);

  // The first step alone: batch-norm inverse + unpatchify, host f32 [latent_channels, h/8, w/8].
  Tensor unpack_latent(const Tensor& latent_packed);

  // Peak bytes of activation memory (everything decode allocates on the backend: the uploaded
  // latent, feature maps, group-norm statistics, attention tokens, the image) at this output
  // size. Computed by running decode's own schedule without its ops, so it is what decode
  // really allocates. height and width must be multiples of cfg.packed_scale().
  static size_t decode_activation_bytes(const VaeConfig& cfg, int64_t height, int64_t width);

  // The peak the last decode (or unpack_latent) actually reached, counted the same way.
  size_t last_peak_bytes() const { return last_peak_bytes_; }

  const VaeConfig& config() const { return cfg_; }

 private:
  Backend& be_;
  VaeConfig cfg_;
  std::map<std::string, Tensor> weights_;  // on the backend, f32
  size_t last_peak_bytes_ = 0;
};

}  // namespace moss
