// moss-check e2e: sampler + DiT + VAE on the host backend from the golden conditioning (the
// text-encoder golden's hidden_bf16 of the prompt and negative cases), against the e2e.*
// tensors of golden_dit.safetensors: per step v_cond, v_uncond and latent, the final latent
// and the 8-bit image.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "subcommand.h"
#include "io/safetensors.h"
#include "model/dit.h"
#include "model/image_u8.h"
#include "model/vae.h"
#include "ops/backend.h"
#include "pipeline/noise.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"
#include "util/error.h"

namespace {

using namespace moss;

constexpr double kLatentTolerance = 1e-4;  // relative L2, per-step tensors and the final latent
constexpr int kMaxLevelsOff = 1;           // 8-bit image: at most one level off anywhere

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void compare(golden::Tally& tally, const SafetensorsFile& g, const std::string& name, const Tensor& got) {
  if (!g.has(name)) {
    tally.check(false, name + ": not in the golden");
    return;
  }
  const Tensor want_t = g.get(name);
  if (want_t.dims() != got.dims()) {
    tally.check(false, name + ": shape " + got.shape_str() + ", golden " + want_t.shape_str());
    return;
  }
  const std::vector<float> want = to_f32_vector(want_t), have = to_f32_vector(got);
  const double rel = golden::rel_l2(have.data(), want.data(), want.size());
  char line[256];
  std::snprintf(line, sizeof line, "%s: rel_l2 %.3e (max |diff| %.3e)", name.c_str(), rel,
                golden::max_abs_diff(have.data(), want.data(), want.size()));
  tally.check(rel < kLatentTolerance, line);
}

// Host f32 copy of a text-encoder golden tensor (the DiT takes f32 text states).
Tensor text_states(const SafetensorsFile& te, const std::string& name) {
  const Tensor t = te.get(name);
  const std::vector<float> v = to_f32_vector(t);
  Tensor out = host_tensor(DType::F32, t.dims());
  std::copy(v.begin(), v.end(), out.ptr<float>());
  return out;
}

int e2e_command(const std::vector<std::string>& args) {
  const std::string model = golden::flag(args, "--model");
  const std::string dit_path = golden::flag(args, "--golden-dit"), te_path = golden::flag(args, "--golden-te");
  const auto g = SafetensorsFile::open(dit_path);
  const auto te = SafetensorsFile::open(te_path);
  auto meta_it = g->metadata().find("meta");
  if (meta_it == g->metadata().end()) throw failure(dit_path + ": no 'meta' entry in the metadata");
  const nlohmann::json meta = nlohmann::json::parse(meta_it->second);
  const nlohmann::json& req = meta.at("e2e");

  const auto t_start = std::chrono::steady_clock::now();
  const std::unique_ptr<Backend> be = make_host_backend();
  const DitConfig dcfg = parse_dit_config(model + "/transformer/config.json");
  Dit dit(*be, WeightFiles::open_folder(model + "/transformer"), dcfg);
  const VaeConfig vcfg = parse_vae_config(model + "/vae/config.json");
  VaeDecoder vae(*be, WeightFiles::open_folder(model + "/vae"), vcfg);
  const double load_s = seconds_since(t_start);

  const int64_t height = req.at("height").get<int64_t>(), width = req.at("width").get<int64_t>();
  const int64_t gh = height / vcfg.packed_scale(), gw = width / vcfg.packed_scale();
  SamplerSettings s;
  s.cfg = req.at("cfg").get<float>();
  s.skip_layers = meta.at("skip_layers").get<std::vector<int>>();

  auto t0 = std::chrono::steady_clock::now();
  const Dit::Text cond =
      dit.embed_text(text_states(*te, "case" + std::to_string(req.at("prompt_case").get<int>()) + ".hidden_bf16"));
  const Dit::Text uncond =
      dit.embed_text(text_states(*te, "case" + std::to_string(req.at("negative_case").get<int>()) + ".hidden_bf16"));
  const std::vector<float> noise_v = initial_noise(req.at("seed").get<uint64_t>(), dcfg.latent_channels, gh, gw);
  Tensor noise = host_tensor(DType::F32, {dcfg.latent_channels, gh, gw});
  std::copy(noise_v.begin(), noise_v.end(), noise.ptr<float>());
  const std::vector<float> sigmas = make_schedule(req.at("steps").get<int>(), req.at("shift").get<float>());
  SamplerTrace trace;
  const Tensor latent = sample(
      dit, cond, &uncond, noise, sigmas, s,
      [](int i, int n, double sec) { std::printf("step %d/%d: %.3f s\n", i + 1, n, sec); }, &trace);
  const double denoise_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const Tensor image = vae.decode(latent);
  const std::vector<uint8_t> u8 = image_to_u8(image);
  const double vae_s = seconds_since(t0);

  golden::Tally tally;
  const size_t steps_run = sigmas.size() - 1;
  size_t golden_steps = 0;
  while (g->has("e2e.step" + std::to_string(golden_steps) + ".latent_fp32")) ++golden_steps;
  tally.check(steps_run == golden_steps, "e2e steps: " + std::to_string(steps_run) + " run, " +
                                             std::to_string(golden_steps) + " in the golden");
  for (size_t i = 0; i < std::min(steps_run, golden_steps); ++i) {
    const std::string p = "e2e.step" + std::to_string(i) + ".";
    compare(tally, *g, p + "v_cond_fp32", trace.v_cond[i]);
    compare(tally, *g, p + "v_uncond_fp32", trace.v_uncond[i]);
    compare(tally, *g, p + "latent_fp32", trace.latent[i]);
  }
  compare(tally, *g, "e2e.final_latent_fp32", latent);
  {
    const std::vector<float> want = to_f32_vector(g->get("e2e.image_fp64")), have = to_f32_vector(image);
    if (want.size() == have.size())
      std::printf("info e2e.image_fp64: rel_l2 %.3e (max |diff| %.3e)\n",
                  golden::rel_l2(have.data(), want.data(), want.size()),
                  golden::max_abs_diff(have.data(), want.data(), want.size()));
  }
  // The golden's 8-bit image is CHW; image_to_u8 gives HWC.
  const Tensor want_u8 = g->get("e2e.image_u8");
  const int64_t H = want_u8.shape[1], W = want_u8.shape[2];
  if (int64_t(u8.size()) != 3 * H * W) {
    tally.check(false, "e2e.image_u8: " + std::to_string(u8.size()) + " bytes, golden " + want_u8.shape_str());
  } else {
    int worst = 0;
    int64_t off = 0;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const int d = std::abs(int(u8[size_t((y * W + x) * 3 + c)]) -
                                 int(want_u8.ptr<const uint8_t>()[(c * H + y) * W + x]));
          worst = std::max(worst, d);
          off += d != 0;
        }
    tally.check(worst <= kMaxLevelsOff, "e2e.image_u8: at most " + std::to_string(worst) + " level(s) off, " +
                                            std::to_string(off) + " of " + std::to_string(u8.size()) +
                                            " values differ");
  }
  std::printf("time: load %.3f s, denoise %.3f s (%zu steps), vae %.3f s, total %.3f s\n", load_s, denoise_s,
              steps_run, vae_s, seconds_since(t_start));
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("e2e", "--model DIR --golden-dit golden_dit.safetensors --golden-te golden_text_encoder.safetensors",
                  e2e_command);
