#include "model/lora.h"

#include <cmath>
#include <cstring>
#include <set>

#include "io/files.h"
#include "io/model_folder.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace moss {
namespace {

bool starts_with_str(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// A tensor name's ending: the role its tensor plays and the format that writes it.
struct Suffix {
  const char* text;
  const char* role;
  LoraFormat format;  // Comfy stands for "kohya or ComfyUI", told apart by the module's prefix
};
const Suffix kSuffixes[] = {
    {".lora_A.default.weight", "down", LoraFormat::Peft}, {".lora_B.default.weight", "up", LoraFormat::Peft},
    {".lora_A.weight", "down", LoraFormat::Peft},         {".lora_B.weight", "up", LoraFormat::Peft},
    {".lora_down.weight", "down", LoraFormat::Comfy},     {".lora_up.weight", "up", LoraFormat::Comfy},
    {".hada_w1_a", "w1a", LoraFormat::LoHa},              {".hada_w1_b", "w1b", LoraFormat::LoHa},
    {".hada_w2_a", "w2a", LoraFormat::LoHa},              {".hada_w2_b", "w2b", LoraFormat::LoHa},
    {".lokr_w1_a", "w1a", LoraFormat::LoKr},              {".lokr_w1_b", "w1b", LoraFormat::LoKr},
    {".lokr_w2_a", "w2a", LoraFormat::LoKr},              {".lokr_w2_b", "w2b", LoraFormat::LoKr},
    {".lokr_w1", "w1", LoraFormat::LoKr},                 {".lokr_w2", "w2", LoraFormat::LoKr},
    {".diff_b", "diff_b", LoraFormat::FullDelta},         {".diff", "diff", LoraFormat::FullDelta},
};

// Endings of formats the reader knows and does not apply: named in the refusal.
const std::pair<const char*, const char*> kUnsupported[] = {
    {".dora_scale", "DoRA (weight-decomposed LoRA)"},
    {".hada_t1", "LyCORIS LoHa with Tucker decomposition (conv layers)"},
    {".lokr_t2", "LyCORIS LoKr with Tucker decomposition (conv layers)"},
    {".oft_blocks", "LyCORIS OFT"},
    {".oft_diag", "LyCORIS OFT"},
    {".b_norm", "LyCORIS (IA)^3 / norm adapters"},
    {".w_norm", "LyCORIS (IA)^3 / norm adapters"},
    {".on_input", "LyCORIS (IA)^3"},
    {".lora_mid.weight", "LoCon with a mid (Tucker) weight"},
};

bool is_kohya_key(const std::string& key) {
  return starts_with_str(key, "lora_unet_") || starts_with_str(key, "lora_te") ||
         starts_with_str(key, "lora_transformer_") || starts_with_str(key, "lycoris_");
}

float scalar_value(const Tensor& t, const std::string& path, const std::string& name) {
  if (t.numel() != 1) throw usage_error(path + ": tensor '" + name + "': alpha must hold one value, has " + t.shape_str());
  const std::vector<float> v = to_f32_vector(t);
  if (!std::isfinite(v[0])) throw usage_error(path + ": tensor '" + name + "': alpha is not finite");
  return v[0];
}

// PEFT's adapter_config.json beside adapter_model.safetensors: lora_alpha, r, use_rslora.
struct PeftConfig {
  bool found = false;
  float alpha = 0, rank = 0;
  bool rslora = false;
};
PeftConfig peft_config_beside(const std::string& path) {
  PeftConfig c;
  const size_t slash = path.find_last_of('/');
  const std::string config = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + "adapter_config.json";
  if (!file_exists(config)) return c;
  const nlohmann::json j = read_json_file(config);
  if (!j.is_object()) return c;
  if (j.contains("lora_alpha") && j["lora_alpha"].is_number()) c.alpha = j["lora_alpha"].get<float>(), c.found = true;
  if (j.contains("r") && j["r"].is_number()) c.rank = j["r"].get<float>();
  if (j.contains("use_rslora") && j["use_rslora"].is_boolean()) c.rslora = j["use_rslora"].get<bool>();
  for (const auto& [flag, what] : {std::pair<const char*, const char*>{"use_dora", "DoRA"}, {"lora_bias", "LoRA biases"}})
    if (j.contains(flag) && j[flag] == true) throw usage_error(config + ": '" + flag + "' (" + what + ") is not supported");
  for (const char* pattern : {"alpha_pattern", "rank_pattern"})
    if (j.contains(pattern) && j[pattern].is_object() && !j[pattern].empty())
      throw usage_error(config + ": '" + pattern + "' (per-module ranks or alphas) is not supported");
  return c;
}

// What a file whose modules match nothing here was made for, from names other models use.
std::string looks_like(const std::vector<LoraModule>& modules) {
  const std::pair<const char*, const char*> hints[] = {
      {"double_blocks", "a FLUX.1 DiT"},       {"single_blocks", "a FLUX.1 DiT"},
      {"single_transformer_blocks", "a FLUX DiT (diffusers names)"},
      {"joint_blocks", "an SD3 MMDiT"},         {"img_mlp", "a Qwen-Image DiT"},
      {"transformer_blocks", "a diffusers DiT (SD3, FLUX, Qwen-Image...)"},
      {"input_blocks", "a Stable Diffusion 1.x/2.x/XL UNet"},
      {"down_blocks", "a Stable Diffusion UNet (diffusers names)"},
      {"lora_te1_", "Stable Diffusion XL's text encoders"},
      {"lora_te_text_model", "a Stable Diffusion CLIP text encoder"},
      {"blocks.0.self_attn", "a Wan video DiT"}};
  for (const auto& [needle, model] : hints)
    for (const LoraModule& m : modules)
      if (m.key.find(needle) != std::string::npos) return std::string("; it looks like a LoRA for ") + model;
  return "";
}

// The module names (weight names less ".weight") of one network's 2-D weights, also written with
// underscores as kohya writes them; a name two weights share that way is left out (ambiguous).
struct ModuleTable {
  std::map<std::string, std::string> exact, underscored;  // -> the weight's name
  std::string prefix;                                   // the text encoder's "language_model."
  void build(const WeightFiles& w) {
    std::set<std::string> clash;
    for (const std::string& name : w.names()) {
      if (!ends_with(name, ".weight") || w.info(name).shape.size() != 2) continue;
      const std::string module = name.substr(0, name.size() - 7);
      exact[module] = name;
      std::vector<std::string> forms{module};
      if (!prefix.empty() && starts_with_str(module, prefix)) forms.push_back(module.substr(prefix.size()));
      for (std::string f : forms) {
        exact[f] = name;
        for (char& c : f) c = c == '.' ? '_' : c;
        if (underscored.count(f) && underscored[f] != name) clash.insert(f);
        underscored[f] = name;
      }
    }
    for (const std::string& c : clash) underscored.erase(c);
  }
  std::string find(const std::string& module, bool kohya) const {
    const auto& table = kohya ? underscored : exact;
    auto it = table.find(module);
    return it == table.end() ? "" : it->second;
  }
};

std::string strip_any(std::string key, const std::vector<std::string>& prefixes) {
  for (bool again = true; again;) {
    again = false;
    for (const std::string& p : prefixes)
      if (starts_with_str(key, p)) key = key.substr(p.size()), again = true;
  }
  return key;
}

int64_t dim(const Tensor& t, int i) { return t.shape[i]; }

}  // namespace

const char* lora_format_name(LoraFormat f) {
  switch (f) {
    case LoraFormat::Peft: return "PEFT/diffusers";
    case LoraFormat::Kohya: return "kohya";
    case LoraFormat::Comfy: return "ComfyUI";
    case LoraFormat::LoHa: return "LyCORIS LoHa";
    case LoraFormat::LoKr: return "LyCORIS LoKr";
    case LoraFormat::FullDelta: return "full delta";
  }
  return "?";
}

LoraFile read_lora(const std::string& path) {
  LoraFile lora;
  lora.path = path;
  const size_t slash = path.find_last_of('/');
  lora.name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (ends_with(lora.name, ".safetensors")) lora.name.resize(lora.name.size() - 12);
  if (!ends_with(path, ".safetensors"))
    throw usage_error(path + ": LoRAs are read from .safetensors files (.ckpt and .pt pickles are not supported)");
  lora.file = SafetensorsFile::open(path);
  std::map<std::string, LoraModule> by_key;
  std::map<std::string, float> alphas;
  for (const auto& [name, info] : lora.file->tensors()) {
    for (const auto& [ending, what] : kUnsupported)
      if (ends_with(name, ending))
        throw usage_error(path + ": tensor '" + name + "': " + what + " is not supported");
    if (ends_with(name, ".alpha")) {
      alphas[name.substr(0, name.size() - 6)] = scalar_value(lora.file->get(name), path, name);
      continue;
    }
    const Suffix* hit = nullptr;
    for (const Suffix& s : kSuffixes)
      if (ends_with(name, s.text)) {
        hit = &s;
        break;
      }
    if (!hit)
      throw usage_error(path + ": tensor '" + name +
                        "': not a LoRA tensor of a supported format (PEFT/diffusers lora_A/lora_B, kohya or ComfyUI "
                        "lora_down/lora_up, LyCORIS LoHa hada_* or LoKr lokr_*, full .diff/.diff_b)");
    const std::string key = name.substr(0, name.size() - std::string(hit->text).size());
    if (info.dtype != DType::F32 && info.dtype != DType::BF16 && info.dtype != DType::F16)
      throw usage_error(path + ": tensor '" + name + "': dtype " + info.dtype_name + " (LoRA tensors must be F32, BF16 or F16)");
    LoraModule& m = by_key[key];
    const LoraFormat format =
        hit->format == LoraFormat::Comfy && is_kohya_key(key) ? LoraFormat::Kohya : hit->format;
    if (m.key.empty()) {
      m.key = key, m.format = format, m.first_tensor = name;
    } else if (m.format != format) {
      throw usage_error(path + ": tensor '" + name + "': module '" + key + "' mixes " + lora_format_name(m.format) +
                        " and " + lora_format_name(format) + " tensors");
    }
    m.parts[hit->role] = lora.file->get(name);
  }
  for (const auto& [key, alpha] : alphas) {
    auto it = by_key.find(key);
    if (it == by_key.end()) throw usage_error(path + ": tensor '" + key + ".alpha': no LoRA weights for its module");
    it->second.alpha = alpha;
  }
  if (by_key.empty()) throw usage_error(path + ": no LoRA tensors in the file");
  // PEFT files keep alpha in adapter_config.json; rsLoRA's scale alpha/sqrt(r) is kept as the
  // alpha that gives it under alpha/r.
  const PeftConfig peft = peft_config_beside(path);
  for (auto& [key, m] : by_key) {
    if (m.format == LoraFormat::Peft && m.alpha == 0 && peft.found) {
      const auto up = m.parts.find("down");
      const float r = up != m.parts.end() ? float(up->second.shape[0]) : peft.rank;
      m.alpha = peft.rslora ? peft.alpha * r / std::sqrt(r) : peft.alpha;
    }
    lora.modules.push_back(std::move(m));
  }
  return lora;
}

namespace {

// The shape of dW a module makes, its rank (0: full) and the first misfit found.
struct DeltaShape {
  int64_t out = 0, in = 0, rank = 0;
};

DeltaShape delta_shape(const LoraModule& m, const std::string& path) {
  auto need = [&](const char* role) -> const Tensor& {
    auto it = m.parts.find(role);
    if (it == m.parts.end())
      throw usage_error(path + ": module '" + m.key + "' (" + lora_format_name(m.format) + "): its '" + role +
                        "' tensor is missing");
    if (it->second.rank != 2 && !(std::string(role) == "diff_b" && it->second.rank == 1))
      throw usage_error(path + ": module '" + m.key + "': tensor '" + role + "' has shape " + it->second.shape_str() +
                        " (2-D expected; conv LoRAs do not apply to this model)");
    return it->second;
  };
  auto misfit = [&](const std::string& what) {
    return usage_error(path + ": tensor '" + m.first_tensor + "': " + what);
  };
  DeltaShape s;
  switch (m.format) {
    case LoraFormat::Peft:
    case LoraFormat::Kohya:
    case LoraFormat::Comfy: {
      const Tensor &up = need("up"), &down = need("down");
      if (dim(up, 1) != dim(down, 0))
        throw misfit("rank mismatch: up " + up.shape_str() + " against down " + down.shape_str());
      s = {dim(up, 0), dim(down, 1), dim(down, 0)};
      break;
    }
    case LoraFormat::LoHa: {
      const Tensor &w1a = need("w1a"), &w1b = need("w1b"), &w2a = need("w2a"), &w2b = need("w2b");
      if (dim(w1a, 1) != dim(w1b, 0) || dim(w2a, 1) != dim(w2b, 0) || dim(w1a, 0) != dim(w2a, 0) ||
          dim(w1b, 1) != dim(w2b, 1))
        throw misfit("LoHa factors do not fit: w1_a " + w1a.shape_str() + ", w1_b " + w1b.shape_str() + ", w2_a " +
                     w2a.shape_str() + ", w2_b " + w2b.shape_str());
      s = {dim(w1a, 0), dim(w1b, 1), dim(w1b, 0)};
      break;
    }
    case LoraFormat::LoKr: {
      int64_t a, b, c, d;
      if (m.parts.count("w1")) {
        a = dim(need("w1"), 0), b = dim(need("w1"), 1);
      } else {
        const Tensor &w1a = need("w1a"), &w1b = need("w1b");
        if (dim(w1a, 1) != dim(w1b, 0)) throw misfit("LoKr w1 factors do not fit");
        a = dim(w1a, 0), b = dim(w1b, 1), s.rank = dim(w1b, 0);
      }
      if (m.parts.count("w2")) {
        c = dim(need("w2"), 0), d = dim(need("w2"), 1);
      } else {
        const Tensor &w2a = need("w2a"), &w2b = need("w2b");
        if (dim(w2a, 1) != dim(w2b, 0)) throw misfit("LoKr w2 factors do not fit");
        c = dim(w2a, 0), d = dim(w2b, 1), s.rank = dim(w2b, 0);
      }
      s.out = a * c, s.in = b * d;
      break;
    }
    case LoraFormat::FullDelta: {
      if (m.parts.count("diff")) {
        const Tensor& diff = need("diff");
        s = {dim(diff, 0), dim(diff, 1), 0};
      } else {
        s = {need("diff_b").numel(), 0, 0};
      }
      break;
    }
  }
  return s;
}

// The index of the first NaN or Inf among `n` values whose exponent field is `exponent` (all
// ones: NaN or Inf) in every dtype; -1 when all are finite. Read from the bits, so the mapped
// file is scanned once with no f32 copy (a 300 MiB LoRA is this scan, most of its reading).
template <class Bits>
int64_t first_not_finite(const Bits* v, int64_t n, Bits exponent, bool& nan, Bits mantissa) {
  for (int64_t i = 0; i < n; ++i)
    if ((v[i] & exponent) == exponent) {
      nan = (v[i] & mantissa) != 0;
      return i;
    }
  return -1;
}

// The module's first NaN or Inf, as a refusal's message; empty when all are finite.
std::string not_finite_message(const LoraModule& m, const std::string& path) {
  for (const auto& [role, t] : m.parts) {
    bool nan = false;
    int64_t i = -1;
    // (read_lora admits F32, BF16 and F16; a mapped tensor is contiguous: the other case is a
    // safety net through the f32 copy)
    switch (t.contiguous() ? t.dtype : DType::I8) {
      case DType::F32: i = first_not_finite<uint32_t>(t.ptr<uint32_t>(), t.numel(), 0x7f800000u, nan, 0x007fffffu); break;
      case DType::BF16: i = first_not_finite<uint16_t>(t.ptr<uint16_t>(), t.numel(), 0x7f80, nan, 0x007f); break;
      case DType::F16: i = first_not_finite<uint16_t>(t.ptr<uint16_t>(), t.numel(), 0x7c00, nan, 0x03ff); break;
      default: {
        const std::vector<float> v = to_f32_vector(t);
        for (size_t k = 0; k < v.size() && i < 0; ++k)
          if (!std::isfinite(v[k])) i = int64_t(k), nan = std::isnan(v[k]);
      }
    }
    if (i >= 0)
      return path + ": module '" + m.key + "': its " + role + " tensor holds " + (nan ? "NaN" : "Inf") + " (value " +
             std::to_string(i) + ")";
  }
  return "";
}

// Every value of every bound module checked, the modules side by side on the thread pool; the
// first module (in the file's order) that holds a NaN or Inf is refused.
void check_finite(const std::vector<BoundModule>& modules, const std::string& path) {
  std::vector<std::string> bad(modules.size());
  ThreadPool::global().parallel_for(int64_t(modules.size()), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      try {  // a worker must not throw: anything but a verdict is reported as the module's failure
        bad[size_t(i)] = not_finite_message(*modules[size_t(i)].module, path);
      } catch (const std::exception& e) {
        bad[size_t(i)] = path + ": module '" + modules[size_t(i)].module->key + "': " + e.what();
      }
    }
  });
  for (const std::string& message : bad)
    if (!message.empty()) throw usage_error(message);
}

}  // namespace

