#include "streaming/block_image.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>

namespace moss {
namespace {

constexpr size_t kMinCopyChunk = 16 << 20;  // bytes per host copy thread, at least

}  // namespace

bool pack_candidate(DType dtype, int64_t values, int64_t min_values) {
  return dtype == DType::BF16 && values >= min_values && packable_bf16_count(values);
}

void BlockImage::add(const std::string& name, const Tensor& host) {
  index_.emplace(name, parts_.size());
  parts_.push_back(Part{name, host, 0, PackedBf16{}, 0});
}

void BlockImage::choose_packing(int64_t min_values) {
  for (Part& p : parts_) {
    if (!pack_candidate(p.host.dtype, p.host.numel(), min_values)) continue;
    const PackedBf16 layout = plan_bf16_packing(p.host.ptr<const uint16_t>(), p.host.numel());
    if (layout.bytes() <= packed_cap(layout.n)) p.packed = layout;
  }
}

void BlockImage::lay_out(const std::vector<std::vector<std::string>>& groups) {
  std::vector<bool> placed(parts_.size(), false);
  size_t slot = 0;
  auto place = [&](size_t i) {  // back to back from the slot's current end
    parts_[i].offset = slot;
    slot += parts_[i].host.nbytes();
    placed[i] = true;
  };
  for (const std::vector<std::string>& group : groups) {
    std::vector<size_t> members;
    bool stackable = !group.empty();
    for (const std::string& name : group) {
      auto it = index_.find(name);
      if (it == index_.end()) {
        stackable = false;
        break;
      }
      const Part& p = parts_[it->second];
      const Part& first = members.empty() ? p : parts_[members.front()];
      stackable = stackable && !p.packed.n && !placed[it->second] && p.host.rank == 2 &&
                  p.host.dtype == first.host.dtype && p.host.cols() == first.host.cols();
      members.push_back(it->second);
    }
    if (!stackable) continue;
    for (size_t i : members) place(i);
    slot = image_aligned(slot);
  }
  for (size_t i = 0; i < parts_.size(); ++i)
    if (!placed[i] && !parts_[i].packed.n) {
      place(i);
      slot = image_aligned(slot);
    }
  raw_bytes_ = slot;
  size_t packed = 0;
  for (size_t i = 0; i < parts_.size(); ++i)
    if (parts_[i].packed.n) {
      place(i);
      slot = image_aligned(slot);
      parts_[i].packed_at = packed;
      packed = image_aligned(packed + parts_[i].packed.bytes());
    }
  slot_bytes_ = slot;
  packed_bytes_ = packed;
}

const BlockImage::Part* BlockImage::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &parts_[it->second];
}

Tensor BlockImage::view(const Tensor& base, const Part& p) {
  Tensor v(static_cast<char*>(base.data) + p.offset, p.host.dtype, p.host.dims(), base.where);
  v.owner = base.owner;
  return v;
}

std::optional<Tensor> BlockImage::fused_view(const Tensor& base, const std::vector<std::string>& names) const {
  const Part* first = nullptr;
  size_t end = 0;
  int64_t rows = 0;
  for (const std::string& name : names) {
    const Part* p = find(name);
    if (!p) return std::nullopt;
    if (!first) {
      first = p;
      end = p->offset;
    }
    if (p->offset != end || p->host.rank != 2 || p->host.dtype != first->host.dtype || p->host.cols() != first->host.cols())
      return std::nullopt;
    end += p->host.nbytes();
    rows += p->host.rows();
  }
  if (!first) return std::nullopt;
  Tensor v(static_cast<char*>(base.data) + first->offset, first->host.dtype, {rows, first->host.cols()}, base.where);
  v.owner = base.owner;
  return v;
}

void BlockImage::fill(uint8_t* dst, size_t max_threads) const {
  std::vector<const Part*> raw;
  for (const Part& p : parts_) {
    if (p.packed.n) pack_bf16(p.host.ptr<const uint16_t>(), p.packed, dst + raw_bytes_ + p.packed_at);
    else raw.push_back(&p);
  }
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::clamp<size_t>(raw_bytes_ / kMinCopyChunk, 1, std::max<size_t>(1, std::min(hw, max_threads)));
  const size_t share = (raw_bytes_ + threads - 1) / threads;
  auto copy_range = [&](size_t lo, size_t hi) {  // raw bytes [lo, hi)
    for (const Part* p : raw) {
      const size_t a = std::max(lo, p->offset), b = std::min(hi, p->offset + p->host.nbytes());
      if (a < b) std::memcpy(dst + a, static_cast<const char*>(p->host.data) + (a - p->offset), b - a);
    }
  };
  std::vector<std::future<void>> helpers;
  for (size_t t = 1; t < threads; ++t)
    helpers.push_back(std::async(std::launch::async, copy_range, t * share, std::min(raw_bytes_, (t + 1) * share)));
  copy_range(0, std::min(raw_bytes_, share));
  for (auto& h : helpers) h.get();
}

Tensor BlockImage::pinned(Backend& be, size_t max_threads) const {
  Tensor t = be.alloc_pinned(std::max<size_t>(image_bytes(), 1));
  fill(static_cast<uint8_t*>(t.data), max_threads);
  return t;
}

Backend::Fence BlockImage::copy(Backend& be, const Tensor& src, Tensor& slot, Tensor* staging, Backend::Fence slot_free,
                                Backend::Fence staging_free, Backend::Fence none) const {
  Backend::Fence last = none;
  if (raw_bytes_) {
    Tensor dst = slot.slice_cols(0, int64_t(raw_bytes_));
    last = be.copy_async(src.slice_cols(0, int64_t(raw_bytes_)), dst, slot_free);
  }
  if (packed_bytes_) {
    Tensor dst = staging->slice_cols(0, int64_t(packed_bytes_));
    last = be.copy_async(src.slice_cols(int64_t(raw_bytes_), int64_t(packed_bytes_)), dst, staging_free);
  }
  return last;
}

void BlockImage::unpack(Backend& be, const Tensor& slot, const Tensor& staging) const {
  for (const Part& p : parts_)
    if (p.packed.n) {
      Tensor out = view(slot, p);
      be.unpack_bf16(p.packed, staging.slice_cols(int64_t(p.packed_at), int64_t(p.packed.bytes())), out);
    }
}

BlockBytes block_bytes(const std::vector<BlockImage>& images) {
  BlockBytes b;
  for (const BlockImage& img : images) {
    b.largest = std::max(b.largest, img.slot_bytes());
    b.total += img.slot_bytes();
  }
  return b;
}

}  // namespace moss
