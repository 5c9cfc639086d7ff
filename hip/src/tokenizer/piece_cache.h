// Remembers the BPE result of recent pre-tokenized pieces: natural text repeats the same
// words, so most pieces are answered by one hash lookup instead of a merge loop. Keys and
// ids live in two arenas; when the cache is full it is simply emptied (cheap, and the
// working set of a prompt refills it at once).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moss {

class PieceCache {
 public:
  explicit PieceCache(size_t max_entries = size_t(1) << 16);
  // Appends the cached ids of `piece` to `out` and returns true when present.
  bool lookup(std::string_view piece, std::vector<int32_t>& out) const;
  void insert(std::string_view piece, const int32_t* ids, size_t count);
  void clear();
  size_t size() const { return count_; }

  static constexpr size_t kMaxPieceBytes = 256;  // longer pieces are not worth keeping

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0, key_len = 0;
    uint32_t ids_offset = 0, ids_count = 0;
    bool used = false;
  };
  size_t find_slot(std::string_view piece, uint64_t hash) const;

  size_t max_entries_;
  std::vector<Slot> slots_;  // twice max_entries_, a power of two
  std::string keys_;
  std::vector<int32_t> ids_;
  size_t count_ = 0;
};

}  // namespace moss
