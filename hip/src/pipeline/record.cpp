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

static nlohmann::ordered_json model_files_json(const RunRecord& r) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const RecordedFile& f : r.model_files) {
    nlohmann::ordered_json e = {{"component", f.component}, {"file", f.file}, {"hash", f.hash}};
    if (!f.note.empty()) e["note"] = f.note;
    files.push_back(e);
  }
  return files;
}

std::string record_json(const RunRecord& r) {
  const GenerationRequest& o = r.request;
  // An ordered object: the keys stay in this order in the record.
  nlohmann::ordered_json j = {
      {"prompt", o.prompt}, {"negative", o.negative}, {"seed", o.seed}, {"steps", o.steps},
      {"steps_run", r.steps_run}, {"cfg", o.cfg}, {"shift", o.shift}, {"skip_layers", o.skip_layers},
      {"width", o.output_width()}, {"height", o.output_height()}, {"max_seq", o.max_seq}, {"tier", o.tier}, {"sampler", o.sampler},
      {"scheduler", o.scheduler},
      {"model", r.model_identity}, {"model_files", model_files_json(r)}, {"engine", engine_version()}, {"backend", r.backend},
      {"noise_layout", "torch-cpu-randn/c128hw"}, {"resident_blocks", r.resident_blocks},
      {"total_blocks", r.total_blocks},
      {"timings_s",
       {{"text_encoder", r.times.text_encoder_s}, {"dit_load", r.times.dit_load_s}, {"denoise", r.times.denoise_s},
        {"vae", r.times.vae_s}, {"total", r.times.total_s}}}};
  // The LoRAs merged, in order; --from-png replay applies them again (only when there were any).
  if (!o.loras.empty()) {
    nlohmann::ordered_json loras = nlohmann::ordered_json::array();
    for (const LoraChoice& c : o.loras)
      loras.push_back({{"name", c.name}, {"path", c.path}, {"weight", c.weight}, {"hash", c.hash}});
    j["loras"] = loras;
  }
  return j.dump();
}

std::string a1111_parameters(const RunRecord& r) {
  const GenerationRequest& o = r.request;
  std::string s = o.prompt;
  if (!o.negative.empty()) s += "\nNegative prompt: " + o.negative;
  s += "\nSteps: " + std::to_string(o.steps) + ", Steps run: " + std::to_string(r.steps_run) +
       ", Sampler: " + o.sampler_label + ", Schedule type: " + o.scheduler_label + ", CFG scale: " + num(o.cfg) +
       ", Seed: " + std::to_string(o.seed) + ", Size: " + std::to_string(o.output_width()) + "x" + std::to_string(o.output_height()) +
       ", Model: " + r.model_identity +
       (r.model_files.empty() ? "" : ", Model hash: " + r.model_files[0].hash) + ", Shift: " + num(o.shift) +
       ", Skip layers: \"" + o.skip_layers_text +
       "\", Max seq: " + std::to_string(o.max_seq) + ", Tier: " + o.tier + ", Backend: " + r.backend +
       ", Version: " + engine_version();
  // A1111's spelling: each LoRA's weight as a prompt tag would give it, and its short hash.
  if (!o.loras.empty()) {
    std::string weights, hashes;
    for (const LoraChoice& c : o.loras) {
      weights += (weights.empty() ? "" : ", ") + c.name + ": " + num(c.weight);
      hashes += (hashes.empty() ? "" : ", ") + c.name + ": " + c.hash;
    }
    s += ", Lora weights: \"" + weights + "\", Lora hashes: \"" + hashes + "\"";
  }
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
