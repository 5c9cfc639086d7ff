#include "pipeline/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>

#include "io/files.h"
#include "io/image_files.h"
#include "io/output_files.h"
#include "model/image_u8.h"
#include "ops/backend.h"
#include "model/dit_streaming.h"
#include "model/lora.h"
#include "pipeline/device_gate.h"
#include "pipeline/moss_model.h"
#include "pipeline/noise.h"
#include "pipeline/planner.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"
#include "runtime/device_choice.h"
#include "runtime/devices.h"
#include "streaming/block_names.h"
#include "tokenizer/prompt.h"
#include "tokenizer/tokenizer.h"
#include "util/backend_env.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/sha256.h"
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

// The backend: the host reference when MOSSINFER_BACKEND=host (a developer feature for tests and
// machines without a GPU), else the chosen HIP device.
// `memory`: the chosen device's pools for the memory plan (an APU's carve-out and GTT).
std::unique_ptr<Backend> choose_backend(int device, const Reporter& rep, std::string& backend_name,
                                        DeviceMemory& memory) {
  if (host_backend_chosen()) {
    backend_name = "host";
    rep.line("device: host reference backend (%d threads; MOSSINFER_BACKEND=host)", ThreadPool::global().size());
    return make_host_backend();
  }
  const DeviceInfo picked = choose_device(device, true);
  const DeviceInfo* chosen = &picked;
  std::string kernels;
  for (const std::string& k : chosen->kernels) kernels += (kernels.empty() ? "" : ", ") + k;
  rep.line("device %d: %s (%s, %s)", chosen->index, chosen->name.c_str(), chosen->arch.c_str(),
           gib(chosen->total_bytes).c_str());
  memory.integrated = chosen->integrated;
  memory.carveout_bytes = chosen->carveout_bytes;
  memory.gtt_bytes = chosen->gtt_bytes;
  if (chosen->integrated)
    rep.line("APU: device memory is system memory (carve-out %s, GTT %s as amdgpu reports them)",
             gib(chosen->carveout_bytes).c_str(), gib(chosen->gtt_bytes).c_str());
  rep.line("kernels: %s", kernels.c_str());
  backend_name = "hip " + chosen->arch;
  run_device_gate(*chosen, rep);
  return make_hip_backend(chosen->index);
}

// The HWC RGB image of o.width x o.height cut to the size asked (request.h's crop), its centre
// kept: a 528 side cropped to 520 loses 4 columns each side.
std::vector<uint8_t> centre_crop(std::vector<uint8_t> rgb, const GenerationRequest& o) {
  const int64_t w = o.output_width(), h = o.output_height();
  if (w == o.width && h == o.height) return rgb;
  const int64_t x0 = (o.width - w) / 2, y0 = (o.height - h) / 2;
  std::vector<uint8_t> out(size_t(w * h * 3));
  for (int64_t y = 0; y < h; ++y)
    std::copy_n(rgb.begin() + ((y + y0) * o.width + x0) * 3, w * 3, out.begin() + y * w * 3);
  return out;
}

}  // namespace

bool host_backend_chosen() { return host_backend_requested(); }

