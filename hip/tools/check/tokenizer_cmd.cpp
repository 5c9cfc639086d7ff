// moss-check tokenizer / prompt: the engine's tokenizer and prompt template against the
// ids Hugging Face `tokenizers` gave (tests/data/tokenizer_cases*.json, prompt_cases*.json).
// Only mismatches are printed (text, expected, got), then "N passed, M failed".
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "subcommand.h"
#include "io/files.h"
#include "tokenizer/prompt.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

using nlohmann::json;

json read_cases(const std::string& path) {
  json doc;
  try {
    doc = json::parse(moss::read_text_file(path));
  } catch (const json::exception& e) {
    throw moss::failure(path + ": " + e.what());
  }
  if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_array())
    throw moss::failure(path + ": expected an object with a \"cases\" array");
  return doc["cases"];
}

std::string ids_text(const std::vector<int32_t>& ids) { return json(ids).dump(); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Encodes one case; an error (invalid UTF-8 in a case) counts as a mismatch. Records a
// mismatch (returns false) or returns true without counting, so callers can add checks.
template <typename Encode>
bool ids_match(golden::Tally& tally, const std::string& label, const std::vector<int32_t>& expected, Encode&& encode) {
  std::vector<int32_t> got;
  std::string error;
  try {
    got = encode();
  } catch (const moss::Error& e) {
    error = e.what();
  }
  if (error.empty() && got == expected) return true;
  tally.check(false,
              label + "\n  expected " + ids_text(expected) + "\n  got      " + (error.empty() ? ids_text(got) : error));
  return false;
}

int tokenizer_command(const std::vector<std::string>& args) {
  const auto t0 = std::chrono::steady_clock::now();
  const moss::Tokenizer tok = moss::Tokenizer::load(golden::flag(args, "--tokenizer"));
  const double load_s = seconds_since(t0);
  const json cases = read_cases(golden::flag(args, "--cases"));
  golden::Tally tally;
  const auto t1 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string text = cases[i].at("text").get<std::string>();
    const auto expected = cases[i].at("ids").get<std::vector<int32_t>>();
    if (ids_match(tally, "case " + std::to_string(i) + " text " + json(text).dump(), expected,
                  [&] { return tok.encode(text); }))
      ++tally.passed;
  }
  std::printf("tokenizer: %zu cases, vocabulary %zu ids, load %.3f s, encode %.3f s\n", cases.size(), tok.vocab_size(),
              load_s, seconds_since(t1));
  return tally.finish();
}

int prompt_command(const std::vector<std::string>& args) {
  const moss::Tokenizer tok = moss::Tokenizer::load(golden::flag(args, "--tokenizer"));
  const json cases = read_cases(golden::flag(args, "--cases"));
  golden::Tally tally;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string prompt = cases[i].at("prompt").get<std::string>();
    const size_t max_seq = cases[i].at("max_seq").get<size_t>();
    const auto expected = cases[i].at("ids").get<std::vector<int32_t>>();
    const bool expected_cut = cases[i].value("truncated", expected.size() == max_seq);
    const std::string label =
        "case " + std::to_string(i) + " prompt " + json(prompt).dump() + " max_seq " + std::to_string(max_seq);
    bool cut = false;
    if (!ids_match(tally, label, expected, [&] {
          moss::PromptIds p = moss::encode_prompt(tok, prompt, max_seq);
          cut = p.truncated;
          return p.ids;
        }))
      continue;
    if (cut == expected_cut)
      ++tally.passed;
    else
      tally.check(false, label + ": truncated is " + (cut ? "true" : "false") + ", expected " +
                             (expected_cut ? "true" : "false"));
  }
  std::printf("prompt: %zu cases\n", cases.size());
  return tally.finish();
}

}  // namespace

CHECK_SUBCOMMAND("tokenizer", "--tokenizer tokenizer.json --cases tokenizer_cases.json", tokenizer_command);
CHECK_SUBCOMMAND("prompt", "--tokenizer tokenizer.json --cases prompt_cases.json", prompt_command);
