// The settings an A1111 server reports at GET /sdapi/v1/options (every A1111 setting of
// frontend/a1111_options.h at its default, this engine's own values over them), and the one rule
// for a client that asks to change them (POST /options, a txt2img body's override_settings):
// nothing can change here. A setting with no meaning for MOSS-Image (saving, the SD text encoder,
// img2img, ...) is accepted at any value and not used; one whose other values ask for what this
// engine does not do is accepted at A1111's default (or the value reported here); one this engine
// honours (the model, the image format, the record) only at its value. Any other value, or a name
// A1111 does not have, is refused naming it.
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

// Whether this engine reads setting `key` (the others are listed as not used in a reply's info).
bool setting_used(const std::string& key);

// Empty when setting `key` may be given `value` (it already holds it); else why not, starting
// with the key ("CLIP_stop_at_last_layers: 2 is not the current value 1 (...)").
std::string setting_refusal(const A1111Settings& settings, const std::string& key, const nlohmann::json& value);

}  // namespace moss
