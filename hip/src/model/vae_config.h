// The VAE's configuration (vae/config.json, diffusers AutoencoderKLFlux2) and the decoder
// tensors it implies (docs/vae.md sections 3.5 and 3.7). Only the decode side is read:
// encoder.* and quant_conv.* are ignored, never loaded.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "io/model_folder.h"

namespace moss {

struct VaeConfig {
  std::string file;  // where it was read, for messages
  int64_t latent_channels = 32;
  // Decoder widths C0..C(n-1), shallowest level first: decoder_block_out_channels, or
  // block_out_channels when the config has no separate decoder widths (the full FLUX.2 VAE).
  std::vector<int64_t> block_out_channels;
  int64_t layers_per_block = 2;  // each up block runs layers_per_block + 1 ResNet blocks
  int64_t norm_num_groups = 32;
  float norm_eps = 1e-6f;        // every GroupNorm of the decoder (fixed in diffusers, not in the config)
  float batch_norm_eps = 1e-4f;  // the latent batch-norm inverse
  int64_t patch_size = 2;        // the packed latent's p×p cells (square patches only)
  int64_t out_channels = 3;
  bool use_post_quant_conv = true;
  bool mid_block_add_attention = true;

  int64_t levels() const { return int64_t(block_out_channels.size()); }
  int64_t packed_channels() const { return latent_channels * patch_size * patch_size; }
  // Image pixels per VAE-latent pixel (2 per upsampling level) and per packed-latent pixel.
  int64_t latent_scale() const { return int64_t(1) << (levels() - 1); }
  int64_t packed_scale() const { return latent_scale() * patch_size; }
};

// Reads and validates vae/config.json; a missing or bad key is refused (exit 1) naming the
// file and key; a VAE of another kind (class, activation, block types) is refused as
// unsupported (exit 2).
VaeConfig parse_vae_config(const std::string& config_json_path);
// The same from a parsed document; `source` names it in messages and in VaeConfig::file.
VaeConfig vae_config_from_json(const nlohmann::json& config, const std::string& source);

// Every tensor the decoder reads, with dtypes and shapes the config implies (fp32 weights;
// bf16/f16 copies are accepted and widened on load). bn.num_batches_tracked is optional.
std::vector<ExpectedTensor> vae_expected_tensors(const VaeConfig& cfg);
// Tensors of the vae folder that are never loaded: the encoder side.
std::vector<std::string> vae_ignored_prefixes();

}  // namespace moss
