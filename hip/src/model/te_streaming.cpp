// The text encoder's streamed, resident and pinned-host weight sources (model/te_weights.h): thin
// adapters over the weight-streaming module (streaming/), which lays out each layer's image,
// stages it and copies it. What is the text encoder's own here: which tensors form a layer
// ("<prefix>layers.N."), the fused groups laid back to back (te_fused_groups, so get_fused is a
// view), and the order of a pass (layers 0, 1, ... each bracketed by before_layer/after_layer).
//
// Streamed: every pass, layer l's image is copied from the mmap'd files into pinned staging
// buffer l mod 2 by a worker thread (streaming/staging.h), then into device slot l mod 2
// (streaming/slots.h) after the compute of layer l-2, the slot's last reader; layer l's compute
// waits for its copy, and the worker fills layer l+1 meanwhile. At most two layers on the device.
// Resident: every layer gets its own device buffer, filled once through the same staging (load()).
// PinnedHost: every layer's image in pinned host memory once, copied into two slots per pass.

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>

#include "model/te_weights.h"
#include "streaming/block_image.h"
#include "streaming/block_names.h"
#include "streaming/slots.h"
#include "streaming/staging.h"
#include "util/error.h"

namespace moss {

// Each layer's image: first the fused groups whose members are all there and stackable (one
// [ΣN, K] weight each), then every other tensor in name order. The same layout every run.
static std::vector<BlockImage> te_layer_images(const WeightFiles& w, const std::string& prefix, int layers) {
  std::vector<BlockImage> images(size_t(std::max(layers, 0)));
  for (const std::string& name : w.names()) {
    const int l = block_index(name, prefix);
    if (l >= 0 && l < layers) images[size_t(l)].add(name, w.get(name));
  }
  for (size_t l = 0; l < images.size(); ++l) {
    std::vector<std::vector<std::string>> groups;
    for (const std::vector<std::string>& group : te_fused_groups()) {
      groups.emplace_back();
      for (const std::string& g : group) groups.back().push_back(block_head(prefix, int(l)) + g);
    }
    images[l].lay_out(groups);
  }
  return images;
}

BlockBytes te_layer_bytes(const WeightFiles& weights, const std::string& prefix, int layers) {
  return block_bytes(te_layer_images(weights, prefix, layers));
}

namespace {

// Tensors outside the layers (the final norm): uploaded on first use, kept.
class OutsideLayers {
 public:
  OutsideLayers(Backend& be, const WeightFiles& w) : be_(be), weights_(w) {}
  Tensor get(const std::string& name) {
    auto it = cache_.find(name);
    return it != cache_.end() ? it->second : (cache_[name] = be_.upload(weights_.get(name)));
  }

 private:
  Backend& be_;
  WeightFiles weights_;
  std::map<std::string, Tensor> cache_;
};

Tensor find_in(const BlockImage& img, const Tensor& base, int layer, const std::string& name) {
  const BlockImage::Part* p = img.find(name);
  if (!p) throw failure("text encoder: layer " + std::to_string(layer) + " has no tensor '" + name + "'");
  return BlockImage::view(base, *p);
}

// What Streamed and PinnedHost share: the layer images, two device slots and the running layer,
// whose weights are views into its slot.
class TwoSlotSource : public TeWeightSource {
 public:
  TwoSlotSource(Backend& be, const WeightFiles& w, const std::string& prefix, int layers, const char* what)
      : be_(be), what_(what), images_(te_layer_images(w, prefix, layers)), outside_(be, w) {}

  void after_layer(int l) override { slots_.read[l % 2] = be_.compute_fence(); }

  Tensor get(int layer, const std::string& name) override {
    if (layer < 0) return outside_.get(name);
    if (layer != current_)
      throw std::logic_error(std::string(what_) + ": layer " + std::to_string(layer) + " read while layer " +
                             std::to_string(current_) + " runs");
    return find_in(images_[size_t(layer)], slots_.slot[layer % 2], layer, name);
  }
  std::optional<Tensor> get_fused(int layer, const std::vector<std::string>& names) override {
    if (layer < 0 || layer != current_) return std::nullopt;
    return images_[size_t(layer)].fused_view(slots_.slot[layer % 2], names);
  }

 protected:
  // Layer l starts: it must be the next one.
  void enter(int l) {
    if (l != current_ + 1 || l >= int(images_.size()))
      throw std::logic_error(std::string(what_) + ": layer " + std::to_string(l) + " out of order");
    current_ = l;
  }

  Backend& be_;
  const char* what_;
  std::vector<BlockImage> images_;
  OutsideLayers outside_;
  SlotPair slots_;
  Backend::Fence copied_[2] = {0, 0};  // the last copy into each slot
  int current_ = -1;
};

class Streamed : public TwoSlotSource {
 public:
  Streamed(Backend& be, const WeightFiles& w, const std::string& prefix, int layers)
      : TwoSlotSource(be, w, prefix, layers, "text encoder streaming"), stager_(be, images_) {
    slots_.allocate(be_, block_bytes(images_).largest);
  }

  void begin_pass() override {
    slots_.forget_readers();
    current_ = -1;
    if (!images_.empty()) stager_.start_fill(0);
  }

