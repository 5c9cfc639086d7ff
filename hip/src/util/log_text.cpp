#include "util/log_text.h"

#include <cstdio>

namespace moss {
namespace {

void hex_byte(std::string& out, unsigned char b) {
  char s[5];
  std::snprintf(s, sizeof s, "\\x%02x", b);
  out += s;
}

// The length of a well-formed UTF-8 sequence at text[i] (1..4), or 0 when it is not one
// (overlong forms, surrogates and values past U+10FFFF are not).
size_t utf8_length(const std::string& text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = at(i);
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string log_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_length(text, i);
    if (n == 0) {  // not UTF-8: the byte, visibly
      hex_byte(out, c);
      ++i;
      continue;
    }
    if (n == 1 && (c < 0x20 || c == 0x7F)) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case 0x1B: out += "\\e"; break;
        default: hex_byte(out, c);
      }
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      out += "\\u00";  // a C1 control (U+0080..U+009F): CSI is U+009B
      char s[3];
      std::snprintf(s, sizeof s, "%02x", static_cast<unsigned char>(text[i + 1]));
      out += s;
    } else {
      out.append(text, i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace moss
