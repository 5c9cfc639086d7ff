// The text encoder's streamed and resident weight sources (model/te_weights.h).
//
// Both move a layer the same way: a worker thread copies the layer's tensors from the mmap'd
// files into a pinned staging buffer (tensors at 256-byte offsets: the layer's "image"), then one
// asynchronous copy on the backend's copy stream takes the image to device memory. There are two
// staging buffers, used by layers in turn (layer l: buffer l mod 2), each sized for the largest
// layer; a buffer is refilled only once the host has seen the copy that last read it complete.
//
// Streamed: layer l's image goes to device slot l mod 2. Its copy waits for the compute fence
// recorded after layer l-2 (the slot's last reader); layer l's compute waits for its copy; the
// worker fills layer l+1 while layer l copies and computes. At most two layers on the device.
// Resident: every layer gets its own device buffer, filled once through the same pipeline (load()).
// PinnedHost: every layer's image in pinned host memory once, copied to two device slots per pass.
// Fused projections (te_fused_groups) sit back to back in the image, so get_fused is a view.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include "model/te_weights.h"
#include "util/error.h"

namespace moss {
namespace {

constexpr size_t kAlign = 256;              // tensor offsets inside a layer image
constexpr size_t kMinCopyChunk = 16 << 20;  // bytes per host copy thread, at least

struct Part {
  Tensor host;  // the mmap'd tensor
  size_t offset = 0;
};

// One layer's tensors and their offsets in its image.
struct LayerImage {
  std::map<std::string, Part> parts;
  size_t bytes = 0;
};

// "<prefix>layers.N.rest" -> N, anything else -> -1.
int layer_of(const std::string& name, const std::string& prefix) {
  const std::string head = prefix + "layers.";
  if (name.compare(0, head.size(), head) != 0) return -1;
  const size_t dot = name.find('.', head.size());
  if (dot == std::string::npos) return -1;
  return std::stoi(name.substr(head.size(), dot - head.size()));
}

// Places `names` (full names, all in the layer) back to back from the image's current end.
void place(LayerImage& img, const WeightFiles& w, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    Part p{w.get(name), img.bytes};
    img.bytes += p.host.nbytes();
    img.parts.emplace(name, std::move(p));
  }
  img.bytes = (img.bytes + kAlign - 1) / kAlign * kAlign;
}

// Each layer's image: first the fused groups (te_fused_groups) whose members are all there and
// stackable, back to back (one [ΣN, K] weight), then every other tensor by name, each at a
// 256-byte offset. Sorted names: the same layout every run.
std::vector<LayerImage> layer_images(const WeightFiles& w, const std::string& prefix, int layers) {
  std::vector<std::vector<std::string>> names(size_t(std::max(layers, 0)));
  for (const std::string& name : w.names()) {
    const int l = layer_of(name, prefix);
    if (l >= 0 && l < layers) names[size_t(l)].push_back(name);
  }
  std::vector<LayerImage> images(names.size());
  for (size_t l = 0; l < names.size(); ++l) {
    const std::string head = prefix + "layers." + std::to_string(l) + ".";
    auto present = [&](const std::string& n) {
      return std::find(names[l].begin(), names[l].end(), n) != names[l].end();
    };
    for (const std::vector<std::string>& group : te_fused_groups()) {
      std::vector<std::string> full;
      bool stackable = true;
      for (const std::string& g : group) {
        full.push_back(head + g);
        if (!present(full.back())) {
          stackable = false;
          break;
        }
        const Tensor t = w.get(full.back()), first = w.get(full.front());
        stackable = stackable && t.rank == 2 && t.dtype == first.dtype && t.cols() == first.cols();
      }
      if (stackable) place(images[l], w, full);
    }
    for (const std::string& name : names[l])
      if (!images[l].parts.count(name)) place(images[l], w, {name});
  }
  return images;
}

// A view of the tensor `p` inside a layer image held by `base` (device or host).
Tensor view_in(const Tensor& base, const Part& p) {
  Tensor v(static_cast<char*>(base.data) + p.offset, p.host.dtype, p.host.dims(), base.where);
  v.owner = base.owner;
  return v;
}

// A layer's image from the mmap'd files into `base` (host memory of img.bytes), split over a few
// threads by bytes (page-cache reads scale with threads).
void fill_image(const LayerImage& img, char* base) {
  std::vector<const Part*> parts;
  for (const auto& [name, p] : img.parts) parts.push_back(&p);
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::clamp<size_t>(img.bytes / kMinCopyChunk, 1, std::min<size_t>(hw, 8));
  const size_t share = (img.bytes + threads - 1) / threads;
  auto copy_range = [&](size_t lo, size_t hi) {  // image bytes [lo, hi)
    for (const Part* p : parts) {
      const size_t a = std::max(lo, p->offset), b = std::min(hi, p->offset + p->host.nbytes());
      if (a < b) std::memcpy(base + a, static_cast<const char*>(p->host.data) + (a - p->offset), b - a);
    }
  };
  std::vector<std::future<void>> helpers;
  for (size_t t = 1; t < threads; ++t)
    helpers.push_back(std::async(std::launch::async, copy_range, t * share, std::min(img.bytes, (t + 1) * share)));
  copy_range(0, std::min(img.bytes, share));
  for (auto& h : helpers) h.get();
}

// The host side of the pipeline: two pinned staging buffers and the worker that fills them.
class Stager {
 public:
  Stager(Backend& be, const std::vector<LayerImage>& images) : be_(be), images_(images) {
    size_t largest = 0;
    for (const LayerImage& img : images_) largest = std::max(largest, img.bytes);
    for (Tensor& s : staging_) s = be_.alloc_pinned(largest);
  }
  ~Stager() {
    for (auto& f : fill_)
      if (f.valid()) f.wait();
  }

