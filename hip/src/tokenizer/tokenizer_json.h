// Reads a Hugging Face tokenizer.json of the byte-level BPE kind Qwen3.5 ships: vocabulary,
// merges (either "a b" strings or [a, b] pairs), added tokens, the NFC normaliser and the
// Split(regex) + ByteLevel pre-tokenizer. Anything outside that family (another model type,
// normaliser or pre-tokenizer step, dropout, word prefixes or suffixes, byte fallback) is
// refused with a message naming the file, rather than tokenized differently from tokenizers.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/vocabulary.h"

namespace moss {

struct TokenizerDefinition {
  Vocabulary vocab;              // BPE vocabulary, token strings as written (byte-level form)
  std::vector<BpeMerge> merges;  // in rank order
  BpeUnknown unknown;            // unk_token / fuse_unk
  bool ignore_merges = false;    // a piece that is a whole vocabulary entry skips the merges
  // Added tokens with the ids tokenizers assigns when it loads the file: the vocabulary's id
  // when the content is a vocabulary entry, otherwise the next id after the vocabulary
  // (and after the added tokens before it). For a well-formed file these equal the ids
  // written in it.
  std::vector<AddedToken> added;
  bool nfc = false;            // normalizer: NFC (or none)
  bool has_split = false;      // pre-tokenizer has a Split step
  std::string split_pattern;   // its pattern
  bool split_literal = false;  // {"String": ...} rather than {"Regex": ...}
};

// Throws moss::failure naming `path` when the file is unreadable, not JSON, or not a
// tokenizer of the supported kind.
TokenizerDefinition read_tokenizer_json(const std::string& path);
// The same from text already in memory (`path` only names it in messages).
TokenizerDefinition parse_tokenizer_json(const std::string& text, const std::string& path);

}  // namespace moss
