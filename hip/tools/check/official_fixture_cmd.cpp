// moss-check official-fixture: writes a dump in the format of tools/golden/dump_official.py
// from the tiny-model goldens (hip/tests/data), so the dump readers and `moss-check official`
// are tested in CI without torch. The case is the goldens' e2e request (prompt case 0, negative
// case 1, seed 42, 64x96, 4 steps, cfg 3, shift 5, skip layer 2): the ids and text states come
// from golden_text_encoder (hidden_bf16: what the e2e golden was conditioned on, hidden_fp32 as
// the fp32 text-encoder twin), noise / sigmas / per-step latents / image from golden_dit. The
// goldens are fp32 runs, so the case says "reference": "fp32" and carries the DiT's
// bf16-vs-fp32 distance ("bf16_gap") for device runs.
//
// --corrupt makes a broken copy for the failure tests:
//   swap-velocities  step0.v_cond and step0.v_uncond exchanged (a readable dump whose numbers
//                    are wrong: the step-0 verdicts FAIL)
//   cut-hidden       cond.hidden one row short of cond.ids (refused when the dump is opened)
//   wrong-ids        one prompt token changed (our tokenizer's ids differ)
#include <nlohmann/json.hpp>

#include "golden_stages.h"
#include "pipeline/schedule.h"
#include "subcommand.h"
#include "io/files.h"

