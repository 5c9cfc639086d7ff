#include "pipeline/dit_residency.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <map>
#include <stdexcept>
#include <thread>

#include "tensor/packed_bf16.h"
#include "util/error.h"

namespace moss {
namespace {

// "layers.N.rest" -> N, anything else -> -1.
int block_of(const std::string& name) {
  if (name.rfind("layers.", 0) != 0) return -1;
  size_t dot = name.find('.', 7);
  return dot == std::string::npos ? -1 : std::stoi(name.substr(7, dot - 7));
}

constexpr size_t kAlign = 256;  // tensor offsets inside a slot and the staging buffer
size_t aligned(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

int64_t values_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Whether a streamed tensor is a candidate for packing, and the packed size it must not exceed
// (13 bits a value: exceptions under about 2%), else it travels raw.
bool pack_candidate(const TensorInfo& t, int64_t min_values) {
  const int64_t n = values_of(t.shape);
  return t.dtype == DType::BF16 && n >= min_values && packable_bf16_count(n);
}
size_t packed_cap(int64_t n) { return size_t(n) * 13 / 8; }

class ResidentStreaming : public DitWeightSource {
 public:
  ResidentStreaming(Backend& be, const WeightFiles& w, const DitConfig& cfg, int resident, int64_t pack_min_values)
      : be_(be), resident_(std::clamp(resident, 0, int(cfg.layers))) {
    std::vector<std::string> resident_names;
    for (const std::string& name : w.names()) {
      if (name == "rope.bands") continue;  // recomputed, never read
      const int b = block_of(name);
      if (b < 0 || b < resident_) {
        resident_names.push_back(name);
      } else {
        streamed_[b].parts.emplace_back(name);
      }
    }
    // Building a block's pinned image (page-locking fresh host memory, packing and copying from
    // the mapping) is what a streamed load spends its time on: several threads build them while
    // this thread uploads the resident tensors. Backend::alloc_pinned is thread-safe, the
    // mapping is read-only and each thread touches only its blocks.
    std::vector<Streamed*> to_build;
    for (auto& [b, s] : streamed_) to_build.push_back(&s);
    std::atomic<size_t> next{0};
    std::vector<std::exception_ptr> errors(build_threads(to_build.size()));
    std::vector<std::thread> workers;
    for (size_t t = 0; t < errors.size(); ++t)
      workers.emplace_back([&, t] {
        try {
          for (size_t i = next++; i < to_build.size(); i = next++) build(*to_build[i], w, pack_min_values);
        } catch (...) {
          errors[t] = std::current_exception();
          next = to_build.size();  // the others stop at their next block
        }
      });
    std::exception_ptr upload_error;
    try {
      for (const std::string& name : resident_names) device_[name] = be_.upload(w.get(name));
    } catch (...) {
      upload_error = std::current_exception();
      next = to_build.size();
    }
    for (std::thread& t : workers) t.join();
    if (upload_error) std::rethrow_exception(upload_error);
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    size_t slot_bytes = 0, staging_bytes = 0;
    for (auto& [b, s] : streamed_) {
      slot_bytes = std::max(slot_bytes, s.slot_bytes);
      staging_bytes = std::max(staging_bytes, s.packed_bytes());
    }
    if (!streamed_.empty())
      for (Tensor& slot : slots_) slot = be_.alloc(DType::U8, {int64_t(slot_bytes)});
    if (staging_bytes) staging_ = be_.alloc(DType::U8, {int64_t(staging_bytes)});
  }

  // Copies may still be running (a prefetch for a pass that never came, a pass cut short): wait
  // for them before the slots and the pinned images go (their memory would otherwise be reused or
  // unmapped under the copy).
  ~ResidentStreaming() override {
    if (!last_copy_) return;
    try {
      be_.compute_wait(last_copy_);
      be_.synchronize();
    } catch (...) {  // a failing device: nothing left to protect
    }
  }

  Tensor get(const std::string& name) override {
    auto it = device_.find(name);
    if (it != device_.end()) return it->second;
    const int b = block_of(name);
    auto s = streamed_.find(b);
    if (s == streamed_.end()) throw failure("DiT weights: no tensor '" + name + "'");
    if (b != current_) throw std::logic_error("DiT weights: block " + std::to_string(b) + " read while block " +
                                              std::to_string(current_) + " runs");
    const Tensor& slot = slots_[slot_of(position_of(b))];
    for (const Part& p : s->second.parts)
      if (p.name == name) return in_slot(slot, p);
    throw failure("DiT weights: no tensor '" + name + "'");
  }

  void begin_forward(const std::vector<int>& order) override {
    release_last_reader();
    // The slots alternate across passes too: this pass starts in the slot the last one's last
    // block did not use, which is where that pass prefetched its guess of this pass's first block.
    slot_base_ = (slot_base_ + order_.size()) % 2;
    order_.clear();
    for (int b : order)
      if (streamed_.count(b)) order_.push_back(b);
    fences_.assign(order_.size(), 0);
    current_ = -1;
    if (!order_.empty()) {
      if (prefetched_block_ == order_[0]) fences_[0] = prefetched_fence_;  // already on its way
      else issue(0);
    }
    prefetched_block_ = -1;
  }

  void before_block(int index) override {
    release_last_reader();
    current_ = index;
    if (!streamed_.count(index)) return;
    const size_t p = size_t(position_of(index));
    be_.compute_wait(fences_[p]);
    const size_t slot = slot_of(int(p));
    const Streamed& s = streamed_.at(index);
    for (const Part& part : s.parts)
      if (part.packed.n) {
        Tensor out = in_slot(slots_[slot], part);
        be_.unpack_bf16(part.packed, staging_.slice_cols(int64_t(part.packed_at), int64_t(part.packed.bytes())), out);
      }
    if (s.packed_bytes()) staging_free_ = be_.compute_fence();
    reader_slot_ = int(slot);  // this block's compute reads its slot
    if (p + 1 < order_.size()) {
      issue(p + 1);
    } else {
      // The pass's last block: the next pass (a sampler's next step runs the same blocks) starts
      // with order_[0] in the other slot, free once the block before this one has computed, so
      // its copy runs under this block's compute instead of after the step. A next pass with
      // another first block copies it again (begin_forward); the copy stream keeps the order.
      prefetched_block_ = order_[0];
      prefetched_fence_ = copy_block(order_[0], slot_of(int(order_.size())));
    }
  }

 private:
  struct Part {
    std::string name;
    size_t offset = 0;  // in the slot
    DType dtype = DType::BF16;
    std::vector<int64_t> dims;
    PackedBf16 packed;     // n == 0: travels raw, at `offset` in the image too
    size_t packed_at = 0;  // else: its packing's offset in the staging buffer
    explicit Part(std::string n) : name(std::move(n)) {}
  };
  // A block's pinned image: its raw tensors as the slot lays them out ([0, raw_bytes)), then the
  // packings as the staging buffer lays them out.
  struct Streamed {
    std::vector<Part> parts;
    size_t slot_bytes = 0, raw_bytes = 0;
    Tensor image;
    size_t packed_bytes() const { return image.nbytes() - raw_bytes; }
  };

  // Threads that build the streamed blocks' images: a few (page-locking is partly serialised by
  // the driver, packing and copying are not), never more than there are blocks.
  static size_t build_threads(size_t blocks) {
    const size_t hw = std::max(1u, std::thread::hardware_concurrency());
    return std::min({blocks, hw, size_t(8)});
  }

  // Decides which tensors travel packed, lays out the slot (raw tensors first, then the packed
  // ones' values) and fills the pinned image.
  void build(Streamed& s, const WeightFiles& w, int64_t pack_min_values) {
    std::vector<Tensor> host;
    for (Part& p : s.parts) {
      host.push_back(w.get(p.name));
      p.dtype = host.back().dtype;
      p.dims = host.back().dims();
      if (pack_candidate(w.info(p.name), pack_min_values)) {
        const PackedBf16 layout = plan_bf16_packing(host.back().ptr<const uint16_t>(), host.back().numel());
        if (layout.bytes() <= packed_cap(layout.n)) p.packed = layout;
      }
    }
    size_t slot = 0, staging = 0;
    for (bool packed : {false, true}) {
      if (packed) s.raw_bytes = slot;
      for (size_t i = 0; i < s.parts.size(); ++i)
        if (Part& p = s.parts[i]; bool(p.packed.n) == packed) {
          p.offset = slot;
          slot = aligned(slot + host[i].nbytes());
          if (packed) {
            p.packed_at = staging;
            staging = aligned(staging + p.packed.bytes());
          }
        }
    }
    s.slot_bytes = slot;
    s.image = be_.alloc_pinned(s.raw_bytes + staging);
    auto* image = static_cast<uint8_t*>(s.image.data);
    for (size_t i = 0; i < s.parts.size(); ++i) {
      const Part& p = s.parts[i];
      if (p.packed.n) pack_bf16(host[i].ptr<const uint16_t>(), p.packed, image + s.raw_bytes + p.packed_at);
      else std::memcpy(image + p.offset, host[i].data, host[i].nbytes());
    }
  }

  static Tensor in_slot(const Tensor& slot, const Part& p) {
    Tensor v(static_cast<char*>(slot.data) + p.offset, p.dtype, p.dims, slot.where);
    v.owner = slot.owner;
    return v;
  }

  // Slot of the p-th streamed block of this pass (p may be order_.size(): the next pass's first).
  size_t slot_of(int p) const { return (slot_base_ + size_t(p)) % 2; }

  int position_of(int block) const {
    auto it = std::find(order_.begin(), order_.end(), block);
    if (it == order_.end()) throw std::logic_error("DiT weights: block " + std::to_string(block) + " not in this pass");
    return int(it - order_.begin());
  }

  // The compute issued so far includes the last reader of reader_slot_: from here on its slot
  // may be overwritten once that compute is done. Called before anything else is issued, so a
  // copy waits for that block and not for the blocks or the sampler work after it.
  void release_last_reader() {
    if (reader_slot_ < 0) return;
    slot_free_[reader_slot_] = be_.compute_fence();
    reader_slot_ = -1;
  }

  // Copies the p-th streamed block of the pass.
  void issue(size_t p) { fences_[p] = copy_block(order_[p], slot_of(int(p))); }

  // The block's raw part into its slot, after the compute that last read the slot; its packed
  // part into the staging buffer, after the last unpacking. Returns the last copy's fence.
  Backend::Fence copy_block(int block, size_t slot) {
    if (int(slot) == reader_slot_) throw std::logic_error("DiT weights: copy into the slot of the running block");
    const Streamed& s = streamed_.at(block);
    if (s.raw_bytes) {
      Tensor dst = slots_[slot].slice_cols(0, int64_t(s.raw_bytes));
      last_copy_ = be_.copy_async(s.image.slice_cols(0, int64_t(s.raw_bytes)), dst, slot_free_[slot]);
    }
    if (const size_t packed = s.packed_bytes()) {
      Tensor dst = staging_.slice_cols(0, int64_t(packed));
      last_copy_ = be_.copy_async(s.image.slice_cols(int64_t(s.raw_bytes), int64_t(packed)), dst, staging_free_);
    }
    return last_copy_;
  }

  Backend& be_;
  int resident_;
  std::map<std::string, Tensor> device_;
  std::map<int, Streamed> streamed_;
  Tensor slots_[2];
  Tensor staging_;  // the packed part of the block being unpacked next
  std::vector<int> order_;
  std::vector<Backend::Fence> fences_;     // each streamed block's last copy
  Backend::Fence slot_free_[2] = {0, 0};   // compute through each slot's last reader
  Backend::Fence staging_free_ = 0;        // compute through the last unpacking
  int reader_slot_ = -1;                   // slot of the block now being issued, until released
  Backend::Fence last_copy_ = 0;
  int current_ = -1;
  size_t slot_base_ = 0;         // slot of this pass's first streamed block
  int prefetched_block_ = -1;    // copied ahead into slot_of(0) by the last pass, or -1
  Backend::Fence prefetched_fence_ = 0;
};

}  // namespace

std::unique_ptr<DitWeightSource> make_resident_streaming_source(Backend& be, const WeightFiles& weights,
                                                                 const DitConfig& cfg, int resident_blocks,
                                                                 int64_t pack_min_values) {
  return std::make_unique<ResidentStreaming>(be, weights, cfg, resident_blocks, pack_min_values);
}

size_t dit_staging_bytes(const WeightFiles& weights, int64_t pack_min_values) {
  std::map<int, size_t> per_block;
  for (const std::string& name : weights.names()) {
    const int b = block_of(name);
    const TensorInfo& t = weights.info(name);
    if (b < 0 || !pack_candidate(t, pack_min_values)) continue;
    per_block[b] += aligned(packed_cap(values_of(t.shape)));
  }
  size_t most = 0;
  for (auto& [b, bytes] : per_block) most = std::max(most, bytes);
  return most;
}

}  // namespace moss
