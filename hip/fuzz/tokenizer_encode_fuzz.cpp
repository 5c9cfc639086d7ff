// libFuzzer target: the tokenizer on arbitrary prompt bytes. The tiny model's tokenizer.json
// is loaded once; each input goes through encode() and the prompt path (python_strip,
// template, encode, --max-seq cut). Invalid UTF-8 must be refused with moss::Error; valid
// text must give ids inside the vocabulary, and the cut must keep the first max_seq ids.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/prompt.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

#ifndef MOSSINFER_FUZZ_TOKENIZER
#error "MOSSINFER_FUZZ_TOKENIZER (path of a tokenizer.json) must be defined"
#endif

namespace {

const moss::Tokenizer& tokenizer() {
  static const moss::Tokenizer tok = [] {
    const char* env = std::getenv("MOSSINFER_FUZZ_TOKENIZER");
    return moss::Tokenizer::load(env ? env : MOSSINFER_FUZZ_TOKENIZER);
  }();
  return tok;
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "tokenizer finding: %s\n", what);
  std::abort();
}

void check_ids(const std::vector<int32_t>& ids) {
  for (int32_t id : ids)
    if (id < 0 || size_t(id) >= tokenizer().vocab_size()) finding("id outside the vocabulary");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  bool valid = true;
  try {
    check_ids(tokenizer().encode(text));
  } catch (const moss::Error&) {
    valid = false;  // invalid UTF-8
  }
  try {
    const std::string stripped = moss::python_strip(text);
    if (moss::python_strip(stripped) != stripped) finding("python_strip is not idempotent");
    const size_t max_seq = 1 + size % 64;
    const moss::PromptIds cut = moss::encode_prompt(tokenizer(), text, max_seq);
    const moss::PromptIds full = moss::encode_prompt(tokenizer(), text, size_t(-1));
    check_ids(full.ids);
    if (full.truncated || full.ids.size() != full.full_length) finding("an uncut prompt reports a cut");
    if (cut.full_length != full.ids.size()) finding("full_length differs from the uncut length");
    if (cut.truncated != (full.ids.size() > max_seq)) finding("truncated flag wrong");
    if (cut.ids.size() != std::min(max_seq, full.ids.size()) ||
        !std::equal(cut.ids.begin(), cut.ids.end(), full.ids.begin()))
      finding("the cut is not the first max_seq ids");
    if (!valid) finding("encode refused the text but the prompt path accepted it");
  } catch (const moss::Error&) {
    if (valid) finding("the prompt path refused text that encode accepted");
  }
  return 0;
}
