// The memory planner (docs/product.md section 5): what stays on the device, what streams, and the
// peak of each stage, decided before any compute, or a refusal that gives the sizes.
//
// Device memory over a run, in order: the VAE weights load first and stay; the text encoder
// runs with all its layers on the device when they fit, else streams them two at a time; it is freed and the DiT loads: its fixed
// part (embedders, modulations, the text embedder, the head), R resident blocks, two slots and
// the packed tensors' staging buffer for the streamed blocks (when R < all) and its activations; the DiT is freed and the VAE decodes.
// All of it within the budget (--vram-budget, or the device's free memory) less a 0.5 GiB
// reserve. Activation sizes are measured by running the models' own code on the measuring
// backend, so the plan follows the implementation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "pipeline/moss_model.h"

namespace moss {

constexpr size_t kGiB = size_t(1) << 30;
constexpr size_t kReserveBytes = kGiB / 2;

struct StageSizes {
  // The text encoder's figures come from its weight sources (te_layer_bytes in model/te_weights.h)
  // and the DiT's from its streaming source (dit_stream_sizes): the planner counts what they
  // allocate and never lays the weights out itself.
  size_t te_layer_bytes = 0;        // the largest text-encoder layer (one streaming slot)
  size_t te_all_layers_bytes = 0;   // every layer (the resident text encoder)
  size_t te_fixed_bytes = 0;        // embedding rows used, final norm
  size_t te_activation_bytes = 0;   // one prompt at the longest token count
  size_t dit_fixed_bytes = 0;       // everything but layers.N.*
  size_t dit_block_bytes = 0;       // the largest block, resident
  size_t dit_slot_bytes = 0;        // the largest block in a streaming slot (tensors at 256-byte offsets)
  size_t dit_staging_bytes = 0;     // streamed blocks' packed tensors (model/dit_streaming.h)
  int dit_blocks = 0;
  size_t dit_activation_bytes = 0;  // text rows of both prompts + one forward
  size_t vae_weight_bytes = 0;
  size_t vae_decode_bytes = 0;      // activations of one decode (0 when no image is decoded)
};

// The device as the plan sees it: runtime/devices.h fills it from hipDeviceProp_t, hipMemGetInfo
// and the amdgpu driver's sysfs figures; the tests give real boards' (docs/memory_plan.md section 9).
struct DeviceMemory {
  bool integrated = false;    // an APU (hipDeviceProp_t::integrated): its device memory is system memory
  size_t free_bytes = 0;      // hipMemGetInfo's free memory
  size_t carveout_bytes = 0;  // APU: the BIOS VRAM carve-out (amdgpu mem_info_vram_total); 0 unknown
  size_t gtt_bytes = 0;       // APU: the GTT (mem_info_gtt_total: amdgpu.gttsize, ttm pages_limit); 0 unknown
};

// What a plan may use when there is no --vram-budget. A card: its free memory. An APU: when the
// GTT is larger than the carve-out, the driver places device allocations in the GTT (system
// memory mapped for the GPU), so the GTT bounded by the host's available memory counts, or the
// runtime's free figure when that is larger (a runtime that adds the GTT itself); otherwise
// (a carve-out at least as large as the GTT) only the carve-out is reliably allocatable.
size_t device_allocatable(const DeviceMemory& device, size_t host_available);

struct MemoryPlan {
  StageSizes sizes;
  size_t budget_bytes = 0;       // what the plan may use (budget or free memory)
  int resident_blocks = 0;       // DiT blocks kept on the device; the rest stream
  size_t pinned_host_bytes = 0;  // pinned host copies of the streamed blocks (a slot's bytes each, at most)
  // An APU: the device reads system memory, so a pinned host copy of a block would be a second
  // copy of weights it can read where they are. Streamed blocks are read each pass from the
  // mapped model files through two staging buffers (model/dit_streaming.h, mapped source),
  // unpacked (packing saves bus time a shared memory does not spend); nothing is pinned.
  bool integrated = false;
  bool dit_from_files() const { return integrated && streamed(); }
  size_t te_peak = 0, dit_peak = 0, vae_peak = 0;  // device bytes per stage, VAE weights included
  // The text encoder keeps all its layers on the device when they fit beside its activations,
  // the VAE weights and the reserve; otherwise they stream, two at a time (docs/product.md section 5).
  bool te_resident = false;
  bool streamed() const { return resident_blocks < sizes.dit_blocks; }
  size_t dit_minimum() const;  // with the two slots, the staging buffer and no resident block
};

// Measures the stage sizes for a request (image size, longest prompt in tokens, whether the VAE
// decodes).
StageSizes measure_stages(const MossModel& model, int64_t width, int64_t height, int64_t max_tokens, bool decode);
// Its DiT part (the dit_* sizes) for any DiT weights and config: bf16 or INT8 ConvRot blocks.
void measure_dit_stage(const WeightFiles& weights, const DitConfig& cfg, int64_t width, int64_t height,
                       int64_t max_tokens, StageSizes& sizes);

// Chooses the resident block count, or throws moss::Error (exit 2: the request cannot run on
// this device or budget) with the sizes: a decode that does not fit, activations that do not
// fit, a budget below the DiT's minimum, less available host memory than the streamed blocks pin.
// `budget_is_user` says whether budget came from --vram-budget (for the messages).
// `integrated`: the device is an APU (above: nothing pinned, no packed staging).
MemoryPlan plan_memory(const StageSizes& sizes, size_t budget_bytes, bool budget_is_user, size_t host_available_bytes,
                       bool integrated = false);

// Several images per load (pipeline/engine.h): whether the text encoder (all layers resident), the
// whole DiT and the VAE's weights fit on the device together, beside the largest stage's
// activations and the reserve, so none of them is freed or loaded again between images.
bool plan_holds_all_loaded(const MemoryPlan& plan);
// Where it does not: whether the text encoder's layers can stay in pinned host memory between
// images (read from the files once, TeResidency::PinnedHost) beside the DiT's pinned blocks,
// with kHostSpareBytes left to the system. Never on an APU: the pinned layers would be a second
// copy of what the device reads from the mapped files. `host_available`: MemAvailable, plus what the engine
// already holds pinned for the text encoder.
constexpr size_t kHostSpareBytes = size_t(4) << 30;
bool plan_pins_text_encoder(const MemoryPlan& plan, size_t host_available);

// MemAvailable from /proc/meminfo (bytes), or 0 when unknown.
size_t host_available_memory();

std::string format_gib(size_t bytes);

}  // namespace moss