// What stays open between images. Declaration order is destruction order in reverse: the
// models go before the backend they live on.
struct Engine::Loaded {
  MossModel model;
  Tokenizer tokenizer;
  std::string backend_name;
  std::unique_ptr<Backend> be;
  std::unique_ptr<VaeDecoder> vae;
  // Kept between images only with keep_loaded and a plan that holds them (else null after use).
  std::unique_ptr<TextEncoder> te;
  std::unique_ptr<Dit> dit;
  int dit_resident = -1;
  size_t free_before_load = 0;  // device memory free before the first image loaded anything
  DeviceMemory device;          // the chosen device's pools (free_bytes unused: asked per plan)
  // The LoRA set (model/lora.h), kept until a request asks for another set: it merges as the
  // models load, the DiT's resident weights on the device after their upload, the others into
  // host copies the loaders read (made once per set, the DiT's again only when its residency
  // changes). Without a set the models read the mapped files themselves.
  std::string lora_key;                   // the set's files and weights, in order (Engine::lora_mutex_)
  std::vector<LoraChoice> loras_applied;  // with their hashes (once lora_hashing is in), for the record
  // The set's content hashes (the record's short SHA-256 of each file) are only needed for the
  // record: a thread of their own computes them while the models load and the image is made,
  // off the critical path (a 300 MiB file: about 0.2 s on SHA-NI, 1.5 s without); the record waits for them
  // (Engine::recorded_loras). Replacing or dropping it waits for a hash still running.
  struct LoraHashes {
    std::vector<std::string> hashes;  // in the set's order
    std::string error;                // a file that could not be read again
    double seconds = 0;
  };
  std::future<LoraHashes> lora_hashing;
  std::vector<BoundLora> lora_bound;      // the set's files, read and checked (the plan points into them)
  std::unique_ptr<LoraMergePlan> lora_plan;
  std::unique_ptr<WeightFiles> te_merged, dit_merged;
  int dit_merged_for = -2;  // the resident blocks dit_merged leaves to the device (-1: none, all on the host)
  // The text encoder's weights, the set merged into host copies (made once per set, on the
  // device where there is one: upload, merge, download).
  const WeightFiles& te_weights(Backend& be, const Reporter& rep) {
    if (!lora_plan) return model.te_weights;
    if (!te_merged) {
      const auto t0 = Clock::now();
      LoraMergePlan::Merged m = lora_plan->merge_into_copies(model.te_weights, true, nullptr, &be);
      te_merged = std::make_unique<WeightFiles>(std::move(m.weights));
      if (m.tensors)
        rep.line("loras: merged into %d text encoder tensors in %.3f s (host copies, merged on the %s)", m.tensors,
                 since(t0), be.where() == Where::Device ? "device" : "host");
    }
    return *te_merged;
  }
  // The DiT's weights for a load on `be` with `resident` blocks resident: the set merged into
  // host copies of the weights the device does not keep (the streamed blocks, whose pinned
  // images are built from them: merged on the device and downloaded; every weight on the host
  // backend, by the host reference). The others merge on the device through dit_merge_hook.
  const WeightFiles& dit_weights(Backend& be, int resident, const Reporter& rep) {
    if (!lora_plan) return model.dit_weights;
    const int on_device = be.where() == Where::Device ? resident : -1;
    if (!dit_merged || dit_merged_for != on_device) {
      const auto t0 = Clock::now();
      LoraMergePlan::Merged m = lora_plan->merge_into_copies(
          model.dit_weights, false, [on_device](const std::string& name) { return kept_on_device(name, on_device); },
          &be);
      if (m.tensors)
        rep.line("loras: merged into %d DiT tensors in %.3f s (host copies, %s)", m.tensors, since(t0),
                 on_device < 0 ? "the host backend" : "the streamed blocks': merged on the device, downloaded");
      const std::map<std::string, Tensor>& side = side_tensors(be, rep);
      dit_merged = std::make_unique<WeightFiles>(side.empty() ? m.weights : m.weights.with_replaced(side));
      dit_merged_for = on_device;
    }
    return *dit_merged;
  }
  // The set's corrections beside the DiT's INT8 layers (model/lora.h, dit_side_tensors), made
  // once per set (dense deltas on the device where there is one) whatever the residency: the
  // streaming source places them with their blocks.
  std::unique_ptr<std::map<std::string, Tensor>> dit_side;
  const std::map<std::string, Tensor>& side_tensors(Backend& be, const Reporter& rep) {
    if (!dit_side) {
      const auto t0 = Clock::now();
      dit_side = std::make_unique<std::map<std::string, Tensor>>(
          lora_plan ? lora_plan->dit_side_tensors(model.dit_weights, be.where() == Where::Device ? &be : nullptr)
                    : std::map<std::string, Tensor>());
      if (!dit_side->empty()) {
        size_t corrections = 0, bytes = 0;
        for (const auto& [projection, forms] : lora_plan->dit_side_forms()) corrections += forms.size();
        for (const auto& [name, t] : *dit_side) bytes += t.nbytes();
        rep.line("loras: %d INT8 ConvRot layers run their LoRAs beside them (%zu corrections, %.1f MiB, made in %.3f s)",
                 lora_plan->dit_beside_targets(), corrections, double(bytes) / double(1 << 20), since(t0));
      }
    }
    return *dit_side;
  }
  // The DiT's config for a load: the model's, with the set's corrections beside INT8 layers.
  DitConfig dit_config() const {
    DitConfig c = model.dit_config;
    if (lora_plan) c.side_loras = lora_plan->dit_side_forms();
    return c;
  }
  // The model as the memory plan measures it: with a set that runs beside INT8 layers, its side
  // tensors in the DiT's blocks and its corrections in the forward (their scratch); else none.
  std::optional<MossModel> planned_model(Backend& be, const Reporter& rep) {
    if (!lora_plan || !lora_plan->dit_beside_targets()) return std::nullopt;
    MossModel m = model;
    m.dit_weights = model.dit_weights.with_replaced(side_tensors(be, rep));
    m.dit_config = dit_config();
    return m;
  }
  // The hook that merges the resident weights on the device as they upload (null without a set
  // or on the host backend); counts them and their time in `merged` (the device synchronised
  // around each merge, so the time is the merge's alone).
  struct DeviceMerges {
    int tensors = 0;
    double seconds = 0;
  };
  ResidentHook dit_merge_hook(Backend& be, DeviceMerges& merged) const {
    if (!lora_plan || be.where() != Where::Device) return nullptr;
    const LoraMergePlan* plan = lora_plan.get();
    return [plan, &be, &merged](const std::string& name, Tensor& t) {
      if (!plan->changes_dit_tensor(name)) return;
      be.synchronize();
      const auto t0 = Clock::now();
      plan->merge_on_device(be, name, t);
      be.synchronize();
      merged.tensors++;
      merged.seconds += since(t0);
    };
  }
  // Whether the streaming source keeps `name` on the device with `resident` blocks resident
  // (model/dit_streaming.cpp: everything outside the blocks, and the first `resident` blocks).
  static bool kept_on_device(const std::string& name, int resident) {
    if (resident < 0) return false;
    const int b = block_index(name);
    return b < 0 || b < resident;
  }
  void drop_loras() {
    lora_hashing = {};
    lora_plan.reset();
    lora_bound.clear();
    te_merged.reset();
    dit_merged.reset();
    dit_side.reset();
    dit_merged_for = -2;
  }
  // Dropped before the next stage of an image that cannot keep them (freeing the device memory
  // the plan of that image counts on).
  void drop_models() {
    te.reset();
    dit.reset();
    dit_resident = -1;
    if (be) be->release_cached();
  }
};

