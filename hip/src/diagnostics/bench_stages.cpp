#include "diagnostics/bench_stages.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>

#include "model/dit_streaming.h"
#include "model/full_size_config.h"
#include "model/int8_convrot_layers.h"
#include "tensor/int8_convrot.h"
#include "model/random_weights.h"
#include "model/vae.h"
#include "pipeline/moss_model.h"
#include "pipeline/noise.h"
#include "pipeline/planner.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"

namespace moss {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string format(const char* fmt, ...) {
  char b[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  return b;
}

double gib(size_t bytes) { return double(bytes) / double(kGiB); }

// "4.61 GiB", or below a GiB "12.3 MiB" (the tests' tiny model streams kilobytes).
std::string bytes_text(size_t bytes) {
  if (bytes >= kGiB) return format("%.2f GiB", gib(bytes));
  return format("%.1f MiB", double(bytes) / double(1 << 20));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Step times as "0.1577 s median of steps 2..4 (0.1736 0.1572 0.1577 0.1580)": the first step is
// a warm-up (kernel modules, the allocator's first blocks).
std::string step_text(const std::vector<double>& steps) {
  const std::vector<double> after(steps.begin() + (steps.size() > 1 ? 1 : 0), steps.end());
  std::string s = format("%.4f s median of steps %d..%d (", median(after), steps.size() > 1 ? 2 : 1, int(steps.size()));
  for (size_t i = 0; i < steps.size(); ++i) s += format("%s%.4f", i ? " " : "", steps[i]);
  return s + ")";
}

// The model a generation would open, its weights random and in memory. Salts as bench_random_model's.
MossModel random_model(const BenchShapes& shapes) {
  MossModel m;
  m.folder = "random " + shapes.name + " weights (in memory)";
  m.te_config = shapes.te;
  m.dit_config = shapes.dit;
  m.vae_config = shapes.vae;
  const std::string te_prefix = "language_model.";
  m.te_weights = WeightFiles::in_memory(m.folder + ": text_encoder",
                                        random_host_weights(text_encoder_expected_tensors(shapes.te, te_prefix), true, 3000));
  m.dit_weights = WeightFiles::in_memory(m.folder + ": transformer",
                                         random_host_weights(dit_expected_tensors(shapes.dit), false, 1000));
  m.vae_weights =
      WeightFiles::in_memory(m.folder + ": vae", random_host_weights(vae_expected_tensors(shapes.vae), false, 2000));
  return m;
}

size_t tensors_bytes(const std::vector<ExpectedTensor>& tensors) {
  size_t bytes = 0;
  for (const ExpectedTensor& e : tensors) {
    if (e.optional) continue;
    size_t n = dtype_size(e.dtypes.empty() ? DType::BF16 : e.dtypes[0]);
    for (int64_t d : e.shape) n *= size_t(d);
    bytes += n;
  }
  return bytes;
}

// The config with its first `layers` layers only.
TextEncoderConfig first_layers(TextEncoderConfig c, int64_t layers) {
  c.layers = std::min(c.layers, layers);
  c.layer_types.resize(size_t(c.layers));
  return c;
}

// Host memory the random weights take with the text encoder's first `te_layers` layers, and the
// streamed plan's pinned images (at most half the DiT's weights), beside kHostSpareBytes for the
// system.
size_t host_bytes_needed(const BenchShapes& s, int64_t te_layers) {
  const size_t dit = tensors_bytes(dit_expected_tensors(s.dit));
  return tensors_bytes(text_encoder_expected_tensors(first_layers(s.te, te_layers), "language_model.")) + dit +
         tensors_bytes(vae_expected_tensors(s.vae)) + dit / 2 + kHostSpareBytes;
}

// A prompt's token ids: spread over the vocabulary, the same every run.
std::vector<int32_t> prompt_ids(int64_t tokens, int64_t vocab, int64_t salt) {
  std::vector<int32_t> ids(static_cast<size_t>(tokens));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((int64_t(i) * 7919 + salt) % std::max<int64_t>(vocab, 1));
  return ids;
}

struct StepRun {
  std::vector<double> steps;
  size_t streamed_bytes = 0;  // a pass's copies (one pass a step: both rows go through each block together)
  size_t pool_bytes = 0;
};

// The CLI's denoise loop (pipeline/sampler.h) with cfg 3 on the DiT the CLI builds for `resident`
// blocks (model/dit_streaming.h: the others stream from pinned host memory).
StepRun dit_steps(Backend& be, const MossModel& m, int resident, const BenchOptions& o, const Tensor& states,
                  const std::function<size_t(Backend&)>& pool_bytes) {
  be.release_cached();
  StepRun r;
  auto source = make_resident_streaming_source(be, m.dit_weights, m.dit_config, resident);
  const DitWeightSource& src = *source;
  Dit dit(be, std::move(source), m.dit_config);
  r.streamed_bytes = src.streamed_bytes_per_pass();
  const int64_t gh = o.height / 16, gw = o.width / 16;
  const Dit::Text cond = dit.embed_text(states), uncond = dit.embed_text(states);
  const std::vector<float> z = initial_noise(1, m.dit_config.latent_channels, gh, gw);
  Tensor noise = host_tensor(DType::F32, {m.dit_config.latent_channels, gh, gw});
  std::copy(z.begin(), z.end(), noise.ptr<float>());
  SamplerSettings s;
  s.cfg = 3.0f;
  sample(dit, cond, &uncond, noise, make_schedule(o.steps, 5.0f), s,
         [&](int, int, double sec) { r.steps.push_back(sec); });
  if (pool_bytes) r.pool_bytes = pool_bytes(be);
  return r;
}

}  // namespace

BenchShapes full_size_shapes() {
  BenchShapes s;
  s.name = "MOSS-Image";
  s.dit = dit_config_from_json(full_size_dit_config(), "MOSS-Image transformer config");
  s.te = text_encoder_config_from_json(full_size_text_encoder_config(), "Qwen3.5-9B text_config");
  s.vae = vae_config_from_json(full_size_vae_config(), "FLUX.2 small decoder");
  return s;
}

StageBench run_stage_bench(Backend& be, const BenchShapes& shapes, const BenchOptions& o, int64_t tokens,
                           const std::function<size_t(Backend&)>& pool_bytes) {
  StageBench out;
  auto fail = [&](const std::string& what, const std::exception& e) {
    out.ok = false;
    out.lines.push_back(what + ": failed: " + e.what());
  };
  // As many text-encoder layers as the host's available memory holds (four at a time), at least four.
  const int64_t te_all = shapes.te.layers;
  int64_t te_layers = shapes.te_layers_timed > 0 ? std::min<int64_t>(shapes.te_layers_timed, te_all) : te_all;
  if (const size_t avail = host_available_memory()) {
    while (te_layers > 4 && host_bytes_needed(shapes, te_layers) > avail) te_layers = std::max<int64_t>(4, te_layers - 4);
    if (host_bytes_needed(shapes, te_layers) > avail) {
      out.ok = false;
      out.lines.push_back(format("stages: not run: their random weights and pinned blocks need %.1f GiB of host "
                                 "memory beside %.1f GiB for the system, %.1f GiB is available",
                                 gib(host_bytes_needed(shapes, te_layers) - kHostSpareBytes), gib(kHostSpareBytes),
                                 gib(avail)));
      return out;
    }
  }
  BenchShapes made = shapes;
  made.te = first_layers(shapes.te, te_layers);
  // --int8: every block projection in INT8 ConvRot (random I8 values and scales), at the largest
  // group up to the published 256 that divides the widths (the tiny model's need 64).
  int64_t int8_group = 0;
  if (o.int8) {
    int8_group = convrot::kDefaultGroupSize;
    while (int8_group > 4 && (shapes.dit.dim % int8_group || shapes.dit.ffn_dim % int8_group)) int8_group /= 4;
    std::map<std::string, int64_t> layers;
    for (const QuantizedDitLayer& l : int8_convrot_dit_layers(shapes.dit)) layers[l.name] = int8_group;
    made.dit.int8_groups = int8_projection_groups(layers, shapes.dit);
  }
  const std::string dit_weights_kind = o.int8 ? format("INT8 ConvRot (group %lld)", (long long)int8_group) : "bf16";
  const auto t_weights = Clock::now();
  const MossModel m = random_model(made);
  const double weights_s = since(t_weights);
  const int blocks = int(shapes.dit.layers);

  // The plans, as the CLI makes them (pipeline/engine.cpp): the stages measured on the measuring
  // backend, then the resident block count for a budget. Resident: the device's free memory (the
  // CLI's plan without --vram-budget). Streamed: --vram-budget, or when that keeps every block
  // resident (or is not given) a budget that keeps half of them: what a smaller card's plan does.
  const size_t host = host_available_memory();
  std::optional<MemoryPlan> whole, part;
  std::string budget_note;
  try {
    const StageSizes sizes = measure_stages(m, o.width, o.height, tokens, true);
    const size_t free_bytes = be.free_memory() ? be.free_memory() : std::numeric_limits<size_t>::max() / 4;
    whole = plan_memory(sizes, free_bytes, false, host);
    MemoryPlan floor;
    floor.sizes = sizes;
    // Half the blocks beside the two slots; with few blocks (the slots hold as much as the other
    // half) as many as fit just below the all-resident plan.
    const size_t all_resident = sizes.vae_weight_bytes + sizes.dit_fixed_bytes + sizes.dit_activation_bytes +
                                kReserveBytes + size_t(blocks) * sizes.dit_block_bytes;
    const size_t half =
        std::min(floor.dit_minimum() + size_t(blocks / 2) * sizes.dit_block_bytes, all_resident - 1);
    if (o.vram_budget_gib) {
      part = plan_memory(sizes, size_t(*o.vram_budget_gib * double(kGiB)), true, host);
      if (!part->streamed())
        budget_note = format("; --vram-budget %.1f keeps all %d blocks resident, so planned for %.1f GiB",
                             *o.vram_budget_gib, blocks, gib(half));
    }
    if (!part || !part->streamed()) part = plan_memory(sizes, half, true, host);
  } catch (const std::exception& e) {
    fail("memory plan", e);
    return out;
  }
  out.lines.push_back(format("stages on random %s weights made in host memory in %.1f s (no model files, nothing "
                             "written); cfg 3: 2 prompts of %lld tokens%s",
                             shapes.name.c_str(), weights_s, (long long)tokens,
                             o.int8 ? ("; the DiT's blocks in " + dit_weights_kind).c_str() : ""));

  // The text encoder: both prompts in one pass over the layers, residency as the CLI's plan says.
  try {
    const TeResidency residency = be.free_memory() == 0 ? TeResidency::Auto
                                  : whole->te_resident  ? TeResidency::Resident
                                                        : TeResidency::Streamed;
    be.release_cached();
    TextEncoder te(be, m.te_weights, m.te_config, residency);
    const std::vector<std::vector<int32_t>> prompts = {prompt_ids(tokens, m.te_config.vocab, 13),
                                                       prompt_ids(tokens, m.te_config.vocab, 29)};
    std::vector<double> runs;
    double load_s = 0;
    for (int rep = 0; rep < 4; ++rep) {
      const auto t0 = Clock::now();
      te.encode_many(prompts);
      runs.push_back(since(t0));
      if (rep == 0) load_s = te.times().load_s;
    }
    const std::vector<double> timed(runs.begin() + 1, runs.end());
    const double med = median(timed);
    // Fewer layers than the model's: the pass's time per layer times the model's layer count.
    const std::string scaled =
        te_layers == te_all ? ""
                            : format("; %.4f s a layer, x %lld layers = %.4f s (scaled: %lld of %lld layers made, "
                                     "for the host's memory)",
                                     med / double(te_layers), (long long)te_all, med / double(te_layers) * double(te_all),
                                     (long long)te_layers, (long long)te_all);
    out.lines.push_back(format("text encoder forward (%s: %lld layers, hidden %lld), 2 x %lld tokens, layers %s: "
                               "%.4f s median of passes 2..4 (first pass %.4f s, its load %.2f s)%s",
                               m.te_config.file.c_str(), (long long)m.te_config.layers, (long long)m.te_config.hidden,
                               (long long)tokens, te_residency_name(te.residency()), med, runs[0], load_s,
                               scaled.c_str()));
  } catch (const std::exception& e) {
    fail("text encoder forward", e);
  }

  // The DiT step: every block resident, then the streamed plan's blocks resident and the others
  // streamed through the one streamer (model/dit_streaming.h).
  Tensor states = host_tensor(DType::F32, {tokens, shapes.dit.text_dim});
  for (int64_t i = 0; i < states.numel(); ++i) states.ptr<float>()[i] = float(i % 11 - 5) * 0.2f;
  const std::string step_head = format("DiT step %dx%d, cfg 3 (2 rows)", o.width, o.height);
  double resident_median = 0;
  try {
    const StepRun r = dit_steps(be, m, blocks, o, states, pool_bytes);
    const std::vector<double> after(r.steps.begin() + 1, r.steps.end());
    resident_median = median(after);
    out.lines.push_back(format("%s, %d of %d blocks resident (%.1f GiB of %s weights): %s", step_head.c_str(), blocks,
                               blocks, gib(whole->sizes.dit_fixed_bytes + size_t(blocks) * whole->sizes.dit_block_bytes),
                               dit_weights_kind.c_str(), step_text(r.steps).c_str()));
    if (r.pool_bytes)
      out.lines.push_back(format("  the device allocator's pool after those steps (weights, activations, cached "
                                 "workspace): %.1f GiB",
                                 gib(r.pool_bytes)));
  } catch (const std::exception& e) {
    fail(step_head + " resident", e);
  }
  try {
    const StepRun r = dit_steps(be, m, part->resident_blocks, o, states, {});
    const std::vector<double> after(r.steps.begin() + 1, r.steps.end());
    const double med = median(after);
    out.lines.push_back(format("%s, streamed (budget %.1f GiB%s): %d of %d blocks resident, %d streamed from %s "
                               "of pinned host memory: %s; %s copied a step, %.1f GB/s over the step; %.2fx the "
                               "resident step",
                               step_head.c_str(), gib(part->budget_bytes), budget_note.c_str(), part->resident_blocks,
                               blocks, blocks - part->resident_blocks, bytes_text(part->pinned_host_bytes).c_str(),
                               step_text(r.steps).c_str(), bytes_text(r.streamed_bytes).c_str(),
                               med > 0 ? double(r.streamed_bytes) / med / 1e9 : 0.0,
                               resident_median > 0 ? med / resident_median : 0.0));
  } catch (const std::exception& e) {
    fail(step_head + " streamed", e);
  }

  // The VAE decode as the CLI runs it: host latent in, host image out.
  try {
    be.release_cached();
    VaeDecoder vae(be, m.vae_weights, m.vae_config);
    const int64_t gh = o.height / 16, gw = o.width / 16;
    Tensor latent = host_tensor(DType::F32, {m.vae_config.packed_channels(), gh, gw});
    const std::vector<float> z = initial_noise(2, m.vae_config.packed_channels(), gh, gw);
    std::copy(z.begin(), z.end(), latent.ptr<float>());
    std::vector<double> runs;
    for (int rep = 0; rep < 4; ++rep) {
      const auto t0 = Clock::now();
      vae.decode(latent);
      runs.push_back(since(t0));
    }
    const std::vector<double> timed(runs.begin() + 1, runs.end());
    out.lines.push_back(format("VAE decode %dx%d (%s): %.4f s median of decodes 2..4 (first %.4f s; latent upload "
                               "and image download included)",
                               o.width, o.height, m.vae_config.file.c_str(), median(timed), runs[0]));
  } catch (const std::exception& e) {
    fail("VAE decode", e);
  }

  // The plans the rows ran (the planner's figures, as the CLI's "memory plan" line gives them).
  if (whole && part)
    out.lines.push_back(format("memory plan (the CLI's planner, %lld-token prompts): all blocks resident: peaks text "
                               "encoder %.1f GiB (layers %s), DiT %.1f GiB, VAE %.1f GiB; streamed at %.1f GiB: %d of "
                               "%d resident, DiT peak %.1f GiB, %s pinned",
                               (long long)tokens, gib(whole->te_peak), whole->te_resident ? "resident" : "streamed",
                               gib(whole->dit_peak), gib(whole->vae_peak), gib(part->budget_bytes),
                               part->resident_blocks, blocks, gib(part->dit_peak), bytes_text(part->pinned_host_bytes).c_str()));
  return out;
}

}  // namespace moss
