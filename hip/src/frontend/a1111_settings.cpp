#include "frontend/a1111_settings.h"

#include <algorithm>

namespace moss {

std::string model_folder_name(const std::string& folder) {
  const size_t end = folder.find_last_not_of('/');
  if (end == std::string::npos) return folder;
  const size_t slash = folder.find_last_of('/', end);
  const size_t begin = slash == std::string::npos ? 0 : slash + 1;
  return folder.substr(begin, end + 1 - begin);
}

A1111Settings a1111_settings(const std::string& model_title, const std::string& model_name, bool metadata) {
  A1111Settings s;
  s.values = {{"sd_model_checkpoint", model_title.empty() ? model_name : model_title},
              {"sd_checkpoint_hash", nullptr},
              {"sd_vae", "Automatic"},
              {"samples_format", "png"},
              {"enable_pnginfo", metadata},
              {"CLIP_stop_at_last_layers", 1},
              {"eta_noise_seed_delta", 0},
              {"samples_save", false},
              {"grid_save", false}};
  for (const std::string& name : {model_title, model_name})
    if (!name.empty()) s.model_names.push_back(name);
  return s;
}

std::string setting_refusal(const A1111Settings& settings, const std::string& key, const nlohmann::json& value) {
  const auto dump = [](const nlohmann::json& v) {
    return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).substr(0, 80);
  };
  if (key == "sd_model_checkpoint") {
    const auto& names = settings.model_names;
    if (value.is_string() && std::find(names.begin(), names.end(), value.get<std::string>()) != names.end())
      return "";
    return key + ": " + dump(value) + " is not the loaded model (one model per server: " +
           (names.empty() ? std::string("the one given with --model") : names.front()) + ")";
  }
  if (!settings.values.contains(key))
    return key + ": not a setting of this engine (the settings are read-only here)";
  // JSON equality: 1 and 1.0 are the same value, as A1111's settings compare them.
  if (settings.values[key] == value) return "";
  return key + ": " + dump(value) + " is not the current value " + dump(settings.values[key]) +
         " (the settings are read-only here)";
}

}  // namespace moss
