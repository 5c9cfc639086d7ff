// moss-check official: our pipeline on --backend host|hip, stage by stage, on the inputs a dump of the official
// pipeline recorded (tools/golden/dump_official.py; reader: tools/check/official_dump.h), printing
// per-stage cosine and relative L2 as docs/product.md section 6 reports them:
//   inputs  our schedule (bit for bit) and noise for the seed (1e-5) against the dumped ones
//   te      token ids: our tokenizer on the prompt / negative against cond.ids / uncond.ids;
//           text states: our text encoder on the dumped ids against cond.hidden / uncond.hidden
//   dit0    step-0 velocities: our DiT on step0.latent_in, timesteps[0] and the DUMPED text
//           states against step0.v_cond / step0.v_uncond
//   dit     the DiT alone: every step from the DUMPED noise and states over the dumped sigmas
//           against step<i>.latent and final_latent (--steps N: the first N steps only; the
//           final latent is compared after all steps)
//   vae     our VAE on the dumped final_latent against image and image_u8
//   e2e     our whole pipeline (our text states, our noise for the seed, our schedule) against
//           final_latent and image_u8
// Limits: tools/check/golden_stages.h (header comment). Exit status 0 only if every verdict passed.
#include <algorithm>
#include <set>
#include <sstream>

#include "golden_stages.h"
#include "subcommand.h"
#include "io/model_folder.h"
#include "pipeline/noise.h"
#include "pipeline/schedule.h"