BoundLora bind_lora(std::shared_ptr<const LoraFile> lora, const WeightFiles& dit, const WeightFiles& te) {
  BoundLora bound;
  bound.file = lora;
  const std::string& path = lora->path;
  ModuleTable dit_table, te_table;
  dit_table.build(dit);
  for (const std::string& name : te.names())
    if (starts_with_str(name, "language_model.")) te_table.prefix = "language_model.";
    else if (starts_with_str(name, "model.language_model.")) te_table.prefix = "model.language_model.";
  te_table.build(te);
  const std::vector<std::string> dit_prefixes = {"base_model.model.", "model.diffusion_model.", "diffusion_model.",
                                                 "transformer.", "lora_unet_", "lora_transformer_", "lycoris_"};
  const std::vector<std::string> te_prefixes = {"base_model.model.", "text_encoders.", "text_encoder.",
                                                "lora_te1_", "lora_te_", "model.", "language_model."};
  std::vector<const LoraModule*> unmatched;
  for (const LoraModule& m : lora->modules) {
    const bool kohya = m.format == LoraFormat::Kohya || is_kohya_key(m.key);
    const bool te_only = starts_with_str(m.key, "lora_te") || starts_with_str(m.key, "text_encoder");
    BoundModule b;
    b.module = &m;
    std::string target;
    if (!te_only) {
      const std::string k = strip_any(m.key, dit_prefixes);
      target = dit_table.find(k, kohya);
      // A fused attention projection over a model that keeps q, k and v apart.
      const std::string fused = kohya ? "_proj_qkv" : ".proj.qkv";
      if (target.empty() && ends_with(k, fused)) {
        const std::string stem = k.substr(0, k.size() - 3);
        const std::string q = dit_table.find(stem + "q", kohya), kk = dit_table.find(stem + "k", kohya),
                          v = dit_table.find(stem + "v", kohya);
        if (!q.empty() && !kk.empty() && !v.empty()) {
          const int64_t rows = dit.info(q).shape[0];
          b.pieces = {{q, 0}, {kk, rows}, {v, 2 * rows}};
        }
      }
    }
    if (target.empty() && b.pieces.empty()) {
      const std::string k = strip_any(m.key, te_prefixes);
      target = te_table.find(k, kohya);
      if (!target.empty()) b.text_encoder = true;
    }
    if (!target.empty()) b.pieces = {{target, 0}};
    if (b.pieces.empty()) {
      unmatched.push_back(&m);
      continue;
    }
    const WeightFiles& w = b.text_encoder ? te : dit;
    // An INT8 ConvRot layer has no bf16 weight to merge into: the update runs beside it
    // (docs/int8_convrot.md section 4; DitSideLora). Only the DiT is ever quantized.
    for (LoraPiece& p : b.pieces) {
      p.beside = w.info(p.target).dtype == DType::I8;
      if (p.beside && b.text_encoder)
        throw usage_error(path + ": module '" + m.key + "' changes " + p.target +
                          ", a quantized text encoder weight: LoRAs run beside INT8 layers of the DiT only");
    }
    const DeltaShape s = delta_shape(m, path);
    int64_t rows = 0, cols = w.info(b.pieces[0].target).shape[1];
    for (const LoraPiece& p : b.pieces) rows += w.info(p.target).shape[0];
    const bool only_bias = m.format == LoraFormat::FullDelta && !m.parts.count("diff");
    if (!only_bias && (s.out != rows || s.in != cols))
      throw usage_error(path + ": tensor '" + m.first_tensor + "': its update is [" + std::to_string(s.out) + ", " +
                        std::to_string(s.in) + "] but " + (b.text_encoder ? "the text encoder's " : "the DiT's ") +
                        b.pieces[0].target + (b.pieces.size() > 1 ? " (with k and v)" : "") + " is [" +
                        std::to_string(rows) + ", " + std::to_string(cols) + "]");
    if (m.parts.count("diff_b")) {
      if (b.pieces.size() != 1) throw usage_error(path + ": module '" + m.key + "': a bias delta on a split qkv");
      const std::string bias = b.pieces[0].target.substr(0, b.pieces[0].target.size() - 7) + ".bias";
      if (!w.has(bias))
        throw usage_error(path + ": tensor '" + m.key + ".diff_b': " + b.pieces[0].target + " has no bias");
      if (m.parts.at("diff_b").numel() != rows)
        throw usage_error(path + ": tensor '" + m.key + ".diff_b': " + std::to_string(m.parts.at("diff_b").numel()) +
                          " values for a bias of " + std::to_string(rows));
      if (only_bias) b.pieces.clear();
      b.pieces.push_back({bias, 0, true});
    }
    b.out = s.out, b.in = s.in;
    b.scale = m.alpha != 0 && s.rank > 0 ? m.alpha / float(s.rank) : 1.0f;
    bound.modules.push_back(std::move(b));
  }
  if (bound.modules.empty())
    throw usage_error(path + ": no module of this LoRA matches a weight of this model's DiT or text encoder (first: '" +
                      lora->modules.front().first_tensor + "')" + looks_like(lora->modules));
  if (!unmatched.empty())
    throw usage_error(path + ": tensor '" + unmatched.front()->first_tensor + "': module '" + unmatched.front()->key +
                      "' matches no weight of this model (" + std::to_string(unmatched.size()) + " of " +
                      std::to_string(lora->modules.size()) + " modules do not)" + looks_like(lora->modules));
  check_finite(bound.modules, path);
  return bound;
}

