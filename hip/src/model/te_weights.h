// Where the text encoder's layer weights live during a pass (docs/product.md section 5). The encoder
// asks for a layer's tensors between before_layer(l) and after_layer(l); the source decides
// what that costs:
//  - UploadOnUse: each tensor is uploaded on its first use in the layer and dropped when the
//    next layer starts (the host backend, where "upload" is the mmap'd view itself, and the
//    memory planner's measuring backend);
//  - Streamed: every layer is copied, each pass, from the mmap'd files into one of two pinned
//    staging buffers by a worker thread, then on the copy stream into one of two device slots,
//    while the layer before computes (model/te_streaming.cpp); at most two layers on the device;
//  - Resident: all layers are copied once through the same staging pipeline into a device
//    buffer each, and stay for the encoder's lifetime.
// The three give the same bytes at the same alignment to the same kernels: the same result,
// bit for bit.
//
// Fused projections: the projections of a layer that read the same input (te_fused_groups) are
// laid back to back, so one GEMM reads them all as one [ΣN, K] weight (get_fused); every source
// serves them, so the encoder runs the same GEMMs whatever the residency.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "ops/backend.h"
#include "streaming/block_image.h"

namespace moss {

enum class TeResidency {
  Auto,         // UploadOnUse on the host backend, Streamed on a device
  UploadOnUse,
  Streamed,
  Resident,
  // Every layer in pinned host memory, read from the files once; each pass copies them into two
  // device slots like Streamed (several images per load where the device cannot keep them).
  PinnedHost,
  // UploadOnUse for the memory planner's measuring backend, which never reads values: stacked
  // (fused) weights get the right shape without their bytes being copied.
  ShapesOnly,
};

const char* te_residency_name(TeResidency r);  // "upload on use", "streamed", "resident"

// Groups of per-layer tensor names (after "<prefix>layers.N.") whose weights are stacked into
// one GEMM, in the order of the fused output's column blocks: the DeltaNet's input projections
// (qkv | z | a | b), the MLP's gate | up, the attention's k | v.
const std::vector<std::vector<std::string>>& te_fused_groups();
enum TeFusedGroup { kTeDeltaNetInput = 0, kTeMlpInput = 1, kTeAttentionKv = 2 };  // indices into te_fused_groups()

class TeWeightSource {
 public:
  virtual ~TeWeightSource() = default;
  // Brings the weights to the device before the first pass (Resident: every layer, once; the
  // others: nothing). layer_ready(l), when given, is called as soon as layer l's weights can be
  // read by work queued on the compute stream (get() works for it), while later layers still
  // load: the encoder queues a discarded warm-up of its kernels there (first launches load the
  // kernels' modules), overlapping the copies.
  virtual void load(const std::function<void(int layer)>& layer_ready) { (void)layer_ready; }
  // A pass runs layers 0, 1, ... in order, each bracketed by before_layer / after_layer (the
  // layer's ops for every prompt are queued in between).
  virtual void begin_pass() {}
  virtual void before_layer(int layer) { (void)layer; }
  virtual void after_layer(int layer) { (void)layer; }
  virtual void end_pass() {}
  // The checkpoint tensor `name` (full name) of `layer` (-1: outside the layers, e.g. the
  // final norm) as the backend's ops read it; valid until after_layer(layer).
  virtual Tensor get(int layer, const std::string& name) = 0;
  // The full-named 2-D tensors `names` (same dtype and columns) as one [Σrows, cols] weight, the
  // first's rows first, valid like get(); nullopt when they cannot be stacked.
  virtual std::optional<Tensor> get_fused(int layer, const std::vector<std::string>& names) = 0;
  // Seconds load() spent (Resident: the one-time copy of the layers, the warm-up overlapping
  // it; 0 for the others).
  virtual double load_seconds() const { return 0; }
};

// Auto resolved for this backend: UploadOnUse on the host, Streamed on a device.
TeResidency resolve_te_residency(const Backend& be, TeResidency residency);

// `prefix` is the checkpoint's language-model prefix ("language_model." or
// "model.language_model."); `layers` the layer count.
std::unique_ptr<TeWeightSource> make_te_weight_source(Backend& be, const WeightFiles& weights,
                                                      const std::string& prefix, int layers, TeResidency residency);

// The streaming and resident sources (model/te_streaming.cpp).
std::unique_ptr<TeWeightSource> make_te_streamed_source(Backend& be, const WeightFiles& weights,
                                                        const std::string& prefix, int layers);
std::unique_ptr<TeWeightSource> make_te_resident_source(Backend& be, const WeightFiles& weights,
                                                        const std::string& prefix, int layers);
std::unique_ptr<TeWeightSource> make_te_pinned_host_source(Backend& be, const WeightFiles& weights,
                                                           const std::string& prefix, int layers);

// The device bytes of the layer images those sources lay out: the largest layer (each of the
// Streamed and PinnedHost sources' two slots) and every layer (the Resident source's buffers).
// The memory planner takes its text-encoder layer figures from here.
BlockBytes te_layer_bytes(const WeightFiles& weights, const std::string& prefix, int layers);

}  // namespace moss
