// libFuzzer target: loading tokenizer.json (the hand-written JSON scanner for the vocabulary
// and merges, the option checks, the pre-tokenizer regex). A file that loads must then
// encode a few fixed texts without crashing and give ids below vocab_size().
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const moss::Tokenizer tok = moss::Tokenizer::from_json_text(text, "fuzz/tokenizer.json");
    for (const char* sample : {"a b", "ab ab ba", "<|im_start|>user\nhi<|im_end|>", "h\xc3\xa9llo 123 \xe5\x86\xb0", "  \n\t"})
      for (int32_t id : tok.encode(sample))
        if (id < 0 || size_t(id) >= tok.vocab_size()) {
          std::fprintf(stderr, "tokenizer.json finding: id %d outside vocab_size %zu\n", id, tok.vocab_size());
          std::abort();
        }
  } catch (const moss::Error&) {
  }
  return 0;
}