namespace {

// A module's tensor as an f32 factor staged on the backend (bf16 and f16 widen exactly). A whole
// LoRA's factors are hundreds of MB, widened as the weights merge: the common cases (a mapped,
// contiguous bf16 or f32 tensor) widen straight into the staged tensor on the thread pool, the
// same bits as to_f32_vector's element-by-element walk, which the others take.
Tensor staged_f32(const Tensor& t, Backend& be, std::vector<int64_t> dims = {}) {
  Tensor f = host_tensor(DType::F32, dims.empty() ? t.dims() : dims);
  float* out = f.ptr<float>();
  if (t.contiguous() && (t.dtype == DType::BF16 || t.dtype == DType::F32)) {
    ThreadPool::global().parallel_for(
        t.numel(),
        [&](int64_t begin, int64_t end) {
          if (t.dtype == DType::F32) {
            std::memcpy(out + begin, t.ptr<float>() + begin, size_t(end - begin) * sizeof(float));
            return;
          }
          const uint16_t* in = t.ptr<uint16_t>();
          for (int64_t i = begin; i < end; ++i) out[i] = bf16_to_f32(in[i]);
        },
        int64_t(1) << 16);
  } else {
    const std::vector<float> v = to_f32_vector(t);
    std::copy(v.begin(), v.end(), out);
  }
  return be.upload(f);
}

// LoKr's factor: the whole matrix, or its two halves as a product.
LoraFactor lokr_factor(const LoraModule& m, const char* whole, const char* left, const char* right, Backend& be) {
  if (m.parts.count(whole)) return {staged_f32(m.parts.at(whole), be), {}};
  return {staged_f32(m.parts.at(left), be), staged_f32(m.parts.at(right), be)};
}

// One module's update as the op's delta (without row0 and coef), its factors staged.
LoraDelta module_delta(const LoraModule& m, bool bias, Backend& be) {
  LoraDelta d;
  if (bias) {
    const Tensor& b = m.parts.at("diff_b");
    d.f1 = {staged_f32(b, be, {1, b.numel()}), {}};
    return d;
  }
  switch (m.format) {
    case LoraFormat::Peft:
    case LoraFormat::Kohya:
    case LoraFormat::Comfy: d.f1 = {staged_f32(m.parts.at("up"), be), staged_f32(m.parts.at("down"), be)}; break;
    case LoraFormat::LoHa:
      d.form = LoraDeltaForm::Hadamard;
      d.f1 = {staged_f32(m.parts.at("w1a"), be), staged_f32(m.parts.at("w1b"), be)};
      d.f2 = {staged_f32(m.parts.at("w2a"), be), staged_f32(m.parts.at("w2b"), be)};
      break;
    case LoraFormat::LoKr:
      d.form = LoraDeltaForm::Kronecker;
      d.f1 = lokr_factor(m, "w1", "w1a", "w1b", be);
      d.f2 = lokr_factor(m, "w2", "w2a", "w2b", be);
      break;
    case LoraFormat::FullDelta: d.f1 = {staged_f32(m.parts.at("diff"), be), {}}; break;
  }
  return d;
}

// The host reference backend the plan merges with where no device does (one per process).
Backend& host_reference() {
  static const std::unique_ptr<Backend> host = make_host_backend();
  return *host;
}

// The projection a beside target corrects ("layers.1.proj.o.weight" -> "layers.1.proj.o").
std::string side_projection(const std::string& weight) { return weight.substr(0, weight.size() - 7); }

// Low-rank formats stay low rank beside the layer; the others become one dense delta.
DitSideForm side_form(LoraFormat f) {
  return f == LoraFormat::Peft || f == LoraFormat::Kohya || f == LoraFormat::Comfy ? DitSideForm::LowRank
                                                                                   : DitSideForm::Dense;
}

// Rows [row0, row0 + rows) of a low-rank factor as a host tensor the linear op takes as a weight:
// bf16 and f32 as the file has them (no rounding), f16 widened to f32 (exactly).
Tensor side_factor(const Tensor& t, int64_t row0, int64_t rows) {
  const Tensor v = t.slice_rows(row0, rows);
  const bool keep = (t.dtype == DType::BF16 || t.dtype == DType::F32) && v.contiguous();
  Tensor out = host_tensor(keep ? t.dtype : DType::F32, {rows, t.cols()});
  if (keep) {
    std::memcpy(out.data, v.data, out.nbytes());
  } else {
    const std::vector<float> f = to_f32_vector(v);
    std::copy(f.begin(), f.end(), out.ptr<float>());
  }
  return out;
}

// A beside target's side tensors (DitSideLora), one entry per part in order, into `out` under
// dit_side_lora_name's names: a low-rank part's factors (up's rows of this layer: a fused qkv
// module's k takes rows [dim, 2 dim)) and its coefficient as a gate vector; any other part's
// dense bf16 delta, bf16(coef·ΔW), by the merge op on a zero weight on `be` (the host reference,
// or a device: uploaded, merged there, downloaded).
void add_side_tensors(const LoraTarget& target, const TensorInfo& layer, Backend& be,
                      std::map<std::string, Tensor>& out) {
  const std::string projection = side_projection(target.name);
  const int64_t rows = layer.shape[0], cols = layer.shape[1];
  for (size_t i = 0; i < target.parts.size(); ++i) {
    const LoraTarget::Part& p = target.parts[i];
    const LoraModule& m = *p.module->module;
    if (side_form(m.format) == DitSideForm::LowRank) {
      const Tensor& down = m.parts.at("down");
      out[dit_side_lora_name(projection, i, "down")] = side_factor(down, 0, down.rows());
      out[dit_side_lora_name(projection, i, "up")] = side_factor(m.parts.at("up"), p.piece->row0, rows);
      Tensor coef = host_tensor(DType::F32, {rows});
      std::fill(coef.ptr<float>(), coef.ptr<float>() + rows, p.coef);
      out[dit_side_lora_name(projection, i, "coef")] = coef;
      continue;
    }
    LoraTarget one = target;
    one.parts = {p};
    Tensor delta = host_tensor(DType::BF16, {rows, cols});
    std::memset(delta.data, 0, delta.nbytes());
    if (be.where() == Where::Device) {
      Tensor d = be.upload(delta);
      be.lora().merge(d, lora_deltas(one, be));
      delta = be.download(d);
    } else {
      be.lora().merge(delta, lora_deltas(one, be));
    }
    out[dit_side_lora_name(projection, i, "delta")] = delta;
  }
}

}  // namespace