Engine::Engine(const EngineSettings& settings, const Reporter& rep) : settings_(settings), rep_(rep) {
  // Opening maps every weights file and checks its names and shapes (no weight is read): timed,
  // so a slow load can be told apart from a slow opening (bench/h200_model_files.sh).
  const auto t0 = Clock::now();
  MossModel model = open_moss_model(settings.model);
  rep_.line("model files: %s; opened and checked in %.3f s", model_files_text(model).c_str(), since(t0));
  Tokenizer tokenizer = Tokenizer::load(model.tokenizer_json);
  s_.reset(new Loaded{std::move(model), std::move(tokenizer), {}, nullptr, nullptr, nullptr, nullptr, -1, 0, {}, {}, {}, {},
                      {}, nullptr, nullptr, nullptr, -2, nullptr});
}

Engine::~Engine() = default;

const std::string& Engine::model_identity() const { return s_->model.identity; }
const std::string& Engine::model_folder() const { return s_->model.folder; }

std::vector<RecordedFile> Engine::model_files() const {
  std::vector<RecordedFile> out;
  for (const ComponentFile& f : s_->model.files) out.push_back({component_name(f.component), f.file, f.fingerprint, f.note});
  return out;
}

namespace {

std::string lora_set_key(const std::vector<LoraChoice>& loras) {
  std::string key;
  for (const LoraChoice& c : loras) key += c.path + '\n' + std::to_string(c.weight) + '\n';
  return key;
}

std::vector<BoundLora> bind_loras(const std::vector<LoraChoice>& loras, const MossModel& model) {
  std::vector<BoundLora> bound;
  for (const LoraChoice& c : loras) {
    if (c.path.empty()) throw usage_error("LoRA '" + c.name + "': no file (a name is looked up in --lora-dir)");
    if (!file_exists(c.path))
      throw usage_error("--lora " + c.path + ": no such file" +
                        (c.hash.empty() ? "" : " (a record's LoRA '" + c.name + "', hash " + c.hash + ")"));
    bound.push_back(bind_lora(std::make_shared<LoraFile>(read_lora(c.path)), model.dit_weights, model.te_weights));
  }
  return bound;
}

}  // namespace

