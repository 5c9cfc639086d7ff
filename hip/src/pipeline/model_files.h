// The model as the user's files give it (docs/model_files.md): a diffusers folder, an all-in-one
// checkpoint, or single files per component (Comfy-Org's diffusion_models/, text_encoders/, vae/),
// any component overriding the folder's. Each weights file is examined before anything runs: the
// layout recognised from its tensor names (model/weight_names.h), every tensor it could not
// place, and the refusals (GGUF, quantized, another model's file) naming file and reason.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/weight_names.h"

namespace moss {

// The command line's model flags (also serve's and a jobs file's defaults).
struct ModelPaths {
  std::string path;             // --model: a diffusers folder, or an all-in-one .safetensors file
  std::string diffusion_model;  // --diffusion-model FILE
  std::string text_encoder;     // --text-encoder FILE (alias --llm)
  std::string vae;              // --vae FILE
  std::string tokenizer;        // --tokenizer FILE (tokenizer.json)
  std::string model_config;     // --model-config DIR: transformer/, text_encoder/, vae/ config.json
  bool any_component_file() const { return !diffusion_model.empty() || !text_encoder.empty() || !vae.empty(); }
  bool empty() const { return path.empty() && !any_component_file(); }
};

// One weights file, examined.
struct ExaminedFile {
  std::string path;
  std::shared_ptr<SafetensorsFile> file;
  std::vector<ComponentLayout> components;  // the components found in it
  std::vector<std::string> unplaced;        // stored names no mapper placed
  bool int8_convrot = false;                // its comfy_quant records are all INT8 ConvRot (the DiT's)
  const ComponentLayout* find(Component c) const;
  // An INT8 ConvRot file's DiT tensors under their stored names, its prefix removed (the layout
  // check_int8_convrot_dit reads: fused qkv, the comfy_quant records); views, nothing copied.
  WeightFiles stored_dit() const;
};

// Opens `path` and maps its names. Refuses (exit 2) a GGUF file, quantized weights other than an
// INT8 ConvRot DiT (naming the comfy_quant format or the dtype) and another model's file (saying
// what it looks like); exit 1 for a malformed or truncated file.
ExaminedFile examine_weights_file(const std::string& path);

// "a, b, c (and 12 more)": at most `shown` names of a list, for messages.
std::string name_list(const std::vector<std::string>& names, size_t shown = 5);

}  // namespace moss
