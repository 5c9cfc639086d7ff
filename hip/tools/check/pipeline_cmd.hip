// moss-check pipeline: the real model code (model/text_encoder, model/dit, model/vae, the sampler)
// on the GPU backend (make_hip_backend) for the tiny model, against the goldens and the host
// backend. One stage after another; a stage whose op family is missing or throws fails with
// the message (e.g. "not yet implemented") and the next stage still runs.
//
//   moss-check pipeline [--model DIR] [--data DIR] [--device N]
//     --model  default hip/tests/data/tiny-moss     (run from the repository root)
//     --data   default hip/tests/data               (golden_*.safetensors)
//
// Verdicts (relative L2 against the fp32/fp64 goldens):
//   te, dit   the GPU output may differ from the _fp32 golden by at most twice the distance
//             between the goldens' _bf16 and _fp32 (about 3e-2 for the tiny models): a bf16 GPU
//             run is expected as far from fp32 as the reference's own bf16 run, not farther.
//   vae       image within 1e-2 of image_fp64 (bf16-operand kernels; no bf16 golden exists),
//             the unpacked latent within 1e-5 (fp32 kernel).
//   e2e       4 sampler steps + VAE from the golden conditioning: final latent within twice the
//             DiT's golden distance of the fp32 golden (the per-step error compounds little: the
//             latent is dominated by the noise it started from).
//   alloc     a repeated DiT forward makes no new device allocation (caching allocator).
// Info lines give the distance to the host backend and to the _bf16 goldens, and per-layer /
// per-block traces. Prints "N passed, M failed"; exit status 0 only if every check passed.
// Runtime: a few seconds on an H200 machine (the tiny model; host runs included).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/model_folder.h"
#include "io/safetensors.h"
#include "model/dit.h"
#include "model/text_encoder.h"
#include "model/vae.h"
#include "ops/backend.h"
#include "ops/hip/hip_backend.h"
#include "pipeline/noise.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"
#include "tensor/tensor.h"
#include "util/error.h"
#include "subcommand.h"

namespace {

using namespace moss;

constexpr double kVaeImageTolerance = 1e-2;   // bf16-operand kernels (issue 6)
constexpr double kVaeLatentTolerance = 1e-5;  // fp32 kernel

struct Tally {
  int passed = 0, failed = 0;
  void check(bool ok, const std::string& what) {
    (ok ? passed : failed)++;
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    std::fflush(stdout);
  }
  int finish() const {
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
  }
};

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return std::sqrt(num / (den > 0 ? den : 1.0));
}

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char line[256];
  std::snprintf(line, sizeof line, f, a, b, c, d);
  return line;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == name) return argv[i + 1];
  return fallback;
}

Tensor host_f32(const Tensor& t) {
  const std::vector<float> v = to_f32_vector(t);
  Tensor out = host_tensor(DType::F32, t.dims());
  std::copy(v.begin(), v.end(), out.ptr<float>());
  return out;
}

// GPU output against the fp32 golden (the verdict, limit given), plus info against the host run
// and the bf16 golden when present.
void judge(Tally& tally, const std::string& what, const Tensor& gpu, const Tensor& fp32_golden, double limit,
           const Tensor* host_run = nullptr, const Tensor* bf16_golden = nullptr) {
  const std::vector<float> g = to_f32_vector(gpu);
  const double d32 = rel_l2(g, to_f32_vector(fp32_golden));
  std::string info;
  if (host_run) info += fmt(", host %.3e", rel_l2(g, to_f32_vector(*host_run)));
  if (bf16_golden) info += fmt(", _bf16 golden %.3e", rel_l2(g, to_f32_vector(*bf16_golden)));
  const std::string verdict = fmt(": rel_l2 %.3e to the fp32 golden (limit %.2e)", d32, limit);
  tally.check(std::isfinite(d32) && d32 <= limit,
              what + verdict + info + (g.size() == size_t(fp32_golden.numel()) ? "" : " SHAPE"));
}

// Runs one stage; an exception (a missing op family, a kernel error) fails the stage.
void stage(Tally& tally, const std::string& name, const std::function<void()>& body) {
  std::printf("== %s\n", name.c_str());
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    body();
  } catch (const std::exception& e) {
    tally.check(false, name + ": stopped: " + e.what());
  }
  std::printf("   %s: %.3f s\n", name.c_str(), seconds_since(t0));
}

