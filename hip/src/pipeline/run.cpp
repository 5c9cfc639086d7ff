#include "pipeline/run.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdlib>
#include <string>

#include "io/files.h"
#include "io/image_files.h"
#include "io/mapping_faults.h"
#include "io/output_files.h"
#include "model/image_u8.h"
#include "ops/backend.h"
#include "pipeline/dit_residency.h"
#include "pipeline/moss_model.h"
#include "pipeline/planner.h"
#include "pipeline/noise.h"
#include "pipeline/record.h"
#include "pipeline/reporter.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"
#include "runtime/devices.h"
#include "tokenizer/prompt.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/test_pause.h"
#include "util/thread_pool.h"

namespace moss {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string gib(size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", double(bytes) / double(1ull << 30));
  return b;
}

// The backend of this run: the host reference when MOSSINFER_BACKEND=host (a developer
// feature for tests and machines without a GPU), else the chosen HIP device.
std::unique_ptr<Backend> choose_backend(const RunOptions& o, const Reporter& rep, std::string& backend_name) {
  const char* env = std::getenv("MOSSINFER_BACKEND");
  std::string want = env ? env : "";
  if (want == "host") {
    backend_name = "host";
    rep.line("device: host reference backend (%d threads; MOSSINFER_BACKEND=host)", ThreadPool::global().size());
    return make_host_backend();
  }
  if (!want.empty() && want != "hip")
    throw usage_error("MOSSINFER_BACKEND=" + want + ": expected 'hip' or 'host'");
  std::vector<DeviceInfo> devices = list_devices();
  const DeviceInfo* chosen = nullptr;
  for (const DeviceInfo& d : devices) {
    if (o.device >= 0 ? d.index == o.device : d.supported) {
      chosen = &d;
      break;
    }
  }
  if (o.device >= 0 && !chosen)
    throw usage_error("--device " + std::to_string(o.device) + ": no such HIP device (" +
                      std::to_string(devices.size()) + " found; see --list-devices)");
  if (chosen && !chosen->supported)
    throw usage_error("--device " + std::to_string(chosen->index) + " (" + chosen->name + ", " + chosen->arch +
                      "): not supported: " + chosen->reason);
  if (!chosen)
    throw failure(devices.empty() ? "no HIP devices found (see --list-devices)"
                                  : "no supported HIP device found (see --list-devices)");
  std::string kernels;
  for (const std::string& k : chosen->kernels) kernels += (kernels.empty() ? "" : ", ") + k;
  rep.line("device %d: %s (%s, %s)", chosen->index, chosen->name.c_str(), chosen->arch.c_str(),
           gib(chosen->total_bytes).c_str());
  rep.line("kernels: %s", kernels.c_str());
  backend_name = "hip " + chosen->arch;
  return make_hip_backend(chosen->index);
}

}  // namespace

