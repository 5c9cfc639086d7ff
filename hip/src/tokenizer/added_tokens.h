// Added tokens (<|im_start|>, <think>, ...) are cut out of the text whole before the rest
// is normalised and split, following tokenizers' AddedVocabulary: matches are
// leftmost-longest and non-overlapping; `single_word` drops a match touching a word
// character (Rust regex \w), `lstrip`/`rstrip` widen a match over the Unicode white space
// beside it (never back over an earlier match).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moss {

// One entry of tokenizer.json's "added_tokens".
struct AddedToken {
  int32_t id = -1;  // the id tokenizers gives it (see tokenizer_json.h), not the file's
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

// A stretch of text: an added token (id >= 0) or plain text (id -1).
struct TextSegment {
  size_t begin, end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `tokens` are matched by their content as given (callers pass normalised content for
  // tokens matched after normalisation).
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);
  bool empty() const { return tokens_.empty(); }

  // Appends the segments of `text` (valid UTF-8), in order and covering all of it.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  // Leftmost-longest match at or after `from`: sets begin and the token index.
  bool find(std::string_view text, size_t from, size_t& begin, size_t& index) const;

  std::vector<AddedToken> tokens_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // token indices, longest first
};

}  // namespace moss