// ---- text encoder ----------------------------------------------------------------------------------
void text_encoder_stage(Tally& tally, Backend& gpu, Backend& host, const std::string& model, const std::string& data) {
  const std::string folder = model + "/text_encoder";
  const TextEncoderConfig cfg = parse_text_encoder_config(folder + "/config.json");
  const WeightFiles weights = WeightFiles::open_folder(folder);
  check_tensors(weights, text_encoder_expected_tensors(cfg, text_encoder_prefix(weights)),
                text_encoder_ignored_prefixes());
  const auto g = SafetensorsFile::open(data + "/golden_text_encoder.safetensors");
  TextEncoder on_gpu(gpu, weights, cfg), on_host(host, weights, cfg);
  for (int c = 0; g->has("case" + std::to_string(c) + ".ids"); ++c) {
    const std::string p = "case" + std::to_string(c) + ".";
    const Tensor ids_t = g->get(p + "ids");
    const std::vector<int32_t> ids(ids_t.ptr<const int32_t>(), ids_t.ptr<const int32_t>() + ids_t.numel());
    std::map<int, Tensor> layers;
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor hidden = on_gpu.encode(ids, [&](int l, const Tensor& x) { layers[l] = host_f32(x); });
    std::printf("   %s %zu tokens: %.3f s on %s\n", p.c_str(), ids.size(), seconds_since(t0), gpu.name().c_str());
    const Tensor reference = on_host.encode(ids);
    const Tensor fp32 = g->get(p + "hidden_fp32"), bf16 = g->get(p + "hidden_bf16");
    const double golden_gap = rel_l2(to_f32_vector(bf16), to_f32_vector(fp32));
    judge(tally, p + "hidden", hidden, fp32, 2 * golden_gap, &reference, &bf16);
    for (const auto& [l, x] : layers) {
      const std::string name = p + "layer" + std::to_string(l) + "_fp32";
      if (g->has(name))
        std::printf("info %s: rel_l2 %.3e\n", name.c_str(), rel_l2(to_f32_vector(x), to_f32_vector(g->get(name))));
    }
  }
}

// ---- DiT -----------------------------------------------------------------------------------------
struct DitGolden {
  std::shared_ptr<SafetensorsFile> file;
  nlohmann::json meta;
};

DitGolden open_dit_golden(const std::string& data) {
  DitGolden d;
  d.file = SafetensorsFile::open(data + "/golden_dit.safetensors");
  auto it = d.file->metadata().find("meta");
  if (it == d.file->metadata().end()) throw failure("golden_dit.safetensors: no 'meta' metadata");
  d.meta = nlohmann::json::parse(it->second);
  return d;
}

double dit_golden_gap(const SafetensorsFile& g) {
  return rel_l2(to_f32_vector(g.get("forward.cond.velocity_bf16")), to_f32_vector(g.get("forward.cond.velocity_fp32")));
}

void dit_stage(Tally& tally, Backend& gpu, Backend& host, const std::string& model, const std::string& data) {
  const DitGolden dg = open_dit_golden(data);
  const SafetensorsFile& g = *dg.file;
  const DitConfig cfg = parse_dit_config(model + "/transformer/config.json");
  const WeightFiles weights = WeightFiles::open_folder(model + "/transformer");
  Dit on_gpu(gpu, weights, cfg), on_host(host, weights, cfg);
  const float timestep = dg.meta.at("forward_timestep").get<float>();
  const std::vector<int> skip = dg.meta.at("skip_layers").get<std::vector<int>>();
  const Tensor latent = g.get("forward.latent");
  for (const bool skipping : {false, true}) {
    const std::string row = skipping ? "uncond_skip" : "cond";
    const std::string p = "forward." + row + ".";
    const Tensor text_states = g.get(skipping ? "forward.uncond_text" : "forward.cond_text");
    const auto t0 = std::chrono::steady_clock::now();
    DitTrace trace;
    const Dit::Text text = on_gpu.embed_text(text_states);
    const Tensor velocity = on_gpu.forward(latent, text, timestep, skipping ? skip : std::vector<int>{}, &trace);
    std::printf("   %s: %lld text tokens, %.3f s on %s\n", row.c_str(), (long long)text.tokens, seconds_since(t0),
                gpu.name().c_str());
    const Dit::Text host_text = on_host.embed_text(text_states);
    const Tensor reference = on_host.forward(latent, host_text, timestep, skipping ? skip : std::vector<int>{});
    const Tensor fp32 = g.get(p + "velocity_fp32"), bf16 = g.get(p + "velocity_bf16");
    const double gap = rel_l2(to_f32_vector(bf16), to_f32_vector(fp32));
    judge(tally, p + "velocity", velocity, fp32, 2 * gap, &reference, &bf16);
    for (const auto& [key, t] : trace.tensors) {
      const std::string name = p + key + "_fp32";
      if (g.has(name))
        std::printf("info %s: rel_l2 %.3e\n", name.c_str(), rel_l2(to_f32_vector(t), to_f32_vector(g.get(name))));
    }
  }

  // Steady state: the same forward again allocates nothing new on the device.
  const Dit::Text text = on_gpu.embed_text(g.get("forward.cond_text"));
  (void)on_gpu.forward(latent, text, timestep, {});
  const size_t before = hip_memory_stats(gpu).device_allocations;
  (void)on_gpu.forward(latent, text, timestep, {});
  const HipMemoryStats after = hip_memory_stats(gpu);
  tally.check(after.device_allocations == before,
              "alloc: a repeated DiT forward made " + std::to_string(after.device_allocations - before) +
                  " device allocations (" + std::to_string(after.device_allocations) + " in all, " +
                  std::to_string(after.cached_bytes >> 10) + " KiB cached)");
}

