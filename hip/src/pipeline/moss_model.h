// A MOSS-Image model folder (diffusers tree, docs/model.md section 1), opened and checked: every
// config parsed, every weight tensor's dtype and shape compared with what the configs imply,
// before anything runs. A folder that does not match is refused naming file and tensor.
#pragma once
#include <string>

#include "io/safetensors.h"
#include "model/dit.h"
#include "model/text_encoder.h"
#include "model/vae.h"
#include "model/vae_config.h"

namespace moss {

struct MossModel {
  std::string folder;
  std::string identity;        // for the generation record
  std::string tokenizer_json;  // path
  TextEncoderConfig te_config;
  DitConfig dit_config;
  VaeConfig vae_config;
  WeightFiles te_weights, dit_weights, vae_weights;
};

// Throws moss::Error: exit 2 for unsupported folders (GGUF, quantized), 1 for malformed ones.
MossModel open_moss_model(const std::string& folder);

}  // namespace moss
