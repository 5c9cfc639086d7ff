#include "cli/request_flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace moss {

GenerationRequest request_from_options(const RunOptions& o) {
  GenerationRequest r;
  r.prompt = o.prompt;
  r.negative = o.negative;
  r.width = o.width;
  r.height = o.height;
  r.steps = o.steps;
  r.cfg = o.cfg;
  r.shift = o.shift;
  r.seed = o.seed;
  r.seed_drawn = o.random_seed;
  r.skip_layers = o.skip_layers;
  r.skip_layers_text = o.skip_layers_text;
  r.max_seq = o.max_seq;
  r.tier = o.tier;
  r.output_png = o.output_png;
  r.latent_out = o.latent_out;
  r.no_metadata = o.no_metadata;
  return r;
}

namespace {

// v with `digits` significant digits, in the only form the strict parser reads (util/numbers.h):
// digits with an optional fraction, never an exponent (%g writes 1e-05 for 0.00001).
std::string plain_decimal(double v, int digits) {
  char b[400];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  if (!std::strchr(b, 'e') || !std::isfinite(v)) return b;
  const int exponent = int(std::floor(std::log10(std::fabs(v))));
  std::snprintf(b, sizeof b, "%.*f", std::max(0, digits - 1 - exponent), v);
  std::string text = b;
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

// 9 significant digits read back as the same float, which is what the options hold.
std::string float_text(float v) { return plain_decimal(double(v), 9); }

}  // namespace

FlagValues generation_flags(const RunOptions& o) {
  return {{"--prompt", o.prompt},
          {"--negative", o.negative},
          {"--width", std::to_string(o.width)},
          {"--height", std::to_string(o.height)},
          {"--steps", std::to_string(o.steps)},
          {"--cfg", float_text(o.cfg)},
          {"--shift", float_text(o.shift)},
          {"--seed", o.random_seed ? "-1" : std::to_string(o.seed)},
          {"--skip-layers", o.skip_layers_text},
          {"--max-seq", std::to_string(o.max_seq)},
          {"--tier", o.tier}};
}

RunOptions parse_generation_flags(const std::string& model, const FlagValues& flags) {
  std::vector<std::string> argv = {"--model", model};
  for (const auto& [flag, value] : flags) {
    argv.push_back(flag);
    argv.push_back(value);
  }
  const bool writes = flags.count("-o") || flags.count("--latent-out");
  if (!writes) argv.insert(argv.end(), {"-o", "placeholder.png"});
  RunOptions o = parse_args(argv).run;
  if (!writes) o.output_png.clear();
  return o;
}

std::string json_flag_value(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    return plain_decimal(v.get<double>(), 17);  // reads back as the same double
  }
  throw std::invalid_argument(std::string("expected a ") + "number or a string, got " + v.type_name());
}

}  // namespace moss