namespace {

using namespace moss;

std::optional<float> shift_of(const golden::DumpCase& c, const std::string& model) {
  if (c.settings.shift) return c.settings.shift;
  const std::string path = model + "/scheduler/scheduler_config.json";
  const nlohmann::json j = read_json_file(path);
  if (j.contains("shift") && j["shift"].is_number()) return j["shift"].get<float>();
  return std::nullopt;
}

void check_inputs(golden::Tally& tally, const golden::OfficialDump& d, const golden::DumpCase& c,
                  const std::string& model, int64_t channels) {
  if (const auto shift = shift_of(c, model)) {
    char what[64];
    std::snprintf(what, sizeof what, "sigmas (our schedule, shift %g)", double(*shift));
    golden::report_bits(tally, c.prefix + what,
                        make_schedule(c.settings.steps, *shift), d.values(c, "sigmas"));
  } else {
    std::printf("info %ssigmas: the shift is unknown (neither the dump nor the scheduler config has it)\n",
                c.prefix.c_str());
  }
  const Tensor noise = d.get(c, "noise");
  if (c.settings.seed && c.noise_from_randn && noise.shape[0] == channels) {
    const std::vector<float> ours = initial_noise(*c.settings.seed, channels, noise.shape[1], noise.shape[2]);
    const std::vector<float> ref = to_f32_vector(noise);
    const double diff = golden::max_abs_diff(ours.data(), ref.data(), ours.size());
    char line[160];
    std::snprintf(line, sizeof line, "%snoise (ours for seed %llu): max |diff| %.3e  (limit %.0e)", c.prefix.c_str(),
                  (unsigned long long)*c.settings.seed, diff, double(golden::kNoiseTolerance));
    tally.check(diff <= golden::kNoiseTolerance, line);
  } else {
    std::printf("info %snoise: not compared (seed unknown or the noise was not torch.randn's)\n", c.prefix.c_str());
  }
}

int official_command(const std::vector<std::string>& args) {
  golden::check_flags(args, golden::with_backend_flags({"--model", "--dump", "--case", "--stages", "--skip-layers",
                                                        "--cfg", "--steps"}));
  const std::unique_ptr<Backend> be = golden::backend_from_flags(args);
  const std::string model = golden::flag(args, "--model"), dump_path = golden::flag(args, "--dump");
  const std::string case_sel = golden::flag(args, "--case", "all");
  std::set<std::string> stages;
  {
    std::stringstream ss(golden::flag(args, "--stages", "inputs,te,dit0,dit,vae,e2e"));
    std::string s;
    while (std::getline(ss, s, ',')) {
      static const std::set<std::string> known = {"inputs", "te", "dit0", "dit", "vae", "e2e"};
      if (!known.count(s)) throw usage_error("--stages: unknown stage '" + s + "' (inputs,te,dit0,dit,vae,e2e)");
      stages.insert(s);
    }
  }
  const auto skip_fallback = golden::int_list_flag(args, "--skip-layers");
  std::optional<float> cfg_fallback;
  if (golden::has_flag(args, "--cfg")) cfg_fallback = float(golden::decimal_flag(args, "--cfg", 0, 0, 100));
  const int steps = int(golden::int_flag(args, "--steps", 0, 0, 1000));

  const golden::OfficialDump dump = golden::OfficialDump::open(dump_path);
  std::vector<golden::DumpCase> cases;
  if (case_sel == "all")
    cases = dump.cases();
  else
    cases.push_back(dump.find_case(case_sel));
  std::printf("moss-check official: %s (%zu case(s); %s)\n", dump_path.c_str(), cases.size(),
              dump.meta().value("gpu", nlohmann::json()).is_string()
                  ? ("dumped on " + dump.meta()["gpu"].get<std::string>()).c_str()
                  : "dump device not recorded");

  const auto t_start = std::chrono::steady_clock::now();
  std::printf("backend: %s\n", be->name().c_str());
  std::unique_ptr<Dit> dit;
  std::unique_ptr<VaeDecoder> vae;
  auto need_dit = [&]() -> Dit& {
    if (!dit) dit = golden::make_dit(*be, model);
    return *dit;
  };
  auto need_vae = [&]() -> VaeDecoder& {
    if (!vae) vae = std::make_unique<VaeDecoder>(golden::make_vae(*be, model));
    return *vae;
  };

  golden::Tally tally;
  for (const golden::DumpCase& c : cases) {
    std::printf("== case %d%s: %lldx%lld, %d steps, %s reference\n", c.index, c.name.empty() ? "" : (" (" + c.name + ")").c_str(),
                (long long)c.settings.height, (long long)c.settings.width, c.settings.steps,
                c.reference_fp32 ? "fp32" : "official bf16");
    if (stages.count("inputs")) check_inputs(tally, dump, c, model, need_dit().config().latent_channels);
    std::vector<Tensor> our_states;
    if (stages.count("te") || stages.count("e2e"))
      our_states = golden::run_text_encoder(tally, *be, model, golden::te_references_from_dump(dump, c));
    if (stages.count("dit0")) golden::run_forward(tally, *be, need_dit(), golden::forward_reference_from_dump(dump, c, skip_fallback));
    if (stages.count("dit"))
      golden::run_sampler(tally, *be, need_dit(), golden::sampler_reference_from_dump(dump, c, skip_fallback, cfg_fallback),
                          steps);
    const bool has_u8 = dump.has(c, "image_u8");
    if (stages.count("vae")) {
      if (!has_u8) {
        std::printf("info %svae: the dump has no image_u8\n", c.prefix.c_str());
      } else {
        const std::optional<Tensor> image = dump.has(c, "image") ? std::optional<Tensor>(dump.get(c, "image")) : std::nullopt;
        golden::run_vae(tally, *be, need_vae(), c.prefix + "vae", dump.f32(c, "final_latent"), image ? &*image : nullptr,
                        c.reference_fp32, dump.get(c, "image_u8"), golden::kVaeU8MeanLevels);
      }
    }
    if (stages.count("e2e")) {
      // Our whole pipeline: our text states, our noise for the seed, our schedule.
      golden::SamplerReference e = golden::sampler_reference_from_dump(dump, c, skip_fallback, cfg_fallback);
      e.label = c.prefix + "e2e";
      e.cond_states = our_states.at(0);
      if (c.guided) e.uncond_states = our_states.at(1);
      if (!c.settings.seed) throw usage_error("case " + std::to_string(c.index) + ": the dump has no seed for the e2e stage");
      const int64_t C = e.noise.shape[0], gh = e.noise.shape[1], gw = e.noise.shape[2];
      e.noise = golden::host_f32(initial_noise(*c.settings.seed, C, gh, gw), {C, gh, gw});
      e.noise_source = "ours for seed " + std::to_string(*c.settings.seed);
      if (const auto shift = shift_of(c, model)) e.sigmas = make_schedule(c.settings.steps, *shift);
      e.latent.clear();  // per-step figures of a different conditioning: not compared
      e.fp32 = false;    // end to end is judged by the product figure for any reference
      e.final_min_cos = golden::kOfficialE2eCos;
      e.final_basis = "docs/product.md section 6, end to end";
      const Tensor latent = golden::run_sampler(tally, *be, need_dit(), e, 0);
      if (has_u8)
        golden::run_vae(tally, *be, need_vae(), c.prefix + "e2e", latent, nullptr, false, dump.get(c, "image_u8"),
                        golden::kE2eU8MeanLevels);
    }
  }
  std::printf("time %.3f s\n", golden::seconds_since(t_start));
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("official",
                  "--dump official.safetensors --model DIR [--case N|name|all] "
                  "[--stages inputs,te,dit0,dit,vae,e2e] [--steps N] [--skip-layers L,..] [--cfg X] "
                  "[--backend host|hip] [--device N]  "
                  "(a dump of tools/golden/dump_official.py)",
                  official_command);
