#include "pipeline/model_files.h"

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "io/gguf_summary.h"
#include "tensor/int8_convrot.h"
#include "util/error.h"
#include "util/name_pattern.h"

namespace moss {
namespace {

// Names that mark another model's file, and what to call it. Checked before any mapping, so a
// FLUX or Qwen-Image file is named for what it is rather than for the tensors it lacks. Each
// pattern (util/name_pattern.h) may stand anywhere after a dot of a name (under any prefix).
struct ForeignModel {
  NamePattern marker;
  const char* looks_like;
};

const std::vector<ForeignModel>& foreign_models() {
  static const std::vector<ForeignModel> table = {
      {NamePattern("double_blocks.#.*"), "a FLUX diffusion model (double_blocks / single_blocks)"},
      {NamePattern("transformer_blocks.#.img_mod.*"), "a Qwen-Image diffusion model (img_mod / txt_mod blocks)"},
      {NamePattern("{noise_refiner|context_refiner}.#.*"), "a Z-Image / Lumina 2 diffusion model"},
      {NamePattern("input_blocks.#.*"), "a Stable Diffusion UNet"},
      {NamePattern("text_model.encoder.layers.*"), "a CLIP text encoder"},
      {NamePattern("encoder.block.#.layer.*"), "a T5 text encoder"},
      {NamePattern("decoder.conv1.weight"), "a video VAE (Wan / Qwen-Image)"},
  };
  return table;
}

std::string dtype_of_quant(const TensorInfo& info) {
  const std::string& n = info.dtype_name;
  const bool quant_dtype = n == "I8" || n == "I4" || n == "U4" || n == "F4" || n.rfind("F8", 0) == 0;
  return quant_dtype ? n : "";
}

// The quantization a file declares or shows that this engine does not run: a comfy_quant record
// (ComfyUI's quantized layers) of another format than INT8 ConvRot (convrot::comfy_quant_group
// says which it runs), else a quantized dtype or scales beside no record at all. Empty for a
// plain bf16/f32 file and for an INT8 ConvRot one (`int8_convrot` set), whose layers the loader
// checks against the layout once the config is known (model/int8_convrot_layers.h).
std::string quantization_refused(const SafetensorsFile& f, bool& int8_convrot) {
  int8_convrot = false;
  for (const auto& [name, info] : f.tensors()) {
    if (!ends_with(name, ".comfy_quant")) continue;
    const Tensor t = f.get(name);
    const std::string text(static_cast<const char*>(t.data), t.nbytes());
    try {
      (void)convrot::comfy_quant_group(text, name);
      int8_convrot = true;
      continue;
    } catch (const Error& e) {  // exit 2: another format, named below; exit 1: a malformed record
      if (e.code() != ExitCode::Usage) throw failure(f.path() + ": " + e.what());
    }
    std::string format = "comfy_quant";
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      if (j.contains("format") && j["format"].is_string()) format = j["format"].get<std::string>();
      if (j.value("convrot", false)) format += ", ConvRot";
    } catch (const std::exception&) {
    }
    return "'" + format + "' (ComfyUI comfy_quant, tensor '" + name + "')";
  }
  if (int8_convrot) return "";
  for (const auto& [name, info] : f.tensors()) {
    const std::string q = dtype_of_quant(info);
    const bool scale = name.find("weight_scale") != std::string::npos || name.find("scale_weight") != std::string::npos;
    if (!q.empty() || scale)
      return (q.empty() ? "with scales" : q + " weights") + std::string(" (tensor '") + name + "')";
  }
  return "";
}

}  // namespace

const ComponentLayout* ExaminedFile::find(Component c) const {
  for (const ComponentLayout& l : components)
    if (l.component == c) return &l;
  return nullptr;
}

WeightFiles ExaminedFile::stored_dit() const {
  const ComponentLayout* dit = find(Component::Dit);
  std::map<std::string, TensorSource> names;
  if (dit)
    for (const std::string& stored : dit->consumed) names[stored.substr(dit->prefix.size())] = {stored, 0, {}};
  return WeightFiles::of_files(path, {file->renamed(names)});
}

