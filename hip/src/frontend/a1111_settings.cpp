#include "frontend/a1111_settings.h"

#include <algorithm>

#include "frontend/a1111_options.h"

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
  // Every A1111 setting at its A1111 default, then this engine's own values over them.
  for (const A1111Option& o : a1111_options()) s.values[o.name] = o.a1111_default;
  const nlohmann::json own = {{"sd_model_checkpoint", model_title.empty() ? model_name : model_title},
                              {"sd_checkpoint_hash", nullptr},
                              {"samples_format", "png"},
                              {"enable_pnginfo", metadata},
                              {"samples_save", false},
                              {"grid_save", false}};
  s.values.update(own);
  for (const std::string& name : {model_title, model_name})
    if (!name.empty()) s.model_names.push_back(name);
  return s;
}

bool setting_used(const std::string& key) {
  const A1111Option* o = find_a1111_option(key);
  return o && o->use == OptionUse::Engine;
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
  const A1111Option* option = find_a1111_option(key);
  if (!option) return key + ": not a setting of this engine nor of AUTOMATIC1111";
  if (option->use == OptionUse::NoMeaning) return "";
  // JSON equality: 1 and 1.0 are the same value, as A1111's settings compare them.
  const nlohmann::json& current = settings.values.contains(key) ? settings.values[key] : option->a1111_default;
  if (value == current) return "";
  if (option->use == OptionUse::DefaultOnly) {
    if (value == option->a1111_default) return "";
    return key + ": not supported: " + dump(value) + " asks for what this engine does not do (accepted: " +
           dump(option->a1111_default) + ", A1111's default)";
  }
  return key + ": " + dump(value) + " is not the current value " + dump(current) +
         " (this engine's own; the settings are read-only here)";
}

}  // namespace moss