namespace {

using namespace moss;

Tensor copy_of(const Tensor& t) {
  Tensor out = host_tensor(t.dtype, t.dims());
  std::memcpy(out.data, t.data, t.nbytes());
  return out;
}

Tensor f32_copy(const Tensor& t) { return golden::host_f32(t); }

int fixture_command(const std::vector<std::string>& args) {
  golden::check_flags(args, {"--data", "--out", "--corrupt"});
  const std::string data = golden::flag(args, "--data"), out = golden::flag(args, "--out");
  const std::string corrupt = golden::flag(args, "--corrupt", "");
  if (!corrupt.empty() && corrupt != "swap-velocities" && corrupt != "cut-hidden" && corrupt != "wrong-ids")
    throw usage_error("--corrupt: unknown kind '" + corrupt + "' (swap-velocities, cut-hidden, wrong-ids)");
  const auto dit = SafetensorsFile::open(data + "/golden_dit.safetensors");
  const auto te = SafetensorsFile::open(data + "/golden_text_encoder.safetensors");
  const nlohmann::json meta = golden::golden_meta(*dit);
  const nlohmann::json& req = meta.at("e2e");
  const nlohmann::json te_cases = nlohmann::json::parse(te->metadata().at("cases"));
  const int pc = req.at("prompt_case").get<int>(), nc = req.at("negative_case").get<int>();
  const int steps = req.at("steps").get<int>();
  const float shift = req.at("shift").get<float>();
  const int64_t h = req.at("height").get<int64_t>(), w = req.at("width").get<int64_t>();
  const uint64_t seed = req.at("seed").get<uint64_t>();
  char noise_name[96];
  std::snprintf(noise_name, sizeof noise_name, "noise.seed%llu_c128_h%lld_w%lld", (unsigned long long)seed,
                (long long)(h / 16), (long long)(w / 16));
  char sched_name[64];
  std::snprintf(sched_name, sizeof sched_name, "schedule.steps%d_shift%g", steps, double(shift));

  auto prompt_of = [&](int c) {
    for (const auto& m : te_cases)
      if (m.value("case", -1) == c) return m.at("prompt").get<std::string>();
    throw failure(te->path() + ": no prompt for case " + std::to_string(c));
  };

  std::vector<std::pair<std::string, Tensor>> t;
  auto put = [&](const std::string& key, const Tensor& v) { t.emplace_back("case0." + key, v); };
  Tensor cond_ids = copy_of(te->get("case" + std::to_string(pc) + ".ids"));
  if (corrupt == "wrong-ids") cond_ids.ptr<int32_t>()[5] = (cond_ids.ptr<int32_t>()[5] + 1) % 12000;
  put("cond.ids", cond_ids);
  put("uncond.ids", copy_of(te->get("case" + std::to_string(nc) + ".ids")));
  Tensor cond_hidden = f32_copy(te->get("case" + std::to_string(pc) + ".hidden_bf16"));
  if (corrupt == "cut-hidden") cond_hidden = golden::host_f32(cond_hidden.slice_rows(0, cond_hidden.shape[0] - 1));
  put("cond.hidden", cond_hidden);
  put("uncond.hidden", f32_copy(te->get("case" + std::to_string(nc) + ".hidden_bf16")));
  put("cond.hidden_fp32", f32_copy(te->get("case" + std::to_string(pc) + ".hidden_fp32")));
  put("uncond.hidden_fp32", f32_copy(te->get("case" + std::to_string(nc) + ".hidden_fp32")));
  const Tensor noise = f32_copy(dit->get(noise_name));
  put("noise", noise);
  const std::vector<float> sigmas = to_f32_vector(dit->get(sched_name));
  put("sigmas", golden::host_f32(sigmas, {int64_t(sigmas.size())}));
  std::vector<float> timesteps;
  for (size_t i = 0; i + 1 < sigmas.size(); ++i) timesteps.push_back(sigma_to_timestep(sigmas[i]));
  put("timesteps", golden::host_f32(timesteps, {int64_t(timesteps.size())}));
  put("step0.latent_in", noise);  // fp32 run: the DiT saw the noise itself
  const bool swap = corrupt == "swap-velocities";
  put("step0.v_cond", f32_copy(dit->get(swap ? "e2e.step0.v_uncond_fp32" : "e2e.step0.v_cond_fp32")));
  put("step0.v_uncond", f32_copy(dit->get(swap ? "e2e.step0.v_cond_fp32" : "e2e.step0.v_uncond_fp32")));
  for (int i = 0; i < steps; ++i)
    put("step" + std::to_string(i) + ".latent", f32_copy(dit->get("e2e.step" + std::to_string(i) + ".latent_fp32")));
  put("final_latent", f32_copy(dit->get("e2e.final_latent_fp32")));
  put("image", f32_copy(dit->get("e2e.image_fp64")));
  put("image_u8", copy_of(dit->get("e2e.image_u8")));

  const std::vector<int> skip = meta.at("skip_layers").get<std::vector<int>>();
  const nlohmann::json settings = {{"prompt", prompt_of(pc)}, {"negative", prompt_of(nc)}, {"seed", seed},
                                   {"height", h}, {"width", w}, {"steps", steps}, {"cfg", req.at("cfg")},
                                   {"shift", shift}, {"skip_layers", skip}, {"max_seq", 4096}};
  nlohmann::json c = {{"case", 0}, {"name", "tiny-e2e" + (corrupt.empty() ? "" : "-" + corrupt)},
                      {"prompt", prompt_of(pc)}, {"negative", prompt_of(nc)}, {"seed", seed}, {"height", h},
                      {"width", w}, {"steps", steps}, {"cfg", req.at("cfg")}, {"skip_layers", skip},
                      {"reference", "fp32"}, {"bf16_gap", {{"dit", golden::golden_dit_gap(*dit)}}},
                      {"captured", {{"cond_uncond_by", "golden e2e rows"}, {"noise_from", "torch.randn"},
                                    {"steps_run", steps}, {"latents_from", "scheduler.step"},
                                    {"settings", settings}}}};
  const nlohmann::json dump_meta = {{"format", golden::kDumpFormat},
                                    {"made_by", "moss-check official-fixture from " + data},
                                    {"corrupt", corrupt}};
  write_safetensors(out, t, {{"cases", nlohmann::json::array({c}).dump()}, {"meta", dump_meta.dump()}});
  std::printf("wrote %s (%zu tensors%s)\n", out.c_str(), t.size(),
              corrupt.empty() ? "" : (", corrupted: " + corrupt).c_str());
  return 0;
}

}  // namespace

CHECK_SUBCOMMAND("official-fixture", "--data hip/tests/data --out dump.safetensors [--corrupt swap-velocities|cut-hidden|wrong-ids]",
                  fixture_command);
