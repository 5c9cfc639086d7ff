// The one table of AUTOMATIC1111's settings (its modules/shared_options.py): each one's A1111
// default and what it means here, which decides what override_settings and POST /options accept
// (frontend/a1111_settings.h). Kept in one place: a new A1111 option a client sends is one line.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moss {

enum class OptionUse {
  NoMeaning,    // nothing here reads it (saving, the SD text encoder, img2img, ...): any value, not used
  DefaultOnly,  // its other values ask for what this engine does not do: A1111's default only, not used
  Engine,       // this engine honours it: only the engine's own value
};

struct A1111Option {
  std::string name;
  nlohmann::json a1111_default;
  OptionUse use;
};

const std::vector<A1111Option>& a1111_options();
const A1111Option* find_a1111_option(const std::string& name);  // nullptr: not an A1111 setting

}  // namespace moss
