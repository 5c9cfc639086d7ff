#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <mutex>
#include <optional>

#include "io/files.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/piece_cache.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace moss {

struct Tokenizer::State {
  std::string source;
  Vocabulary vocab;
  BpeModel bpe;
  bool ignore_merges = false;
  bool nfc = false;
  std::optional<RegexSplitter> splitter;  // none: each stretch is one piece
  AddedTokenMatcher raw_tokens;           // matched before normalisation
  AddedTokenMatcher normalized_tokens;    // matched in the normalised text
  std::vector<AddedToken> added;
  size_t vocab_size = 0;

  mutable std::mutex cache_mutex;
  mutable PieceCache cache;

  void encode_piece(std::string_view piece, std::vector<int32_t>& out, PieceCache* piece_cache) const;
  void encode_plain(std::string_view text, std::vector<int32_t>& out, PieceCache* piece_cache) const;
  void encode_normalized(std::string_view text, std::vector<int32_t>& out, PieceCache* piece_cache) const;
};

void Tokenizer::State::encode_piece(std::string_view piece, std::vector<int32_t>& out, PieceCache* piece_cache) const {
  if (ignore_merges) {
    const int32_t whole = vocab.find(bytes_to_byte_level(piece));
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  if (piece_cache && piece.size() > 1 && piece_cache->lookup(piece, out)) return;
  const size_t first = out.size();
  bpe.encode_word(piece, out);
  if (piece_cache && piece.size() > 1) piece_cache->insert(piece, out.data() + first, out.size() - first);
}

// A stretch already normalised and free of added tokens: regex split, then BPE per piece.
void Tokenizer::State::encode_plain(std::string_view text, std::vector<int32_t>& out, PieceCache* piece_cache) const {
  if (!splitter) {
    encode_piece(text, out, piece_cache);
    return;
  }
  thread_local std::vector<PieceSpan> pieces;
  pieces.clear();
  splitter->split(text, pieces);
  for (const PieceSpan& p : pieces) encode_piece(text.substr(p.begin, p.end - p.begin), out, piece_cache);
}

// A stretch of raw text between added tokens: normalise, cut out the added tokens that
// match normalised text, encode the rest.
void Tokenizer::State::encode_normalized(std::string_view raw, std::vector<int32_t>& out,
                                         PieceCache* piece_cache) const {
  std::string normalized_storage;
  std::string_view text = raw;
  if (nfc && !is_trivially_nfc(raw)) {
    normalized_storage = moss::nfc(raw);
    text = normalized_storage;
  }
  if (normalized_tokens.empty()) {
    encode_plain(text, out, piece_cache);
    return;
  }
  std::vector<TextSegment> segments;
  normalized_tokens.split(text, segments);
  for (const TextSegment& s : segments) {
    if (s.id >= 0)
      out.push_back(s.id);
    else
      encode_plain(text.substr(s.begin, s.end - s.begin), out, piece_cache);
  }
}

Tokenizer::Tokenizer(std::shared_ptr<State> state) : state_(std::move(state)) {}

Tokenizer Tokenizer::from_json_text(const std::string& json_text, const std::string& name) {
  TokenizerDefinition def = parse_tokenizer_json(json_text, name);
  auto s = std::make_shared<State>();
  s->source = name;
  std::array<int32_t, 256> byte_ids;
  for (int b = 0; b < 256; ++b) byte_ids[b] = def.vocab.find(byte_level_char(uint8_t(b)));
  s->bpe = BpeModel(byte_ids, def.merges, def.unknown);
  def.merges = {};
  s->ignore_merges = def.ignore_merges;
  s->nfc = def.nfc;
  if (def.has_split) s->splitter.emplace(def.split_pattern, def.split_literal, name);

  std::vector<AddedToken> raw, normalized;
  size_t limit = def.vocab.id_limit();
  for (const AddedToken& t : def.added) {
    limit = std::max(limit, size_t(t.id) + 1);
    if (!t.normalized) {
      raw.push_back(t);
    } else {
      // Matched against normalised text, so by its normalised content.
      AddedToken n = t;
      if (s->nfc) n.content = nfc(n.content);
      normalized.push_back(std::move(n));
    }
  }
  s->raw_tokens = AddedTokenMatcher(std::move(raw));
  s->normalized_tokens = AddedTokenMatcher(std::move(normalized));
  s->added = std::move(def.added);
  s->vocab_size = limit;
  s->vocab = std::move(def.vocab);
  return Tokenizer(std::move(s));
}

Tokenizer Tokenizer::load(const std::string& path) { return from_json_text(read_text_file(path), path); }

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos)
    throw usage_error("text is not valid UTF-8 (byte " + std::to_string(bad) + " of " + std::to_string(text.size()) +
                      ")");
  const State& s = *state_;
  // The cache belongs to whichever call holds it; a concurrent call simply runs uncached.
  std::unique_lock<std::mutex> lock(s.cache_mutex, std::try_to_lock);
  PieceCache* cache = lock.owns_lock() ? &s.cache : nullptr;

  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (s.raw_tokens.empty()) {
    s.encode_normalized(text, ids, cache);
    return ids;
  }
  std::vector<TextSegment> segments;
  s.raw_tokens.split(text, segments);
  for (const TextSegment& seg : segments) {
    if (seg.id >= 0)
      ids.push_back(seg.id);
    else
      s.encode_normalized(text.substr(seg.begin, seg.end - seg.begin), ids, cache);
  }
  return ids;
}

size_t Tokenizer::vocab_size() const { return state_->vocab_size; }

int32_t Tokenizer::token_id(std::string_view token) const {
  for (const AddedToken& t : state_->added)
    if (t.content == token) return t.id;
  return state_->vocab.find(token);
}

std::string Tokenizer::token(int32_t id) const {
  for (const AddedToken& t : state_->added)
    if (t.id == id) return t.content;
  return std::string(state_->vocab.token(id));
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out, bytes;
  for (int32_t id : ids) {
    const std::string tok = token(id);
    // A token outside the byte-level alphabet (added tokens) is text already.
    if (byte_level_to_bytes(tok, bytes))
      out += bytes;
    else
      out += tok;
  }
  return out;
}

bool Tokenizer::regex_jit() const { return state_->splitter && state_->splitter->uses_jit(); }

const std::string& Tokenizer::source() const { return state_->source; }

}  // namespace moss
