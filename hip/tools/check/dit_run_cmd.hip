// moss-check dit-run: the DiT on the GPU backend against golden files: one forward (cond and uncond
// velocities) and N sampler steps, stage by stage.
// Input: either format, detected from the file:
//   - the project's golden_dit.safetensors (hip/tests/data holds the copy):
//     the forward.* call (cond, and uncond skipping the golden's layers) at its timestep, then
//     the e2e sampler conditioned on golden_text_encoder.safetensors' hidden_bf16 (--golden-te;
//     default: beside --golden) from our own noise for the seed (the golden holds none for e2e):
//     per step v_cond, v_uncond and the latent, then the final latent. Verdicts against the
//     _fp32 tensors within 2x the golden's bf16-vs-fp32 DiT distance (forward.cond velocity,
//     about 1.3e-2 for the tiny model);
//   - a dump of tools/golden/dump_official.py: step 0 on the dumped inputs (step0.latent_in,
//     timesteps[0], cond.hidden / uncond.hidden) against step0.v_cond / step0.v_uncond (cosine
//     >= 0.99998, docs/product.md section 6), then the DiT alone from the DUMPED noise and states over
//     the dumped sigmas: step<i>.latent where dumped (reported) and the final latent (cosine >=
//     0.987). A dump marked "reference": "fp32" is judged like the goldens.
// --steps N runs the first N steps only (the final latent is compared after all steps).
// Limits and line format: tools/check/golden_stages.h, tools/check/golden_compare.h.
//
//   moss-check dit-run --model DIR --golden FILE [--golden-te FILE] [--steps N] [--case N|name|all]
//               [--skip-layers L,..] [--cfg X] [--device N]
// (--skip-layers / --cfg only for dumps that do not record them.) Prints "N passed, M failed";
// exit 0 only when every verdict passed (2: bad option, 1: unreadable file or model).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "golden_stages.h"
#include "subcommand.h"

namespace {

using namespace moss;

constexpr const char* kUsage =
    "usage: moss-check dit-run --model DIR --golden FILE [--golden-te FILE] [--steps N] [--case N|name|all]\n"
    "                   [--skip-layers L,..] [--cfg X] [--device N]\n";

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

int run(const std::vector<std::string>& args) {
  golden::check_flags(args, {"--model", "--golden", "--golden-te", "--steps", "--case", "--skip-layers", "--cfg",
                             "--device"});
  const std::string model = golden::flag(args, "--model"), path = golden::flag(args, "--golden");
  const std::string case_sel = golden::flag(args, "--case", "all");
  const int steps = std::atoi(golden::flag(args, "--steps", "0").c_str());
  const int device = std::atoi(golden::flag(args, "--device", "0").c_str());
  if (steps < 0) throw usage_error("--steps must be >= 0 (0: all)");
  const auto skip_fallback = golden::int_list_flag(args, "--skip-layers");
  std::optional<float> cfg_fallback;
  if (golden::has_flag(args, "--cfg")) cfg_fallback = std::stof(golden::flag(args, "--cfg"));

  const auto file = SafetensorsFile::open(path);
  const auto t0 = std::chrono::steady_clock::now();
  const std::unique_ptr<Backend> gpu = make_hip_backend(device);
  std::printf("moss-check dit-run: %s on %s\n", path.c_str(), gpu->name().c_str());
  const std::unique_ptr<Dit> dit = golden::make_dit(*gpu, model);
  golden::Tally tally;
  if (golden::OfficialDump::is_dump(*file)) {
    const golden::OfficialDump dump(file);
    bool any = false;
    for (const golden::DumpCase& c : dump.cases()) {
      if (case_sel != "all" && case_sel != c.name && case_sel != std::to_string(c.index)) continue;
      any = true;
      std::printf("== case %d (%s): %d steps, %s reference\n", c.index, c.name.c_str(), c.settings.steps,
                  c.reference_fp32 ? "fp32" : "official bf16");
      golden::run_forward(tally, *gpu, *dit, golden::forward_reference_from_dump(dump, c, skip_fallback));
      golden::run_sampler(tally, *gpu, *dit, golden::sampler_reference_from_dump(dump, c, skip_fallback, cfg_fallback),
                          steps);
    }
    if (!any) throw usage_error("--case " + case_sel + ": no such case in " + path);
  } else {
    const std::string te_path = golden::flag(args, "--golden-te", (folder_of(path) + "/golden_text_encoder.safetensors").c_str());
    const auto te = SafetensorsFile::open(te_path);
    golden::run_forward(tally, *gpu, *dit, golden::forward_reference_from_golden(*file));
    golden::run_sampler(tally, *gpu, *dit,
                        golden::sampler_reference_from_golden(*file, *te, dit->config().latent_channels), steps);
  }
  std::printf("total %.3f s\n", golden::seconds_since(t0));
  return tally.finish();
}

}  // namespace

static int dit_run_main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (golden::has_flag(args, "--help") || golden::has_flag(args, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    return run(args);
  } catch (const Error& e) {
    std::fprintf(stderr, "moss-check dit-run: %s\n%s", e.what(), e.code() == ExitCode::Usage ? kUsage : "");
    return int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moss-check dit-run: %s\n", e.what());
    return 1;
  }
}

CHECK_SUBCOMMAND_MAIN("dit-run", "--model DIR --golden FILE [--golden-te FILE] [--steps N] [--case N|name|all]", dit_run_main);