std::vector<LoraTarget> lora_targets(const std::vector<WeightedLora>& loras) {
  std::map<std::string, LoraTarget> by_name[2];
  for (const WeightedLora& wl : loras)
    for (const BoundModule& b : wl.lora->modules)
      for (const LoraPiece& p : b.pieces) {
        LoraTarget& t = by_name[b.text_encoder ? 1 : 0][p.target];
        t.name = p.target;
        t.text_encoder = b.text_encoder;
        t.beside = p.beside;
        t.parts.push_back({&b, &p, wl.weight * b.scale});
      }
  std::vector<LoraTarget> out;
  for (auto& part : by_name)
    for (auto& [name, t] : part) out.push_back(std::move(t));
  return out;
}

std::vector<LoraDelta> lora_deltas(const LoraTarget& target, Backend& be) {
  std::vector<LoraDelta> deltas;
  for (const LoraTarget::Part& p : target.parts) {
    LoraDelta d = module_delta(*p.module->module, p.piece->bias, be);
    d.row0 = p.piece->row0;
    d.coef = p.coef;
    deltas.push_back(std::move(d));
  }
  return deltas;
}

LoraMergePlan::LoraMergePlan(const std::vector<WeightedLora>& loras) : targets_(lora_targets(loras)) {
  for (size_t i = 0; i < targets_.size(); ++i) {
    const LoraTarget& t = targets_[i];
    if (t.text_encoder) continue;
    if (!t.beside) {
      dit_index_[t.name] = i, ++dit_targets_;
      continue;
    }
    std::vector<DitSideForm>& forms = side_forms_[side_projection(t.name)];
    for (const LoraTarget::Part& p : t.parts) forms.push_back(side_form(p.module->module->format));
  }
}

