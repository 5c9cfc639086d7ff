#include "cli/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "io/image_files.h"
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
  PngImage png;
  try {
    png = read_png(path);
  } catch (const Error& e) {
    throw usage_error(flag + " " + path + ": " + e.what());
  }
  for (const PngText& t : png.text) {
    if (t.key != "generation") continue;
    nlohmann::json j = nlohmann::json::parse(t.value, nullptr, false);
    if (!j.is_object()) throw usage_error(flag + " " + path + ": its generation record is not a JSON object");
    return j;
  }
  throw usage_error(flag + " " + path +
                    ": no generation record (written with --no-metadata, or not by moss-infer-hip)");
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
    throw usage_error(flag + " " + path + ": record field '" + field + "': " + e.what());
  }
}

}  // namespace

std::vector<std::string> expand_replay(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  std::string flag, path;
  std::set<std::string> given;  // option names on the command line
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const size_t eq = name.rfind("--", 0) == 0 ? name.find('=') : std::string::npos;
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (!is_replay_flag(name)) {
      if (name.size() > 1 && name[0] == '-') given.insert(name);
      rest.push_back(args[i]);
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
  // --size stands for both sides; --prompt-file / --negative-file for the texts.
  if (given.count("--size")) given.insert({"--width", "--height"});
  if (given.count("--prompt-file")) given.insert("--prompt");
  if (given.count("--negative-file")) given.insert("--negative");
  std::vector<std::string> out;
  for (const auto& [field, option] : kRecordFlags) {
    if (given.count(option) || !record.contains(field) || record[field].is_null()) continue;
    out.push_back(option);
    out.push_back(record_value(flag, path, field, record[field]));
  }
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

}  // namespace moss
