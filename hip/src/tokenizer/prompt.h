// The prompt path of docs/model.md section 2: Qwen3.5's chat template with one user message,
// the generation prompt and thinking enabled, then truncation to the first --max-seq ids.
// The negative prompt (empty by default) goes through the same path.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace moss {

struct PromptIds {
  std::vector<int32_t> ids;
  bool truncated = false;  // the templated prompt had more than max_seq ids
  size_t full_length = 0;  // its length before truncation
};

// Python's str.strip(): drops every str.isspace() character from both ends.
// Throws moss::usage_error when `text` is not valid UTF-8.
std::string python_strip(std::string_view text);

// "<|im_start|>user\n{prompt.strip()}<|im_end|>\n<|im_start|>assistant\n<think>\n".
// Throws moss::usage_error when `prompt` is not valid UTF-8.
std::string apply_prompt_template(const std::string& prompt);

// Template, encode, keep the first max_seq ids. Throws moss::usage_error on invalid UTF-8.
PromptIds encode_prompt(const Tokenizer& tok, const std::string& prompt, size_t max_seq);

}  // namespace moss