void Engine::apply_loras(const std::vector<LoraChoice>& loras) {
  Loaded& L = *s_;
  const std::string key = lora_set_key(loras);
  {
    std::lock_guard<std::mutex> lock(lora_mutex_);
    if (key == L.lora_key) return;
    L.lora_key.clear();
  }
  // Another set: the loaded models go and load again from the base files or the new merge.
  L.te.reset();
  L.dit.reset();
  L.dit_resident = -1;
  L.drop_loras();
  L.loras_applied.clear();
  if (loras.empty()) {
    rep_.line("loras: none; the base weights load from the model files");
    std::lock_guard<std::mutex> lock(lora_mutex_);
    L.lora_key = key;
    return;
  }
  // Timed apart: reading and checking the files, the files' hashes (the merge is timed where it
  // runs, as the models load: Loaded::te_weights, dit_weights, dit_merge_hook).
  const auto t0 = Clock::now();
  L.lora_bound = bind_loras(loras, L.model);
  std::vector<WeightedLora> weighted;
  for (size_t i = 0; i < L.lora_bound.size(); ++i) weighted.push_back({&L.lora_bound[i], loras[i].weight});
  L.lora_plan = std::make_unique<LoraMergePlan>(weighted);
  std::string names;
  std::vector<std::string> paths;
  for (const LoraChoice& c : loras) {
    char w[32];
    std::snprintf(w, sizeof w, "%g", double(c.weight));
    names += (names.empty() ? "" : ", ") + c.name + ":" + w;
    paths.push_back(c.path);
  }
  L.loras_applied = loras;
  L.lora_hashing = std::async(std::launch::async, [paths] {
    Loaded::LoraHashes h;
    const auto t = Clock::now();
    try {
      for (const std::string& path : paths) h.hashes.push_back(sha256_file_hex(path).substr(0, 12));
    } catch (const std::exception& e) {
      h.error = e.what();
    }
    h.seconds = since(t);
    return h;
  });
  const int beside = L.lora_plan->dit_beside_targets();
  rep_.line("loras: %s: %d DiT tensors to merge%s (read and checked %.3f s; hashes beside the loads)", names.c_str(),
            L.lora_plan->dit_targets(),
            beside ? (", " + std::to_string(beside) + " INT8 ConvRot layers to run them beside").c_str() : "",
            since(t0));
  std::lock_guard<std::mutex> lock(lora_mutex_);
  L.lora_key = key;
}

const std::vector<LoraChoice>& Engine::recorded_loras() {
  Loaded& L = *s_;
  if (!L.lora_hashing.valid()) return L.loras_applied;
  const auto t0 = Clock::now();
  const Loaded::LoraHashes h = L.lora_hashing.get();
  if (!h.error.empty()) {
    // The set stays merged but unrecorded: the next request with it applies it again.
    {
      std::lock_guard<std::mutex> lock(lora_mutex_);
      L.lora_key.clear();
    }
    throw failure("LoRA hash: " + h.error);
  }
  std::string names;
  for (size_t i = 0; i < h.hashes.size(); ++i) {
    LoraChoice& c = L.loras_applied[i];
    if (!c.hash.empty() && c.hash != h.hashes[i])
      rep_.warning("LoRA %s: hash %s, the record's is %s (not the file the image was made with)", c.path.c_str(),
                   h.hashes[i].c_str(), c.hash.c_str());
    c.hash = h.hashes[i];
    names += (names.empty() ? "" : ", ") + c.name + " (" + c.hash + ")";
  }
  rep_.line("loras: hashes %s in %.3f s beside the loads (the record waited %.3f s for them)", names.c_str(), h.seconds,
            since(t0));
  return L.loras_applied;
}