// ---- VAE -----------------------------------------------------------------------------------------
void vae_stage(Tally& tally, Backend& gpu, Backend& host, const std::string& model, const std::string& data) {
  const std::string folder = model + "/vae";
  const VaeConfig cfg = parse_vae_config(folder + "/config.json");
  const WeightFiles weights = WeightFiles::open_folder(folder);
  const auto g = SafetensorsFile::open(data + "/golden_vae.safetensors");
  const auto meta = g->metadata().find("cases");
  if (meta == g->metadata().end()) throw failure("golden_vae.safetensors: no 'cases' metadata");
  VaeDecoder on_gpu(gpu, weights, cfg), on_host(host, weights, cfg);
  for (const nlohmann::json& c : nlohmann::json::parse(meta->second)) {
    const std::string p = "case" + std::to_string(c.at("case").get<int64_t>()) + ".";
    const Tensor packed = g->get(p + "latent_packed");
    judge(tally, p + "latent_unpacked", on_gpu.unpack_latent(packed), g->get(p + "latent_unpacked_fp64"),
          kVaeLatentTolerance);
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor image = on_gpu.decode(packed);
    std::printf("   %s %lldx%lld: %.3f s on %s\n", p.c_str(), (long long)c.at("height").get<int64_t>(),
                (long long)c.at("width").get<int64_t>(), seconds_since(t0), gpu.name().c_str());
    const Tensor reference = on_host.decode(packed);
    judge(tally, p + "image", image, g->get(p + "image_fp64"), kVaeImageTolerance, &reference);
  }
}

// ---- end to end ----------------------------------------------------------------------------------
void e2e_stage(Tally& tally, Backend& gpu, const std::string& model, const std::string& data) {
  const DitGolden dg = open_dit_golden(data);
  const SafetensorsFile& g = *dg.file;
  const auto te = SafetensorsFile::open(data + "/golden_text_encoder.safetensors");
  const nlohmann::json& req = dg.meta.at("e2e");
  const DitConfig dcfg = parse_dit_config(model + "/transformer/config.json");
  Dit dit(gpu, WeightFiles::open_folder(model + "/transformer"), dcfg);
  const VaeConfig vcfg = parse_vae_config(model + "/vae/config.json");
  VaeDecoder vae(gpu, WeightFiles::open_folder(model + "/vae"), vcfg);

  SamplerSettings s;
  s.cfg = req.at("cfg").get<float>();
  s.skip_layers = dg.meta.at("skip_layers").get<std::vector<int>>();
  const int64_t gh = req.at("height").get<int64_t>() / vcfg.packed_scale();
  const int64_t gw = req.at("width").get<int64_t>() / vcfg.packed_scale();
  const auto text = [&](const char* key) {
    return host_f32(te->get("case" + std::to_string(req.at(key).get<int>()) + ".hidden_bf16"));
  };
  const Dit::Text cond = dit.embed_text(text("prompt_case")), uncond = dit.embed_text(text("negative_case"));
  const std::vector<float> noise_v = initial_noise(req.at("seed").get<uint64_t>(), dcfg.latent_channels, gh, gw);
  Tensor noise = host_tensor(DType::F32, {dcfg.latent_channels, gh, gw});
  std::copy(noise_v.begin(), noise_v.end(), noise.ptr<float>());
  const Tensor latent = sample(dit, cond, &uncond, noise, make_schedule(req.at("steps").get<int>(), req.at("shift").get<float>()), s);
  judge(tally, "e2e.final_latent", latent, g.get("e2e.final_latent_fp32"), 2 * dit_golden_gap(g));
  const Tensor image = vae.decode(latent);
  std::printf("info e2e.image_fp64: rel_l2 %.3e\n",
              rel_l2(to_f32_vector(image), to_f32_vector(g.get("e2e.image_fp64"))));
}

}  // namespace

static int pipeline_main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h" || (a.rfind("--", 0) == 0 && a != "--model" && a != "--data" && a != "--device")) {
      std::fprintf(stderr, "usage: moss-check pipeline [--model DIR] [--data DIR] [--device N]\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  const std::string model = flag(argc, argv, "--model", "hip/tests/data/tiny-moss");
  const std::string data = flag(argc, argv, "--data", "hip/tests/data");
  const int device = std::atoi(flag(argc, argv, "--device", "0").c_str());
  Tally tally;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<Backend> host = make_host_backend();
    std::unique_ptr<Backend> gpu = make_hip_backend(device);
    std::printf("moss-check pipeline: %s against the host backend and the goldens in %s\n", gpu->name().c_str(),
                data.c_str());
    stage(tally, "text encoder", [&] { text_encoder_stage(tally, *gpu, *host, model, data); });
    stage(tally, "dit", [&] { dit_stage(tally, *gpu, *host, model, data); });
    stage(tally, "vae", [&] { vae_stage(tally, *gpu, *host, model, data); });
    stage(tally, "e2e", [&] { e2e_stage(tally, *gpu, model, data); });
    std::printf("total %.3f s\n", seconds_since(t0));
  } catch (const std::exception& e) {
    tally.check(false, std::string("setup: ") + e.what());
  }
  return tally.finish();
}

CHECK_SUBCOMMAND_MAIN("pipeline", "[--model DIR] [--data DIR] [--device N]", pipeline_main);
