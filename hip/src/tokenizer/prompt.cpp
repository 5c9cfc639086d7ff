#include "tokenizer/prompt.h"

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace moss {

std::string python_strip(std::string_view text) {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string_view::npos) throw usage_error("prompt is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  size_t begin = 0, end = text.size();
  char32_t cp;
  while (begin < end) {
    const size_t n = decode_utf8(text, begin, cp);
    if (!is_python_space(cp)) break;
    begin += n;
  }
  while (end > begin) {
    const size_t start = utf8_prev_start(text, end);
    decode_utf8(text, start, cp);
    if (!is_python_space(cp)) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::string apply_prompt_template(const std::string& prompt) {
  return "<|im_start|>user\n" + python_strip(prompt) + "<|im_end|>\n<|im_start|>assistant\n<think>\n";
}

PromptIds encode_prompt(const Tokenizer& tok, const std::string& prompt, size_t max_seq) {
  PromptIds r;
  r.ids = tok.encode(apply_prompt_template(prompt));
  r.full_length = r.ids.size();
  if (r.ids.size() > max_seq) {
    r.ids.resize(max_seq);
    r.truncated = true;
  }
  return r;
}

}  // namespace moss
