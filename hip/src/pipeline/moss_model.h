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
#include "pipeline/model_files.h"

namespace moss {

// Where one component's weights came from, for the record, `info` and `inspect`.
struct ComponentFile {
  Component component = Component::Dit;
  std::string file;         // base name of the weights file (a folder's: "transformer/<name>")
  std::string fingerprint;  // io/file_fingerprint.h
  std::string layout;       // the layout its names were recognised as
  std::string config;       // where its configuration came from: a config.json, or "built-in"
  std::string note;         // e.g. the VAE's latent statistics taken from the built-in values
};

struct MossModel {
  std::string folder;
  std::string identity;        // for the generation record
  std::string tokenizer_json;  // path
  TextEncoderConfig te_config;
  DitConfig dit_config;
  VaeConfig vae_config;
  WeightFiles te_weights, dit_weights, vae_weights;
  std::vector<ComponentFile> files;  // DiT, text encoder, VAE
};

// Throws moss::Error: exit 2 for unsupported folders (GGUF, quantized), 1 for malformed ones.
// A folder whose transformer/ is one quantized file goes through open_moss_model(ModelPaths).
MossModel open_moss_model(const std::string& folder);
// FOLDER/transformer's weights file when it is one file with comfy_quant records (an INT8
// ConvRot DiT, or another format that examine_weights_file refuses by name); empty otherwise.
std::string folder_quantized_dit(const std::string& folder);
// The model from the command line's paths (docs/model_files.md): a folder, an all-in-one file
// and single component files, each component's file overriding the folder's; configurations
// from --model-config, the folder, or built in (MOSS-Image's own, checked against the shapes).
// Every refusal comes here, before the text encoder runs.
MossModel open_moss_model(const ModelPaths& paths);
// The shapes the components pass each other agree (the DiT's text_dim is the text encoder's
// width, its latent channels the VAE's packed channels); exit 1 naming both otherwise.
void check_components_agree(const MossModel& m);
// "diffusion model moss_image_sft_bf16.safetensors (a1b2c3d4e5f6), text encoder ..." for
// the record and `info`.
std::string model_files_text(const MossModel& m);

// The model's title: the engine's identity, the record's "model", A1111's /sd-models "title"
// and a name sd_model_checkpoint may give ("MOSS-Image tiny-moss (dim 64, 2 blocks)"). One
// function for the opened model and for what is checked before it loads (a jobs line).
std::string moss_model_title(const std::string& folder, const DitConfig& dit);
// The same from the folder's transformer/config.json alone, before the model is opened; throws
// moss::Error as open_moss_model would for that file.
std::string moss_model_title(const std::string& folder);

}  // namespace moss
