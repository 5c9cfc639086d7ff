// The settings an A1111 server reports at GET /sdapi/v1/options, as this engine holds them, and
// the one rule for a client that asks to change them (POST /options, a txt2img body's
// override_settings): nothing can change here, so a value equal to the current one is accepted
// (it changes nothing, as in A1111) and any other value, or a setting this engine does not have,
// is refused naming it.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moss {

struct A1111Settings {
  nlohmann::json values = nlohmann::json::object();  // what GET /options answers
  // The names the loaded model answers to in sd_model_checkpoint: its title (/sd-models), its
  // model_name (the folder's name). Empty before a model is loaded.
  std::vector<std::string> model_names;
};

// A1111's model_name of a model folder: its last component ("models/tiny-moss/" -> "tiny-moss").
std::string model_folder_name(const std::string& folder);

// `model_title` (pipeline/moss_model.h's moss_model_title, the server's and a jobs file's alike)
// and `model_name` are the names sd_model_checkpoint is accepted by; either may be empty.
A1111Settings a1111_settings(const std::string& model_title, const std::string& model_name, bool metadata);

// Empty when setting `key` may be given `value` (it already holds it); else why not, starting
// with the key ("CLIP_stop_at_last_layers: 2 is not the current value 1 (...)").
std::string setting_refusal(const A1111Settings& settings, const std::string& key, const nlohmann::json& value);

}  // namespace moss
