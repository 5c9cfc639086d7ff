#include "server/base64.h"

#include <cstdint>

namespace moss {

std::string base64_encode(const std::string& bytes) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = unsigned(uint8_t(bytes[i])) << 16 | unsigned(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(v >> shift) & 63];
  }
  if (i < bytes.size()) {
    const bool two = i + 1 < bytes.size();
    const unsigned v = unsigned(uint8_t(bytes[i])) << 16 | (two ? unsigned(uint8_t(bytes[i + 1])) << 8 : 0u);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += two ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(const std::string& text) {
  std::string out;
  out.reserve(text.size() / 4 * 3);
  unsigned bits = 0, count = 0;
  size_t padding = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+' || c == '-') v = 62;  // '-' and '_': the URL-safe alphabet
    else if (c == '/' || c == '_') v = 63;
    else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    else if (c == '=') {
      ++padding;
      continue;
    } else return std::nullopt;
    if (padding) return std::nullopt;  // data after the padding
    bits = bits << 6 | unsigned(v);
    if (++count % 4 == 0) {
      out += char((bits >> 16) & 255);
      out += char((bits >> 8) & 255);
      out += char(bits & 255);
      bits = 0;
    }
  }
  switch (count % 4) {
    case 0: break;
    case 1: return std::nullopt;
    case 2: out += char((bits >> 4) & 255); break;
    case 3:
      out += char((bits >> 10) & 255);
      out += char((bits >> 2) & 255);
      break;
  }
  return out;
}

}  // namespace moss
