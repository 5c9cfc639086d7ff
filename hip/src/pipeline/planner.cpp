#include "pipeline/planner.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "ops/measure/measuring_backend.h"
#include "model/dit_streaming.h"
#include "util/error.h"

namespace moss {

std::string format_gib(size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", double(bytes) / double(kGiB));
  return b;
}

// The device memory a streamed DiT needs for its blocks beside the resident ones: two slots, and
// the packed tensors' staging buffer where blocks travel packed (not on an APU).
static size_t streaming_bytes(const StageSizes& s, bool integrated) {
  return 2 * s.dit_slot_bytes + (integrated ? 0 : s.dit_staging_bytes);
}

size_t MemoryPlan::dit_minimum() const {
  return sizes.vae_weight_bytes + sizes.dit_fixed_bytes + streaming_bytes(sizes, integrated) +
         sizes.dit_activation_bytes + kReserveBytes;
}

size_t device_allocatable(const DeviceMemory& d, size_t host_available) {
  if (!d.integrated || d.gtt_bytes <= d.carveout_bytes) return d.free_bytes;
  const size_t gtt = host_available ? std::min(d.gtt_bytes, host_available) : d.gtt_bytes;
  return std::max(d.free_bytes, gtt);
}

void measure_dit_stage(const WeightFiles& weights, const DitConfig& cfg, int64_t width, int64_t height,
                       int64_t max_tokens, StageSizes& s) {
  // The DiT's weights as its streaming source allocates them (model/dit_streaming.h): an INT8
  // ConvRot DiT's blocks hold their I8 weights and F32 scales, about half the bf16 bytes.
  const DitStreamSizes dit = dit_stream_sizes(weights);
  s.dit_fixed_bytes = dit.fixed_bytes;
  s.dit_block_bytes = dit.block_bytes;
  s.dit_slot_bytes = dit.slot_bytes;
  s.dit_staging_bytes = dit.staging_bytes;
  s.dit_blocks = dit.blocks;
  MeasuringBackend be;  // activations only: the weights upload on use, counted apart
  Dit model(be, weights, cfg);
  Tensor states = host_tensor(DType::F32, {std::max<int64_t>(1, max_tokens), cfg.text_dim});
  Dit::Text cond = model.embed_text(states), uncond = model.embed_text(states);  // both prompts' text rows
  Tensor latent = host_tensor(DType::F32, {cfg.latent_channels, height / 16, width / 16});
  model.forward_rows(latent, {Dit::Row{&cond, {}}, Dit::Row{&uncond, {}}}, 1000.0f);
  s.dit_activation_bytes = be.peak_bytes();
}

StageSizes measure_stages(const MossModel& m, int64_t width, int64_t height, int64_t max_tokens, bool decode) {
  StageSizes s;
  MeasuringBackend be;
  std::vector<int32_t> ids(size_t(std::max<int64_t>(1, max_tokens)), 0);
  {
    // Both prompts at the longest length, as a run encodes them. Uploading on use counts the
    // weights apart from the activations; the layer images are sized below.
    TextEncoder te(be, m.te_weights, m.te_config, TeResidency::ShapesOnly);
    te.encode_many({ids, ids});
  }
  s.te_activation_bytes = be.peak_bytes();
  // Layer weights as the streamed and resident sources lay them out (model/te_weights.h): the
  // sources' own figures, not a second count that could round otherwise.
  const BlockBytes te_layers = te_layer_bytes(m.te_weights, text_encoder_prefix(m.te_weights), int(m.te_config.layers));
  s.te_layer_bytes = te_layers.largest;
  s.te_all_layers_bytes = te_layers.total;
  s.te_fixed_bytes = be.peak_weight_bytes() > s.te_layer_bytes ? be.peak_weight_bytes() - s.te_layer_bytes : 0;

  measure_dit_stage(m.dit_weights, m.dit_config, width, height, max_tokens, s);
  {
    VaeDecoder vae(be, m.vae_weights, m.vae_config);
    s.vae_weight_bytes = be.live_weight_bytes();
    if (decode) {
      be.reset_peaks();
      const size_t base = be.live_bytes();
      Tensor latent = host_tensor(DType::F32, {m.vae_config.packed_channels(), height / 16, width / 16});
      vae.decode(latent);
      s.vae_decode_bytes = be.peak_bytes() - base;
    }
  }
  return s;
}

MemoryPlan plan_memory(const StageSizes& s, size_t budget, bool budget_is_user, size_t host_available,
                       bool integrated) {
  MemoryPlan p;
  p.sizes = s;
  p.integrated = integrated;
  p.budget_bytes = budget;
  const std::string what = budget_is_user ? "--vram-budget " + format_gib(budget) : "free device memory " + format_gib(budget);
  p.vae_peak = s.vae_weight_bytes + s.vae_decode_bytes;
  if (p.vae_peak + kReserveBytes > budget)
    throw usage_error("the VAE decode does not fit: it needs " + format_gib(s.vae_decode_bytes) + " beside its " +
                      format_gib(s.vae_weight_bytes) + " of weights and the " + format_gib(kReserveBytes) +
                      " reserve, " + format_gib(p.vae_peak + kReserveBytes) + " in all, above " + what);
  if (s.vae_weight_bytes + s.dit_activation_bytes + kReserveBytes > budget)
    throw usage_error("the DiT activations do not fit: " + format_gib(s.dit_activation_bytes) +
                      " at this size, beside the VAE weights (" + format_gib(s.vae_weight_bytes) + ") and the reserve, " +
                      format_gib(s.vae_weight_bytes + s.dit_activation_bytes + kReserveBytes) + " in all, above " + what);
  const size_t base = s.vae_weight_bytes + s.dit_fixed_bytes + s.dit_activation_bytes + kReserveBytes;
  if (base + size_t(s.dit_blocks) * s.dit_block_bytes <= budget) {
    p.resident_blocks = s.dit_blocks;  // all resident: no slots
  } else {
    if (p.dit_minimum() > budget)
      throw usage_error(what + " is below the DiT's minimum of " + format_gib(p.dit_minimum()) + " (fixed part " +
                        format_gib(s.dit_fixed_bytes) + ", two block slots " + format_gib(2 * s.dit_slot_bytes) +
                        ", packed-weight staging " + format_gib(s.dit_staging_bytes) +
                        ", activations " + format_gib(s.dit_activation_bytes) + ", VAE weights " +
                        format_gib(s.vae_weight_bytes) + ", reserve " + format_gib(kReserveBytes) + ")");
    const size_t room = budget - base - streaming_bytes(s, integrated);
    p.resident_blocks = int(std::min<size_t>(size_t(s.dit_blocks), room / std::max<size_t>(1, s.dit_block_bytes)));
  }
  const int streamed = s.dit_blocks - p.resident_blocks;
  // A block's image is at most its slot (packings are smaller). An APU pins nothing (above).
  p.pinned_host_bytes = integrated ? 0 : size_t(streamed) * s.dit_slot_bytes;
  if (streamed > 0 && host_available != 0 && p.pinned_host_bytes > host_available)
    throw usage_error("not enough host memory to pin the " + std::to_string(streamed) + " streamed DiT blocks: they need " +
                      format_gib(p.pinned_host_bytes) + ", " + format_gib(host_available) + " is available");
  const size_t slots = streamed > 0 ? streaming_bytes(s, integrated) : 0;
  p.dit_peak = s.vae_weight_bytes + s.dit_fixed_bytes + slots + size_t(p.resident_blocks) * s.dit_block_bytes +
               s.dit_activation_bytes;
  p.te_peak = s.vae_weight_bytes + s.te_fixed_bytes + 2 * s.te_layer_bytes + s.te_activation_bytes;
  const size_t te_resident_peak = s.vae_weight_bytes + s.te_fixed_bytes + s.te_all_layers_bytes + s.te_activation_bytes;
  // All layers stay on the device only on a card with room to spare and no --vram-budget: a budget
  // asks for the behaviour of a card of that size, which streams the layers (docs/product.md section 5;
  // the random full-size layers, 13 GiB, would otherwise sit resident under a budget of 16).
  if (!budget_is_user && s.te_all_layers_bytes > 0 && te_resident_peak + kReserveBytes <= budget) {
    p.te_resident = true;
    p.te_peak = te_resident_peak;
  }
  if (p.te_peak + kReserveBytes > budget && !budget_is_user)
    throw usage_error("the text encoder does not fit: two layers (" + format_gib(2 * s.te_layer_bytes) +
                      "), activations " + format_gib(s.te_activation_bytes) + " and the VAE weights need " +
                      format_gib(p.te_peak) + " with " + what);
  return p;
}

bool plan_holds_all_loaded(const MemoryPlan& p) {
  const StageSizes& s = p.sizes;
  if (!p.te_resident || p.streamed()) return false;
  const size_t weights = s.vae_weight_bytes + s.te_fixed_bytes + s.te_all_layers_bytes + s.dit_fixed_bytes +
                         size_t(s.dit_blocks) * s.dit_block_bytes;
  const size_t activations = std::max({s.te_activation_bytes, s.dit_activation_bytes, s.vae_decode_bytes});
  return weights + activations + kReserveBytes <= p.budget_bytes;
}

bool plan_pins_text_encoder(const MemoryPlan& p, size_t host_available) {
  return !p.integrated && host_available != 0 && p.sizes.te_all_layers_bytes + p.pinned_host_bytes + kHostSpareBytes <= host_available;
}

size_t host_available_memory() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream in(line.substr(13));
      size_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace moss
