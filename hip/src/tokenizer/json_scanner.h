// A small validating pull parser for JSON text held in memory. tokenizer.json is 15 MB of
// mostly vocabulary and merges; building a DOM for it costs more than the whole 0.5 s load
// budget allows on a busy machine, so the loader walks the big arrays with this scanner and
// hands only the small sections (normalizer, pre-tokenizer, added tokens) to nlohmann::json.
// Every error names the file and the line and column where the text stops being JSON.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace moss {

class JsonScanner {
 public:
  JsonScanner(std::string_view text, std::string file_name) : text_(text), file_(std::move(file_name)) {}

  // Next non-whitespace character without consuming it ('\0' at the end of the text).
  char peek();
  // Consumes c (after whitespace) or fails with "expected c".
  void expect(char c);
  // Consumes c when it is next (after whitespace).
  bool consume(char c);
  // Fails unless only whitespace is left.
  void expect_end();

  // Reads a string value. The result views the text itself when the string has no escapes,
  // otherwise `scratch`, which receives the decoded bytes.
  std::string_view read_string(std::string& scratch);
  // Reads an integer (no fraction or exponent) that fits in int64.
  int64_t read_integer();
  // Validates and skips one value of any kind; returns its raw text.
  std::string_view skip_value();

  // Object and array walks. `on_member(key)` and `on_element()` must consume exactly one value.
  template <typename OnMember>
  void read_object(OnMember&& on_member) {
    expect('{');
    if (consume('}')) return;
    std::string key_scratch;
    do {
      if (peek() != '"') fail("expected a string key");
      std::string_view key = read_string(key_scratch);
      expect(':');
      on_member(key);
    } while (consume(','));
    expect('}');
  }
  template <typename OnElement>
  void read_array(OnElement&& on_element) {
    expect('[');
    if (consume(']')) return;
    do {
      on_element();
    } while (consume(','));
    expect(']');
  }

  size_t offset() const { return pos_; }
  // Moves to a byte offset (the start of a value found earlier with skip_value).
  void seek(size_t offset) { pos_ = offset; }
  const std::string& file_name() const { return file_; }
  // Throws moss::failure: "FILE: malformed JSON at line L, column C: what".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void skip_ws();
  void skip_value_at_depth(int depth);
  void skip_number();
  void skip_literal(std::string_view word);
  uint32_t read_hex4();

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
};

}  // namespace moss
