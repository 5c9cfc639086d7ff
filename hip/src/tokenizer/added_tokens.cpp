#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/added_tokens.h"

#include <pcre2.h>

#include <algorithm>

#include "tokenizer/utf8.h"

namespace moss {

namespace {

// Rust regex's Unicode \w: Alphabetic, marks, decimal digits, connector punctuation and
// the two join controls.
bool is_rust_word_char(char32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  struct Pattern {
    pcre2_code* code;
    Pattern() {
      int error;
      PCRE2_SIZE offset;
      const char* source = "^[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]";
      code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &error,
                           &offset, nullptr);
    }
  };
  static const Pattern pattern;
  if (!pattern.code) return false;
  std::string utf8;
  append_utf8(utf8, cp);
  pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
  const int rc = pcre2_match(pattern.code, reinterpret_cast<PCRE2_SPTR>(utf8.data()), utf8.size(), 0, 0, md, nullptr);
  pcre2_match_data_free(md);
  return rc >= 0;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (uint32_t i = 0; i < tokens_.size(); ++i)
    if (!tokens_[i].content.empty()) by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  for (auto& list : by_first_byte_)
    // Longest first; equal lengths keep the file's order (indices are unique, so this is a total
    // order: std::sort gives what stable_sort would, without libstdc++ 12's temporary buffer,
    // deprecated under clang 22).
    std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      const size_t la = tokens_[a].content.size(), lb = tokens_[b].content.size();
      return la != lb ? la > lb : a < b;
    });
}

bool AddedTokenMatcher::find(std::string_view text, size_t from, size_t& begin, size_t& index) const {
  for (size_t pos = from; pos < text.size(); ++pos) {
    const auto& candidates = by_first_byte_[static_cast<unsigned char>(text[pos])];
    for (uint32_t i : candidates) {
      const std::string& c = tokens_[i].content;
      if (text.size() - pos >= c.size() && text.compare(pos, c.size(), c) == 0) {
        begin = pos;
        index = i;
        return true;
      }
    }
  }
  return false;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSegment>& out) const {
  size_t done = 0;    // end of the last segment emitted
  size_t search = 0;  // where the next match may start (matches never overlap)
  size_t begin, index;
  while (search < text.size() && find(text, search, begin, index)) {
    const AddedToken& tok = tokens_[index];
    size_t end = begin + tok.content.size();
    search = end;
    if (tok.single_word) {
      char32_t cp;
      const bool word_before =
          begin > 0 && (decode_utf8(text, utf8_prev_start(text, begin), cp), is_rust_word_char(cp));
      const bool word_after = end < text.size() && (decode_utf8(text, end, cp), is_rust_word_char(cp));
      if (word_before || word_after) continue;
    }
    if (tok.lstrip) {
      char32_t cp;
      while (begin > done) {
        const size_t prev = utf8_prev_start(text, begin);
        decode_utf8(text, prev, cp);
        if (!is_unicode_white_space(cp)) break;
        begin = prev;
      }
    }
    if (tok.rstrip) {
      char32_t cp;
      while (end < text.size()) {
        const size_t n = decode_utf8(text, end, cp);
        if (!is_unicode_white_space(cp)) break;
        end += n;
      }
    }
    if (end <= done) continue;  // swallowed by the previous token's rstrip
    begin = std::max(begin, done);
    if (begin > done) out.push_back(TextSegment{done, begin, -1});
    out.push_back(TextSegment{begin, end, tok.id});
    done = end;
  }
  if (done < text.size()) out.push_back(TextSegment{done, text.size(), -1});
}

}  // namespace moss
