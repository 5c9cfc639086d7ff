// Shared helpers of the tokenizer and prompt tests: the test tokenizers, and small
// tokenizer.json files written on the fly for behaviour the real files cannot isolate.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace moss_test {

inline std::string tiny_tokenizer_path() {
  return std::string(MOSSINFER_TEST_DATA) + "/tiny-moss/tokenizer/tokenizer.json";
}

// Loaded once per test binary (the tiny vocabulary loads in milliseconds).
inline const moss::Tokenizer& tiny_tokenizer() {
  static const moss::Tokenizer tok = moss::Tokenizer::load(tiny_tokenizer_path());
  return tok;
}

// A byte-level BPE tokenizer.json over the given vocabulary (byte-level strings, ids in
// order) and merges, no normaliser, no regex split (the whole text is one piece) unless
// `pre_tokenizer` says otherwise.
inline nlohmann::json small_tokenizer_json(const std::vector<std::string>& vocab,
                                           const std::vector<std::pair<std::string, std::string>>& merges,
                                           bool merges_as_strings = false) {
  nlohmann::json v = nlohmann::json::object();
  for (size_t i = 0; i < vocab.size(); ++i) v[vocab[i]] = i;
  nlohmann::json m = nlohmann::json::array();
  for (const auto& [a, b] : merges) {
    if (merges_as_strings)
      m.push_back(a + " " + b);
    else
      m.push_back(nlohmann::json::array({a, b}));
  }
  return {{"version", "1.0"},
          {"added_tokens", nlohmann::json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", v},
            {"merges", m}}}};
}

inline moss::Tokenizer tokenizer_from(const nlohmann::json& j) {
  return moss::Tokenizer::from_json_text(j.dump(), "test.json");
}

}  // namespace moss_test