LoraMergePlan::Merged LoraMergePlan::merge_into_copies(const WeightFiles& base, bool text_encoder,
                                                   const std::function<bool(const std::string&)>& on_device,
                                                   Backend* by) const {
  // Each weight is merged on its own: a host copy of the base tensor, its deltas' factors in
  // f32, the host reference op (the peak is one weight and its factors, not the model).
  Backend* host = &host_reference();
  std::map<std::string, Tensor> replaced;
  for (const LoraTarget& target : targets_) {
    if (target.text_encoder != text_encoder || target.beside) continue;  // beside: dit_side_tensors
    if (!text_encoder && on_device && on_device(target.name)) continue;
    const TensorInfo& info = base.info(target.name);
    if (info.dtype != DType::BF16 && info.dtype != DType::F32)
      throw usage_error(base.folder() + ": tensor '" + target.name + "' is " + info.dtype_name +
                        "; LoRAs merge into BF16 or F32 weights");
    const Tensor w = base.get(target.name);
    if (by && by->where() == Where::Device) {
      Tensor d = by->upload(w);
      by->lora().merge(d, lora_deltas(target, *by));
      replaced[target.name] = by->download(d);
      continue;
    }
    Tensor t = host_tensor(info.dtype, info.shape);
    std::memcpy(t.data, w.data, t.nbytes());
    host->lora().merge(t, lora_deltas(target, *host));
    replaced[target.name] = t;
  }
  return {replaced.empty() ? base : base.with_replaced(replaced), int(replaced.size())};
}

