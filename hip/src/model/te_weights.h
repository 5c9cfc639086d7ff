// Where the text encoder's layer weights live during a pass (product.md section 5). The encoder
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
#pragma once
#include <memory>
#include <string>

#include "io/safetensors.h"
#include "ops/backend.h"

namespace moss {

enum class TeResidency {
  Auto,         // UploadOnUse on the host backend, Streamed on a device
  UploadOnUse,
  Streamed,
  Resident,
};

const char* te_residency_name(TeResidency r);  // "upload on use", "streamed", "resident"

class TeWeightSource {
 public:
  virtual ~TeWeightSource() = default;
  // A pass runs layers 0, 1, ... in order, each bracketed by before_layer / after_layer (the
  // layer's ops for every prompt are queued in between).
  virtual void begin_pass() {}
  virtual void before_layer(int layer) { (void)layer; }
  virtual void after_layer(int layer) { (void)layer; }
  virtual void end_pass() {}
  // The checkpoint tensor `name` (full name) of `layer` (-1: outside the layers, e.g. the
  // final norm) as the backend's ops read it; valid until after_layer(layer).
  virtual Tensor get(int layer, const std::string& name) = 0;
  // Seconds the source spent bringing weights to the device before the pass could start
  // (Resident: the one-time load; 0 for the others).
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

}  // namespace moss