void Engine::check(const GenerationRequest& r, bool skip_layers_given) const {
  bool merged_now;
  {
    std::lock_guard<std::mutex> lock(lora_mutex_);
    merged_now = lora_set_key(r.loras) == s_->lora_key;
  }
  if (!merged_now) bind_loras(r.loras, s_->model);
  const int blocks = s_->model.dit_config.layers;
  const std::string exist = "the DiT has " + std::to_string(blocks) + " blocks, 0 to " + std::to_string(blocks - 1);
  for (int layer : r.skip_layers) {
    if (layer < blocks) continue;
    if (!skip_layers_given)
      throw usage_error("the default --skip-layers \"" + r.skip_layers_text + "\" skips block " + std::to_string(layer) +
                        ", which this model does not have (" + exist + "): give --skip-layers with blocks from 0 to " +
                        std::to_string(blocks - 1) + ", or --skip-layers \"\" to skip none");
    throw usage_error("--skip-layers " + r.skip_layers_text + ": block " + std::to_string(layer) + " does not exist (" +
                      exist + ")");
  }
  if (!find_sampler(r.sampler)) throw usage_error("--sampler " + r.sampler + ": unknown sampler");
  if (!find_schedule(r.scheduler)) throw usage_error("--scheduler " + r.scheduler + ": unknown scheduler");
}

DeviceMemoryUse Engine::device_memory() const {
  DeviceMemoryUse m;
  if (!s_->be) return m;
  m.total_bytes = s_->be->total_memory();
  const size_t free_bytes = s_->be->free_memory();
  m.used_bytes = m.total_bytes > free_bytes ? m.total_bytes - free_bytes : 0;
  return m;
}

GeneratedImage Engine::generate(const GenerationRequest& r, bool decode, const ProgressHook& hook,
                                const std::atomic<bool>* stop_denoise) {
  try {
    return make_image(r, decode, hook, stop_denoise);
  } catch (...) {
    // A stopped image (a signal, a cancel, a failure) may leave a model mid-pass: the next image
    // loads it again rather than trust its state.
    s_->drop_models();
    throw;
  }
}

