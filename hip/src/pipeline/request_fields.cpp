#include "pipeline/request_fields.h"

#include <cstdint>

#include <cmath>
#include <set>

#include "pipeline/sampler.h"
#include "pipeline/schedule.h"
#include "tokenizer/utf8.h"
#include "util/numbers.h"
#include "util/random_seed.h"

namespace moss {
namespace {

using json = nlohmann::json;

enum class Kind { Text, Side, Integer, Decimal, Seed, Layers, Tier, Choice, Lora };

struct Spec {
  FieldNames names;
  Kind kind;
  double lo = 0, hi = 0;
  const char* range = "";  // a decimal's accepted interval, in words
  bool lo_open = false;    // the bound lo itself is refused (a shift of 0)
};

const Spec kSpecs[] = {
    {{RequestField::Prompt, "prompt", "--prompt", "prompt"}, Kind::Text},
    {{RequestField::Negative, "negative_prompt", "--negative", "negative"}, Kind::Text},
    {{RequestField::Width, "width", "--width", "width"}, Kind::Side, 16, 4096},
    {{RequestField::Height, "height", "--height", "height"}, Kind::Side, 16, 4096},
    {{RequestField::Steps, "steps", "--steps", "steps"}, Kind::Integer, 1, 1000},
    {{RequestField::Cfg, "cfg_scale", "--cfg", "cfg"}, Kind::Decimal, 0, 100, "must be between 0 and 100"},
    {{RequestField::Shift, "shift", "--shift", "shift"}, Kind::Decimal, 0, 1000, "must be above 0 and at most 1000",
     true},
    {{RequestField::Seed, "seed", "--seed", "seed"}, Kind::Seed},
    {{RequestField::SkipLayers, "skip_layers", "--skip-layers", "skip_layers"}, Kind::Layers, 0, 1023},
    {{RequestField::MaxSeq, "max_seq", "--max-seq", "max_seq"}, Kind::Integer, 1, 32768},
    {{RequestField::Tier, "tier", "--tier", "tier"}, Kind::Tier},
    {{RequestField::Sampler, "sampler", "--sampler", "sampler"}, Kind::Choice},
    {{RequestField::Scheduler, "scheduler", "--scheduler", "scheduler"}, Kind::Choice},
    // Repeatable: each value adds a LoRA (FILE[:WEIGHT]); a body's and a record's value is the list.
    {{RequestField::Lora, "lora", "--lora", "loras"}, Kind::Lora, -100, 100, "must be between -100 and 100"},
};

const Spec& spec(RequestField f) {
  for (const Spec& s : kSpecs)
    if (s.names.field == f) return s;
  throw std::logic_error("request field without a table entry");
}

// A value as a message shows it: quoted, and short (a body's value can be megabytes).
std::string quoted(const std::string& text) {
  constexpr size_t kShown = 60;
  return " '" + (text.size() > kShown ? text.substr(0, kShown) + "..." : text) + "'";
}

std::string shown(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

FieldError wrong_type(const Spec& s, const char* wanted, const json& v) {
  std::string got = v.type_name();
  if (!v.is_object() && !v.is_array()) got += " " + shown(v).substr(0, 60);
  return FieldError(s.names.field, std::string(": expected ") + wanted + ", got " + got);
}

void store_int(GenerationRequest& r, const Spec& s, const ParsedInt& p, const std::string& text) {
  const int64_t lo = int64_t(s.lo), hi = int64_t(s.hi);
  if (p.error != NumberError::None) throw FieldError(s.names.field, quoted(text) + ": " + integer_problem(p, lo, hi));
  if (s.kind == Kind::Side && p.value % 8 != 0)
    throw FieldError(s.names.field, quoted(text) + ": image sides must be multiples of 16 (or of 8: centre-cropped)");
  // A multiple of 8 and not of 16: the next multiple of 16, cropped (check_request decides
  // whether this request may crop).
  const int64_t generated = p.value % 16 ? p.value + 8 : p.value, crop = p.value % 16 ? p.value : 0;
  switch (s.names.field) {
    case RequestField::Width: r.width = generated, r.crop_width = crop; break;
    case RequestField::Height: r.height = generated, r.crop_height = crop; break;
    case RequestField::Steps: r.steps = int(p.value); break;
    case RequestField::MaxSeq: r.max_seq = p.value; break;
    default: throw std::logic_error("not an integer field");
  }
}

void store_decimal(GenerationRequest& r, const Spec& s, const ParsedDecimal& p, const std::string& text) {
  if (p.error == NumberError::NotANumber)
    throw FieldError(s.names.field, quoted(text) + ": not a decimal number (digits with an optional fraction)");
  // The value the engine runs is a float: a positive double that rounds to 0 is refused too.
  if (p.error != NumberError::None || (s.lo_open && (p.value <= s.lo || float(p.value) <= float(s.lo))))
    throw FieldError(s.names.field, quoted(text) + ": " + s.range);
  (s.names.field == RequestField::Cfg ? r.cfg : r.shift) = float(p.value);
}

const char* const kSeedRange = "must be -1 or an integer from 0 to 18446744073709551615";

void store_seed(GenerationRequest& r, bool drawn, uint64_t seed) {
  r.seed_drawn = drawn;
  if (!drawn) r.seed = seed;
}

void store_tier(GenerationRequest& r, const std::string& text) {
  if (text != "reference") throw FieldError(RequestField::Tier, " " + text + ": not supported: only tier reference runs");
  r.tier = text;
}

// A sampler or schedule by its name, A1111 label or alias (any case); an unknown one is
// refused with the known names.
void store_choice(GenerationRequest& r, RequestField field, const std::string& text) {
  if (field == RequestField::Sampler) {
    if (const SamplerName* n = find_sampler(text)) {
      r.sampler = n->name;
      r.sampler_label = text == n->name ? n->label : text;
      return;
    }
    std::string known;
    for (const SamplerName& n : sampler_names()) known += std::string(known.empty() ? "" : ", ") + n.name;
    throw FieldError(field, quoted(text) + ": unknown sampler (known: " + known + ")");
  }
  if (const ScheduleName* n = find_schedule(text)) {
    r.scheduler = n->name;
    r.scheduler_label = text != n->name ? text : n->schedule == Schedule::Moss ? "MOSS-Image" : n->label;
    return;
  }
  std::string known;
  for (const ScheduleName& n : schedule_names()) known += std::string(known.empty() ? "" : ", ") + n.name;
  throw FieldError(field, quoted(text) + ": unknown scheduler (known: " + known + "; automatic is moss)");
}

// "1, 2,3": the blocks in order, repeats dropped; an empty list (or only blanks) skips none.
void store_layer_list(GenerationRequest& r, const Spec& s, const std::string& text) {
  std::vector<int> layers;
  std::set<int> uniq;
  const bool blank = text.find_first_not_of(' ') == std::string::npos;
  std::string item;
  for (size_t p = 0; p <= text.size(); ++p) {
    if (p < text.size() && text[p] != ',') {
      item += text[p];
      continue;
    }
    const size_t a = item.find_first_not_of(' '), b = item.find_last_not_of(' ');
    const std::string t = a == std::string::npos ? "" : item.substr(a, b - a + 1);
    item.clear();
    if (t.empty()) {
      if (!blank) throw FieldError(s.names.field, quoted(text) + ": empty entry in the comma list");
      continue;
    }
    const ParsedInt layer = parse_strict_int(t, int64_t(s.lo), int64_t(s.hi));
    if (layer.error != NumberError::None)
      throw FieldError(s.names.field, quoted(t) + ": " + integer_problem(layer, int64_t(s.lo), int64_t(s.hi)));
    if (uniq.insert(int(layer.value)).second) layers.push_back(int(layer.value));
  }
  r.skip_layers = layers;
  r.skip_layers_text = text;
}

void add_lora(GenerationRequest& r, const Spec& s, LoraChoice c, const std::string& shown_as) {
  if (int(r.loras.size()) >= kMaxLoras)
    throw FieldError(s.names.field, quoted(shown_as) + ": at most " + std::to_string(kMaxLoras) + " LoRAs a request");
  if (c.path.empty() && c.name.empty()) throw FieldError(s.names.field, quoted(shown_as) + ": empty LoRA file name");
  if (c.name.empty()) {
    c.name = c.path.substr(c.path.find_last_of('/') + 1);
    if (c.name.size() > 12 && c.name.compare(c.name.size() - 12, 12, ".safetensors") == 0) c.name.resize(c.name.size() - 12);
  }
  r.loras.push_back(std::move(c));
}

// "FILE[:WEIGHT]": the text after the last colon is the weight when it reads as a number.
void store_lora_text(GenerationRequest& r, const Spec& s, const std::string& text) {
  LoraChoice c;
  c.path = text;
  const size_t colon = text.find_last_of(':');
  if (colon != std::string::npos && colon + 1 < text.size()) {
    const std::string w = text.substr(colon + 1);
    const ParsedDecimal p = parse_strict_decimal(w, s.lo, s.hi);
    if (p.error == NumberError::OutOfRange) throw FieldError(s.names.field, quoted(text) + ": the weight " + s.range);
    if (p.error == NumberError::None) {
      c.path = text.substr(0, colon);
      c.weight = float(p.value);
    }
  }
  add_lora(r, s, std::move(c), text);
}

ParsedInt json_int(const json& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u > uint64_t(INT64_MAX) ? ParsedInt{0, NumberError::OutOfRange} : checked_int(int64_t(u), lo, hi);
  }
  if (v.is_number_integer()) return checked_int(v.get<int64_t>(), lo, hi);
  return checked_int(v.get<double>(), lo, hi);
}

}  // namespace

FieldError::FieldError(RequestField f, const std::string& problem)
    : FieldError(f, field_names(f).flag + problem, field_names(f).name + problem) {}

FieldError::FieldError(RequestField f, std::string cli_text, std::string body_text)
    : std::runtime_error(body_text), field(f), cli(std::move(cli_text)), body(std::move(body_text)) {}

const std::vector<FieldNames>& request_fields() {
  static const std::vector<FieldNames> names = [] {
    std::vector<FieldNames> v;
    for (const Spec& s : kSpecs) v.push_back(s.names);
    return v;
  }();
  return names;
}

const FieldNames& field_names(RequestField field) { return spec(field).names; }

const FieldNames* find_field_by_flag(const std::string& flag) {
  for (const Spec& s : kSpecs)
    if (flag == s.names.flag) return &s.names;
  return nullptr;
}

void set_field(GenerationRequest& r, RequestField field, const std::string& text) {
  const Spec& s = spec(field);
  switch (s.kind) {
    case Kind::Text: (field == RequestField::Prompt ? r.prompt : r.negative) = text; return;
    case Kind::Side:
    case Kind::Integer: return store_int(r, s, parse_strict_int(text, int64_t(s.lo), int64_t(s.hi)), text);
    case Kind::Decimal: return store_decimal(r, s, parse_strict_decimal(text, s.lo, s.hi), text);
    case Kind::Seed: {
      if (text == "-1") return store_seed(r, true, 0);
      const ParsedUint u = parse_strict_uint(text);
      if (u.error != NumberError::None) throw FieldError(field, quoted(text) + ": " + kSeedRange);
      return store_seed(r, false, u.value);
    }
    case Kind::Layers: return store_layer_list(r, s, text);
    case Kind::Tier: return store_tier(r, text);
    case Kind::Lora: return store_lora_text(r, s, text);
    case Kind::Choice: return store_choice(r, field, text);
  }
}

void set_field(GenerationRequest& r, RequestField field, const json& v) {
  if (v.is_null()) return;
  const Spec& s = spec(field);
  switch (s.kind) {
    case Kind::Text:
    case Kind::Tier:
    case Kind::Choice:
      if (!v.is_string()) throw wrong_type(s, "a string", v);
      return set_field(r, field, v.get<std::string>());
    case Kind::Side:
    case Kind::Integer:
      if (!v.is_number()) throw wrong_type(s, "a number", v);
      return store_int(r, s, json_int(v, int64_t(s.lo), int64_t(s.hi)), shown(v));
    case Kind::Decimal:
      if (!v.is_number()) throw wrong_type(s, "a number", v);
      return store_decimal(r, s, checked_decimal(v.get<double>(), s.lo, s.hi), shown(v));
    case Kind::Seed: {
      if (!v.is_number()) throw wrong_type(s, "a number", v);
      if (v.is_number_unsigned()) return store_seed(r, false, v.get<uint64_t>());
      if (v.is_number_integer()) {
        const int64_t i = v.get<int64_t>();
        if (i >= 0) return store_seed(r, false, uint64_t(i));
        if (i == -1) return store_seed(r, true, 0);
      } else {
        const double d = v.get<double>();  // a float that holds a whole number: 1234.0, -1.0
        if (d == -1.0) return store_seed(r, true, 0);
        if (d >= 0 && d < 18446744073709551616.0 && !std::signbit(d) && d == std::trunc(d))
          return store_seed(r, false, uint64_t(d));
      }
      throw FieldError(field, quoted(shown(v)) + ": " + kSeedRange);
    }
    case Kind::Layers: {
      if (v.is_string()) return store_layer_list(r, s, v.get<std::string>());
      if (!v.is_array()) throw wrong_type(s, "a list of block numbers", v);
      std::string list;
      for (const json& layer : v) {
        if (!layer.is_number()) throw wrong_type(s, "block numbers", layer);
        const ParsedInt p = json_int(layer, int64_t(s.lo), int64_t(s.hi));
        if (p.error != NumberError::None)
          throw FieldError(field, quoted(shown(layer)) + ": " + integer_problem(p, int64_t(s.lo), int64_t(s.hi)));
        list += (list.empty() ? "" : ",") + std::to_string(p.value);
      }
      return store_layer_list(r, s, list);
    }
    case Kind::Lora: {
      // A list of "NAME[:WEIGHT]" strings or {"name"|"path", "weight", "hash"} objects (a record's).
      if (!v.is_array()) throw wrong_type(s, "a list of LoRAs", v);
      r.loras.clear();
      for (const json& item : v) {
        if (item.is_string()) {
          store_lora_text(r, s, item.get<std::string>());
          continue;
        }
        if (!item.is_object()) throw wrong_type(s, "LoRA names or objects", item);
        LoraChoice c;
        for (const char* key : {"name", "path", "hash"}) {
          auto it = item.find(key);
          if (it == item.end() || it->is_null()) continue;
          if (!it->is_string()) throw wrong_type(s, "a string", *it);
          (key[0] == 'n' ? c.name : key[0] == 'p' ? c.path : c.hash) = it->get<std::string>();
        }
        if (auto it = item.find("weight"); it != item.end() && !it->is_null()) {
          if (!it->is_number()) throw wrong_type(s, "a number", *it);
          const ParsedDecimal p = checked_decimal(it->get<double>(), s.lo, s.hi);
          if (p.error != NumberError::None) throw FieldError(field, quoted(shown(*it)) + ": the weight " + s.range);
          c.weight = float(p.value);
        }
        add_lora(r, s, std::move(c), shown(item));
      }
      return;
    }
  }
}

void check_request(const GenerationRequest& r) {
  for (RequestField f : {RequestField::Width, RequestField::Height}) {
    const int64_t crop = f == RequestField::Width ? r.crop_width : r.crop_height;
    const int64_t generated = f == RequestField::Width ? r.width : r.height;
    if (crop && !r.crop_to_size)
      throw FieldError(f, " '" + std::to_string(crop) + "': image sides must be multiples of 16 (--crop-to-size " +
                              "generates " + std::to_string(generated) + " and centre-crops it to " +
                              std::to_string(crop) + ")");
  }
  if (r.width * r.height > 4200000) {
    const std::string size = "size " + std::to_string(r.width) + "x" + std::to_string(r.height) + ": above 4.2 megapixels";
    throw FieldError(RequestField::Width, size, "width, height: " + size);
  }
  for (RequestField f : {RequestField::Prompt, RequestField::Negative}) {
    const size_t bad = find_invalid_utf8(f == RequestField::Prompt ? r.prompt : r.negative);
    if (bad != std::string::npos) throw FieldError(f, ": not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
}

void check_batch_seeds(uint64_t seed, int64_t count) {
  if (count <= 1 || uint64_t(count - 1) <= UINT64_MAX - seed) return;
  throw FieldError(RequestField::Seed, " '" + std::to_string(seed) + "': " + std::to_string(count) +
                                           " images take the seeds " + std::to_string(seed) + " to " +
                                           std::to_string(seed) + " + " + std::to_string(count - 1) +
                                           ", past the largest seed 18446744073709551615");
}

void draw_seed_if_asked(GenerationRequest& r) {
  if (r.seed_drawn) r.seed = draw_random_seed();
}

}  // namespace moss
