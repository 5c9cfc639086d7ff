#include "frontend/a1111_request.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "cli/batch.h"
#include "frontend/lora_library.h"
#include "pipeline/request_fields.h"
#include "util/ascii_case.h"
#include "util/numbers.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"

namespace moss {
namespace {

using json = nlohmann::json;

// The JSON types of A1111's txt2img fields (its StableDiffusionTxt2ImgProcessingAPI), of the
// img2img fields a confused client may send, and of this engine's own.
enum class Type { String, Integer, Number, Boolean, Array, Object, Layers };
struct Known {
  const char* name;
  Type type;
};
const Known kKnown[] = {
    {"prompt", Type::String}, {"negative_prompt", Type::String}, {"styles", Type::Array},
    {"seed", Type::Integer}, {"subseed", Type::Integer}, {"subseed_strength", Type::Number},
    {"seed_resize_from_h", Type::Integer}, {"seed_resize_from_w", Type::Integer},
    {"sampler_name", Type::String}, {"sampler_index", Type::String}, {"scheduler", Type::String},
    {"batch_size", Type::Integer}, {"n_iter", Type::Integer}, {"steps", Type::Integer},
    {"cfg_scale", Type::Number}, {"width", Type::Integer}, {"height", Type::Integer},
    {"restore_faces", Type::Boolean}, {"tiling", Type::Boolean}, {"do_not_save_samples", Type::Boolean},
    {"do_not_save_grid", Type::Boolean}, {"eta", Type::Number}, {"denoising_strength", Type::Number},
    {"s_min_uncond", Type::Number}, {"s_churn", Type::Number}, {"s_tmax", Type::Number},
    {"s_tmin", Type::Number}, {"s_noise", Type::Number}, {"override_settings", Type::Object},
    {"override_settings_restore_afterwards", Type::Boolean}, {"refiner_checkpoint", Type::String},
    {"refiner_switch_at", Type::Number}, {"disable_extra_networks", Type::Boolean},
    {"firstpass_image", Type::String}, {"comments", Type::Object}, {"enable_hr", Type::Boolean},
    {"firstphase_width", Type::Integer}, {"firstphase_height", Type::Integer}, {"hr_scale", Type::Number},
    {"hr_upscaler", Type::String}, {"hr_second_pass_steps", Type::Integer}, {"hr_resize_x", Type::Integer},
    {"hr_resize_y", Type::Integer}, {"hr_checkpoint_name", Type::String}, {"hr_sampler_name", Type::String},
    {"hr_scheduler", Type::String}, {"hr_prompt", Type::String}, {"hr_negative_prompt", Type::String},
    {"hr_additional_modules", Type::Array}, {"force_task_id", Type::String}, {"script_name", Type::String},
    {"script_args", Type::Array}, {"send_images", Type::Boolean}, {"save_images", Type::Boolean},
    {"alwayson_scripts", Type::Object}, {"infotext", Type::String},
    {"init_images", Type::Array}, {"mask", Type::String},
    {"shift", Type::Number}, {"skip_layers", Type::Layers}, {"max_seq", Type::Integer},
    {"tier", Type::String}, {"output", Type::String}, {"sampler", Type::String},
};

bool has_type(const json& v, Type t) {
  switch (t) {
    case Type::String: return v.is_string();
    case Type::Integer: return v.is_number();  // a whole number: checked by the field's own limits
    case Type::Number: return v.is_number();
    case Type::Boolean: return v.is_boolean();
    case Type::Array: return v.is_array();
    case Type::Object: return v.is_object();
    case Type::Layers: return v.is_array() || v.is_string();
  }
  return false;
}

const char* type_words(Type t) {
  switch (t) {
    case Type::String: return "a string";
    case Type::Integer: return "a number";
    case Type::Number: return "a number";
    case Type::Boolean: return "true or false";
    case Type::Array: return "a list";
    case Type::Object: return "an object";
    case Type::Layers: return "a list of block numbers";
  }
  return "";
}

std::string shown(const json& v) {
  if (v.is_object() || v.is_array()) return v.type_name();
  return std::string(v.type_name()) + " " + v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 60);
}

bool is_request_setting(const char* name) {
  for (const FieldNames& f : request_fields())
    if (std::string(f.name) == name) return true;
  return false;
}

std::string trimmed(const std::string& text) {
  const char* blanks = " \t\n\r\f\v";
  const size_t a = text.find_first_not_of(blanks);
  if (a == std::string::npos) return "";
  return text.substr(a, text.find_last_not_of(blanks) - a + 1);
}

// A1111's API models are pydantic 1 models, which convert text to the field's type: "7.0" for a
// float field, "-1" for an integer, "true" / "no" / 1 for a boolean (blanks around it and a '+'
// allowed, as Python's int() and float() allow them). The same conversion here, with the one
// number parser's refusals (util/numbers.h): text that is not a number, NaN and infinities, a
// fraction where an integer goes. Returns the value converted, or null when `v` is not text to
// convert; throws the field's 422 when it is text that does not convert.
json converted(const Known& k, const json& v) {
  if (v.is_string() && (k.type == Type::Integer || k.type == Type::Number)) {
    std::string t = trimmed(v.get<std::string>());
    if (!t.empty() && t[0] == '+') t.erase(0, 1);
    const std::string shown_text = " '" + v.get<std::string>().substr(0, 60) + "'";
    if (k.type == Type::Integer) {
      if (!t.empty() && t[0] != '-') {
        const ParsedUint u = parse_strict_uint(t);
        if (u.error == NumberError::None) return json(u.value);
      }
      const ParsedInt i = parse_strict_int(t, INT64_MIN, INT64_MAX);
      if (i.error == NumberError::None) return json(i.value);
      throw RequestError(422, k.name, std::string(k.name) + shown_text + ": not an integer");
    }
    const ParsedDecimal d = parse_strict_decimal(t, -DBL_MAX, DBL_MAX);
    if (d.error == NumberError::None) return json(d.value);
    throw RequestError(422, k.name,
                       std::string(k.name) + shown_text + ": not a decimal number (digits with an optional fraction)");
  }
  if (k.type == Type::Boolean && (v.is_string() || v.is_number_integer())) {
    const std::string t = v.is_string() ? ascii_lowercase(trimmed(v.get<std::string>())) : v.dump();
    for (const char* yes : {"1", "on", "t", "true", "y", "yes"})
      if (t == yes) return json(true);
    for (const char* no : {"0", "off", "f", "false", "n", "no"})
      if (t == no) return json(false);
  }
  return json();
}

// Every known field's type, before anything else is looked at; null is a field's default. Text
// converts as in A1111 (above). An integer field's fraction is refused here too, but for the
// request's settings, whose own checks say it with their limits ("steps '7.5': not an integer").
json checked_types(const json& original) {
  json body = original;
  for (const Known& k : kKnown) {
    const auto it = body.find(k.name);
    if (it == body.end() || it->is_null()) continue;
    const json conversion = converted(k, *it);
    if (!conversion.is_null()) *it = conversion;
    if (!has_type(*it, k.type))
      throw RequestError(422, k.name, std::string(k.name) + ": expected " + type_words(k.type) + ", got " + shown(*it));
    if (k.type == Type::Integer && it->is_number_float() && !is_request_setting(k.name) &&
        it->get<double>() != std::trunc(it->get<double>()))
      throw RequestError(422, k.name, std::string(k.name) + ": expected an integer, got " + shown(*it));
  }
  // styles: a list of names (A1111's List[str]); none exists here (GET /prompt-styles is empty),
  // and A1111 skips a name it does not know, "None" included.
  const json styles = body.value("styles", json());
  if (styles.is_array())
    for (const json& name : styles)
      if (!name.is_string()) throw RequestError(422, "styles", "styles: expected a list of names, got " + shown(name));
  return body;
}

RequestError refuse(const std::string& field, const std::string& why) {
  return RequestError(422, field, field + ": not supported: " + why);
}

// The field's value, null where the body has none (the types are checked already).
json field(const json& body, const char* name) {
  const auto it = body.find(name);
  return it == body.end() ? json() : *it;
}

bool is_empty_value(const json& v) {
  return v.is_null() || (v.is_string() && v.get<std::string>().empty()) || (v.is_array() && v.empty()) ||
         (v.is_object() && v.empty());
}
bool is_false(const json& v) { return v.is_null() || !v.get<bool>(); }
bool any_bool(const json&) { return true; }
bool is_zero(const json& v) { return v.is_null() || v.get<double>() == 0; }
bool is_not_positive(const json& v) { return v.is_null() || v.get<double>() <= 0; }

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
    {"alwayson_scripts", is_empty_value, "scripts"},
    {"script_name", is_empty_value, "scripts"},
    {"script_args", is_empty_value, "scripts"},
    {"subseed_strength", is_zero, "variation seeds"},
    {"seed_resize_from_h", is_not_positive, "seed resize"},
    {"seed_resize_from_w", is_not_positive, "seed resize"},
    {"s_churn", is_zero, "stochastic sampling (s_churn)"},
    // A1111 saves to its outputs folder; this server keeps nothing on disk, whatever it is asked
    // (the images come back in the answer): true or false changes nothing a client sees.
    {"save_images", any_bool, ""},
    {"init_images", is_empty_value, "img2img"},
    {"mask", is_empty_value, "inpainting"},
    {"infotext", is_empty_value, "infotext (send the fields it holds)"},
};

