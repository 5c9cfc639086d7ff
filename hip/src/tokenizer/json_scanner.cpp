#include "tokenizer/json_scanner.h"

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace moss {

namespace {
constexpr int kMaxDepth = 256;  // deeper nesting is refused rather than risking the stack
bool is_digit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

void JsonScanner::fail(const std::string& what) const {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  throw failure(file_ + ": malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(column) +
                ": " + what);
}

void JsonScanner::skip_ws() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
    ++pos_;
  }
}

char JsonScanner::peek() {
  skip_ws();
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

void JsonScanner::expect(char c) {
  if (peek() != c) fail(pos_ < text_.size() ? std::string("expected '") + c + "'" : "unexpected end of file");
  ++pos_;
}

bool JsonScanner::consume(char c) {
  if (peek() != c) return false;
  ++pos_;
  return true;
}

void JsonScanner::expect_end() {
  skip_ws();
  if (pos_ != text_.size()) fail("unexpected text after the top-level value");
}

uint32_t JsonScanner::read_hex4() {
  if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) {
    const char c = text_[pos_++];
    v <<= 4;
    if (is_digit(c))
      v |= uint32_t(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= uint32_t(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= uint32_t(c - 'A' + 10);
    else
      fail("bad \\u escape");
  }
  return v;
}

std::string_view JsonScanner::read_string(std::string& scratch) {
  expect('"');
  const size_t start = pos_;
  // Fast path: no escapes, so the value is a view of the text.
  while (pos_ < text_.size()) {
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      std::string_view s = text_.substr(start, pos_ - start);
      ++pos_;
      return s;
    }
    if (c == '\\') break;
    if (c < 0x20) fail("control character inside a string");
    ++pos_;
  }
  if (pos_ >= text_.size()) fail("unterminated string");
  scratch.assign(text_.data() + start, pos_ - start);
  while (true) {
    if (pos_ >= text_.size()) fail("unterminated string");
    const unsigned char c = static_cast<unsigned char>(text_[pos_++]);
    if (c == '"') return scratch;
    if (c < 0x20) fail("control character inside a string");
    if (c != '\\') {
      scratch += char(c);
      continue;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    const char e = text_[pos_++];
    switch (e) {
      case '"':
        scratch += '"';
        break;
      case '\\':
        scratch += '\\';
        break;
      case '/':
        scratch += '/';
        break;
      case 'b':
        scratch += '\b';
        break;
      case 'f':
        scratch += '\f';
        break;
      case 'n':
        scratch += '\n';
        break;
      case 'r':
        scratch += '\r';
        break;
      case 't':
        scratch += '\t';
        break;
      case 'u': {
        uint32_t cp = read_hex4();
        if (cp >= 0xdc00 && cp <= 0xdfff) fail("lone low surrogate in \\u escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          if (pos_ + 2 > text_.size() || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
            fail("lone high surrogate in \\u escape");
          pos_ += 2;
          const uint32_t lo = read_hex4();
          if (lo < 0xdc00 || lo > 0xdfff) fail("bad surrogate pair in \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        append_utf8(scratch, char32_t(cp));
        break;
      }
      default:
        fail(std::string("bad escape '\\") + e + "'");
    }
  }
}

int64_t JsonScanner::read_integer() {
  skip_ws();
  const size_t start = pos_;
  bool negative = false;
  if (pos_ < text_.size() && text_[pos_] == '-') {
    negative = true;
    ++pos_;
  }
  if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("expected an integer");
  int64_t v = 0;
  while (pos_ < text_.size() && is_digit(text_[pos_])) {
    if (v > (INT64_MAX - 9) / 10) fail("integer out of range");
    v = v * 10 + (text_[pos_++] - '0');
  }
  if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
    pos_ = start;
    fail("expected an integer");
  }
  return negative ? -v : v;
}

void JsonScanner::skip_number() {
  if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
  if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("bad number");
  if (text_[pos_] == '0') {
    ++pos_;
  } else {
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("bad number");
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("bad number");
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
  }
}

void JsonScanner::skip_literal(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) fail("unexpected character");
  pos_ += word.size();
}

void JsonScanner::skip_value_at_depth(int depth) {
  if (depth > kMaxDepth) fail("nesting too deep");
  std::string scratch;
  switch (peek()) {
    case '{':
      read_object([&](std::string_view) { skip_value_at_depth(depth + 1); });
      return;
    case '[':
      read_array([&] { skip_value_at_depth(depth + 1); });
      return;
    case '"':
      read_string(scratch);
      return;
    case 't':
      skip_literal("true");
      return;
    case 'f':
      skip_literal("false");
      return;
    case 'n':
      skip_literal("null");
      return;
    case '\0':
      if (pos_ >= text_.size()) fail("unexpected end of file");
      fail("unexpected character");
    default:
      skip_number();
  }
}

std::string_view JsonScanner::skip_value() {
  skip_ws();
  const size_t start = pos_;
  skip_value_at_depth(0);
  return text_.substr(start, pos_ - start);
}

}  // namespace moss
