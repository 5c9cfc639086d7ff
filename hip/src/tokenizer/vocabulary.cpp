#include "tokenizer/vocabulary.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace moss {

uint32_t Vocabulary::hash_of(std::string_view s) {
  const uint64_t h = std::hash<std::string_view>()(s);
  return uint32_t(h ^ (h >> 32));
}

Vocabulary::Header Vocabulary::header_at(uint32_t offset) const {
  Header h;
  std::memcpy(&h, arena_.data() + offset, sizeof(h));
  return h;
}

bool Vocabulary::key_equals(uint32_t offset, std::string_view token) const {
  const Header h = header_at(offset);
  return h.len == token.size() && std::memcmp(arena_.data() + offset + sizeof(Header), token.data(), token.size()) == 0;
}

void Vocabulary::reserve(size_t entries, size_t bytes) {
  by_id_.reserve(entries);
  arena_.reserve(bytes + entries * sizeof(Header));
}

bool Vocabulary::add(std::string_view token, int32_t id) {
  if (has_id(id)) return false;
  if (size_t(id) >= by_id_.size()) by_id_.resize(size_t(id) + 1, kNone);
  by_id_[id] = uint32_t(arena_.size());
  const Header h{id, uint32_t(token.size())};
  arena_.append(reinterpret_cast<const char*>(&h), sizeof(h));
  arena_.append(token.data(), token.size());
  ++count_;
  return true;
}

bool Vocabulary::build_index(std::string& duplicate) {
  size_t cap = 16;
  while (cap < 2 * count_) cap *= 2;
  slots_.assign(cap, Slot{});
  const size_t mask = cap - 1;
  for (uint32_t offset : by_id_) {
    if (offset == kNone) continue;
    const Header h = header_at(offset);
    const std::string_view key(arena_.data() + offset + sizeof(Header), h.len);
    const uint32_t hash = hash_of(key);
    size_t i = hash & mask;
    for (; slots_[i].offset != kNone; i = (i + 1) & mask) {
      if (slots_[i].hash == hash && key_equals(slots_[i].offset, key)) {
        duplicate.assign(key);
        return false;
      }
    }
    slots_[i] = Slot{hash, offset};
  }
  return true;
}

int32_t Vocabulary::find(std::string_view token) const {
  int32_t id;
  find_batch(&token, 1, &id);
  return id;
}

void Vocabulary::find_batch(const std::string_view* tokens, size_t n, int32_t* ids) const {
  constexpr size_t kMaxBatch = 8;
  if (n > kMaxBatch) {
    for (size_t i = 0; i < n; i += kMaxBatch) find_batch(tokens + i, std::min(kMaxBatch, n - i), ids + i);
    return;
  }
  if (slots_.empty()) {
    for (size_t i = 0; i < n; ++i) ids[i] = -1;
    return;
  }
  const size_t mask = slots_.size() - 1;
  uint32_t hash[kMaxBatch];
  size_t slot[kMaxBatch];
  // 1. Start loading every token's first slot.
  for (size_t i = 0; i < n; ++i) {
    hash[i] = hash_of(tokens[i]);
    slot[i] = hash[i] & mask;
    __builtin_prefetch(&slots_[slot[i]]);
  }
  // 2. Move to the first slot with a matching hash and start loading its arena entry.
  for (size_t i = 0; i < n; ++i) {
    while (slots_[slot[i]].offset != kNone && slots_[slot[i]].hash != hash[i]) slot[i] = (slot[i] + 1) & mask;
    if (slots_[slot[i]].offset != kNone) __builtin_prefetch(arena_.data() + slots_[slot[i]].offset);
  }
  // 3. Compare keys, probing on past hash collisions.
  for (size_t i = 0; i < n; ++i) {
    ids[i] = -1;
    for (size_t k = slot[i]; slots_[k].offset != kNone; k = (k + 1) & mask) {
      if (slots_[k].hash == hash[i] && key_equals(slots_[k].offset, tokens[i])) {
        ids[i] = header_at(slots_[k].offset).id;
        break;
      }
    }
  }
}

std::string_view Vocabulary::token(int32_t id) const {
  if (!has_id(id)) return {};
  const uint32_t offset = by_id_[id];
  return std::string_view(arena_.data() + offset + sizeof(Header), header_at(offset).len);
}

}  // namespace moss