GeneratedImage Engine::make_image(const GenerationRequest& o, bool decode_anyway, const ProgressHook& hook,
                                  const std::atomic<bool>* stop_denoise) {
  const auto t_start = Clock::now();
  Loaded& L = *s_;
  const MossModel& model = L.model;
  const Reporter& rep = rep_;
  // The stages' checkpoints: a signal, then the caller's hook (which may cancel).
  auto checkpoint = [&](const ProgressEvent& e) {
    check_interrupted();
    if (hook) hook(e);
  };
  check(o);
  apply_loras(o.loras);
  const bool use_uncond = guided(o.cfg);
  PromptIds cond_ids = encode_prompt(L.tokenizer, o.prompt, size_t(o.max_seq));
  PromptIds uncond_ids;
  if (use_uncond) uncond_ids = encode_prompt(L.tokenizer, o.negative, size_t(o.max_seq));
  if (cond_ids.truncated)
    rep.warning("the prompt has %zu tokens after templating; cut to --max-seq %lld", cond_ids.full_length,
                (long long)o.max_seq);
  if (use_uncond && uncond_ids.truncated)
    rep.warning("the negative prompt has %zu tokens after templating; cut to --max-seq %lld", uncond_ids.full_length,
                (long long)o.max_seq);

  if (!L.be) L.be = choose_backend(settings_.device, rep, L.backend_name, L.device);
  Backend& be = *L.be;
  be.set_low_peak(false);  // the loops reuse their blocks (an image before may have decoded)
  const std::vector<float> sigmas = make_schedule(find_schedule(o.scheduler)->schedule, o.steps, o.shift);
  const int steps_run = int(sigmas.size()) - 1;
  if (steps_run != o.steps)
    rep.line("schedule: %d steps requested, %d distinct after snapping to the training grid", o.steps, steps_run);

  GeneratedImage out;
  RunRecord& record = out.record;
  record.request = o;
  record.request.loras = L.loras_applied;  // their hashes come at the end (recorded_loras)
  record.steps_run = steps_run;
  record.model_identity = model.identity;
  record.model_files = model_files();
  record.backend = L.backend_name;
  record.total_blocks = int(model.dit_config.layers);
  record.resident_blocks = record.total_blocks;

  // The memory plan, on a device: refusals come here, before the text encoder runs.
  const bool decode = decode_anyway || !o.output_png.empty();
  const int64_t max_tokens =
      int64_t(std::max(cond_ids.ids.size(), use_uncond ? uncond_ids.ids.size() : size_t(0)));
  // --vram-budget in bytes, converted once; a budget above the free memory plans with the free memory.
  const bool asked = settings_.vram_budget_gib.has_value();
  const size_t asked_bytes = asked ? size_t(*settings_.vram_budget_gib * double(kGiB)) : 0;
  // On an APU what the device can allocate is more than the runtime's free figure may say
  // (planner.h, device_allocatable).
  const std::optional<MossModel> with_side = L.planned_model(be, rep);
  const MossModel& measured = with_side ? *with_side : model;
  auto plan_for = [&](size_t free_bytes) {
    DeviceMemory device = L.device;
    device.free_bytes = free_bytes;
    const size_t host = host_available_memory(), allocatable = device_allocatable(device, host);
    const bool user = asked && asked_bytes <= allocatable;
    const size_t budget = user ? asked_bytes : allocatable;
    return plan_memory(measure_stages(measured, o.width, o.height, max_tokens, decode), budget, user, host,
                       device.integrated);
  };
  std::optional<MemoryPlan> plan;
  // keep: the text encoder and the DiT stay loaded after this image; keep_te: the text encoder
  // does (with its layers in pinned host memory when the device cannot hold it beside the DiT).
  // The host backend has no device memory to plan: it keeps both.
  bool keep = settings_.keep_loaded, keep_te = keep;
  TeResidency te_residency = TeResidency::Auto;
  if (be.free_memory() > 0) {
    // Every image is planned against the memory that was free before this engine loaded
    // anything (what the plan's stages divide among themselves); a change by other programs
    // since is caught when the DiT loads (below). Kept models stay only when this image's plan
    // holds them beside each other and its decode; else they go before anything runs.
    if (!L.free_before_load) L.free_before_load = be.free_memory();
    plan = plan_for(L.free_before_load);
    keep = keep && plan_holds_all_loaded(*plan);
    const bool pinned_now = L.te && L.te->residency() == TeResidency::PinnedHost;
    keep_te = keep || (settings_.keep_loaded &&
                       plan_pins_text_encoder(*plan, host_available_memory() +
                                                         (pinned_now ? plan->sizes.te_all_layers_bytes : 0)));
    te_residency = keep_te && !keep ? TeResidency::PinnedHost
                                    : plan->te_resident ? TeResidency::Resident : TeResidency::Streamed;
    if (!keep) {
      L.dit.reset();
      L.dit_resident = -1;
    }
    if (!keep_te || (L.te && L.te->residency() != te_residency)) L.te.reset();
    be.release_cached();
    record.resident_blocks = plan->resident_blocks;
    rep.line("memory plan: %d of %d DiT blocks resident%s; peaks: text encoder %s, DiT %s, VAE %s (budget %s); "
             "text encoder layers %s%s",
             plan->resident_blocks, record.total_blocks,
             plan->dit_from_files() ? ", the others read from the mapped model files (APU: nothing pinned)"
             : plan->streamed()     ? (", " + format_gib(plan->pinned_host_bytes) + " pinned for streaming").c_str()
                                    : "",
             format_gib(plan->te_peak).c_str(), format_gib(plan->dit_peak).c_str(), format_gib(plan->vae_peak).c_str(),
             format_gib(plan->budget_bytes).c_str(), te_residency_name(te_residency),
             !settings_.keep_loaded ? ""
             : keep                 ? "; weights stay loaded between images"
             : keep_te              ? "; text encoder layers stay in pinned host memory between images, the DiT reloads"
                                    : "; weights reload per image");
  }

  // The VAE weights load first and stay (docs/product.md section 5).
  if (decode && !L.vae) L.vae = std::make_unique<VaeDecoder>(be, model.vae_weights, model.vae_config);

  // Text encoder: both prompts, then it is released before the DiT loads (unless kept).
  test_pause("text-encoder");
  checkpoint({"text_encoder"});
  auto t0 = Clock::now();
  rep.event("text encoder", {{"event", "stage"}, {"stage", "text_encoder"}});
  Tensor cond_states, uncond_states;
  TextEncoderTimes te_times;
  std::string te_tokens;  // "64+10": the prompts the encode stacked (cfg 1: the prompt alone)
  {
    if (!L.te) L.te = std::make_unique<TextEncoder>(be, L.te_weights(be, rep), model.te_config, te_residency);
    std::vector<std::vector<int32_t>> prompts = {cond_ids.ids};
    if (use_uncond) prompts.push_back(uncond_ids.ids);
    for (const std::vector<int32_t>& p : prompts)
      te_tokens += (te_tokens.empty() ? "" : "+") + std::to_string(p.size());
    std::vector<Tensor> states = L.te->encode_many(prompts);  // one pass over the layers for both
    cond_states = states[0];
    if (use_uncond) uncond_states = states[1];
    te_times = L.te->times();
    te_residency = L.te->residency();
    if (!keep_te) L.te.reset();
  }
  record.times.text_encoder_s = since(t0);
  if (!keep) be.release_cached();  // the text encoder's buffers go back before the DiT's plan is checked
  test_pause("dit");
  checkpoint({"dit_load"});

  // DiT: its part of the plan is checked again with the memory free now, then the text rows
  // once per prompt, then the Euler loop.
  t0 = Clock::now();
  const int64_t gh = o.height / 16, gw = o.width / 16;
  Tensor latent;
  {
    int resident = int(model.dit_config.layers);
    if (plan && !L.dit) {
      MemoryPlan now = plan_for(be.free_memory() + (L.vae ? plan->sizes.vae_weight_bytes : 0));
      resident = std::min(plan->resident_blocks, now.resident_blocks);
    } else if (L.dit) {
      resident = L.dit_resident;
    }
    record.resident_blocks = plan ? resident : record.total_blocks;
    if (!L.dit) {
      // An APU reads the streamed blocks from the mapped files (planner.h, dit_from_files).
      const bool from_files = L.device.integrated && resident < int(model.dit_config.layers);
      Loaded::DeviceMerges device_merges;
      const ResidentHook hook = L.dit_merge_hook(be, device_merges);
      const DitConfig dit_config = L.dit_config();
      L.dit = std::make_unique<Dit>(
          be,
          from_files ? make_mapped_streaming_source(be, L.dit_weights(be, resident, rep), dit_config, resident, hook)
                     : make_resident_streaming_source(be, L.dit_weights(be, resident, rep), dit_config, resident,
                                                      kPackMinValues, hook),
          dit_config);
      L.dit_resident = resident;
      if (device_merges.tensors)
        rep.line("loras: merged into %d resident DiT tensors on the device in %.3f s (in place, after their upload)",
                 device_merges.tensors, device_merges.seconds);
    }
    Dit& dit = *L.dit;
    Dit::Text cond = dit.embed_text(cond_states);
    Dit::Text uncond;
    if (use_uncond) uncond = dit.embed_text(uncond_states);
    record.times.dit_load_s = since(t0);
    NoiseStream stream(o.seed);  // the initial noise, then the noise a sampler adds
    std::vector<float> noise = stream.next(model.dit_config.latent_channels, gh, gw);
    Tensor x = host_tensor(DType::F32, {model.dit_config.latent_channels, gh, gw});
    std::copy(noise.begin(), noise.end(), x.ptr<float>());
    SamplerSettings s{o.cfg, o.skip_layers, stop_denoise, find_sampler(o.sampler)->kind, o.shift, &stream};
    test_pause("denoise");
    try {
      checkpoint({"denoise", 0, steps_run});
    } catch (const Cancelled&) {
      // An interrupt that lands before the first step goes on into the sampler, which stops at
      // once and hands back the noise: the answer is its decode, as A1111 answers.
      if (!(stop_denoise && stop_denoise->load())) throw;
    }
    auto t_loop = Clock::now();
    int steps_done = 0;
    latent = sample(dit, cond, use_uncond ? &uncond : nullptr, x, sigmas, s, [&](int step, int total, double sec) {
      steps_done = step + 1;
      const double elapsed = since(t_loop);
      const double eta = elapsed / double(step + 1) * double(total - step - 1);
      char text[64];
      std::snprintf(text, sizeof text, "denoise %d/%d %.3f", step + 1, total, sec);
      nlohmann::ordered_json event = {{"event", "step"}, {"stage", "denoise"}, {"step", step + 1}, {"steps", total},
                                      {"seconds", sec}, {"elapsed", elapsed}, {"eta", eta}};
      const std::string& device = settings_.device_label;
      if (!device.empty()) event["device"] = device;
      rep.event(device.empty() ? std::string(text) : std::string(text) + " (device " + device + ")", event);
      checkpoint({"denoise", step + 1, total, sec, eta});
    });
    record.times.denoise_s = since(t_loop);
    out.stopped_early = steps_done < steps_run;
    record.steps_run = steps_done;
    if (!keep) L.dit.reset();
  }
  if (!keep) be.release_cached();  // the DiT's weights and buffers go back before the decode
  be.set_low_peak(true);

  // The image's outputs are encoded first and written at its end, all or none
  // (io/output_files.h): a decode that fails or is interrupted leaves no latents behind either.
  OutputFiles outputs;
  if (!o.latent_out.empty()) outputs.add(o.latent_out, encode_npy_f32(latent.ptr<float>(), latent.dims()));

  // An interrupted denoise still decodes its latents (the request's answer), which the job's
  // raised cancel flag must not cut short; a signal still does.
  std::optional<CancelScope> uncancelled;
  if (out.stopped_early) uncancelled.emplace(nullptr);
  if (decode) {
    test_pause("vae");
    checkpoint({"vae"});
    t0 = Clock::now();
    rep.event("vae", {{"event", "stage"}, {"stage", "vae"}});
    Tensor image = L.vae->decode(latent);
    std::vector<uint8_t> rgb = centre_crop(image_to_u8(image), o);
    record.times.vae_s = since(t0);
    record.request.loras = recorded_loras();
    record.times.total_s = since(t_start);
    check_interrupted();
    out.png = encode_png(rgb.data(), o.output_width(), o.output_height(),
                         o.no_metadata ? std::vector<PngText>() : png_record_chunks(record));
    if (!o.output_png.empty()) outputs.add(o.output_png, out.png);
  }
  check_interrupted();
  record.request.loras = recorded_loras();
  outputs.commit();
  for (const std::string* path : {&o.latent_out, &o.output_png})
    if (!path->empty()) out.paths.push_back(*path);
  record.times.total_s = since(t_start);
  // The text encoder's total, then its load (weights to the device, resident layers only, with
  // the kernels' warm-up overlapping it) and its encode (the pass itself, every prompt stacked;
  // streamed: with the copies) apart, and the prompts' token counts the encode covered.
  char done[768];
  std::snprintf(done, sizeof done,
                "done: text encoder %.3f s (load %.3f s, encode %.3f s, %s, %s tokens), dit load %.3f s, denoise "
                "%.3f s (%d steps), vae %.3f s, total %.3f s; seed %llu; %d of %d DiT blocks resident",
                record.times.text_encoder_s, te_times.load_s, te_times.encode_s, te_residency_name(te_residency),
                te_tokens.c_str(), record.times.dit_load_s, record.times.denoise_s, record.steps_run, record.times.vae_s,
                record.times.total_s, (unsigned long long)o.seed, record.resident_blocks, record.total_blocks);
  // The files this image wrote, named on its line: a batch stopped later keeps these.
  std::string done_text = done;
  for (size_t k = 0; k < out.paths.size(); ++k) done_text += (k ? ", " : "; wrote ") + out.paths[k];
  rep.event(done_text, {{"event", "image"}, {"seed", o.seed}, {"steps", o.steps}, {"steps_run", record.steps_run},
                   {"paths", out.paths},
                   {"timings", {{"text_encoder", record.times.text_encoder_s}, {"text_encoder_load", te_times.load_s},
                                {"dit_load", record.times.dit_load_s}, {"denoise", record.times.denoise_s},
                                {"vae", record.times.vae_s}, {"total", record.times.total_s}}},
                   {"resident_blocks", record.resident_blocks}, {"total_blocks", record.total_blocks}});
  return out;
}

}  // namespace moss
