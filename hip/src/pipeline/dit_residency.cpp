#include "pipeline/dit_residency.h"

#include <algorithm>
#include <map>
#include <stdexcept>

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
    for (const std::string& name : w.names()) {
      if (name == "rope.bands") continue;  // recomputed, never read
      const int b = block_of(name);
      if (b < 0 || b < resident_) {
        device_[name] = be_.upload(w.get(name));
      } else {
        block_names[b].push_back(name);
      }
    }
    // Streamed blocks: one pinned host image per block, tensors at aligned offsets; the two
    // slots are sized for the largest block.
    size_t slot_bytes = 0;
    for (auto& [b, names] : block_names) {
      Streamed& s = streamed_[b];
      size_t off = 0;
      for (const std::string& name : names) {
        const Tensor t = w.get(name);
        s.parts.push_back({name, off, t});
        off = (off + t.nbytes() + kAlign - 1) / kAlign * kAlign;
      }
      Tensor image = host_tensor(DType::U8, {int64_t(off)});
      for (const Part& p : s.parts) std::memcpy(image.ptr<char>() + p.offset, p.host.data, p.host.nbytes());
      s.pinned = be_.pin(image);
      for (Part& p : s.parts) p.host = Tensor();  // the mapping is no longer needed for this block
      slot_bytes = std::max(slot_bytes, off);
    }
    if (!streamed_.empty())
      for (Tensor& slot : slots_) slot = be_.alloc(DType::U8, {int64_t(slot_bytes)});
  }

  Tensor get(const std::string& name) override {
    auto it = device_.find(name);
    if (it != device_.end()) return it->second;
    const int b = block_of(name);
    auto s = streamed_.find(b);
    if (s == streamed_.end()) throw failure("DiT weights: no tensor '" + name + "'");
    if (b != current_) throw std::logic_error("DiT weights: block " + std::to_string(b) + " read while block " +
                                              std::to_string(current_) + " runs");
    const Tensor& slot = slots_[size_t(position_of(b) % 2)];
    for (const Part& p : s->second.parts)
      if (p.name == name) {
        Tensor v(static_cast<char*>(slot.data) + p.offset, p.dtype, p.dims, slot.where);
        v.owner = slot.owner;
        return v;
      }
    throw failure("DiT weights: no tensor '" + name + "'");
  }

  void begin_forward(const std::vector<int>& order) override {
    order_.clear();
    for (int b : order)
      if (streamed_.count(b)) order_.push_back(b);
    fences_.assign(order_.size(), 0);
    current_ = -1;
    if (!order_.empty()) issue(0);
  }

  void before_block(int index) override {
    current_ = index;
    if (!streamed_.count(index)) return;
    const size_t p = size_t(position_of(index));
    be_.compute_wait(fences_[p]);
    if (p + 1 < order_.size()) issue(p + 1);
  }

 private:
  struct Part {
    std::string name;
    size_t offset = 0;
    Tensor host;  // the mapped tensor, until the pinned image is made
    DType dtype = DType::BF16;
    std::vector<int64_t> dims;
    Part(std::string n, size_t off, const Tensor& t) : name(std::move(n)), offset(off), host(t), dtype(t.dtype), dims(t.dims()) {}
  };
  struct Streamed {
    std::vector<Part> parts;
    Tensor pinned;
  };

  int position_of(int block) const {
    auto it = std::find(order_.begin(), order_.end(), block);
    if (it == order_.end()) throw std::logic_error("DiT weights: block " + std::to_string(block) + " not in this pass");
    return int(it - order_.begin());
  }

  // Copies the p-th streamed block of the pass into slot p mod 2, after the compute issued so
  // far (which includes the last reader of that slot).
  void issue(size_t p) {
    const Streamed& s = streamed_.at(order_[p]);
    Tensor dst = slots_[p % 2].slice_cols(0, s.pinned.numel());
    fences_[p] = be_.copy_async(s.pinned, dst, be_.compute_fence());
  }

  Backend& be_;
  int resident_;
  std::map<std::string, Tensor> device_;
  std::map<int, Streamed> streamed_;
  Tensor slots_[2];
  std::vector<int> order_;
  std::vector<Backend::Fence> fences_;
  int current_ = -1;
};

}  // namespace

std::unique_ptr<DitWeightSource> make_resident_streaming_source(Backend& be, const WeightFiles& weights,
                                                                 const DitConfig& cfg, int resident_blocks) {
  return std::make_unique<ResidentStreaming>(be, weights, cfg, resident_blocks);
}

}  // namespace moss
