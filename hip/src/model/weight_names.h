// The tensor names of the files MOSS-Image users hold (docs/model_files.md): one table-driven
// mapper per component turns a file's stored names into the canonical ones (the official
// diffusers folder's), detecting the layout from the names: the DiT with proj.qkv fused (split
// into q, k, v row views) or split, with or without ComfyUI's model.diffusion_model. prefix; the
// Qwen3.5 text encoder under any of its prefixes, its vision tower, lm_head and mtp.* unused; the
// FLUX.2 VAE in diffusers or LDM (BFL / ComfyUI) naming. The result renames the mapping
// (SafetensorsFile::renamed): nothing is copied, and every loader, streamer and plan reads the
// component as it reads a folder's.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace moss {

enum class Component { Dit, TextEncoder, Vae };
const char* component_name(Component c);  // "diffusion model", "text encoder", "VAE"

// What a mapper made of a file's names (of the part of the file that holds the component).
struct ComponentLayout {
  Component component = Component::Dit;
  std::string layout;                         // e.g. "Comfy-Org (fused qkv)", "diffusers", "LDM"
  std::string prefix;                         // the DiT's prefix in the file ("model.diffusion_model.", "")
  std::map<std::string, TensorSource> names;  // canonical name -> stored tensor (a view of it)
  std::set<std::string> consumed;             // stored names placed or deliberately unused
  size_t unused = 0;                          // of those, unused (vision tower, lm_head, encoder, comfy_quant)
  std::vector<std::string> duplicates;        // canonical names two stored tensors both give
  bool found() const { return !names.empty(); }
};

// The prefix under which an all-in-one checkpoint (ComfyUI's Load Checkpoint layout) keeps each
// component; empty for the text encoder, whose prefix the mapper finds itself.
const std::vector<std::string>& dit_prefixes();  // "model.diffusion_model.", "diffusion_model.", ""
const std::vector<std::string>& vae_prefixes();  // "first_stage_model.", "vae.", ""

// Each maps the names of `stored` it recognises as its component; names of other components are
// left out of `consumed`. An empty result (found() false): no such component in these names.
ComponentLayout map_dit_names(const std::map<std::string, TensorInfo>& stored);
ComponentLayout map_text_encoder_names(const std::map<std::string, TensorInfo>& stored);
ComponentLayout map_vae_names(const std::map<std::string, TensorInfo>& stored);

// The canonical text-encoder prefix the mapper writes (what text_encoder_prefix then finds).
constexpr const char* kCanonicalTextEncoderPrefix = "language_model.";

}  // namespace moss