std::map<std::string, Tensor> LoraMergePlan::dit_side_tensors(const WeightFiles& dit, Backend* by) const {
  std::map<std::string, Tensor> side;
  for (const LoraTarget& target : targets_)
    if (target.beside) add_side_tensors(target, dit.info(target.name), by ? *by : host_reference(), side);
  return side;
}

bool LoraMergePlan::merge_on_device(Backend& be, const std::string& name, Tensor& w) const {
  const auto it = dit_index_.find(name);
  if (it == dit_index_.end()) return false;
  const LoraTarget& target = targets_[it->second];
  if (w.dtype != DType::BF16 && w.dtype != DType::F32)
    throw usage_error("DiT tensor '" + name + "' is " + dtype_name(w.dtype) + "; LoRAs merge into BF16 or F32 weights");
  // The deltas' staged factors live until the op has been queued; the backend's allocator keeps
  // them from reuse until the stream has run it (stream-ordered frees).
  be.lora().merge(w, lora_deltas(target, be));
  return true;
}

MergedWeights merge_loras(const WeightFiles& dit, const WeightFiles& te, const std::vector<WeightedLora>& loras) {
  const LoraMergePlan plan(loras);
  // Weights merged offline are bf16 files; a correction beside an INT8 layer has no place there.
  if (plan.dit_beside_targets())
    throw usage_error("LoRA module on " + plan.dit_side_forms().begin()->first +
                      ", an INT8 ConvRot layer: such LoRAs run beside the layer at generation time; they cannot be "
                      "merged into weight files");
  LoraMergePlan::Merged d = plan.merge_into_copies(dit, false), t = plan.merge_into_copies(te, true);
  return {d.weights, t.weights, d.tensors, t.tensors};
}

}  // namespace moss
