#include "tokenizer/bpe.h"

#include <algorithm>

namespace moss {

namespace {

inline size_t slot_of(uint64_t key, int shift) { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift); }

struct Symbol {
  int32_t id;
  int32_t prev, next;  // indices into the symbol array, -1 at the ends
  uint32_t len;        // bytes covered; 0 once merged into its left neighbour
};

struct Candidate {
  uint32_t rank;
  uint32_t pos;  // index of the left symbol
  int32_t merged;
  uint32_t len;  // bytes the pair covered when pushed
};

// std heap functions build a max-heap; this order puts the lowest (rank, pos) on top.
struct LowerRankFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

struct Workspace {
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
};

}  // namespace

BpeModel::BpeModel(const std::array<int32_t, 256>& byte_ids, const std::vector<BpeMerge>& merges, BpeUnknown unknown)
    : byte_ids_(byte_ids), unknown_(unknown) {
  size_t cap = 16;
  shift_ = 60;
  while (cap < 2 * merges.size()) {
    cap *= 2;
    --shift_;
  }
  keys_.assign(cap, kEmpty);
  values_.resize(cap);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const BpeMerge& m = merges[rank];
    const uint64_t key = pair_key(m.left, m.right);
    size_t i = slot_of(key, shift_);
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & (cap - 1);
    if (keys_[i] == kEmpty) ++pair_count_;
    keys_[i] = key;
    values_[i] = PairValue{uint32_t(rank), m.merged};
  }
}

const BpeModel::PairValue* BpeModel::find_pair(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  const size_t mask = keys_.size() - 1;
  for (size_t i = slot_of(key, shift_);; i = (i + 1) & mask) {
    if (keys_[i] == key) return &values_[i];
    if (keys_[i] == kEmpty) return nullptr;
  }
}

void BpeModel::encode_word(std::string_view bytes, std::vector<int32_t>& out) const {
  if (bytes.size() == 1 && byte_ids_[static_cast<unsigned char>(bytes[0])] >= 0) {
    out.push_back(byte_ids_[static_cast<unsigned char>(bytes[0])]);
    return;
  }
  thread_local Workspace ws;
  auto& sym = ws.symbols;
  auto& heap = ws.heap;
  sym.clear();
  heap.clear();

  for (unsigned char b : bytes) {
    int32_t id = byte_ids_[b];
    if (id < 0) {
      if (unknown_.id < 0) continue;  // dropped, as tokenizers does without an unk token
      if (unknown_.fuse && !sym.empty() && sym.back().id == unknown_.id) {
        sym.back().len += 1;
        continue;
      }
      id = unknown_.id;
    }
    const int32_t index = int32_t(sym.size());
    sym.push_back(Symbol{id, index - 1, -1, 1});
    if (index > 0) sym[index - 1].next = index;
  }
  if (sym.empty()) return;

  for (size_t i = 0; i + 1 < sym.size(); ++i)
    if (const PairValue* p = find_pair(sym[i].id, sym[i + 1].id))
      heap.push_back(Candidate{p->rank, uint32_t(i), p->merged, sym[i].len + sym[i + 1].len});
  std::make_heap(heap.begin(), heap.end(), LowerRankFirst());

  auto push = [&](int32_t left) {
    const Symbol& a = sym[left];
    const Symbol& b = sym[a.next];
    if (const PairValue* p = find_pair(a.id, b.id)) {
      heap.push_back(Candidate{p->rank, uint32_t(left), p->merged, a.len + b.len});
      std::push_heap(heap.begin(), heap.end(), LowerRankFirst());
    }
  };

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), LowerRankFirst());
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& a = sym[top.pos];
    if (a.len == 0 || a.next < 0) continue;
    Symbol& b = sym[a.next];
    if (a.len + b.len != top.len) continue;  // stale: one of the two symbols grew since
    a.id = top.merged;
    a.len += b.len;
    b.len = 0;
    a.next = b.next;
    if (a.next >= 0) sym[a.next].prev = int32_t(top.pos);
    if (a.prev >= 0) push(a.prev);
    if (a.next >= 0) push(int32_t(top.pos));
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

}  // namespace moss
