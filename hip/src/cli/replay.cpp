#include "cli/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "io/png_text.h"
#include "util/error.h"

namespace moss {
namespace {

// A record's JSON scalar as the flag's text: a string as it is, a number in the shortest plain
// decimal that reads back as the same double (the strict parser, util/numbers.h, reads no
// exponent). Throws std::invalid_argument for anything else.
std::string json_flag_value(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (!v.is_number_float()) throw std::invalid_argument(std::string("expected a number or a string, got ") + v.type_name());
  const double d = v.get<double>();
  char b[400];
  std::snprintf(b, sizeof b, "%.17g", d);
  if (!std::strchr(b, 'e') || !std::isfinite(d)) return b;
  const int exponent = int(std::floor(std::log10(std::fabs(d))));
  std::snprintf(b, sizeof b, "%.*f", std::max(0, 16 - exponent), d);
  std::string text = b;
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

bool is_replay_flag(const std::string& a) { return a == "--from-png" || a == "--replay"; }

// The record's fields and the flags they came from (pipeline/record.cpp writes them).
const std::pair<const char*, const char*> kRecordFlags[] = {
    {"prompt", "--prompt"}, {"negative", "--negative"}, {"seed", "--seed"},   {"steps", "--steps"},
    {"cfg", "--cfg"},       {"shift", "--shift"},       {"width", "--width"}, {"height", "--height"},
    {"max_seq", "--max-seq"}, {"tier", "--tier"},       {"skip_layers", "--skip-layers"},
};

nlohmann::json read_record(const std::string& flag, const std::string& path) {
  PngTextChunk record;
  try {
    record = read_png_text_chunk(path, "generation", kRecordLimit);
  } catch (const Error& e) {
    if (e.code() != ExitCode::Failure) throw;  // a signal's status stays what it is
    throw usage_error(flag + " " + path + ": " + e.what());
  }
  const std::string where = flag + " " + path + ": ";
  switch (record.status) {
    case PngTextStatus::Found: break;
    case PngTextStatus::Missing:
      throw usage_error(where + "no generation record (written with --no-metadata, or not by moss-infer-hip)");
    case PngTextStatus::Damaged: throw usage_error(where + "its generation record is damaged: " + record.detail);
    case PngTextStatus::Compressed:
      throw usage_error(where + "its generation record is compressed (moss-infer-hip writes it uncompressed)");
  }
  nlohmann::json j = nlohmann::json::parse(record.text, nullptr, false);
  if (!j.is_object()) throw usage_error(where + "its generation record is not a JSON object");
  return j;
}

std::string record_value(const std::string& flag, const std::string& path, const std::string& field,
                         const nlohmann::json& v) {
  try {
    if (field == "skip_layers" && v.is_array()) {
      std::string list;
      for (const nlohmann::json& layer : v) list += (list.empty() ? "" : ",") + json_flag_value(layer);
      return list;
    }
    return json_flag_value(v);
  } catch (const std::exception& e) {
    throw usage_error(flag + " " + path + ": the record's " + field + ": " + e.what());
  }
}

// The option names the command line gives, each option's value skipped (it is not an option,
// whatever it looks like). "--name=value" names --name.
std::set<std::string> given_options(const std::vector<std::string>& args) {
  std::set<std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') continue;  // a stray word: parse_args refuses it
    const size_t eq = a.rfind("--", 0) == 0 ? a.find('=') : std::string::npos;
    if (eq != std::string::npos) {
      given.insert(a.substr(0, eq));
      continue;
    }
    given.insert(a);
    if (option_takes_value(a)) ++i;
  }
  return given;
}

}  // namespace

Error ReplaySource::blame(const Error& e) const {
  const std::string msg = e.what();
  for (const auto& [option, field] : record_fields) {
    if (msg.compare(0, option.size(), option) != 0) continue;
    if (msg.size() > option.size() && msg[option.size()] != ' ' && msg[option.size()] != ':') continue;
    return Error(e.code(), flag + " " + path + ": the record's " + field + msg.substr(option.size()));
  }
  // The size check names both sides ("size 32x8192: above 4.2 megapixels").
  if (msg.rfind("size ", 0) == 0 && record_fields.count("--width") && record_fields.count("--height"))
    return Error(e.code(), flag + " " + path + ": the record's width and height: " + msg);
  return e;
}

std::vector<std::string> expand_replay(const std::vector<std::string>& args, ReplaySource* source) {
  std::vector<std::string> rest;
  std::string flag, path;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const size_t eq = name.rfind("--", 0) == 0 ? name.find('=') : std::string::npos;
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (!is_replay_flag(name)) {
      rest.push_back(args[i]);
      // An option's value is copied as it is, never read as --from-png.
      if (eq == std::string::npos && option_takes_value(name) && i + 1 < args.size()) rest.push_back(args[++i]);
      continue;
    }
    if (!flag.empty()) throw usage_error(name + " given twice");
    if (eq == std::string::npos) {
      if (i + 1 >= args.size()) throw usage_error(name + " needs a value");
      value = args[++i];
    }
    if (value.empty()) throw usage_error(name + ": empty path");
    flag = name;
    path = value;
  }
  if (flag.empty()) return args;

  const nlohmann::json record = read_record(flag, path);
  std::set<std::string> given = given_options(rest);
  // --size stands for both sides; --prompt-file / --negative-file for the texts.
  if (given.count("--size")) given.insert({"--width", "--height"});
  if (given.count("--prompt-file")) given.insert("--prompt");
  if (given.count("--negative-file")) given.insert("--negative");
  std::vector<std::string> out;
  ReplaySource found{flag, path, {}};
  for (const auto& [field, option] : kRecordFlags) {
    if (given.count(option) || !record.contains(field) || record[field].is_null()) continue;
    out.push_back(option);
    out.push_back(record_value(flag, path, field, record[field]));
    found.record_fields[option] = field;
  }
  out.insert(out.end(), rest.begin(), rest.end());
  if (source) *source = found;
  return out;
}

}  // namespace moss