// A1111's sampler_name (else sampler_index, its precedence), this engine's own "sampler", and
// "scheduler", set on the request: a name, A1111 label or alias ("DPM++ 2M", "k_dpmpp_2m"), or a
// combined name with its schedule ("DPM++ 2M Karras": the schedule when the body gives none).
// An unknown name is refused with the known ones; with serve --sampler-fallback euler it runs as
// Euler (an unknown scheduler as the MOSS-Image schedule) and the returned note says so.
std::string set_sampler_fields(const json& body, bool fallback, GenerationRequest& request) {
  std::string note;
  // A name the engine does not have: refused, or (the fallback) Euler / the MOSS-Image schedule.
  auto unknown = [&](RequestField rf, const std::string& f, const std::string& value, const std::string& problem) {
    if (!fallback) throw RequestError(422, f, f + " '" + value + "': " + problem);
    set_field(request, rf, json(rf == RequestField::Sampler ? "euler" : "moss"));
    note += (note.empty() ? "" : ", ") + f + " '" + value + "'";
  };
  // Sets the field; "" when it took the value, else the table's reason ("unknown scheduler (...)").
  auto set = [&](RequestField rf, const std::string& value) -> std::string {
    try {
      set_field(request, rf, json(value));
      return "";
    } catch (const FieldError& e) {
      return e.body.substr(e.body.find("': ") + 3);
    }
  };
  const json scheduler = field(body, "scheduler");
  // "automatic" with a combined name is A1111's legacy spelling: the name's schedule runs.
  const bool schedule_given = !is_empty_value(scheduler) && ascii_lowercase(scheduler.get<std::string>()) != "automatic";
  if (!is_empty_value(scheduler)) {
    const std::string problem = set(RequestField::Scheduler, scheduler.get<std::string>());
    if (!problem.empty()) unknown(RequestField::Scheduler, "scheduler", scheduler.get<std::string>(), problem);
  }
  for (const char* f : {"sampler_name", "sampler_index", "sampler"}) {
    const json v = field(body, f);
    if (is_empty_value(v)) continue;
    const std::string name = v.get<std::string>();
    if (set(RequestField::Sampler, name).empty()) break;
    // "DPM++ 2M Karras": a known sampler, a space, a schedule's label.
    bool combined = false;
    for (size_t sp = name.rfind(' '); sp != std::string::npos && sp > 0 && !combined; sp = name.rfind(' ', sp - 1)) {
      const ScheduleName* sch = find_schedule(name.substr(sp + 1));
      if (!sch || !find_sampler(name.substr(0, sp))) continue;
      set(RequestField::Sampler, name.substr(0, sp));
      request.sampler_label = name;
      if (!schedule_given) set(RequestField::Scheduler, sch->label);
      combined = true;
    }
    if (combined) break;
    std::string known;
    for (const SamplerName& n : sampler_names()) known += std::string(known.empty() ? "" : "\", \"") + n.label;
    unknown(RequestField::Sampler, f, name, "unknown sampler (known: \"" + known + "\", or their ComfyUI names, optionally followed by a schedule: \"DPM++ 2M Karras\")");
    break;
  }
  if (note.empty()) return note;
  return note + " ran as Euler with the MOSS-Image schedule (serve --sampler-fallback euler)";
}

