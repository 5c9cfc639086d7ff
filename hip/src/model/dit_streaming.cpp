#include "model/dit_streaming.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <map>
#include <stdexcept>
#include <thread>

#include "io/read_ahead.h"
#include "streaming/block_image.h"
#include "streaming/block_names.h"
#include "streaming/slots.h"
#include "streaming/staging.h"
#include "util/error.h"

namespace moss {

DitStreamSizes dit_stream_sizes(const WeightFiles& weights, int64_t pack_min_values) {
  DitStreamSizes z;
  std::map<int, BlockImage> blocks;
  for (const std::string& name : weights.names()) {
    if (name == "rope.bands") continue;  // recomputed, never loaded
    const int b = block_index(name);
    if (b < 0) z.fixed_bytes += weights.get(name).nbytes();
    else blocks[b].add(name, weights.get(name));
  }
  for (auto& [b, img] : blocks) {
    img.lay_out();  // the slot's size does not depend on which tensors pack: each is aligned alone
    z.slot_bytes = std::max(z.slot_bytes, img.slot_bytes());
    size_t raw = 0, packed = 0;
    for (const BlockImage::Part& p : img.parts()) {
      raw += p.host.nbytes();
      if (pack_candidate(p.host.dtype, p.host.numel(), pack_min_values)) packed += image_aligned(packed_cap(p.host.numel()));
    }
    z.block_bytes = std::max(z.block_bytes, raw);
    z.staging_bytes = std::max(z.staging_bytes, packed);
  }
  z.blocks = int(blocks.size());
  return z;
}

namespace {

class ResidentStreaming : public DitWeightSource {
 public:
  // from_files: the streamed blocks are read from the mapped files each pass (an APU, below);
  // otherwise each has a pinned image, built once.
  ResidentStreaming(Backend& be, const WeightFiles& w, const DitConfig& cfg, int resident, int64_t pack_min_values,
                    bool from_files, const ResidentHook& after_upload)
      : be_(be), resident_(std::clamp(resident, 0, int(cfg.layers))), from_files_(from_files) {
    if (from_files_) pack_min_values = std::numeric_limits<int64_t>::max();  // nothing packs
    std::vector<std::string> resident_names;
    std::map<int, std::vector<std::string>> streamed_names;
    for (const std::string& name : w.names()) {
      if (name == "rope.bands") continue;  // recomputed, never read
      const int b = block_index(name);
      if (b < 0 || b < resident_) {
        resident_names.push_back(name);
      } else {
        streamed_names[b].push_back(name);
        streamed_[b];
      }
    }
    // Building a block's pinned image (page-locking fresh host memory, packing and copying from
    // the mapping) is what a streamed load spends its time on: several threads build them, one
    // block each at a time, while this thread uploads the resident tensors.
    // Backend::alloc_pinned is thread-safe, the mapping is read-only and each thread touches
    // only its blocks.
    std::vector<std::pair<Streamed*, const std::vector<std::string>*>> to_build;
    for (auto& [b, s] : streamed_) to_build.emplace_back(&s, &streamed_names.at(b));
    std::atomic<size_t> next{0};
    std::vector<std::exception_ptr> errors(build_threads(to_build.size()));
    std::vector<std::thread> workers;
    for (size_t t = 0; t < errors.size(); ++t)
      workers.emplace_back([&, t] {
        try {
          for (size_t i = next++; i < to_build.size(); i = next++)
            build(*to_build[i].first, *to_build[i].second, w, pack_min_values);
        } catch (...) {
          errors[t] = std::current_exception();
          next = to_build.size();  // the others stop at their next block
        }
      });
    std::exception_ptr upload_error;
    try {
      // The uploads copy each tensor out of the mapping on this thread; a few threads make the
      // mapping's page tables ahead of them (io/read_ahead.h), so the faults do not add up here.
      // The host backend's upload reads nothing: nothing to read ahead (the measuring backend's
      // does not either; only tests build this source on it, on the tiny model).
      std::vector<std::pair<const void*, size_t>> ranges;
      if (be_.where() == Where::Device)
        for (const std::string& name : resident_names) {
          const Tensor t = w.get(name);
          ranges.emplace_back(t.data, t.nbytes());
        }
      ReadAhead ahead(ranges, kReadAheadThreads, kReadAheadWindow);
      for (size_t i = 0; i < resident_names.size(); ++i) {
        Tensor& t = device_[resident_names[i]] = be_.upload(w.get(resident_names[i]));
        ahead.done(i);
        if (after_upload) after_upload(resident_names[i], t);
      }
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
      slot_bytes = std::max(slot_bytes, s.layout.slot_bytes());
      staging_bytes = std::max(staging_bytes, s.layout.packed_bytes());
    }
    if (!streamed_.empty()) slots_.allocate(be_, slot_bytes);
    if (staging_bytes) staging_ = be_.alloc(DType::U8, {int64_t(staging_bytes)});
    if (from_files_ && !streamed_.empty()) {
      for (auto& [b, s] : streamed_) {
        s.file_image = int(file_images_.size());
        file_images_.push_back(s.layout);
      }
      stager_ = std::make_unique<FileStager>(be_, file_images_);
    }
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
    const int b = block_index(name);
    auto s = streamed_.find(b);
    if (s == streamed_.end()) throw failure("DiT weights: no tensor '" + name + "'");
    if (b != current_) throw std::logic_error("DiT weights: block " + std::to_string(b) + " read while block " +
                                              std::to_string(current_) + " runs");
    const BlockImage::Part* p = s->second.layout.find(name);
    if (!p) throw failure("DiT weights: no tensor '" + name + "'");
    return BlockImage::view(slots_.slot[slot_of(position_of(b))], *p);
  }

