#include "frontend/a1111_request.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "cli/batch.h"

namespace moss {
namespace {

using json = nlohmann::json;

enum class Kind { Text, Number, Layers };

struct Field {
  const char* name;  // in the body
  const char* flag;  // on the command line
  Kind kind;
};
// The body fields that carry a setting; A1111's names, then this engine's own.
const Field kFields[] = {
    {"prompt", "--prompt", Kind::Text},         {"negative_prompt", "--negative", Kind::Text},
    {"steps", "--steps", Kind::Number},         {"cfg_scale", "--cfg", Kind::Number},
    {"width", "--width", Kind::Number},         {"height", "--height", Kind::Number},
    {"seed", "--seed", Kind::Number},           {"shift", "--shift", Kind::Number},
    {"skip_layers", "--skip-layers", Kind::Layers}, {"max_seq", "--max-seq", Kind::Number},
    {"tier", "--tier", Kind::Text},             {"output", "-o", Kind::Text},
};

RequestError refuse(const std::string& field, const std::string& why) {
  return RequestError(422, field, field + ": not supported: " + why);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

bool is_empty_value(const json& v) {
  return v.is_null() || (v.is_string() && v.get<std::string>().empty()) || (v.is_array() && v.empty()) ||
         (v.is_object() && v.empty());
}
bool is_false(const json& v) { return v.is_null() || (v.is_boolean() && !v.get<bool>()); }
bool is_zero(const json& v) { return v.is_null() || (v.is_number() && v.get<double>() == 0); }
bool is_not_positive(const json& v) { return v.is_null() || (v.is_number() && v.get<double>() <= 0); }

// Fields that ask for a feature when they leave their neutral value.
struct Neutral {
  const char* name;
  bool (*neutral)(const json&);
  const char* what;
};
const Neutral kNeutral[] = {
    {"enable_hr", is_false, "hires fix"},
    {"restore_faces", is_false, "face restoration"},
    {"tiling", is_false, "tiling"},
    {"styles", is_empty_value, "styles"},
    {"alwayson_scripts", is_empty_value, "scripts"},
    {"script_name", is_empty_value, "scripts"},
    {"script_args", is_empty_value, "scripts"},
    {"subseed_strength", is_zero, "variation seeds"},
    {"seed_resize_from_h", is_not_positive, "seed resize"},
    {"seed_resize_from_w", is_not_positive, "seed resize"},
    {"s_churn", is_zero, "stochastic sampling (s_churn)"},
    {"save_images", is_false, "saving images on the server (they come back in the answer)"},
    {"init_images", is_empty_value, "img2img"},
    {"mask", is_empty_value, "inpainting"},
    {"infotext", is_empty_value, "infotext (send the fields it holds)"},
};

// A1111's precedence: sampler_name when given, else sampler_index; Euler (or k_euler) only.
void check_sampler(const json& body) {
  const char* field = nullptr;
  for (const char* f : {"sampler_name", "sampler_index"}) {
    if (body.contains(f) && !is_empty_value(body[f])) {
      field = f;
      break;
    }
  }
  if (!field) return;
  const json& v = body[field];
  if (!v.is_string()) throw RequestError(422, field, std::string(field) + ": expected a sampler name");
  const std::string name = lower(v.get<std::string>());
  if (name != "euler" && name != "k_euler")
    throw refuse(field, "sampler '" + v.get<std::string>() + "' (only Euler runs)");
}

void check_scheduler(const json& body) {
  if (!body.contains("scheduler") || is_empty_value(body["scheduler"])) return;
  const json& v = body["scheduler"];
  if (!v.is_string() || lower(v.get<std::string>()) != "automatic")
    throw refuse("scheduler", "scheduler " + v.dump() + " (only the official schedule runs: \"automatic\")");
}

void check_refiner(const json& body) {
  if (!body.contains("refiner_checkpoint")) return;
  const json& v = body["refiner_checkpoint"];
  if (is_empty_value(v) || (v.is_string() && lower(v.get<std::string>()) == "none")) return;
  throw refuse("refiner_checkpoint", "refiners");
}

// Extra networks in the prompt (<lora:name:1>): A1111 reads them unless disable_extra_networks.
void check_extra_networks(const json& body) {
  if (body.contains("disable_extra_networks") && body["disable_extra_networks"].is_boolean() &&
      body["disable_extra_networks"].get<bool>())
    return;
  for (const char* field : {"prompt", "negative_prompt"}) {
    if (!body.contains(field) || !body[field].is_string()) continue;
    const std::string text = lower(body[field].get<std::string>());
    for (const char* tag : {"<lora:", "<lyco:", "<hypernet:"})
      if (text.find(tag) != std::string::npos)
        throw refuse(field, std::string("extra networks (") + tag + "...>: LoRAs)");
  }
}

// Nothing can change here: an override is accepted only when it asks for what already holds.
void check_override_settings(const json& body) {
  if (!body.contains("override_settings") || is_empty_value(body["override_settings"])) return;
  const json& v = body["override_settings"];
  if (!v.is_object()) throw RequestError(422, "override_settings", "override_settings: expected an object");
  throw refuse("override_settings." + v.begin().key(), "changing settings (they are read-only here)");
}

int64_t count_field(const json& body, const char* field) {
  if (!body.contains(field) || body[field].is_null()) return 1;
  const json& v = body[field];
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxImagesPerRequest)
    throw RequestError(422, field,
                       std::string(field) + " " + v.dump() + ": must be an integer from 1 to " +
                           std::to_string(kMaxImagesPerRequest));
  return v.get<int64_t>();
}

std::string field_value(const Field& f, const json& v) {
  const std::string name = f.name;
  if (f.kind == Kind::Text) {
    if (!v.is_string()) throw RequestError(422, name, name + ": expected a string, got " + v.type_name());
    return v.get<std::string>();
  }
  if (f.kind == Kind::Layers && v.is_array()) {
    std::string list;
    for (const json& layer : v) {
      if (!layer.is_number_integer())
        throw RequestError(422, name, name + ": expected block numbers, got " + layer.dump());
      list += (list.empty() ? "" : ",") + json_flag_value(layer);
    }
    return list;
  }
  if (f.kind == Kind::Layers && v.is_string()) return v.get<std::string>();
  if (!v.is_number())
    throw RequestError(422, name, name + ": expected a number, got " + std::string(v.type_name()) + " " + v.dump());
  return json_flag_value(v);
}

}  // namespace

RequestError request_error(const Error& e) {
  const std::string msg = e.what();
  for (const Field& f : kFields) {
    const std::string flag = f.flag;
    if (msg.compare(0, flag.size(), flag) == 0 && (msg.size() == flag.size() || msg[flag.size()] == ' ' ||
                                                    msg[flag.size()] == ':'))
      return RequestError(422, f.name, f.name + msg.substr(flag.size()));
  }
  if (msg.rfind("size ", 0) == 0) return RequestError(422, "width", "width, height: " + msg);
  return RequestError(422, "", msg);
}

A1111Request parse_a1111_request(const json& body, const FlagValues& defaults, const std::string& model,
                                 bool allow_output) {
  if (!body.is_object())
    throw RequestError(400, "", std::string("the body must be a JSON object, got ") + body.type_name());
  for (const Neutral& n : kNeutral)
    if (body.contains(n.name) && !n.neutral(body[n.name])) throw refuse(n.name, n.what);
  check_sampler(body);
  check_scheduler(body);
  check_refiner(body);
  check_extra_networks(body);
  check_override_settings(body);
  if (!allow_output && body.contains("output") && !body["output"].is_null())
    throw refuse("output", "writing files on the server (the images come back in the answer)");

  FlagValues flags = defaults;
  for (const Field& f : kFields)
    if (body.contains(f.name) && !body[f.name].is_null()) flags[f.flag] = field_value(f, body[f.name]);
  const int64_t count = count_field(body, "batch_size") * count_field(body, "n_iter");
  if (count > kMaxImagesPerRequest)
    throw RequestError(422, "n_iter", "n_iter: batch_size × n_iter is " + std::to_string(count) + " images, at most " +
                                          std::to_string(kMaxImagesPerRequest) + " per request");

  A1111Request out;
  try {
    out.options = parse_generation_flags(model, flags);
  } catch (const Error& e) {
    throw request_error(e);
  }
  if (body.contains("send_images") && body["send_images"].is_boolean())
    out.send_images = body["send_images"].get<bool>();
  for (int64_t i = 0; i < count; ++i) {
    GenerationRequest r = request_from_options(out.options);
    r.seed = out.options.seed + uint64_t(i);
    try {
      r.output_png = numbered_output("-o", out.options.output_png, i + 1, count);
    } catch (const Error& e) {
      throw request_error(e);
    }
    out.images.push_back(std::move(r));
  }
  return out;
}

}  // namespace moss