  // Starts filling buffer l mod 2 with layer l on the worker thread. The caller has seen the
  // buffer's previous copy complete.
  void start_fill(int l) {
    std::future<void>& f = fill_[size_t(l % 2)];
    if (f.valid()) f.get();
    f = std::async(std::launch::async, [this, l] { fill(l); });
  }

  // Waits for layer l's fill, then queues its image -> dst on the copy stream after `after`.
  Backend::Fence copy(int l, Tensor& dst, Backend::Fence after) {
    std::future<void>& f = fill_[size_t(l % 2)];
    if (!f.valid()) throw std::logic_error("text encoder streaming: layer " + std::to_string(l) + " was never filled");
    f.get();  // rethrows a failed fill
    const Tensor src = staging_[l % 2].slice_cols(0, int64_t(images_[size_t(l)].bytes));
    return be_.copy_async(src, dst, after);
  }

  // The host sees `copy` complete: the compute stream waits for it and is drained.
  void host_wait(Backend::Fence copy) {
    be_.compute_wait(copy);
    be_.synchronize();
  }

 private:
  void fill(int l) { fill_image(images_[size_t(l)], staging_[l % 2].ptr<char>()); }

  Backend& be_;
  const std::vector<LayerImage>& images_;
  Tensor staging_[2];
  std::future<void> fill_[2];
};

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

Tensor find_in(const LayerImage& img, const Tensor& base, int layer, const std::string& name) {
  auto it = img.parts.find(name);
  if (it == img.parts.end())
    throw failure("text encoder: layer " + std::to_string(layer) + " has no tensor '" + name + "'");
  return view_in(base, it->second);
}

// The tensors `names` as one [Σrows, cols] view when the image holds them back to back.
std::optional<Tensor> fused_in(const LayerImage& img, const Tensor& base, const std::vector<std::string>& names) {
  const Part* first = nullptr;
  size_t end = 0;
  int64_t rows = 0;
  for (const std::string& name : names) {
    auto it = img.parts.find(name);
    if (it == img.parts.end()) return std::nullopt;
    const Part& p = it->second;
    if (!first) {
      first = &p;
      end = p.offset;
    }
    if (p.offset != end || p.host.rank != 2 || p.host.dtype != first->host.dtype || p.host.cols() != first->host.cols())
      return std::nullopt;
    end += p.host.nbytes();
    rows += p.host.rows();
  }
  if (!first) return std::nullopt;
  Tensor v(static_cast<char*>(base.data) + first->offset, first->host.dtype, {rows, first->host.cols()}, base.where);
  v.owner = base.owner;
  return v;
}

class Streamed : public TeWeightSource {
 public:
  Streamed(Backend& be, const WeightFiles& w, const std::string& prefix, int layers)
      : be_(be), images_(layer_images(w, prefix, layers)), stager_(be, images_), outside_(be, w) {
    size_t largest = 0;
    for (const LayerImage& img : images_) largest = std::max(largest, img.bytes);
    for (Tensor& s : slots_) s = be_.alloc(DType::U8, {int64_t(std::max<size_t>(largest, 1))});
  }

