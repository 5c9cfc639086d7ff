#include "model/weight_names.h"

#include <algorithm>

#include "util/name_pattern.h"

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
// (util/name_pattern.h) becomes `to` ($0 the whole name, $1, $2 the captures). `to` lists three
// names for SplitRows3. `reverse_level`: capture 1 is an LDM decoder level, counted from the
// other end than diffusers' up_blocks. `plain`: the name must also be only letters, digits, '_'
// and '.' (a name with other characters is left unplaced, to be reported). `any_part`: `from`
// may match from after any dot of the name (NamePattern::match_any_part; no captures).
// `column`: a per-row vector (an INT8 ConvRot weight_scale, stored [rows] or [rows, 1]) always seen
// as [rows, 1], so the loader checks one shape.
struct NameRule {
  NamePattern from;
  std::vector<std::string> to;
  Take take = Take::Same;
  bool reverse_level = false;
  bool plain = false;
  bool any_part = false;
  bool column = false;
};

NameRule rule(const char* from, std::vector<std::string> to, Take take = Take::Same, bool reverse = false) {
  return {NamePattern(from), std::move(to), take, reverse, false, false, false};
}

NameRule column_rule(const char* from, std::vector<std::string> to, Take take) {
  NameRule r = rule(from, std::move(to), take);
  r.column = true;
  return r;
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

bool plain_name(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
      return false;
  return true;
}

// A decoder level of at most 9 digits, or -1.
int64_t level_of(std::string_view digits) {
  if (digits.empty() || digits.size() > 9) return -1;
  int64_t v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

// The text encoder's unused parts, wherever a file keeps them: a vision tower (visual.*), the
// multi-token-prediction head (mtp.*), lm_head.
bool unused_text_encoder_part(std::string_view name) {
  static const NamePattern parts("{visual|mtp}.*"), head("lm_head.weight");
  return parts.match_any_part(name) || head.match_any_part(name);
}

// Applies `rules` (first match wins) to the stored names under `prefix`; names no rule matches
// are not consumed (check_tensors or inspect report them with the file's leftovers).
void apply_rules(const Stored& stored, const std::string& prefix, const std::vector<NameRule>& rules, int64_t levels,
                 ComponentLayout& out) {
  std::vector<std::string_view> m;
  for (const auto& [name, info] : stored) {
    if (!starts_with(name, prefix)) continue;
    const std::string_view local = std::string_view(name).substr(prefix.size());
    for (const NameRule& r : rules) {
      if (r.any_part ? !r.from.match_any_part(local) : !r.from.match(local, &m)) continue;
      if (r.plain && !plain_name(local)) continue;
      std::string level;  // the reversed level, standing for $1
      if (r.reverse_level) {
        const int64_t l = level_of(m[1]);
        if (l < 0) continue;  // not a level this program counts: left unplaced
        level = std::to_string(levels - 1 - l);
        m[1] = level;
      }
      out.consumed.insert(name);
      if (r.take == Take::Unused) {
        ++out.unused;
        break;
      }
      std::vector<std::string> to;
      for (const std::string& t : r.to) {
        to.push_back(expand_captures(t, m));
        if (out.names.count(to.back()))
          out.duplicates.push_back("'" + to.back() + "' (from '" + out.names[to.back()].stored + "' and '" + name + "')");
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
      rule("layers.#.proj.qkv.weight", {"layers.$1.proj.q.weight", "layers.$1.proj.k.weight", "layers.$1.proj.v.weight"},
           Take::SplitRows3),
      column_rule("layers.#.proj.qkv.weight_scale",
                  {"layers.$1.proj.q.weight_scale", "layers.$1.proj.k.weight_scale", "layers.$1.proj.v.weight_scale"},
                  Take::SplitRows3),
      column_rule("*.weight_scale", {"$0"}, Take::Same),
      rule("*.comfy_quant", {}, Take::Unused),
      rule("layers.#.{norm1|norm2|q_norm|k_norm}.weight", {"$0"}),
      rule("layers.#.proj.{q|k|v|o|ffn_up_gate|ffn_down}.weight", {"$0"}),
      rule("text_embedder.blocks.#.?.{weight|bias}", {"$0"}),
      rule("text_embedder.proj.{weight|bias}", {"$0"}),
      rule("time_embedding.#.{weight|bias}", {"$0"}),
      rule("{video_embedder|video_head_modulation|shared_block_modulation|final_linear_video}.{weight|bias}", {"$0"}),
      rule("{final_norm_video.weight|rope.bands}", {"$0"}),
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
  std::string prefix;
  bool found = false;
  for (const auto& [name, info] : stored) {
    const std::string tail = "embed_tokens.weight";
    if (name.size() < tail.size() || name.compare(name.size() - tail.size(), tail.size(), tail) != 0) continue;
    if (unused_text_encoder_part(name)) continue;
    const std::string p = name.substr(0, name.size() - tail.size());
    if (starts_with(p, "model.diffusion_model.") || starts_with(p, "first_stage_model.")) continue;
    if (!found || p.size() < prefix.size()) prefix = p;  // the outermost, if several
    found = true;
  }
  if (!found) return out;
  static const std::vector<NameRule> rules = {
      {NamePattern("{visual|mtp}.*"), {}, Take::Unused, false, false, true},
      {NamePattern("lm_head.weight"), {}, Take::Unused, false, false, true},
      {NamePattern("*"), {std::string(kCanonicalTextEncoderPrefix) + "$0"}, Take::Same, false, true, false},
  };
  apply_rules(stored, prefix, rules, 0, out);
  // The unused parts beside it (a vision tower, lm_head, mtp), wherever the file keeps them.
  for (const auto& [name, info] : stored)
    if (!out.consumed.count(name) && unused_text_encoder_part(name) &&
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
    static const NamePattern up("decoder.up.#.*");
    std::vector<std::string_view> m;
    for (const auto& [name, info] : stored)
      if (starts_with(name, *prefix) && up.match(std::string_view(name).substr(prefix->size()), &m) && m[1].size() < 3)
        levels = std::max(levels, level_of(m[1]) + 1);
  }
  // LDM (BFL, ComfyUI) -> diffusers names: sd.cpp name_conversion.cpp and ComfyUI
  // diffusers_convert.py hold the same table the other way round (docs/model_files.md).
  static const std::vector<NameRule> ldm_rules = {
      rule("decoder.mid.block_1.*", {"decoder.mid_block.resnets.0.$1"}),
      rule("decoder.mid.block_2.*", {"decoder.mid_block.resnets.1.$1"}),
      rule("decoder.mid.attn_1.norm.*", {"decoder.mid_block.attentions.0.group_norm.$1"}),
      rule("decoder.mid.attn_1.{q|k|v}.*", {"decoder.mid_block.attentions.0.to_$1.$2"}, Take::SqueezeConv),
      rule("decoder.mid.attn_1.proj_out.*", {"decoder.mid_block.attentions.0.to_out.0.$1"}, Take::SqueezeConv),
      rule("decoder.up.#.block.#.nin_shortcut.*", {"decoder.up_blocks.$1.resnets.$2.conv_shortcut.$3"}, Take::Same,
           true),
      rule("decoder.up.#.block.#.*", {"decoder.up_blocks.$1.resnets.$2.$3"}, Take::Same, true),
      rule("decoder.up.#.upsample.*", {"decoder.up_blocks.$1.upsamplers.0.$2"}, Take::Same, true),
      rule("decoder.norm_out.*", {"decoder.conv_norm_out.$1"}),
      rule("{decoder.conv_in|decoder.conv_out|post_quant_conv}.{weight|bias}", {"$0"}),
      rule("bn.{running_mean|running_var|num_batches_tracked}", {"$0"}),
      rule("{encoder|quant_conv}.*", {}, Take::Unused),
  };
  static const std::vector<NameRule> diffusers_rules = {
      rule("decoder.*", {"$0"}),
      rule("post_quant_conv.{weight|bias}", {"$0"}),
      rule("bn.{running_mean|running_var|num_batches_tracked}", {"$0"}),
      rule("{encoder|quant_conv}.*", {}, Take::Unused),
  };
  apply_rules(stored, *prefix, ldm ? ldm_rules : diffusers_rules, levels, out);
  out.layout =
      std::string(ldm ? "LDM (BFL / ComfyUI)" : "diffusers") + (prefix->empty() ? "" : ", prefix '" + *prefix + "'");
  return out;
}

}  // namespace moss
