// moss-check dit: the DiT forward (both golden rows and every trace), the schedules and the
// initial noise against golden_dit.safetensors.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "subcommand.h"
#include "io/safetensors.h"
#include "model/dit.h"
#include "ops/backend.h"
#include "pipeline/noise.h"
#include "pipeline/schedule.h"
#include "util/error.h"

namespace {

using namespace moss;

constexpr double kDitTolerance = 1e-5;    // relative L2, fp32 host against the _fp32 goldens
constexpr double kNoiseTolerance = 1e-5;  // absolute, per element

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Compares one tensor by relative L2; a shape mismatch fails the case.
void compare(golden::Tally& tally, const std::string& what, const Tensor& got, const Tensor& want, double tol) {
  if (got.numel() != want.numel()) {
    tally.check(false, what + ": shape " + got.shape_str() + ", golden " + want.shape_str());
    return;
  }
  const std::vector<float> a = to_f32_vector(got), b = to_f32_vector(want);
  const double rel = golden::rel_l2(a.data(), b.data(), a.size());
  char line[256];
  std::snprintf(line, sizeof line, "%s: rel_l2 %.3e (max |diff| %.3e)", what.c_str(), rel,
                golden::max_abs_diff(a.data(), b.data(), a.size()));
  tally.check(rel < tol, line);
}

void check_forward(golden::Tally& tally, Dit& dit, const SafetensorsFile& g, const nlohmann::json& meta) {
  const float timestep = meta.at("forward_timestep").get<float>();
  const std::vector<int> skip = meta.at("skip_layers").get<std::vector<int>>();
  const Tensor latent = g.get("forward.latent");
  struct Row {
    const char* name;
    const char* text;
    bool skipping;
  };
  for (const Row& row : {Row{"cond", "forward.cond_text", false}, Row{"uncond_skip", "forward.uncond_text", true}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const Dit::Text text = dit.embed_text(g.get(row.text));
    DitTrace trace;
    const Tensor velocity = dit.forward(latent, text, timestep, row.skipping ? skip : std::vector<int>{}, &trace);
    std::printf("forward.%s: %" PRId64 " text tokens, %.3f s\n", row.name, text.tokens, seconds_since(t0));

    const std::string prefix = std::string("forward.") + row.name + ".";
    size_t traces = 0;
    for (const auto& [name, info] : g.tensors()) {
      if (!starts_with(name, prefix) || !ends_with(name, "_fp32")) continue;
      const std::string key = name.substr(prefix.size(), name.size() - prefix.size() - 5);
      if (key == "velocity") {
        compare(tally, name, velocity, g.get(name), kDitTolerance);
        continue;
      }
      ++traces;
      auto it = trace.tensors.find(key);
      if (it == trace.tensors.end())
        tally.check(false, name + ": the forward produced no trace '" + key + "'");
      else
        compare(tally, name, it->second, g.get(name), kDitTolerance);
    }
    // Every block that ran (and no skipped one) must have a golden trace.
    tally.check(trace.tensors.size() == traces, prefix + "traces: " + std::to_string(trace.tensors.size()) +
                                                    " produced, " + std::to_string(traces) + " in the golden");
    const std::string bf16 = prefix + "velocity_bf16";
    if (g.has(bf16)) {
      const std::vector<float> a = to_f32_vector(velocity), b = to_f32_vector(g.get(bf16));
      std::printf("info %s: rel_l2 %.3e (the bf16 GPU run, for scale)\n", bf16.c_str(),
                  golden::rel_l2(a.data(), b.data(), a.size()));
    }
  }
}

void check_schedules(golden::Tally& tally, const SafetensorsFile& g) {
  for (const auto& [name, info] : g.tensors()) {
    int steps = 0;
    float shift = 0;
    if (std::sscanf(name.c_str(), "schedule.steps%d_shift%f", &steps, &shift) != 2) continue;
    const std::vector<float> want = to_f32_vector(g.get(name));
    const std::vector<float> got = make_schedule(steps, shift);
    size_t first_diff = 0;
    while (first_diff < std::min(got.size(), want.size()) &&
           std::memcmp(&got[first_diff], &want[first_diff], sizeof(float)) == 0)
      ++first_diff;
    const bool same = got.size() == want.size() && first_diff == got.size();
    char line[256];
    if (same)
      std::snprintf(line, sizeof line, "%s: %zu sigmas bit-identical", name.c_str(), got.size());
    else if (first_diff < std::min(got.size(), want.size()))
      std::snprintf(line, sizeof line, "%s: sigma %zu is %.9g, golden %.9g", name.c_str(), first_diff,
                    double(got[first_diff]), double(want[first_diff]));
    else
      std::snprintf(line, sizeof line, "%s: %zu sigmas, golden %zu", name.c_str(), got.size(), want.size());
    tally.check(same, line);
  }
}

void check_noise(golden::Tally& tally, const SafetensorsFile& g) {
  for (const auto& [name, info] : g.tensors()) {
    unsigned long long seed = 0;
    long long c = 0, h = 0, w = 0;
    if (std::sscanf(name.c_str(), "noise.seed%llu_c%lld_h%lld_w%lld", &seed, &c, &h, &w) != 4) continue;
    const std::vector<float> want = to_f32_vector(g.get(name));
    const std::vector<float> got = initial_noise(seed, c, h, w);
    const bool sized = got.size() == want.size();
    const double diff = sized ? golden::max_abs_diff(got.data(), want.data(), got.size()) : INFINITY;
    char line[256];
    std::snprintf(line, sizeof line, "%s: max |diff| %.3e", name.c_str(), diff);
    tally.check(sized && diff <= kNoiseTolerance, line);
  }
}

int dit_command(const std::vector<std::string>& args) {
  const std::string model = golden::flag(args, "--model"), golden_path = golden::flag(args, "--golden");
  const auto g = SafetensorsFile::open(golden_path);
  auto meta_it = g->metadata().find("meta");
  if (meta_it == g->metadata().end()) throw failure(golden_path + ": no 'meta' entry in the metadata");
  const nlohmann::json meta = nlohmann::json::parse(meta_it->second);

  const auto t0 = std::chrono::steady_clock::now();
  const std::unique_ptr<Backend> be = make_host_backend();
  const DitConfig cfg = parse_dit_config(model + "/transformer/config.json");
  const WeightFiles weights = WeightFiles::open_folder(model + "/transformer");
  Dit dit(*be, weights, cfg);

  golden::Tally tally;
  check_forward(tally, dit, *g, meta);
  check_schedules(tally, *g);
  check_noise(tally, *g);
  std::printf("time %.3f s\n", seconds_since(t0));
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("dit", "--model DIR --golden golden_dit.safetensors", dit_command);