int run_generation(const RunOptions& o) {
  const auto t_start = Clock::now();
  Reporter rep(o.quiet);
  install_interrupt_handlers();
  install_mapping_fault_handler();
  // Printed before anything can fail, so even an interrupted run can be repeated.
  if (o.random_seed) rep.always("seed: %llu (drawn at random)", (unsigned long long)o.seed);
  test_pause("start");

  // Everything that can be refused is refused before any compute.
  const HostThreads threads = host_threads_from_env();  // a bad MOSSINFER_THREADS: exit 2, on any backend
  if (!threads.note.empty()) rep.warning("%s", threads.note.c_str());
  if (!o.output_png.empty()) check_writable_output(o.output_png, "-o");
  if (!o.latent_out.empty()) check_writable_output(o.latent_out, "--latent-out");
  MossModel model = open_moss_model(o.model);
  test_pause("model");
  check_interrupted();
  for (int layer : o.skip_layers)
    if (layer >= model.dit_config.layers)
      throw usage_error("--skip-layers " + o.skip_layers_text + ": block " + std::to_string(layer) +
                        " does not exist (the DiT has " + std::to_string(model.dit_config.layers) + " blocks)");
  Tokenizer tokenizer = Tokenizer::load(model.tokenizer_json);
  const bool use_uncond = o.cfg != 1.0f;
  PromptIds cond_ids = encode_prompt(tokenizer, o.prompt, size_t(o.max_seq));
  PromptIds uncond_ids;
  if (use_uncond) uncond_ids = encode_prompt(tokenizer, o.negative, size_t(o.max_seq));
  if (cond_ids.truncated)
    rep.warning("the prompt has %zu tokens after templating; cut to --max-seq %lld", cond_ids.full_length,
                (long long)o.max_seq);
  if (use_uncond && uncond_ids.truncated)
    rep.warning("the negative prompt has %zu tokens after templating; cut to --max-seq %lld", uncond_ids.full_length,
                (long long)o.max_seq);

  std::string backend_name;
  std::unique_ptr<Backend> be = choose_backend(o, rep, backend_name);
  const std::vector<float> sigmas = make_schedule(o.steps, o.shift);
  const int steps_run = int(sigmas.size()) - 1;
  if (steps_run != o.steps)
    rep.line("schedule: %d steps requested, %d distinct after snapping to the training grid", o.steps, steps_run);

  RunRecord record;
  record.options = &o;
  record.steps_run = steps_run;
  record.model_identity = model.identity;
  record.backend = backend_name;
  record.total_blocks = int(model.dit_config.layers);
  record.resident_blocks = record.total_blocks;

  // The memory plan, on a device: refusals come here, before the text encoder runs.
  const bool decode = !o.output_png.empty();
  const int64_t max_tokens =
      int64_t(std::max(cond_ids.ids.size(), use_uncond ? uncond_ids.ids.size() : size_t(0)));
  auto plan_for = [&](size_t free_bytes) {
    const bool user = o.vram_budget_gib && size_t(*o.vram_budget_gib * double(kGiB)) <= free_bytes;
    const size_t budget = user ? size_t(*o.vram_budget_gib * double(kGiB)) : free_bytes;
    return plan_memory(measure_stages(model, o.width, o.height, max_tokens, decode), budget, user,
                       host_available_memory());
  };
  std::optional<MemoryPlan> plan;
  if (be->free_memory() > 0) {
    plan = plan_for(be->free_memory());
    record.resident_blocks = plan->resident_blocks;
    rep.line("memory plan: %d of %d DiT blocks resident%s; peaks: text encoder %s, DiT %s, VAE %s (budget %s); "
             "text encoder layers %s",
             plan->resident_blocks, record.total_blocks,
             plan->streamed() ? (", " + format_gib(plan->pinned_host_bytes) + " pinned for streaming").c_str() : "",
             format_gib(plan->te_peak).c_str(), format_gib(plan->dit_peak).c_str(), format_gib(plan->vae_peak).c_str(),
             format_gib(plan->budget_bytes).c_str(), plan->te_resident ? "resident" : "streamed");
  }

  // The VAE weights load first and stay (product.md section 5).
  std::unique_ptr<VaeDecoder> vae;
  if (decode) vae = std::make_unique<VaeDecoder>(*be, model.vae_weights, model.vae_config);

  // Text encoder: both prompts, then it is released before the DiT loads.
  test_pause("text-encoder");
  check_interrupted();
  auto t0 = Clock::now();
  rep.line("text encoder");
  Tensor cond_states, uncond_states;
  TextEncoderTimes te_times;
  std::string te_tokens;  // "64+10": the prompts the encode stacked (cfg 1: the prompt alone)
  TeResidency te_residency = TeResidency::Auto;
  if (plan) te_residency = plan->te_resident ? TeResidency::Resident : TeResidency::Streamed;
  {
    TextEncoder te(*be, model.te_weights, model.te_config, te_residency);
    std::vector<std::vector<int32_t>> prompts = {cond_ids.ids};
    if (use_uncond) prompts.push_back(uncond_ids.ids);
    for (const std::vector<int32_t>& p : prompts) te_tokens += (te_tokens.empty() ? "" : "+") + std::to_string(p.size());
    std::vector<Tensor> states = te.encode_many(prompts);  // one pass over the layers for both
    cond_states = states[0];
    if (use_uncond) uncond_states = states[1];
    te_times = te.times();
    te_residency = te.residency();
  }
  record.times.text_encoder_s = since(t0);
  be->release_cached();  // the text encoder's buffers go back before the DiT's plan is checked
  test_pause("dit");
  check_interrupted();

  // DiT: its part of the plan is checked again with the memory free now, then the text rows
  // once per prompt, then the Euler loop.
  t0 = Clock::now();
  const int64_t gh = o.height / 16, gw = o.width / 16;
  Tensor latent;
  {
    int resident = int(model.dit_config.layers);
    if (plan) {
      MemoryPlan now = plan_for(be->free_memory() + (vae ? plan->sizes.vae_weight_bytes : 0));
      resident = std::min(plan->resident_blocks, now.resident_blocks);
      record.resident_blocks = resident;
    }
    Dit dit(*be, make_resident_streaming_source(*be, model.dit_weights, model.dit_config, resident),
            model.dit_config);
    Dit::Text cond = dit.embed_text(cond_states);
    Dit::Text uncond;
    if (use_uncond) uncond = dit.embed_text(uncond_states);
    record.times.dit_load_s = since(t0);
    std::vector<float> noise = initial_noise(o.seed, model.dit_config.latent_channels, gh, gw);
    Tensor x = host_tensor(DType::F32, {model.dit_config.latent_channels, gh, gw});
    std::copy(noise.begin(), noise.end(), x.ptr<float>());
    SamplerSettings s{o.steps, o.cfg, o.shift, o.skip_layers};
    test_pause("denoise");
    check_interrupted();
    auto t_loop = Clock::now();
    latent = sample(dit, cond, use_uncond ? &uncond : nullptr, x, sigmas, s, [&](int step, int total, double sec) {
      rep.line("denoise %d/%d %.3f", step + 1, total, sec);
      check_interrupted();
    });
    record.times.denoise_s = since(t_loop);
  }
  be->release_cached();  // the DiT's weights and buffers go back before the decode
  be->set_low_peak(true);

  // Every output is encoded first and written at the end, all or none (io/output_files.h):
  // a decode that fails or is interrupted leaves no latents behind either.
  OutputFiles outputs;
  if (!o.latent_out.empty()) outputs.add(o.latent_out, encode_npy_f32(latent.ptr<float>(), latent.dims()));

  if (!o.output_png.empty()) {
    test_pause("vae");
    check_interrupted();
    t0 = Clock::now();
    rep.line("vae");
    Tensor image = vae->decode(latent);
    std::vector<uint8_t> rgb = image_to_u8(image);
    record.times.vae_s = since(t0);
    record.times.total_s = since(t_start);
    check_interrupted();
    outputs.add(o.output_png, encode_png(rgb.data(), o.width, o.height,
                                         o.no_metadata ? std::vector<PngText>() : png_record_chunks(record)));
  }
  check_interrupted();
  outputs.commit();
  record.times.total_s = since(t_start);
  // The text encoder's total, then its load (weights to the device, resident layers only, with
  // the kernels' warm-up overlapping it) and its encode (the pass itself, every prompt stacked;
  // streamed: with the copies) apart, and the prompts' token counts the encode covered.
  rep.line("done: text encoder %.3f s (load %.3f s, encode %.3f s, %s, %s tokens), dit load %.3f s, denoise %.3f s "
           "(%d steps), vae %.3f s, total %.3f s; seed %llu; %d of %d DiT blocks resident",
           record.times.text_encoder_s, te_times.load_s, te_times.encode_s, te_residency_name(te_residency),
           te_tokens.c_str(),
           record.times.dit_load_s, record.times.denoise_s, steps_run, record.times.vae_s,
           record.times.total_s, (unsigned long long)o.seed, record.resident_blocks, record.total_blocks);
  return 0;
}

}  // namespace moss
