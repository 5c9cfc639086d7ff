#include "tokenizer/piece_cache.h"

#include <functional>

namespace moss {

PieceCache::PieceCache(size_t max_entries) : max_entries_(max_entries) {
  size_t cap = 16;
  while (cap < 2 * max_entries_) cap *= 2;
  slots_.resize(cap);
}

size_t PieceCache::find_slot(std::string_view piece, uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (!s.used) return i;
    if (s.hash == hash && s.key_len == piece.size() && keys_.compare(s.key_offset, s.key_len, piece) == 0) return i;
  }
}

bool PieceCache::lookup(std::string_view piece, std::vector<int32_t>& out) const {
  const Slot& s = slots_[find_slot(piece, std::hash<std::string_view>()(piece))];
  if (!s.used) return false;
  out.insert(out.end(), ids_.begin() + s.ids_offset, ids_.begin() + s.ids_offset + s.ids_count);
  return true;
}

void PieceCache::insert(std::string_view piece, const int32_t* ids, size_t count) {
  if (piece.size() > kMaxPieceBytes) return;
  if (count_ >= max_entries_) clear();
  const uint64_t hash = std::hash<std::string_view>()(piece);
  Slot& s = slots_[find_slot(piece, hash)];
  if (s.used) return;
  s = Slot{hash, uint32_t(keys_.size()), uint32_t(piece.size()), uint32_t(ids_.size()), uint32_t(count), true};
  keys_.append(piece.data(), piece.size());
  ids_.insert(ids_.end(), ids, ids + count);
  ++count_;
}

void PieceCache::clear() {
  for (Slot& s : slots_) s.used = false;
  keys_.clear();
  ids_.clear();
  count_ = 0;
}

}  // namespace moss
