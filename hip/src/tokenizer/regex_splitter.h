// The pre-tokenizer's Split step ("Isolated" behaviour): the text is cut into the matches
// of the regex and the stretches between them, each a piece of its own. The pattern comes
// from tokenizer.json; tokenizers compiles it with Oniguruma, whose syntax for what Qwen's
// pattern uses (\p{L}/\p{M}/\p{N}, \s, (?i:...), (?!...), leftmost alternatives) PCRE2
// shares in UTF + UCP mode; onig_compat.h aligns the character sets. JIT-compiled where
// the platform supports it.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace moss {

struct PieceSpan {
  size_t begin, end;  // byte offsets
};

class RegexSplitter {
 public:
  // `literal`: the pattern is a plain string (tokenizers' {"String": ...} form).
  // Throws moss::failure mentioning `origin` when the pattern does not compile.
  RegexSplitter(const std::string& pattern, bool literal, const std::string& origin);
  ~RegexSplitter();
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;

  // Appends the pieces of `text` (valid UTF-8) to `out`, in order, covering all of it.
  void split(std::string_view text, std::vector<PieceSpan>& out) const;
  bool uses_jit() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moss
