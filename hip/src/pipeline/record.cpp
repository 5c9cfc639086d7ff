#include "pipeline/record.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "util/version.h"

namespace moss {

std::string engine_version() {
  return std::string("moss-infer-hip ") + engine_semver() + " (git " + engine_git_hash() + ")";
}

// Shortest decimal that reads back as the same float, so records show "3" and "4.5".
static std::string num(double v) {
  char buf[32];
  for (int prec = 1; prec <= 9; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (float(std::strtod(buf, nullptr)) == float(v)) break;
  }
  return buf;
}

std::string record_json(const RunRecord& r) {
  const GenerationRequest& o = r.request;
  // An ordered object: the keys stay in this order in the record.
  const nlohmann::ordered_json j = {
      {"prompt", o.prompt}, {"negative", o.negative}, {"seed", o.seed}, {"steps", o.steps},
      {"steps_run", r.steps_run}, {"cfg", o.cfg}, {"shift", o.shift}, {"skip_layers", o.skip_layers},
      {"width", o.width}, {"height", o.height}, {"max_seq", o.max_seq}, {"tier", o.tier}, {"sampler", o.sampler},
      {"scheduler", o.scheduler},
      {"model", r.model_identity}, {"engine", engine_version()}, {"backend", r.backend},
      {"noise_layout", "torch-cpu-randn/c128hw"}, {"resident_blocks", r.resident_blocks},
      {"total_blocks", r.total_blocks},
      {"timings_s",
       {{"text_encoder", r.times.text_encoder_s}, {"dit_load", r.times.dit_load_s}, {"denoise", r.times.denoise_s},
        {"vae", r.times.vae_s}, {"total", r.times.total_s}}}};
  return j.dump();
}

std::string a1111_parameters(const RunRecord& r) {
  const GenerationRequest& o = r.request;
  std::string s = o.prompt;
  if (!o.negative.empty()) s += "\nNegative prompt: " + o.negative;
  s += "\nSteps: " + std::to_string(o.steps) + ", Steps run: " + std::to_string(r.steps_run) +
       ", Sampler: " + o.sampler_label + ", Schedule type: " + o.scheduler_label + ", CFG scale: " + num(o.cfg) +
       ", Seed: " + std::to_string(o.seed) + ", Size: " + std::to_string(o.width) + "x" + std::to_string(o.height) +
       ", Model: " + r.model_identity + ", Shift: " + num(o.shift) + ", Skip layers: \"" + o.skip_layers_text +
       "\", Max seq: " + std::to_string(o.max_seq) + ", Tier: " + o.tier + ", Backend: " + r.backend +
       ", Version: " + engine_version();
  return s;
}

// A PNG text chunk cannot hold a NUL (libpng ends the text there, losing the rest): in the
// `parameters` text a NUL of the prompt is shown as U+FFFD; the `generation` record, which replay
// reads, keeps it exactly (JSON writes it as \u0000).
static std::string without_nul(std::string s) {
  for (size_t i = s.find('\0'); i != std::string::npos; i = s.find('\0', i + 3)) s.replace(i, 1, "\xEF\xBF\xBD");
  return s;
}

std::vector<PngText> png_record_chunks(const RunRecord& r) {
  return {{"parameters", without_nul(a1111_parameters(r))}, {"generation", record_json(r)}};
}

}  // namespace moss
