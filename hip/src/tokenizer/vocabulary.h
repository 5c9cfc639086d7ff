// The token strings of a vocabulary (as written in tokenizer.json, i.e. byte-level form for
// the BPE part) and their ids, both ways. Keys live in one arena and are found through an
// open-addressing table: 248k entries load in a few milliseconds, with no per-key allocation.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moss {

class Vocabulary {
 public:
  void reserve(size_t n);
  enum class InsertResult { Ok, DuplicateToken, DuplicateId };
  InsertResult insert(std::string_view token, int32_t id);  // id >= 0
  int32_t find(std::string_view token) const;               // -1 when absent
  size_t size() const { return count_; }
  // One past the largest id.
  size_t id_limit() const { return by_id_.size(); }
  bool has_id(int32_t id) const { return id >= 0 && size_t(id) < by_id_.size() && by_id_[id].len != kNone; }
  std::string_view token(int32_t id) const;  // empty view when the id is not used

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Span {
    uint32_t offset = 0, len = kNone;
  };
  struct Slot {
    uint32_t hash = 0;
    int32_t id = -1;  // -1: empty slot
  };
  static uint32_t hash_of(std::string_view s);
  void grow();
  size_t find_slot(std::string_view token, uint32_t hash) const;

  std::string arena_;
  std::vector<Span> by_id_;
  std::vector<Slot> slots_;  // size is a power of two, at most half full
  size_t count_ = 0;
};

}  // namespace moss