  void begin_pass() override {
    copied_.assign(images_.size(), 0);
    computed_.assign(images_.size(), 0);
    current_ = -1;
    if (!images_.empty()) stager_.start_fill(0);
  }

  void before_layer(int l) override {
    if (l != current_ + 1 || l >= int(images_.size()))
      throw std::logic_error("text encoder streaming: layer " + std::to_string(l) + " out of order");
    current_ = l;
    Tensor dst = slots_[l % 2].slice_cols(0, int64_t(images_[size_t(l)].bytes));
    copied_[size_t(l)] = stager_.copy(l, dst, l >= 2 ? computed_[size_t(l - 2)] : 0);
    if (l + 1 < int(images_.size())) {
      if (l >= 1) stager_.host_wait(copied_[size_t(l - 1)]);  // staging (l+1) mod 2 was read by layer l-1's copy
      stager_.start_fill(l + 1);
    }
    be_.compute_wait(copied_[size_t(l)]);
  }

  void after_layer(int l) override { computed_[size_t(l)] = be_.compute_fence(); }

  // The staging buffers are free for the next pass once the host has seen the last copy done.
  void end_pass() override {
    if (current_ >= 0) stager_.host_wait(copied_[size_t(current_)]);
    current_ = -1;
  }

  Tensor get(int layer, const std::string& name) override {
    if (layer < 0) return outside_.get(name);
    if (layer != current_)
      throw std::logic_error("text encoder streaming: layer " + std::to_string(layer) + " read while layer " +
                             std::to_string(current_) + " runs");
    return find_in(images_[size_t(layer)], slots_[layer % 2], layer, name);
  }
  std::optional<Tensor> get_fused(int layer, const std::vector<std::string>& names) override {
    if (layer < 0 || layer != current_) return std::nullopt;
    return fused_in(images_[size_t(layer)], slots_[layer % 2], names);
  }

 private:
  Backend& be_;
  std::vector<LayerImage> images_;
  Stager stager_;
  OutsideLayers outside_;
  Tensor slots_[2];
  std::vector<Backend::Fence> copied_, computed_;
  int current_ = -1;
};

class Resident : public TeWeightSource {
 public:
  Resident(Backend& be, const WeightFiles& w, const std::string& prefix, int layers)
      : be_(be), images_(layer_images(w, prefix, layers)), outside_(be, w) {}