std::string name_list(const std::vector<std::string>& names, size_t shown) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < shown; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > shown) s += " (and " + std::to_string(names.size() - shown) + " more)";
  return s;
}

ExaminedFile examine_weights_file(const std::string& path) {
  require_regular_file(path);
  if (ends_with(path, ".gguf") || ends_with(path, ".GGUF") || is_gguf_file(path))
    throw usage_error(path + ": GGUF files are not supported (" + gguf_summary(path) +
                      "); use the bf16 .safetensors files (docs/model_files.md)");
  ExaminedFile out;
  out.path = path;
  out.file = SafetensorsFile::open(path);  // GGUF by its magic, truncation, a malformed header
  const auto& stored = out.file->tensors();
  const std::string quant = quantization_refused(*out.file, out.int8_convrot);
  if (!quant.empty())
    throw usage_error(path + ": quantized weights, format " + quant +
                      ", are not supported; use the bf16 file or an INT8 ConvRot one (docs/model_files.md)");
  for (const ForeignModel& m : foreign_models())
    for (const auto& [name, info] : stored)
      if (m.marker.match_any_part(name))
        throw usage_error(path + ": not a MOSS-Image file: it looks like " + m.looks_like + " (tensor '" + name + "')");
  for (ComponentLayout l : {map_dit_names(stored), map_text_encoder_names(stored), map_vae_names(stored)})
    if (l.found()) out.components.push_back(std::move(l));
  for (const ComponentLayout& l : out.components)
    if (!l.duplicates.empty())
      throw failure(path + ": " + component_name(l.component) + " tensor " + l.duplicates[0] + " is given twice");
  if (const ComponentLayout* te = out.find(Component::TextEncoder)) {
    bool deltanet = false;
    for (const auto& [name, src] : te->names) deltanet = deltanet || name.find(".linear_attn.") != std::string::npos;
    if (!deltanet)
      throw usage_error(path +
                        ": not a MOSS-Image file: its text encoder has no Gated DeltaNet (linear_attn) layers, "
                        "so it is another model's (Qwen2.5-VL, Qwen3 or Mistral, as Qwen-Image, Z-Image and FLUX.2 "
                        "use), not Qwen3.5");
  }
  if (const ComponentLayout* vae = out.find(Component::Vae)) {
    auto it = vae->names.find("decoder.conv_in.weight");
    if (it != vae->names.end()) {
      const TensorInfo& conv_in = out.file->info(it->second.stored);
      if (conv_in.shape.size() == 4 && conv_in.shape[1] != 32)
        throw usage_error(path + ": not a MOSS-Image file: its VAE takes " + std::to_string(conv_in.shape[1]) +
                          "-channel latents (FLUX.1 / SD3 / SDXL kind), FLUX.2's takes 32");
    }
  }
  if (out.int8_convrot) {  // only the DiT runs quantized (Comfy-Org also has an INT8 ConvRot text encoder)
    ComponentLayout* dit = nullptr;
    for (ComponentLayout& l : out.components)
      if (l.component == Component::Dit) dit = &l;
    for (const auto& [name, info] : stored)
      if (ends_with(name, ".comfy_quant") && (!dit || !dit->consumed.count(name)))
        throw usage_error(path + ": tensor '" + name + "': an INT8 ConvRot layer outside the diffusion model; only "
                                 "the diffusion model runs in INT8 ConvRot: use the bf16 text encoder "
                                 "(docs/int8_convrot.md section 8)");
    dit->layout += ", int8 ConvRot";
  }
  for (const auto& [name, info] : stored) {
    bool placed = false;
    for (const ComponentLayout& l : out.components) placed = placed || l.consumed.count(name);
    if (!placed) out.unplaced.push_back(name);
  }
  return out;
}

}  // namespace moss