  void before_layer(int l) override {
    enter(l);
    copied_[l % 2] = stager_.copy(l, slots_.slot[l % 2], slots_.read[l % 2]);
    if (l + 1 < int(images_.size())) {
      if (l >= 1) stager_.host_wait(copied_[(l - 1) % 2]);  // staging (l+1) mod 2 was read by layer l-1's copy
      stager_.start_fill(l + 1);
    }
    be_.compute_wait(copied_[l % 2]);
  }

  // The staging buffers are free for the next pass once the host has seen the last copy done.
  void end_pass() override {
    if (current_ >= 0) stager_.host_wait(copied_[current_ % 2]);
    current_ = -1;
  }

 private:
  FileStager stager_;
};

class Resident : public TeWeightSource {
 public:
  Resident(Backend& be, const WeightFiles& w, const std::string& prefix, int layers)
      : be_(be), images_(te_layer_images(w, prefix, layers)), outside_(be, w) {}

  // Every layer into its own device buffer; layer_ready(l) once the compute stream may read layer
  // l (its copy fenced), while the worker fills the next layers.
  void load(const std::function<void(int)>& layer_ready) override {
    if (!device_.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    {
      FileStager stager(be_, images_);  // its staging buffers go when the load is done
      std::vector<Backend::Fence> copied(images_.size(), 0);
      if (!images_.empty()) stager.start_fill(0);
      for (int l = 0; l < int(images_.size()); ++l) {
        device_.push_back(be_.alloc(DType::U8, {int64_t(std::max<size_t>(images_[size_t(l)].slot_bytes(), 1))}));
        copied[size_t(l)] = stager.copy(l, device_.back(), 0);
        if (l + 1 < int(images_.size())) {
          if (l >= 1) stager.host_wait(copied[size_t(l - 1)]);
          stager.start_fill(l + 1);
        }
        if (layer_ready) {
          be_.compute_wait(copied[size_t(l)]);
          layer_ready(l);
        }
      }
      if (!images_.empty()) stager.host_wait(copied.back());  // drains the compute stream too
    }
    load_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  Tensor get(int layer, const std::string& name) override {
    if (layer < 0) return outside_.get(name);
    return find_in(images_[size_t(layer)], device_.at(size_t(layer)), layer, name);
  }
  std::optional<Tensor> get_fused(int layer, const std::vector<std::string>& names) override {
    if (layer < 0) return std::nullopt;
    return images_[size_t(layer)].fused_view(device_.at(size_t(layer)), names);
  }
  double load_seconds() const override { return load_s_; }

 private:
  Backend& be_;
  std::vector<BlockImage> images_;
  OutsideLayers outside_;
  std::vector<Tensor> device_;
  double load_s_ = 0;
};

// Every layer's image in pinned host memory, filled once (load()); each pass copies the images
// into two device slots like Streamed, with no file reads and no staging: the copy of layer l+1
// is queued when layer l starts (after the compute of layer l-1, the slot's last reader). The
// slots exist during a pass only, so between passes the encoder holds no device memory beyond
// the tensors outside the layers (several images per load on a card that cannot keep it resident).
class PinnedHost : public TwoSlotSource {
 public:
  PinnedHost(Backend& be, const WeightFiles& w, const std::string& prefix, int layers)
      : TwoSlotSource(be, w, prefix, layers, "text encoder pinned source") {}

  void load(const std::function<void(int)>&) override {
    if (!pinned_.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    for (const BlockImage& img : images_) pinned_.push_back(img.pinned(be_, kImageFillThreads));
    load_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void begin_pass() override {
    slots_.allocate(be_, block_bytes(images_).largest);
    slots_.forget_readers();
    current_ = -1;
    if (!images_.empty()) queue_copy(0);
  }

  void before_layer(int l) override {
    enter(l);
    if (l + 1 < int(images_.size())) queue_copy(l + 1);  // its slot's last reader was layer l-1
    be_.compute_wait(copied_[l % 2]);
  }

  // The slots go back once the device is done with them.
  void end_pass() override {
    be_.synchronize();
    slots_.release();
    current_ = -1;
  }

  double load_seconds() const override { return load_s_; }

 private:
  void queue_copy(int l) {
    copied_[l % 2] = images_[size_t(l)].copy(be_, pinned_[size_t(l)], slots_.slot[l % 2], nullptr, slots_.read[l % 2],
                                             0, 0);
  }

  std::vector<Tensor> pinned_;
  double load_s_ = 0;
};

}  // namespace

std::unique_ptr<TeWeightSource> make_te_pinned_host_source(Backend& be, const WeightFiles& weights,
                                                           const std::string& prefix, int layers) {
  return std::make_unique<PinnedHost>(be, weights, prefix, layers);
}

std::unique_ptr<TeWeightSource> make_te_streamed_source(Backend& be, const WeightFiles& weights,
                                                        const std::string& prefix, int layers) {
  return std::make_unique<Streamed>(be, weights, prefix, layers);
}

std::unique_ptr<TeWeightSource> make_te_resident_source(Backend& be, const WeightFiles& weights,
                                                        const std::string& prefix, int layers) {
  return std::make_unique<Resident>(be, weights, prefix, layers);
}

}  // namespace moss
