#include "cli/request_flags.h"

#include <cstdio>
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

// %.9g reads back as the same float, which is what the options hold.
static std::string float_text(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", double(v));
  return b;
}

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
    char b[40];
    std::snprintf(b, sizeof b, "%.17g", v.get<double>());  // reads back as the same double
    return b;
  }
  throw std::invalid_argument(std::string("expected a ") + "number or a string, got " + v.type_name());
}

}  // namespace moss
