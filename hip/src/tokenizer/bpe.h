// Byte-level BPE over raw bytes. Each byte starts as its own symbol (the id of its
// byte-level character); then the adjacent pair with the lowest merge rank is merged,
// leftmost first among equal ranks, until no adjacent pair has a merge. A binary heap of
// candidate pairs over a linked list of symbols keeps this O(n log n) in the word length,
// so a 1,000-character run costs no quadratic rescans. Stale heap entries are recognised by
// their byte length: a symbol only ever grows, so a pair whose two symbols changed always
// spans more bytes than when it was pushed.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace moss {

struct BpeMerge {
  int32_t left = -1, right = -1, merged = -1;  // ids; rank = position in the merge list
};

// How a byte with no vocabulary entry is treated (tokenizers' unk_token / fuse_unk).
struct BpeUnknown {
  int32_t id = -1;  // -1: the byte is dropped, as tokenizers does without an unk token
  bool fuse = false;
};

class BpeModel {
 public:
  BpeModel() = default;
  // byte_ids[b] = id of byte b's byte-level character, or -1. When the same pair appears
  // twice in `merges`, the later rank wins (as in tokenizers).
  BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<BpeMerge>& merges, BpeUnknown unknown);

  // Appends the ids of one pre-tokenized piece (raw bytes) to `out`.
  void encode_word(std::string_view bytes, std::vector<int32_t>& out) const;
  size_t merge_count() const { return pair_count_; }

 private:
  struct PairValue {
    uint32_t rank;
    int32_t merged;
  };
  static uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
  const PairValue* find_pair(int32_t left, int32_t right) const;

  std::array<int32_t, 256> byte_ids_{};
  BpeUnknown unknown_;
  // Open addressing, linear probing; an empty slot has key kEmpty (ids are never negative,
  // so no real pair key is all ones).
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  std::vector<uint64_t> keys_;
  std::vector<PairValue> values_;
  int shift_ = 64;
  size_t pair_count_ = 0;
};

}  // namespace moss