  void begin_forward(const std::vector<int>& order) override {
    release_last_reader();
    // From the files: the staging buffers are refilled from the start of each pass, once the
    // host has seen the last pass's last copy out of them done.
    if (stager_ && last_copy_) stager_->host_wait(last_copy_);
    // The slots alternate across passes too: this pass starts in the slot the last one's last
    // block did not use, which is where that pass prefetched its guess of this pass's first block.
    slot_base_ = (slot_base_ + order_.size()) % 2;
    order_.clear();
    for (int b : order)
      if (streamed_.count(b)) order_.push_back(b);
    fences_.assign(order_.size(), 0);
    current_ = -1;
    if (!order_.empty()) {
      if (stager_) stager_->start_fill(streamed_.at(order_[0]).file_image, 0);
      else if (prefetched_block_ == order_[0]) fences_[0] = prefetched_fence_;  // already on its way
      else issue(0);
    }
    prefetched_block_ = -1;
  }

  size_t streamed_bytes_per_pass() const override {
    size_t bytes = 0;
    for (const auto& [b, s] : streamed_) bytes += s.layout.image_bytes();
    return bytes;
  }

  void before_block(int index) override {
    release_last_reader();
    current_ = index;
    if (!streamed_.count(index)) return;
    const size_t p = size_t(position_of(index));
    if (stager_) return before_block_from_files(p);
    be_.compute_wait(fences_[p]);
    const size_t slot = slot_of(int(p));
    const BlockImage& layout = streamed_.at(index).layout;
    layout.unpack(be_, slots_.slot[slot], staging_);
    if (layout.packed_bytes()) staging_free_ = be_.compute_fence();
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
  // A streamed block: its image's layout (streaming/block_image.h: the raw tensors as the slot
  // lays them out, then the packings as the staging buffer does) and the image, pinned; or, from
  // the files, its index in file_images_ and no image.
  struct Streamed {
    BlockImage layout;
    Tensor image;
    int file_image = -1;
  };

  // From the files, as the text encoder streams (model/te_streaming.cpp): the p-th streamed block
  // of the pass goes from staging buffer p mod 2 into its slot (the fill ran on the stager's
  // worker during the block before); then the host waits for the copy of block p-1, the last
  // reader of the other buffer, and starts filling it with block p+1. The compute of block p
  // waits for its copy. One block's copy overlaps the compute of the one before it.
  void before_block_from_files(size_t p) {
    const size_t slot = slot_of(int(p));
    fences_[p] = last_copy_ = stager_->copy(streamed_.at(order_[p]).file_image, int(p % 2), slots_.slot[slot],
                                            slots_.read[slot]);
    if (p + 1 < order_.size()) {
      if (p >= 1) stager_->host_wait(fences_[p - 1]);
      stager_->start_fill(streamed_.at(order_[p + 1]).file_image, int((p + 1) % 2));
    }
    be_.compute_wait(fences_[p]);
    reader_slot_ = int(slot);
  }

  // The resident upload's read-ahead: threads, and how far past the upload they map (enough for
  // several blocks, little beside the model's size when the page cache must read the file).
  static constexpr size_t kReadAheadThreads = 4;
  static constexpr size_t kReadAheadWindow = size_t(1) << 30;

  // Threads that build the streamed blocks' images: a few (page-locking is partly serialised by
  // the driver, packing and copying are not), never more than there are blocks.
  static size_t build_threads(size_t blocks) {
    const size_t hw = std::max(1u, std::thread::hardware_concurrency());
    return std::min({blocks, hw, size_t(8)});
  }

  // Decides which tensors travel packed, lays out the slot and fills the pinned image (on this
  // thread alone: the other builders take the other cores).
  void build(Streamed& s, const std::vector<std::string>& names, const WeightFiles& w, int64_t pack_min_values) {
    for (const std::string& name : names) s.layout.add(name, w.get(name));
    s.layout.choose_packing(pack_min_values);
    s.layout.lay_out();
    if (!from_files_) s.image = s.layout.pinned(be_, 1);
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
    slots_.read[reader_slot_] = be_.compute_fence();
    reader_slot_ = -1;
  }

  // Copies the p-th streamed block of the pass.
  void issue(size_t p) { fences_[p] = copy_block(order_[p], slot_of(int(p))); }

  // The block's raw part into its slot, after the compute that last read the slot; its packed
  // part into the staging buffer, after the last unpacking. Returns the last copy's fence.
  Backend::Fence copy_block(int block, size_t slot) {
    if (int(slot) == reader_slot_) throw std::logic_error("DiT weights: copy into the slot of the running block");
    const Streamed& s = streamed_.at(block);
    last_copy_ = s.layout.copy(be_, s.image, slots_.slot[slot], &staging_, slots_.read[slot], staging_free_, last_copy_);
    return last_copy_;
  }

  Backend& be_;
  int resident_;
  bool from_files_;
  std::map<std::string, Tensor> device_;
  std::map<int, Streamed> streamed_;
  SlotPair slots_;  // read[]: compute through each slot's last reader
  Tensor staging_;  // the packed part of the block being unpacked next
  std::vector<int> order_;
  std::vector<Backend::Fence> fences_;     // each streamed block's last copy
  Backend::Fence staging_free_ = 0;        // compute through the last unpacking
  int reader_slot_ = -1;                   // slot of the block now being issued, until released
  Backend::Fence last_copy_ = 0;
  int current_ = -1;
  size_t slot_base_ = 0;         // slot of this pass's first streamed block
  int prefetched_block_ = -1;    // copied ahead into slot_of(0) by the last pass, or -1
  Backend::Fence prefetched_fence_ = 0;
  std::vector<BlockImage> file_images_;  // from the files: the streamed blocks' layouts, read by stager_
  std::unique_ptr<FileStager> stager_;   // (declared after them: it goes first)
};

}  // namespace

std::unique_ptr<DitWeightSource> make_resident_streaming_source(Backend& be, const WeightFiles& weights,
                                                                 const DitConfig& cfg, int resident_blocks,
                                                                 int64_t pack_min_values, const ResidentHook& after_upload) {
  return std::make_unique<ResidentStreaming>(be, weights, cfg, resident_blocks, pack_min_values, false, after_upload);
}

std::unique_ptr<DitWeightSource> make_mapped_streaming_source(Backend& be, const WeightFiles& weights,
                                                               const DitConfig& cfg, int resident_blocks,
                                                               const ResidentHook& after_upload) {
  return std::make_unique<ResidentStreaming>(be, weights, cfg, resident_blocks, 0, true, after_upload);
}

}  // namespace moss
