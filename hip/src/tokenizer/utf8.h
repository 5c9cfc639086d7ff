// UTF-8 helpers shared by the tokenizer and the prompt template: validation (the engine
// refuses text Python or Rust could not hold as a str: overlong forms, surrogates, code
// points above U+10FFFF), decoding one code point, and the whitespace sets of Python's
// str.isspace() and Unicode's White_Space property.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace moss {

// Offset of the first byte that does not start a valid UTF-8 sequence, or npos when the
// whole string is valid.
size_t find_invalid_utf8(std::string_view s);

// Decodes the code point starting at s[i] of a VALID UTF-8 string; returns its byte length.
inline size_t decode_utf8(std::string_view s, size_t i, char32_t& cp) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  auto cont = [&](size_t k) { return char32_t(static_cast<unsigned char>(s[i + k]) & 0x3f); };
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  if (c < 0xe0) {
    cp = (char32_t(c & 0x1f) << 6) | cont(1);
    return 2;
  }
  if (c < 0xf0) {
    cp = (char32_t(c & 0x0f) << 12) | (cont(1) << 6) | cont(2);
    return 3;
  }
  cp = (char32_t(c & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3);
  return 4;
}

// Start of the code point that ends just before s[end] (end > 0) of a valid UTF-8 string.
inline size_t utf8_prev_start(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) --i;
  return i;
}

void append_utf8(std::string& out, char32_t cp);

// Python's str.isspace(): bidirectional class WS, B or S, or general category Zs.
bool is_python_space(char32_t cp);
// Unicode White_Space (Rust's char::is_whitespace), used by added tokens' lstrip/rstrip.
bool is_unicode_white_space(char32_t cp);

}  // namespace moss