void check_refiner(const json& body) {
  const json v = field(body, "refiner_checkpoint");
  if (is_empty_value(v) || ascii_lowercase(v.get<std::string>()) == "none") return;
  throw refuse("refiner_checkpoint", "refiners");
}

// Extra networks in the prompt: A1111 reads them unless disable_extra_networks. <lora:NAME:WEIGHT>
// (and <lyco:...>) tags are taken out of the prompt and name LoRAs of --lora-dir (an unknown one
// is refused naming it); in the negative prompt they are removed and ignored, with a note, as
// A1111 does. Hypernetworks are refused. Returns the prompt's LoRAs, in order.
std::vector<LoraChoice> take_extra_networks(json& body, const RequestContext& context, A1111Request& out) {
  std::vector<LoraChoice> chosen;
  if (field(body, "disable_extra_networks") == json(true)) return chosen;
  for (const char* name : {"prompt", "negative_prompt"}) {
    const json v = field(body, name);
    if (!v.is_string()) continue;
    std::string text = v.get<std::string>();
    if (ascii_lowercase(text).find("<hypernet:") != std::string::npos)
      throw refuse(name, "extra networks (<hypernet:...>: hypernetworks)");
    std::vector<LoraTag> tags;
    try {
      tags = take_lora_tags(text);
    } catch (const std::invalid_argument& e) {
      throw RequestError(422, name, std::string(name) + ": " + e.what());
    }
    if (tags.empty()) continue;
    body[name] = text;
    if (std::string(name) == "negative_prompt") {
      std::string list;
      for (const LoraTag& t : tags) list += (list.empty() ? "" : " ") + t.text;
      out.lora_note = "LoRA tags in the negative prompt are ignored, as A1111 does: " + list;
      continue;
    }
    for (const LoraTag& t : tags) {
      const std::string path = context.loras ? context.loras->find(t.name) : "";
      if (path.empty())
        throw RequestError(422, name,
                           std::string(name) + ": unknown LoRA '" + t.name + "' in " + t.text +
                               (context.loras ? " (GET /sdapi/v1/loras lists those of --lora-dir)"
                                              : " (no --lora-dir: this server has no LoRAs by name)"));
      chosen.push_back({path, t.name, t.weight, ""});
    }
  }
  return chosen;
}

