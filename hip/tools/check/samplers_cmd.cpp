// moss-check samplers: every sampler x schedule run by this engine, written to --out (JSON) for
// the Python reference (tools/golden/test_samplers_reference.py: k-diffusion and ComfyUI's
// formulas, docs/samplers.md), and checked here for what needs no reference:
//   toy.<sampler>.<schedule>  run_sampler with the toy denoiser (below, the test's twin) on a
//                             [1, 4, 8] latent: finite, and the DiT calls the sampler's
//                             calls_per_step say (the last step of a two-call sampler makes one)
//   dit.<sampler>.<schedule>  with --model and --golden: the engine's sample() (the DiT on the
//                             host backend, the golden's text states, cfg 3 skipping its layers,
//                             seed 42, [128, 4, 6]): finite; ddim equals euler bit for bit
//   schedule.<schedule>       descending from at most 1 to a final 0
// The toy and DiT settings are in the JSON, so the test reads them from there.
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "golden_stages.h"
#include "subcommand.h"
#include "pipeline/noise.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"

namespace {

using namespace moss;
using json = nlohmann::json;

constexpr int kToySteps = 6;
constexpr double kToyShift = 3.0;
constexpr uint64_t kToySeed = 7;
constexpr int64_t kToyC = 1, kToyH = 4, kToyW = 8;

// The toy velocity field, element i: tanh(0.5·x + c_i·σ) − 0.3·σ·x + c_i with
// c_i = 0.1·((i mod 7) − 3): smooth, nonlinear, different per element; the denoised estimate is
// x − σ·v, as the engine's. In double, as the Python twin.
std::vector<float> toy_denoise(const std::vector<float>& x, double sigma) {
  std::vector<float> d(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double c = 0.1 * (double(i % 7) - 3.0), xi = x[i];
    const double v = std::tanh(0.5 * xi + c * sigma) - 0.3 * sigma * xi + c;
    d[i] = float(xi - sigma * v);
  }
  return d;
}

bool finite(const std::vector<float>& v) {
  for (float f : v)
    if (!std::isfinite(f)) return false;
  return true;
}

json toy_cases(golden::Tally& tally) {
  json cases = json::array();
  for (const ScheduleName& sch : schedule_names()) {
    const std::vector<float> sigmas = make_schedule(sch.schedule, kToySteps, float(kToyShift));
    bool descending = sigmas.front() <= 1.0f && sigmas.back() == 0.0f;
    for (size_t i = 1; i < sigmas.size(); ++i) descending = descending && sigmas[i] < sigmas[i - 1];
    tally.check(descending, std::string("schedule.") + sch.name + ": " + std::to_string(sigmas.size() - 1) +
                                " steps, descending from at most 1 to 0");
    for (const SamplerName& smp : sampler_names()) {
      NoiseStream stream(kToySeed);
      std::vector<float> x = stream.next(kToyC, kToyH, kToyW);
      int calls = 0;
      auto model = [&](const std::vector<float>& v, double sigma) {
        ++calls;
        return toy_denoise(v, sigma);
      };
      x = run_sampler(smp.kind, model, x, sigmas, kToyShift, [&]() { return stream.next(kToyC, kToyH, kToyW); });
      const int steps = int(sigmas.size()) - 1, want = smp.calls_per_step * steps - (smp.calls_per_step - 1);
      char line[200];
      std::snprintf(line, sizeof line, "toy.%s.%s: %d DiT calls for %d steps (expected %d), finite", smp.name,
                    sch.name, calls, steps, want);
      tally.check(finite(x) && calls == want, line);
      cases.push_back({{"sampler", smp.name}, {"scheduler", sch.name}, {"sigmas", sigmas}, {"calls", calls}, {"x", x}});
    }
  }
  return cases;
}

json dit_cases(golden::Tally& tally, const std::string& model, const std::string& golden_path, int steps) {
  const std::unique_ptr<Backend> be = make_host_backend();
  const auto g = SafetensorsFile::open(golden_path);
  const std::unique_ptr<Dit> dit = golden::make_dit(*be, model);
  const Dit::Text cond = dit->embed_text(golden::host_f32(g->get("forward.cond_text")));
  const Dit::Text uncond = dit->embed_text(golden::host_f32(g->get("forward.uncond_text")));
  const json meta = golden::golden_meta(*g);
  const std::vector<int> skip = meta["skip_layers"].get<std::vector<int>>();
  const int64_t C = 128, gh = 4, gw = 6;
  const uint64_t seed = 42;
  const float cfg = 3.0f, shift = 5.0f;
  json cases = json::array();
  std::vector<float> euler_moss;
  for (const ScheduleName& sch : schedule_names()) {
    const std::vector<float> sigmas = make_schedule(sch.schedule, steps, shift);
    std::vector<float> euler;
    for (const SamplerName& smp : sampler_names()) {
      NoiseStream stream(seed);
      const std::vector<float> noise = stream.next(C, gh, gw);
      SamplerSettings s{cfg, skip, nullptr, smp.kind, shift, &stream};
      const Tensor out = sample(*dit, cond, &uncond, golden::host_f32(noise, {C, gh, gw}), sigmas, s);
      const std::vector<float> x(out.ptr<float>(), out.ptr<float>() + out.numel());
      if (smp.kind == SamplerKind::Euler) euler = x;
      std::string line = std::string("dit.") + smp.name + "." + sch.name + ": finite";
      bool ok = finite(x);
      if (smp.kind == SamplerKind::Ddim) {
        line += ", equal to euler bit for bit";
        ok = ok && x == euler;
      }
      tally.check(ok, line);
      cases.push_back({{"sampler", smp.name}, {"scheduler", sch.name}, {"sigmas", sigmas}, {"x", x}});
    }
  }
  return {{"seed", seed}, {"shape", {C, gh, gw}}, {"steps", steps}, {"cfg", cfg}, {"shift", shift},
          {"skip_layers", skip}, {"cases", cases}};
}

int samplers_command(const std::vector<std::string>& args) {
  golden::check_flags(args, {"--out", "--model", "--golden", "--steps"});
  const auto t0 = std::chrono::steady_clock::now();
  golden::Tally tally;
  json out = {{"toy", {{"seed", kToySeed}, {"shape", {kToyC, kToyH, kToyW}}, {"steps", kToySteps},
                       {"shift", kToyShift}, {"cases", toy_cases(tally)}}}};
  if (golden::has_flag(args, "--model"))
    out["dit"] = dit_cases(tally, golden::flag(args, "--model"), golden::flag(args, "--golden"),
                           int(golden::int_flag(args, "--steps", 4, 1, 50)));
  if (golden::has_flag(args, "--out")) {
    std::ofstream f(golden::flag(args, "--out"));
    f << out.dump();
    tally.check(bool(f), "wrote " + golden::flag(args, "--out"));
  }
  std::printf("time %.3f s\n", golden::seconds_since(t0));
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("samplers",
                 "[--out FILE.json] [--model DIR --golden golden_dit.safetensors [--steps N]]: every sampler x "
                 "schedule on a toy denoiser and the tiny DiT (host), for tools/golden/test_samplers_reference.py",
                 samplers_command);