  // Every layer into its own device buffer; layer_ready(l) once the compute stream may read layer
  // l (its copy fenced), while the worker fills the next layers.
  void load(const std::function<void(int)>& layer_ready) override {
    if (!device_.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    {
      Stager stager(be_, images_);  // its staging buffers go when the load is done
      std::vector<Backend::Fence> copied(images_.size(), 0);
      if (!images_.empty()) stager.start_fill(0);
      for (int l = 0; l < int(images_.size()); ++l) {
        device_.push_back(be_.alloc(DType::U8, {int64_t(std::max<size_t>(images_[size_t(l)].bytes, 1))}));
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
    return fused_in(images_[size_t(layer)], device_.at(size_t(layer)), names);
  }
  double load_seconds() const override { return load_s_; }

 private:
  Backend& be_;
  std::vector<LayerImage> images_;
  OutsideLayers outside_;
  std::vector<Tensor> device_;
  double load_s_ = 0;
};

// Every layer's image in pinned host memory, filled once (load()); each pass copies the images
// into two device slots like Streamed, with no file reads and no staging: the copy of layer l+1
// is queued when layer l starts (after the compute of layer l-1, the slot's last reader). The
// slots exist during a pass only, so between passes the encoder holds no device memory beyond
// the tensors outside the layers (several images per load on a card that cannot keep it resident).
class PinnedHost : public TeWeightSource {
 public:
  PinnedHost(Backend& be, const WeightFiles& w, const std::string& prefix, int layers)
      : be_(be), images_(layer_images(w, prefix, layers)), outside_(be, w) {}

  void load(const std::function<void(int)>&) override {
    if (!pinned_.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    for (const LayerImage& img : images_) {
      pinned_.push_back(be_.alloc_pinned(std::max<size_t>(img.bytes, 1)));
      fill_image(img, pinned_.back().ptr<char>());
    }
    load_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  void begin_pass() override {
    size_t largest = 0;
    for (const LayerImage& img : images_) largest = std::max(largest, img.bytes);
    for (Tensor& s : slots_) s = be_.alloc(DType::U8, {int64_t(std::max<size_t>(largest, 1))});
    copied_.assign(images_.size(), 0);
    computed_.assign(images_.size(), 0);
    current_ = -1;
    if (!images_.empty()) queue_copy(0, 0);
  }

  void before_layer(int l) override {
    if (l != current_ + 1 || l >= int(images_.size()))
      throw std::logic_error("text encoder pinned source: layer " + std::to_string(l) + " out of order");
    current_ = l;
    if (l + 1 < int(images_.size())) queue_copy(l + 1, l >= 1 ? computed_[size_t(l - 1)] : 0);
    be_.compute_wait(copied_[size_t(l)]);
  }

  void after_layer(int l) override { computed_[size_t(l)] = be_.compute_fence(); }

  // The slots go back once the device is done with them.
  void end_pass() override {
    be_.synchronize();
    for (Tensor& s : slots_) s = Tensor();
    current_ = -1;
  }

  Tensor get(int layer, const std::string& name) override {
    if (layer < 0) return outside_.get(name);
    if (layer != current_)
      throw std::logic_error("text encoder pinned source: layer " + std::to_string(layer) + " read while layer " +
                             std::to_string(current_) + " runs");
    return find_in(images_[size_t(layer)], slots_[layer % 2], layer, name);
  }
  std::optional<Tensor> get_fused(int layer, const std::vector<std::string>& names) override {
    if (layer < 0 || layer != current_) return std::nullopt;
    return fused_in(images_[size_t(layer)], slots_[layer % 2], names);
  }
  double load_seconds() const override { return load_s_; }

 private:
  void queue_copy(int l, Backend::Fence after) {
    const size_t bytes = images_[size_t(l)].bytes;
    Tensor dst = slots_[l % 2].slice_cols(0, int64_t(bytes));
    copied_[size_t(l)] = be_.copy_async(pinned_[size_t(l)].slice_cols(0, int64_t(bytes)), dst, after);
  }

  Backend& be_;
  std::vector<LayerImage> images_;
  OutsideLayers outside_;
  std::vector<Tensor> pinned_;
  Tensor slots_[2];
  std::vector<Backend::Fence> copied_, computed_;
  int current_ = -1;
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
