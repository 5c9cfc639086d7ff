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

// The model's title: the engine's identity, the record's "model", A1111's /sd-models "title"
// and a name sd_model_checkpoint may give ("MOSS-Image tiny-moss (dim 64, 2 blocks)"). One
// function for the opened model and for what is checked before it loads (a jobs line).
std::string moss_model_title(const std::string& folder, const DitConfig& dit);
// The same from the folder's transformer/config.json alone, before the model is opened; throws
// moss::Error as open_moss_model would for that file.
std::string moss_model_title(const std::string& folder);

}  // namespace moss