// Nothing can change here: an override is accepted only when it asks for what already holds.
// What the override names that this engine does not read goes to `not_used`.
void check_override_settings(const json& body, const A1111Settings& settings, std::vector<std::string>& not_used) {
  const json v = field(body, "override_settings");
  if (v.is_null()) return;
  for (const auto& [key, value] : v.items()) {
    if (value.is_null()) continue;  // a client's unset entry (SillyTavern's sd_vae when none is chosen)
    const std::string why = setting_refusal(settings, key, value);
    if (!why.empty()) throw RequestError(422, "override_settings." + key, "override_settings." + why);
    if (!setting_used(key)) not_used.push_back("override_settings." + key);
  }
}

int64_t count_field(const json& body, const char* name) {
  const json v = field(body, name);
  if (v.is_null()) return 1;
  const double n = v.get<double>();
  if (n < 1 || n > double(kMaxImagesPerRequest))
    throw RequestError(422, name,
                       std::string(name) + " " + v.dump() + ": must be an integer from 1 to " +
                           std::to_string(kMaxImagesPerRequest));
  return int64_t(n);
}

// The depth limit: the parser's callback sees each container open with its depth.
struct TooDeep {};

}  // namespace

json parse_request_json(const std::string& text) {
  // The keys from the body down to the value being read: a number the library cannot hold (past
  // a double's range, 1e400) is refused naming its field, not as the library's own error.
  std::vector<std::string> path;
  const json::parser_callback_t limit = [&path](int depth, json::parse_event_t event, json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    if (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) path.emplace_back();
    if (event == json::parse_event_t::object_end || event == json::parse_event_t::array_end) {
      if (!path.empty()) path.pop_back();
    }
    if (event == json::parse_event_t::key && !path.empty() && parsed.is_string()) path.back() = parsed.get<std::string>();
    return true;
  };
  try {
    return json::parse(text, limit);
  } catch (const TooDeep&) {
    throw RequestError(400, "", "bad JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const json::parse_error& e) {
    throw RequestError(400, "", std::string("bad JSON: ") + e.what());
  } catch (const json::out_of_range&) {
    // The field: the keys of the path, the innermost named one last ("override_settings.x").
    std::string field;
    for (const std::string& key : path)
      if (!key.empty()) field += (field.empty() ? "" : ".") + key;
    throw RequestError(422, field,
                       (field.empty() ? std::string("a number") : field) +
                           ": the number is out of range (beyond a double's ±1.8e308, or not finite)");
  }
}

RequestError request_error(const Error& e) {
  const std::string msg = e.what();
  for (const FieldNames& f : request_fields()) {
    const std::string flag = f.flag;
    if (msg.compare(0, flag.size(), flag) == 0 &&
        (msg.size() == flag.size() || msg[flag.size()] == ' ' || msg[flag.size()] == ':'))
      return RequestError(422, f.name, f.name + msg.substr(flag.size()));
  }
  if (msg.rfind("size ", 0) == 0) return RequestError(422, "width", "width, height: " + msg);
  return RequestError(422, "", msg);
}

A1111Request parse_a1111_request(const json& original, const RequestContext& context) {
  if (!original.is_object())
    throw RequestError(400, "", std::string("the body must be a JSON object, got ") + original.type_name());
  const json body = checked_types(original);
  for (const Neutral& n : kNeutral)
    if (!n.neutral(field(body, n.name))) throw refuse(n.name, n.what);
  A1111Request out;
  check_refiner(body);
  json fields = body;  // the prompts less their LoRA tags
  const std::vector<LoraChoice> tagged = take_extra_networks(fields, context, out);
  check_override_settings(body, context.settings, out.not_used);
  for (const json& style : field(body, "styles"))
    out.not_used.push_back("styles." + style.get<std::string>().substr(0, 60));
  if (!context.allow_output && !field(body, "output").is_null())
    throw refuse("output", "writing files on the server (the images come back in the answer)");
  // A body's "lora" names files: a jobs line's (a local file) may, a client's may not.
  if (!context.allow_output && !field(body, "lora").is_null())
    throw refuse("lora", "LoRA files named by a client (the server reads no file a body names)");

  GenerationRequest request = context.defaults;
  try {
    for (const FieldNames& f : request_fields())
      if (f.field != RequestField::Sampler && f.field != RequestField::Scheduler)
        set_field(request, f.field, field(fields, f.name));
    out.sampler_note = set_sampler_fields(body, context.sampler_fallback, request);
    for (const LoraChoice& c : tagged) {
      if (int(request.loras.size()) >= kMaxLoras)
        throw FieldError(RequestField::Prompt, ": more than " + std::to_string(kMaxLoras) + " LoRAs");
      request.loras.push_back(c);
    }
    check_request(request);
  } catch (const FieldError& e) {
    throw RequestError(422, field_names(e.field).name, e.body);
  }
  if (!field(body, "output").is_null()) request.output_png = body["output"].get<std::string>();
  const std::string& png = request.output_png;
  const auto ends_with = [&](const char* suffix) {
    const std::string t = suffix;
    return png.size() > t.size() && png.compare(png.size() - t.size(), t.size(), t) == 0;
  };
  if (!png.empty() && !ends_with(".png") && !ends_with(".PNG"))
    throw RequestError(422, "output", "output '" + request.output_png + "': the image is written as PNG: give a .png file name");
  out.batch_size = count_field(body, "batch_size");
  const int64_t count = out.batch_size * count_field(body, "n_iter");
  if (count > kMaxImagesPerRequest)
    throw RequestError(422, "n_iter", "n_iter: batch_size × n_iter is " + std::to_string(count) + " images, at most " +
                                          std::to_string(kMaxImagesPerRequest) + " per request");
  if (!field(body, "send_images").is_null()) out.send_images = body["send_images"].get<bool>();
  draw_seed_if_asked(request);
  try {
    check_batch_seeds(request.seed, count);
  } catch (const FieldError& e) {
    throw RequestError(422, field_names(e.field).name, e.body);
  }

  for (int64_t i = 0; i < count; ++i) {
    GenerationRequest r = request;
    r.seed = request.seed + uint64_t(i);
    try {
      r.output_png = numbered_output("-o", request.output_png, i + 1, count);
    } catch (const Error& e) {
      throw request_error(e);
    }
    out.images.push_back(std::move(r));
  }

  // The known fields echoed (never the unknown ones: a client's data is not sent back unread),
  // with the values that ran.
  out.parameters = json::object();
  for (const Known& k : kKnown)
    if (body.contains(k.name) && k.type != Type::Object && k.type != Type::Array) out.parameters[k.name] = body[k.name];
  out.parameters["prompt"] = request.prompt;
  out.parameters["negative_prompt"] = request.negative;
  out.parameters["steps"] = request.steps;
  out.parameters["cfg_scale"] = request.cfg;
  out.parameters["width"] = request.output_width();
  out.parameters["height"] = request.output_height();
  out.parameters["seed"] = request.seed;
  out.parameters["sampler_name"] = request.sampler_label;
  out.parameters["scheduler"] = request.scheduler == "moss" ? "automatic" : request.scheduler;
  out.parameters["batch_size"] = out.batch_size;
  out.parameters["n_iter"] = count / out.batch_size;
  return out;
}

}  // namespace moss
