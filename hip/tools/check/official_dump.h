// Reader of the dumps written by tools/golden/dump_official.py (format "moss-official-dump/1";
// the tensors and metadata are described in that script's docstring and tools/golden/README.md).
// Read by moss-check official and moss-check te (either backend). Header-only.
//
// Opening a dump validates it: the format tag, the cases, every tensor a check reads (dtype,
// rank, consistent shapes), so a cut or edited file is refused with a message naming the file,
// the case and the tensor (moss::failure, exit 1) before any model runs.
#pragma once
#include <cctype>
#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "tensor/tensor.h"
#include "util/error.h"

namespace golden {

constexpr const char* kDumpFormat = "moss-official-dump/1";

// What the pipeline call used. Resolved from the case's "captured.settings" (written by the dump
// tool), else the case's own keys, else the call's arguments and the pipeline's defaults.
struct DumpSettings {
  std::optional<std::string> prompt, negative;
  std::optional<uint64_t> seed;
  std::optional<float> cfg, shift;
  std::optional<std::vector<int>> skip_layers;
  int64_t max_seq = 4096;
  int64_t height = 0, width = 0;  // from the image (or the latent grid x16)
  int steps = 0;                  // timesteps the DiT saw
};

struct DumpCase {
  int index = 0;
  std::string name, prefix;  // prefix "case<N>."
  nlohmann::json meta;
  DumpSettings settings;
  bool guided = false;           // uncond.* and step0.v_uncond present
  bool noise_from_randn = true;  // the dump saw torch.randn (else noise = the DiT's step-0 input)
  // Outputs of an fp32 run (the CI fixture made from the tiny goldens), with the bf16-vs-fp32
  // distance of the DiT when known. Official dumps are bf16 runs: reference_fp32 false.
  bool reference_fp32 = false;
  double dit_bf16_gap = NAN;
  std::vector<int> latent_steps;  // i with step<i>.latent present, ascending
};

namespace dump_detail {

inline std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

// The pipeline's defaults come as Python reprs ("3.0", "(22,)", "''", "None"): numbers, tuples
// or lists of ints and simple quoted strings are read; anything else is left unknown.
inline std::optional<nlohmann::json> from_repr(const std::string& r) {
  if (r.empty() || r == "None") return std::nullopt;
  if ((r.front() == '\'' || r.front() == '"') && r.size() >= 2 && r.back() == r.front() &&
      r.find('\\') == std::string::npos)
    return nlohmann::json(r.substr(1, r.size() - 2));
  if (r.front() == '(' || r.front() == '[') {
    nlohmann::json list = nlohmann::json::array();
    std::string num;
    for (char c : r.substr(1)) {
      if (std::isdigit((unsigned char)c) || c == '-') {
        num += c;
      } else if (c == ',' || c == ')' || c == ']') {
        if (!num.empty()) list.push_back(std::stoi(num));
        num.clear();
      } else if (c != ' ') {
        return std::nullopt;
      }
    }
    return list;
  }
  try {
    size_t used = 0;
    const double v = std::stod(r, &used);
    if (used == r.size()) return nlohmann::json(v);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// The value of setting `key` (names: the pipeline parameter names it may go by).
inline std::optional<nlohmann::json> setting(const nlohmann::json& c, const std::string& key,
                                              const std::vector<std::string>& names) {
  const auto settings = c.contains("captured") ? c["captured"].value("settings", nlohmann::json::object())
                                               : nlohmann::json::object();
  if (settings.contains(key) && !settings[key].is_null()) return nlohmann::json(settings[key]);
  if (c.contains(key) && !c[key].is_null()) return nlohmann::json(c[key]);
  for (const char* where : {"call_kwargs", "call_defaults"}) {
    if (!c.contains(where) || !c[where].is_object()) continue;
    for (const std::string& n : names) {
      if (!c[where].contains(n) || c[where][n].is_null()) continue;
      const nlohmann::json& v = c[where][n];
      if (std::string(where) == "call_defaults" && v.is_string()) {
        if (auto parsed = from_repr(v.get<std::string>())) return parsed;
        continue;
      }
      return nlohmann::json(v);
    }
  }
  return std::nullopt;
}

}  // namespace dump_detail

class OfficialDump {
 public:
  // Is this safetensors file a dump (its metadata's "meta" names the dump format)?
  static bool is_dump(const moss::SafetensorsFile& f) {
    auto it = f.metadata().find("meta");
    if (it == f.metadata().end()) return false;
    const nlohmann::json meta = nlohmann::json::parse(it->second, nullptr, false);
    return meta.is_object() && meta.value("format", "").rfind("moss-official-dump/", 0) == 0;
  }

  static OfficialDump open(const std::string& path) { return OfficialDump(moss::SafetensorsFile::open(path)); }

  explicit OfficialDump(std::shared_ptr<moss::SafetensorsFile> file) : file_(std::move(file)) {
    const auto& md = file_->metadata();
    auto meta_it = md.find("meta"), cases_it = md.find("cases");
    if (meta_it == md.end() || cases_it == md.end())
      throw moss::failure(path() + ": not a dump of tools/golden/dump_official.py (no 'meta'/'cases' metadata)");
    meta_ = nlohmann::json::parse(meta_it->second, nullptr, false);
    const nlohmann::json cases = nlohmann::json::parse(cases_it->second, nullptr, false);
    if (!meta_.is_object() || meta_.value("format", "") != kDumpFormat)
      throw moss::failure(path() + ": metadata 'meta.format' is not \"" + kDumpFormat + "\"");
    if (!cases.is_array() || cases.empty()) throw moss::failure(path() + ": metadata 'cases' is not a list of cases");
    for (const nlohmann::json& c : cases) cases_.push_back(read_case(c));
  }

  const std::string& path() const { return file_->path(); }
  const nlohmann::json& meta() const { return meta_; }
  const std::vector<DumpCase>& cases() const { return cases_; }
  const moss::SafetensorsFile& file() const { return *file_; }

  // The case with this index or name ("" or "all" is not a case).
  const DumpCase& find_case(const std::string& sel) const {
    for (const DumpCase& c : cases_)
      if (c.name == sel || std::to_string(c.index) == sel) return c;
    throw moss::usage_error("--case " + sel + ": " + path() + " has no such case");
  }

  bool has(const DumpCase& c, const std::string& key) const { return file_->has(c.prefix + key); }
  moss::Tensor get(const DumpCase& c, const std::string& key) const {
    if (!has(c, key)) throw moss::failure(where(c) + "no tensor '" + c.prefix + key + "'");
    return file_->get(c.prefix + key);
  }
  // Host f32 contiguous copy (the model code takes f32 host tensors).
  moss::Tensor f32(const DumpCase& c, const std::string& key) const {
    const moss::Tensor t = get(c, key);
    const std::vector<float> v = moss::to_f32_vector(t);
    moss::Tensor out = moss::host_tensor(moss::DType::F32, t.dims());
    std::copy(v.begin(), v.end(), out.ptr<float>());
    return out;
  }
  std::vector<int32_t> ids(const DumpCase& c, const std::string& key) const {
    const moss::Tensor t = get(c, key);
    return std::vector<int32_t>(t.ptr<const int32_t>(), t.ptr<const int32_t>() + t.numel());
  }
  std::vector<float> values(const DumpCase& c, const std::string& key) const {
    return moss::to_f32_vector(get(c, key));
  }

 private:
  std::string where(const DumpCase& c) const {
    return path() + ": case " + std::to_string(c.index) + (c.name.empty() ? "" : " (" + c.name + ")") + ": ";
  }

  // A tensor the checks need: present, of this dtype (F32 also accepts BF16/F16/F64) and rank.
  const moss::TensorInfo& require(const DumpCase& c, const std::string& key, moss::DType dt, size_t rank) const {
    const std::string name = c.prefix + key;
    if (!file_->has(name))
      throw moss::failure(where(c) + "no tensor '" + name + "' (dump_official.py always writes it; is the file cut?)");
    const moss::TensorInfo& t = file_->info(name);
    const bool float_ok = dt == moss::DType::F32 && (t.dtype == moss::DType::BF16 || t.dtype == moss::DType::F16 ||
                                                      t.dtype == moss::DType::F64);
    if ((t.dtype != dt && !float_ok) || t.shape.size() != rank)
      throw moss::failure(where(c) + "'" + name + "' is " + t.dtype_name + " of rank " +
                          std::to_string(t.shape.size()) + ", expected " + moss::dtype_name(dt) + " of rank " +
                          std::to_string(rank));
    return t;
  }

  void same_shape(const DumpCase& c, const std::string& key, const std::vector<int64_t>& shape) const {
    if (!file_->has(c.prefix + key)) return;
    const moss::TensorInfo& t = require(c, key, moss::DType::F32, shape.size());
    if (t.shape != shape)
      throw moss::failure(where(c) + "'" + c.prefix + key + "' has shape " + shape_str(t.shape) + ", expected " +
                          shape_str(shape) + " (the shape of " + c.prefix + "noise)");
  }

  static std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  }

  DumpCase read_case(const nlohmann::json& j) {
    using dump_detail::setting;
    DumpCase c;
    if (!j.is_object() || !j.contains("case") || !j["case"].is_number_integer())
      throw moss::failure(path() + ": a metadata case without an integer 'case' index");
    c.index = j["case"].get<int>();
    c.name = j.value("name", "");
    c.prefix = "case" + std::to_string(c.index) + ".";
    c.meta = j;

    // Tensors every check reads, and their agreement.
    for (const char* role : {"cond", "uncond"}) {
      const std::string r = role;
      if (r == "uncond" && !file_->has(c.prefix + "uncond.hidden")) continue;
      const auto& ids = require(c, r + ".ids", moss::DType::I32, 1);
      const auto& hidden = require(c, r + ".hidden", moss::DType::F32, 2);
      if (hidden.shape[0] != ids.shape[0])
        throw moss::failure(where(c) + r + ".hidden has " + std::to_string(hidden.shape[0]) + " rows but " + r +
                            ".ids has " + std::to_string(ids.shape[0]) + " tokens");
      if (file_->has(c.prefix + r + ".hidden_fp32") &&
          require(c, r + ".hidden_fp32", moss::DType::F32, 2).shape != hidden.shape)
        throw moss::failure(where(c) + r + ".hidden_fp32 and " + r + ".hidden differ in shape");
    }
    c.guided = file_->has(c.prefix + "uncond.hidden");
    if (c.guided != file_->has(c.prefix + "step0.v_uncond"))
      throw moss::failure(where(c) + "uncond.hidden and step0.v_uncond must come together (a guided run has both)");
    const std::vector<int64_t> grid = require(c, "noise", moss::DType::F32, 3).shape;
    for (const char* key : {"step0.latent_in", "step0.v_cond", "final_latent"}) require(c, key, moss::DType::F32, 3);
    for (const char* key : {"step0.latent_in", "step0.v_cond", "step0.v_uncond", "final_latent"}) same_shape(c, key, grid);
    const auto& sigmas = require(c, "sigmas", moss::DType::F32, 1);
    const auto& timesteps = require(c, "timesteps", moss::DType::F32, 1);
    if (timesteps.shape[0] < 1 || sigmas.shape[0] != timesteps.shape[0] + 1)
      throw moss::failure(where(c) + "'sigmas' has " + std::to_string(sigmas.shape[0]) + " values, 'timesteps' " +
                          std::to_string(timesteps.shape[0]) + " (want steps + 1 and steps, steps >= 1)");
    const std::vector<float> s = moss::to_f32_vector(file_->get(c.prefix + "sigmas"));
    if (s.back() != 0.0f) throw moss::failure(where(c) + "'sigmas' does not end with 0");
    c.settings.steps = int(timesteps.shape[0]);
    for (int i = 0; i < c.settings.steps; ++i) {
      if (!file_->has(c.prefix + "step" + std::to_string(i) + ".latent")) continue;
      same_shape(c, "step" + std::to_string(i) + ".latent", grid);
      c.latent_steps.push_back(i);
    }
    if (file_->has(c.prefix + "image_u8")) {
      const auto& u8 = require(c, "image_u8", moss::DType::U8, 3);
      c.settings.height = u8.shape[1];
      c.settings.width = u8.shape[2];
      if (u8.shape[0] != 3) throw moss::failure(where(c) + "'image_u8' is not [3, H, W]");
      if (file_->has(c.prefix + "image")) {
        const auto& img = require(c, "image", moss::DType::F32, 3);
        if (img.shape != u8.shape)
          throw moss::failure(where(c) + "'image' " + shape_str(img.shape) + " and 'image_u8' " +
                              shape_str(u8.shape) + " differ in shape");
      }
    } else {
      c.settings.height = grid[1] * 16;
      c.settings.width = grid[2] * 16;
    }

    // Settings.
    DumpSettings& st = c.settings;
    if (auto v = setting(j, "prompt", {"prompt"}); v && v->is_string()) st.prompt = v->get<std::string>();
    if (auto v = setting(j, "negative", {"negative_prompt", "negative"}); v && v->is_string())
      st.negative = v->get<std::string>();
    if (auto v = setting(j, "seed", {"seed"}); v && v->is_number_integer()) st.seed = v->get<uint64_t>();
    if (auto v = setting(j, "cfg", {"guidance_scale", "cfg_scale", "cfg", "guidance"}); v && v->is_number())
      st.cfg = v->get<float>();
    if (auto v = setting(j, "shift", {"shift", "sigma_shift"}); v && v->is_number()) st.shift = v->get<float>();
    if (auto v = setting(j, "max_seq", {"max_sequence_length", "max_seq_len", "max_length"}); v && v->is_number_integer())
      st.max_seq = v->get<int64_t>();
    if (auto v = setting(j, "skip_layers", {"uncond_skip_layers", "skip_layers", "negative_skip_layers"});
        v && v->is_array()) {
      std::vector<int> layers;
      for (const auto& x : *v)
        if (x.is_number_integer()) layers.push_back(x.get<int>());
      st.skip_layers = layers;
    }
    if (!c.guided) st.cfg = 1.0f;

    const nlohmann::json captured = j.value("captured", nlohmann::json::object());
    c.noise_from_randn = captured.value("noise_from", "torch.randn") == "torch.randn";
    c.reference_fp32 = dump_detail::lower(j.value("reference", "")) == "fp32";
    if (j.contains("bf16_gap") && j["bf16_gap"].is_object() && j["bf16_gap"].value("dit", -1.0) > 0)
      c.dit_bf16_gap = j["bf16_gap"]["dit"].get<double>();
    return c;
  }

  std::shared_ptr<moss::SafetensorsFile> file_;
  nlohmann::json meta_;
  std::vector<DumpCase> cases_;
};

}  // namespace golden
