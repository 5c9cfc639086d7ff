#include "tokenizer/vocabulary.h"

#include <functional>

namespace moss {

uint32_t Vocabulary::hash_of(std::string_view s) {
  const uint64_t h = std::hash<std::string_view>()(s);
  return uint32_t(h ^ (h >> 32));
}

void Vocabulary::reserve(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  if (cap > slots_.size()) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{});
    for (const Slot& s : old)
      if (s.id >= 0) slots_[find_slot(token(s.id), s.hash)] = s;
  }
  by_id_.reserve(n);
  arena_.reserve(n * 8);
}

void Vocabulary::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

// Slot holding `token`, or the empty slot where it would go.
size_t Vocabulary::find_slot(std::string_view tok, uint32_t hash) const {
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0) return i;
    if (s.hash == hash) {
      const Span& sp = by_id_[s.id];
      if (sp.len == tok.size() && arena_.compare(sp.offset, sp.len, tok) == 0) return i;
    }
  }
}

Vocabulary::InsertResult Vocabulary::insert(std::string_view tok, int32_t id) {
  if (2 * (count_ + 1) > slots_.size()) grow();
  if (has_id(id)) return InsertResult::DuplicateId;
  const uint32_t hash = hash_of(tok);
  const size_t slot = find_slot(tok, hash);
  if (slots_[slot].id >= 0) return InsertResult::DuplicateToken;
  if (size_t(id) >= by_id_.size()) by_id_.resize(size_t(id) + 1);
  by_id_[id] = Span{uint32_t(arena_.size()), uint32_t(tok.size())};
  arena_.append(tok.data(), tok.size());
  slots_[slot] = Slot{hash, id};
  ++count_;
  return InsertResult::Ok;
}

int32_t Vocabulary::find(std::string_view tok) const {
  if (slots_.empty()) return -1;
  return slots_[find_slot(tok, hash_of(tok))].id;
}

std::string_view Vocabulary::token(int32_t id) const {
  if (!has_id(id)) return {};
  const Span& sp = by_id_[id];
  return std::string_view(arena_).substr(sp.offset, sp.len);
}

}  // namespace moss
