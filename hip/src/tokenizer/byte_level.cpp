#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace moss {

namespace {

struct ByteLevelTables {
  std::array<std::string, 256> chars;     // byte -> UTF-8 of its character
  std::array<int16_t, 324> byte_of_code;  // code point (< 0x144) -> byte, or -1

  ByteLevelTables() {
    byte_of_code.fill(-1);
    int next_extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      const char32_t cp = printable ? char32_t(b) : char32_t(0x100 + next_extra++);
      append_utf8(chars[b], cp);
      byte_of_code[cp] = int16_t(b);
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables t;
  return t;
}

}  // namespace

const std::string& byte_level_char(unsigned char b) { return tables().chars[b]; }

bool byte_level_to_bytes(std::string_view token, std::string& bytes) {
  const auto& t = tables();
  bytes.clear();
  for (size_t i = 0; i < token.size();) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    char32_t cp;
    // Only one- and two-byte sequences can be in the alphabet (all below U+0144).
    if (c < 0x80) {
      cp = c;
      i += 1;
    } else if (c >= 0xc2 && c <= 0xdf && i + 1 < token.size() &&
               (static_cast<unsigned char>(token[i + 1]) & 0xc0) == 0x80) {
      cp = (char32_t(c & 0x1f) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3f);
      i += 2;
    } else {
      return false;
    }
    if (cp >= t.byte_of_code.size() || t.byte_of_code[cp] < 0) return false;
    bytes += char(t.byte_of_code[cp]);
  }
  return true;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += byte_level_char(b);
  return out;
}

}  // namespace moss
