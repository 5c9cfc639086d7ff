#include "model/weight_names.h"

#include <algorithm>
#include <regex>

namespace moss {
namespace {

using Stored = std::map<std::string, TensorInfo>;

// How a stored tensor becomes canonical ones.
enum class Take {
  Same,         // one tensor, its own shape
  SplitRows3,   // rows q | k | v of a fused projection: three views of a third of the rows each
  SqueezeConv,  // a [C, C, 1, 1] 1x1 convolution seen as the [C, C] matrix of a linear layer
  Unused,       // known, never read (vision tower, lm_head, mtp, the VAE's encoder side)
};

// One row of a mapper's table: a stored name (after the component's prefix) matching `from`
// becomes `to` (std::regex_replace format: $1, $2 the captures). `to` lists three names for
// SplitRows3. `reverse_level`: capture 1 is an LDM decoder level, counted from the other end
// than diffusers' up_blocks.
// `column`: a per-row vector (an INT8 ConvRot weight_scale, stored [rows] or [rows, 1]) always seen
// as [rows, 1], so the loader checks one shape.
struct NameRule {
  std::regex from;
  std::vector<std::string> to;
  Take take = Take::Same;
  bool reverse_level = false;
  bool column = false;
};

NameRule rule(const char* from, std::vector<std::string> to, Take take = Take::Same, bool reverse = false) {
  return {std::regex(from), std::move(to), take, reverse, false};
}

NameRule column_rule(const char* from, std::vector<std::string> to, Take take) {
  NameRule r = rule(from, std::move(to), take);
  r.column = true;
  return r;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// Applies `rules` (first match wins) to the stored names under `prefix`; names no rule matches
// are not consumed (check_tensors or inspect report them with the file's leftovers).
void apply_rules(const Stored& stored, const std::string& prefix, const std::vector<NameRule>& rules, int64_t levels,
                 ComponentLayout& out) {
  for (const auto& [name, info] : stored) {
    if (!starts_with(name, prefix)) continue;
    const std::string local = name.substr(prefix.size());
    for (const NameRule& r : rules) {
      std::smatch m;
      if (!std::regex_match(local, m, r.from)) continue;
      out.consumed.insert(name);
      if (r.take == Take::Unused) {
        ++out.unused;
        break;
      }
      std::vector<std::string> to = r.to;
      if (r.reverse_level) {
        const std::string level = std::to_string(levels - 1 - int64_t(std::stoll(m[1].str())));
        for (std::string& t : to) t = std::regex_replace(t, std::regex("\\$1"), level);
      }
      for (std::string& t : to) {
        t = m.format(t);
        if (out.names.count(t))
          out.duplicates.push_back("'" + t + "' (from '" + out.names[t].stored + "' and '" + name + "')");
      }
      if (r.take == Take::SplitRows3) {
        const int64_t rows = info.shape.empty() ? 0 : info.shape[0] / 3;
        std::vector<int64_t> shape = info.shape;
        if (r.column && shape.size() == 1) shape.push_back(1);
        if (rows > 0 && info.shape[0] % 3 == 0) {
          shape[0] = rows;
          for (int64_t i = 0; i < 3; ++i) out.names[to[size_t(i)]] = {name, i * rows, shape};
        } else {
          out.names[to[0]] = {name, 0, {}};  // not three equal parts: refused by the shape check
        }
      } else if (r.take == Take::SqueezeConv && info.shape.size() == 4 && info.shape[2] == 1 && info.shape[3] == 1) {
        out.names[to[0]] = {name, 0, {info.shape[0], info.shape[1]}};
      } else if (r.column && info.shape.size() == 1 && info.shape[0] > 0) {
        out.names[to[0]] = {name, 0, {info.shape[0], 1}};
      } else {
        out.names[to[0]] = {name, 0, {}};
      }
      break;
    }
  }
}

// The first of `prefixes` under which `marker` is stored, or nullptr.
const std::string* find_prefix(const Stored& stored, const std::vector<std::string>& prefixes,
                               const std::vector<std::string>& markers) {
  for (const std::string& p : prefixes)
    for (const std::string& m : markers)
      if (stored.count(p + m)) return &p;
  return nullptr;
}

}  // namespace

const char* component_name(Component c) {
  switch (c) {
    case Component::Dit: return "diffusion model";
    case Component::TextEncoder: return "text encoder";
    case Component::Vae: return "VAE";
  }
  return "?";
}

const std::vector<std::string>& dit_prefixes() {
  static const std::vector<std::string> p = {"model.diffusion_model.", "diffusion_model.", ""};
  return p;
}

const std::vector<std::string>& vae_prefixes() {
  static const std::vector<std::string> p = {"first_stage_model.", "vae.", ""};
  return p;
}

ComponentLayout map_dit_names(const Stored& stored) {
  ComponentLayout out;
  out.component = Component::Dit;
  const std::string* prefix =
      find_prefix(stored, dit_prefixes(), {"video_embedder.weight", "text_embedder.proj.weight"});
  if (!prefix) return out;
  // The official names are the canonical ones; only the fused attention differs (Comfy-Org). An
  // INT8 ConvRot file (docs/int8_convrot.md) adds a weight_scale per quantized layer, split like
  // its weight (one scale per row: a row range of both is exact), and a comfy_quant record,
  // which the loader reads from the file itself (model/int8_convrot_layers.h) and the model
  // never loads. A weight_scale or record of any other layer is placed too, for the loader's
  // check to refuse by name.
  static const std::vector<NameRule> rules = {
      rule(R"(layers\.(\d+)\.proj\.qkv\.weight)",
           {"layers.$1.proj.q.weight", "layers.$1.proj.k.weight", "layers.$1.proj.v.weight"}, Take::SplitRows3),
      column_rule(R"(layers\.(\d+)\.proj\.qkv\.weight_scale)",
                  {"layers.$1.proj.q.weight_scale", "layers.$1.proj.k.weight_scale", "layers.$1.proj.v.weight_scale"},
                  Take::SplitRows3),
      column_rule(R"((.*\.weight_scale))", {"$1"}, Take::Same),
      rule(R"(.*\.comfy_quant)", {}, Take::Unused),
      rule(R"((layers\.\d+\.(norm1|norm2|q_norm|k_norm)\.weight))", {"$1"}),
      rule(R"((layers\.\d+\.proj\.(q|k|v|o|ffn_up_gate|ffn_down)\.weight))", {"$1"}),
      rule(R"((text_embedder\.blocks\.\d+\.[a-z_0-9]+\.(weight|bias)))", {"$1"}),
      rule(R"((text_embedder\.proj\.(weight|bias)))", {"$1"}),
      rule(R"((time_embedding\.\d+\.(weight|bias)))", {"$1"}),
      rule(R"(((video_embedder|video_head_modulation|shared_block_modulation|final_linear_video)\.(weight|bias)))",
           {"$1"}),
      rule(R"((final_norm_video\.weight|rope\.bands))", {"$1"}),
  };
  apply_rules(stored, *prefix, rules, 0, out);
  out.prefix = *prefix;
  const bool fused = std::any_of(out.names.begin(), out.names.end(),
                                 [](const auto& n) { return n.second.stored.find("proj.qkv") != std::string::npos; });
  out.layout = std::string(fused ? "Comfy-Org (fused qkv)" : "official (split q, k, v)") +
               (prefix->empty() ? "" : ", prefix '" + *prefix + "'");
  return out;
}

ComponentLayout map_text_encoder_names(const Stored& stored) {
  ComponentLayout out;
  out.component = Component::TextEncoder;
  // The language model's prefix: what stands before its embed_tokens (language_model.,
  // model.language_model., model., none, or an all-in-one file's text_encoders.<name>....).
  static const std::regex unused_part(R"((^|.*\.)(visual|mtp)\..*|(^|.*\.)lm_head\.weight)");
  std::string prefix;
  bool found = false;
  for (const auto& [name, info] : stored) {
    const std::string tail = "embed_tokens.weight";
    if (name.size() < tail.size() || name.compare(name.size() - tail.size(), tail.size(), tail) != 0) continue;
    if (std::regex_match(name, unused_part)) continue;
    const std::string p = name.substr(0, name.size() - tail.size());
    if (starts_with(p, "model.diffusion_model.") || starts_with(p, "first_stage_model.")) continue;
    if (!found || p.size() < prefix.size()) prefix = p;  // the outermost, if several
    found = true;
  }
  if (!found) return out;
  static const std::vector<NameRule> rules = {
      rule(R"((.*\.)?(visual|mtp)\..*|(.*\.)?lm_head\.weight)", {}, Take::Unused),
      rule(R"(((layers\.\d+\.)?[A-Za-z_0-9.]+))", {std::string(kCanonicalTextEncoderPrefix) + "$1"}),
  };
  apply_rules(stored, prefix, rules, 0, out);
  // The unused parts beside it (a vision tower, lm_head, mtp), wherever the file keeps them.
  for (const auto& [name, info] : stored)
    if (!out.consumed.count(name) && std::regex_match(name, unused_part) &&
        !starts_with(name, "model.diffusion_model.") && !starts_with(name, "first_stage_model.")) {
      out.consumed.insert(name);
      ++out.unused;
    }
  out.layout = "Qwen3.5, prefix '" + prefix + "'";
  return out;
}

ComponentLayout map_vae_names(const Stored& stored) {
  ComponentLayout out;
  out.component = Component::Vae;
  const std::string* prefix = find_prefix(stored, vae_prefixes(), {"decoder.conv_in.weight"});
  if (!prefix) return out;
  const bool ldm = std::any_of(stored.begin(), stored.end(), [&](const auto& n) {
    return starts_with(n.first, *prefix + "decoder.up.") || starts_with(n.first, *prefix + "decoder.mid.");
  });
  int64_t levels = 0;
  if (ldm) {
    static const std::regex up(R"(decoder\.up\.(\d+)\..*)");
    for (const auto& [name, info] : stored) {
      std::smatch m;
      const std::string local = name.substr(0, prefix->size()) == *prefix ? name.substr(prefix->size()) : "";
      if (std::regex_match(local, m, up) && m[1].length() < 3)
        levels = std::max(levels, int64_t(std::stoll(m[1].str())) + 1);
    }
  }
  // LDM (BFL, ComfyUI) -> diffusers names: sd.cpp name_conversion.cpp and ComfyUI
  // diffusers_convert.py hold the same table the other way round (docs/model_files.md).
  static const std::vector<NameRule> ldm_rules = {
      rule(R"(decoder\.mid\.block_1\.(.*))", {"decoder.mid_block.resnets.0.$1"}),
      rule(R"(decoder\.mid\.block_2\.(.*))", {"decoder.mid_block.resnets.1.$1"}),
      rule(R"(decoder\.mid\.attn_1\.norm\.(.*))", {"decoder.mid_block.attentions.0.group_norm.$1"}),
      rule(R"(decoder\.mid\.attn_1\.([qkv])\.(.*))", {"decoder.mid_block.attentions.0.to_$1.$2"}, Take::SqueezeConv),
      rule(R"(decoder\.mid\.attn_1\.proj_out\.(.*))", {"decoder.mid_block.attentions.0.to_out.0.$1"},
           Take::SqueezeConv),
      rule(R"(decoder\.up\.(\d+)\.block\.(\d+)\.nin_shortcut\.(.*))",
           {"decoder.up_blocks.$1.resnets.$2.conv_shortcut.$3"}, Take::Same, true),
      rule(R"(decoder\.up\.(\d+)\.block\.(\d+)\.(.*))", {"decoder.up_blocks.$1.resnets.$2.$3"}, Take::Same, true),
      rule(R"(decoder\.up\.(\d+)\.upsample\.(.*))", {"decoder.up_blocks.$1.upsamplers.0.$2"}, Take::Same, true),
      rule(R"(decoder\.norm_out\.(.*))", {"decoder.conv_norm_out.$1"}),
      rule(R"(((decoder\.conv_in|decoder\.conv_out|post_quant_conv)\.(weight|bias)))", {"$1"}),
      rule(R"((bn\.(running_mean|running_var|num_batches_tracked)))", {"$1"}),
      rule(R"((encoder|quant_conv)\..*)", {}, Take::Unused),
  };
  static const std::vector<NameRule> diffusers_rules = {
      rule(R"((decoder\..*|post_quant_conv\.(weight|bias)|bn\.(running_mean|running_var|num_batches_tracked)))",
           {"$1"}),
      rule(R"((encoder|quant_conv)\..*)", {}, Take::Unused),
  };
  apply_rules(stored, *prefix, ldm ? ldm_rules : diffusers_rules, levels, out);
  out.layout =
      std::string(ldm ? "LDM (BFL / ComfyUI)" : "diffusers") + (prefix->empty() ? "" : ", prefix '" + *prefix + "'");
  return out;
}

}  // namespace moss
