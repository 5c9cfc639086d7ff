#include "pipeline/dit_residency.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <map>
#include <stdexcept>
#include <thread>

#include "util/error.h"

namespace moss {
namespace {

// "layers.N.rest" -> N, anything else -> -1.
int block_of(const std::string& name) {
  if (name.rfind("layers.", 0) != 0) return -1;
  size_t dot = name.find('.', 7);
  return dot == std::string::npos ? -1 : std::stoi(name.substr(7, dot - 7));
}

constexpr size_t kAlign = 256;  // tensor offsets inside a slot

class ResidentStreaming : public DitWeightSource {
 public:
  ResidentStreaming(Backend& be, const WeightFiles& w, const DitConfig& cfg, int resident)
      : be_(be), resident_(std::clamp(resident, 0, int(cfg.layers))) {
    std::map<int, std::vector<std::string>> block_names;
    std::vector<std::string> resident_names;
    for (const std::string& name : w.names()) {
      if (name == "rope.bands") continue;  // recomputed, never read
      const int b = block_of(name);
      if (b < 0 || b < resident_) {
        resident_names.push_back(name);
      } else {
        block_names[b].push_back(name);
      }
    }
    // Streamed blocks: each tensor pinned on its own straight from the mapping (no intermediate
    // host image), at an aligned offset of the block's slot layout; the two slots are sized for
    // the largest block.
    size_t slot_bytes = 0;
    for (auto& [b, names] : block_names) {
      Streamed& s = streamed_[b];
      size_t off = 0;
      for (const std::string& name : names) {
        const Tensor t = w.get(name);
        s.parts.push_back({name, off, t});
        off = (off + t.nbytes() + kAlign - 1) / kAlign * kAlign;
      }
      slot_bytes = std::max(slot_bytes, off);
    }
    // Pinning (page-locking fresh host memory and filling it from the mapping) is what a streamed
    // load spends its time on: the blocks are pinned by several threads while this thread uploads
    // the resident tensors. Backend::pin touches no shared backend state (HIP: hipHostMalloc and a
    // memcpy, both thread-safe; host: the view itself).
    std::vector<Streamed*> to_pin;
    for (auto& [b, s] : streamed_) to_pin.push_back(&s);
    std::atomic<size_t> next{0};
    std::vector<std::exception_ptr> errors(pin_threads(to_pin.size()));
    std::vector<std::thread> workers;
    for (size_t t = 0; t < errors.size(); ++t)
      workers.emplace_back([&, t] {
        try {
          for (size_t i = next++; i < to_pin.size(); i = next++)
            for (Part& p : to_pin[i]->parts) {
              p.pinned = be_.pin(p.host);
              p.host = Tensor();  // the mapping is no longer needed for this tensor
            }
        } catch (...) {
          errors[t] = std::current_exception();
          next = to_pin.size();  // the others stop at their next block
        }
      });
    std::exception_ptr upload_error;
    try {
      for (const std::string& name : resident_names) device_[name] = be_.upload(w.get(name));
    } catch (...) {
      upload_error = std::current_exception();
      next = to_pin.size();
    }
    for (std::thread& t : workers) t.join();
    if (upload_error) std::rethrow_exception(upload_error);
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    if (!streamed_.empty())
      for (Tensor& slot : slots_) slot = be_.alloc(DType::U8, {int64_t(slot_bytes)});
  }

  // A prefetch for a pass that never came may still be copying: wait for it before the slots and
  // the pinned blocks go (their memory would otherwise be reused or unmapped under the copy).
  ~ResidentStreaming() override {
    if (prefetched_block_ < 0) return;
    try {
      be_.compute_wait(prefetched_fence_);
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
      if (p.name == name) {
        Tensor v(static_cast<char*>(slot.data) + p.offset, p.dtype, p.dims, slot.where);
        v.owner = slot.owner;
        return v;
      }
    throw failure("DiT weights: no tensor '" + name + "'");
  }

  void begin_forward(const std::vector<int>& order) override {
    // The slots alternate across passes too: this pass starts in the slot the last one's last
    // block did not use, which is where that pass prefetched its guess of this pass's first block.
    slot_base_ = (slot_base_ + order_.size()) % 2;
    std::vector<int> streamed_order;
    for (int b : order)
      if (streamed_.count(b)) streamed_order.push_back(b);
    order_ = streamed_order;
    fences_.assign(order_.size(), 0);
    current_ = -1;
    if (!order_.empty()) {
      if (prefetched_block_ == order_[0]) fences_[0] = prefetched_fence_;  // already on its way
      else issue(0);
    }
    prefetched_block_ = -1;
  }

  void before_block(int index) override {
    current_ = index;
    if (!streamed_.count(index)) return;
    const size_t p = size_t(position_of(index));
    be_.compute_wait(fences_[p]);
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
    size_t offset = 0;  // in the block's slot
    Tensor host;        // the mapped tensor, until it is pinned
    Tensor pinned;      // its pinned copy
    DType dtype = DType::BF16;
    std::vector<int64_t> dims;
    Part(std::string n, size_t off, const Tensor& t) : name(std::move(n)), offset(off), host(t), dtype(t.dtype), dims(t.dims()) {}
  };
  struct Streamed {
    std::vector<Part> parts;
  };

  // Threads that pin the streamed blocks: a few (page-locking is partly serialised by the
  // driver, the copies from the mapping are not), never more than there are blocks.
  static size_t pin_threads(size_t blocks) {
    const size_t hw = std::max(1u, std::thread::hardware_concurrency());
    return std::min({blocks, hw, size_t(8)});
  }

  // Slot of the p-th streamed block of this pass (p may be order_.size(): the next pass's first).
  size_t slot_of(int p) const { return (slot_base_ + size_t(p)) % 2; }

  int position_of(int block) const {
    auto it = std::find(order_.begin(), order_.end(), block);
    if (it == order_.end()) throw std::logic_error("DiT weights: block " + std::to_string(block) + " not in this pass");
    return int(it - order_.begin());
  }

  // Copies the p-th streamed block of the pass into its slot, after the compute issued so far
  // (which includes the last reader of that slot).
  void issue(size_t p) { fences_[p] = copy_block(order_[p], slot_of(int(p))); }

  // The parts go in one after another on the copy stream; the first waits for the compute, the
  // block's fence is the last part's.
  Backend::Fence copy_block(int block, size_t slot) {
    const Streamed& s = streamed_.at(block);
    Backend::Fence after = be_.compute_fence(), done = 0;
    for (const Part& part : s.parts) {
      Tensor dst = slots_[slot].slice_cols(int64_t(part.offset), part.pinned.nbytes());
      done = be_.copy_async(part.pinned, dst, after);
      after = 0;
    }
    return done;
  }

  Backend& be_;
  int resident_;
  std::map<std::string, Tensor> device_;
  std::map<int, Streamed> streamed_;
  Tensor slots_[2];
  std::vector<int> order_;
  std::vector<Backend::Fence> fences_;
  int current_ = -1;
  size_t slot_base_ = 0;         // slot of this pass's first streamed block
  int prefetched_block_ = -1;    // copied ahead into slot_of(0) by the last pass, or -1
  Backend::Fence prefetched_fence_ = 0;
};

}  // namespace

std::unique_ptr<DitWeightSource> make_resident_streaming_source(Backend& be, const WeightFiles& weights,
                                                                 const DitConfig& cfg, int resident_blocks) {
  return std::make_unique<ResidentStreaming>(be, weights, cfg, resident_blocks);
}

}  // namespace moss
