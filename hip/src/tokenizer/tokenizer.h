// The Qwen3.5 tokenizer: text -> token ids, exactly as Hugging Face `tokenizers` encodes
// with this tokenizer.json and no special tokens added. Steps (docs/text_encoder.md section 5):
//   1. added tokens (<|im_start|>, ...) are cut out of the raw text whole;
//   2. each remaining stretch is NFC-normalised;
//   3. split with the pre-tokenizer regex of the file (PCRE2, UTF + UCP, JIT);
//   4. each piece's bytes are BPE-merged by rank (byte-level vocabulary); recent pieces are
//      answered from a cache.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace moss {

class Tokenizer {
 public:
  // Throws moss::failure naming the file when it is unreadable, not JSON, or not a
  // byte-level BPE tokenizer of the supported kind.
  static Tokenizer load(const std::string& tokenizer_json_path);
  // The same from the file's text (tests, tools).
  static Tokenizer from_json_text(const std::string& json_text, const std::string& name);

  // Token ids of `utf8`, no special tokens added. Throws moss::usage_error when the text is
  // not valid UTF-8. Safe to call from several threads at once.
  std::vector<int32_t> encode(std::string_view utf8) const;

  // One past the largest id (vocabulary and added tokens): 248,077 for Qwen3.5.
  size_t vocab_size() const;
  // Id of a vocabulary entry (byte-level form, e.g. "Ġp") or an added token's content; -1
  // when there is none.
  int32_t token_id(std::string_view token) const;
  // The token of an id as tokenizer.json writes it (empty when the id is not used).
  std::string token(int32_t id) const;
  // Text of ids (tokenizers' ByteLevel decoder): vocabulary tokens back to their bytes,
  // added tokens verbatim. decode(encode(t)) == t for NFC text.
  std::string decode(const std::vector<int32_t>& ids) const;
  // Whether the pre-tokenizer regex runs JIT-compiled (reported by the benchmark).
  bool regex_jit() const;
  const std::string& source() const;

 private:
  struct State;
  explicit Tokenizer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;  // shared: copies and moves are cheap
};

}  // namespace moss
