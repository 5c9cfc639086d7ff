#include "tokenizer/tokenizer_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "io/files.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_scanner.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace moss {

namespace {

using nlohmann::json;

// Ids above this are refused: they would only blow up the id tables.
constexpr int64_t kMaxTokenId = int64_t(1) << 24;

struct Loader {
  const std::string& text;
  const std::string& path;
  JsonScanner js;
  TokenizerDefinition def;

  Loader(const std::string& t, const std::string& p) : text(t), path(p), js(t, p) {}

  [[noreturn]] void unsupported(const std::string& what) const {
    throw failure(path + ": unsupported tokenizer: " + what +
                  " (this engine reads byte-level BPE tokenizers of the Qwen3.5 kind)");
  }
  [[noreturn]] void malformed(const std::string& what) const { throw failure(path + ": " + what); }

  json parse_small(std::string_view raw) const {
    try {
      return json::parse(raw.begin(), raw.end());
    } catch (const json::exception& e) {
      malformed(std::string("malformed JSON: ") + e.what());
    }
  }

  // A JSON value that must be a string, a bool, ...; `where` names it in messages.
  std::string get_string(const json& j, const char* key, const std::string& where) const {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) malformed(where + ": \"" + key + "\" must be a string");
    return it->get<std::string>();
  }
  bool get_bool(const json& j, const char* key, bool fallback, const std::string& where) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) malformed(where + ": \"" + key + "\" must be true or false");
    return it->get<bool>();
  }

  void read_vocab(size_t offset, size_t bytes) {
    js.seek(offset);
    if (js.peek() != '{') malformed("model.vocab is not an object");
    def.vocab.reserve(bytes / 16 + 16, bytes);
    js.read_object([&](std::string_view token) {
      const char c = js.peek();
      if (c != '-' && (c < '0' || c > '9'))
        malformed("model.vocab: the id of \"" + std::string(token) + "\" is not a number");
      const int64_t id = js.read_integer();
      if (id < 0 || id >= kMaxTokenId)
        malformed("model.vocab: id " + std::to_string(id) + " of \"" + std::string(token) + "\" is out of range");
      if (!def.vocab.add(token, int32_t(id)))
        malformed("model.vocab: id " + std::to_string(id) + " is given to two tokens");
    });
    std::string duplicate;
    if (!def.vocab.build_index(duplicate)) malformed("model.vocab: token \"" + duplicate + "\" appears twice");
  }

  void read_merges(size_t offset, size_t bytes) {
    js.seek(offset);
    if (js.peek() != '[') malformed("model.merges is not an array");
    def.merges.reserve(bytes / 12 + 16);
    std::string scratch_a, scratch_b, joined;
    size_t index = 0;
    auto bad = [&](const char* why) { malformed("model.merges[" + std::to_string(index) + "]: " + why); };
    js.read_array([&] {
      std::string_view a, b;
      if (js.peek() == '"') {
        // "a b": exactly one space (tokenizers refuses any other count).
        const std::string_view s = js.read_string(scratch_a);
        const size_t space = s.find(' ');
        if (space == std::string_view::npos || s.find(' ', space + 1) != std::string_view::npos)
          bad("a merge string must be two tokens separated by one space");
        a = s.substr(0, space);
        b = s.substr(space + 1);
      } else if (js.peek() == '[') {
        js.expect('[');
        if (js.peek() != '"') bad("a merge pair must hold two strings");
        a = js.read_string(scratch_a);
        if (!js.consume(',') || js.peek() != '"') bad("a merge pair must hold two strings");
        b = js.read_string(scratch_b);
        if (!js.consume(']')) bad("a merge pair must hold two strings");
      } else {
        bad("a merge must be a string \"a b\" or a pair [\"a\", \"b\"]");
      }
      joined.assign(a.data(), a.size());
      joined.append(b.data(), b.size());
      const std::string_view parts[3] = {a, b, joined};
      int32_t ids[3];
      def.vocab.find_batch(parts, 3, ids);
      const BpeMerge m{ids[0], ids[1], ids[2]};
      if (m.left < 0) bad(("token \"" + std::string(a) + "\" is not in the vocabulary").c_str());
      if (m.right < 0) bad(("token \"" + std::string(b) + "\" is not in the vocabulary").c_str());
      if (m.merged < 0) bad(("the merged token \"" + joined + "\" is not in the vocabulary").c_str());
      def.merges.push_back(m);
      ++index;
    });
  }

  void read_model_options(const json& options) {
    if (auto it = options.find("type"); it != options.end() && !(it->is_string() && it->get<std::string>() == "BPE"))
      unsupported("model type " + it->dump());
    if (auto it = options.find("dropout");
        it != options.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0.0))
      unsupported("BPE dropout " + it->dump());
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (auto it = options.find(key);
          it != options.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
        unsupported(std::string(key) + " " + it->dump());
    def.ignore_merges = get_bool(options, "ignore_merges", false, "model");
    def.unknown.fuse = get_bool(options, "fuse_unk", false, "model");
    if (auto it = options.find("unk_token"); it != options.end() && !it->is_null()) {
      if (!it->is_string()) malformed("model.unk_token must be a string or null");
      def.unknown.id = def.vocab.find(it->get<std::string>());
      if (def.unknown.id < 0) malformed("model.unk_token " + it->dump() + " is not in the vocabulary");
    }
    // Byte fallback only acts on characters outside the vocabulary; a complete byte-level
    // alphabet has none, so it is harmless there and refused otherwise.
    if (get_bool(options, "byte_fallback", false, "model"))
      for (int b = 0; b < 256; ++b)
        if (def.vocab.find(byte_level_char(uint8_t(b))) < 0)
          unsupported("byte_fallback with an incomplete byte alphabet");
  }

  void read_normalizer(const json& n) {
    if (n.is_null()) return;
    if (!n.is_object()) malformed("normalizer must be an object or null");
    const std::string type = get_string(n, "type", "normalizer");
    if (type == "NFC") {
      def.nfc = true;
    } else if (type == "Sequence") {
      auto it = n.find("normalizers");
      if (it == n.end() || !it->is_array()) malformed("normalizer Sequence needs a \"normalizers\" array");
      for (const json& step : *it) read_normalizer(step);
    } else {
      unsupported("normalizer " + type);
    }
  }

  // Flattens nested Sequences into the list of steps.
  void collect_pre_tokenizer_steps(const json& p, std::vector<json>& steps) {
    if (p.is_null()) return;
    if (!p.is_object()) malformed("pre_tokenizer must be an object or null");
    if (get_string(p, "type", "pre_tokenizer") == "Sequence") {
      auto it = p.find("pretokenizers");
      if (it == p.end() || !it->is_array()) malformed("pre_tokenizer Sequence needs a \"pretokenizers\" array");
      for (const json& step : *it) collect_pre_tokenizer_steps(step, steps);
    } else {
      steps.push_back(p);
    }
  }

  void read_pre_tokenizer(const json& p) {
    std::vector<json> steps;
    collect_pre_tokenizer_steps(p, steps);
    // Supported: [Split(Isolated)] then ByteLevel without its own regex or prefix space.
    const bool shape_ok = !steps.empty() && steps.size() <= 2 && steps.back().at("type") == "ByteLevel" &&
                          (steps.size() == 1 || steps.front().at("type") == "Split");
    if (!shape_ok) unsupported("pre_tokenizer " + p.dump().substr(0, 200));
    const json& byte_level = steps.back();
    if (get_bool(byte_level, "use_regex", true, "pre_tokenizer ByteLevel"))
      unsupported("ByteLevel pre-tokenizer with use_regex (its built-in GPT-2 regex)");
    if (get_bool(byte_level, "add_prefix_space", true, "pre_tokenizer ByteLevel"))
      unsupported("ByteLevel pre-tokenizer with add_prefix_space");
    if (steps.size() == 1) return;
    const json& split = steps.front();
    const std::string behavior = get_string(split, "behavior", "pre_tokenizer Split");
    if (behavior != "Isolated") unsupported("Split behavior " + behavior);
    if (get_bool(split, "invert", false, "pre_tokenizer Split")) unsupported("Split with invert");
    auto pattern = split.find("pattern");
    if (pattern == split.end() || !pattern->is_object()) malformed("pre_tokenizer Split needs a \"pattern\" object");
    if (pattern->contains("Regex")) {
      def.split_pattern = get_string(*pattern, "Regex", "pre_tokenizer Split pattern");
    } else {
      def.split_pattern = get_string(*pattern, "String", "pre_tokenizer Split pattern");
      def.split_literal = true;
    }
    def.has_split = true;
  }

  void read_added_tokens(const json& list) {
    if (list.is_null()) return;
    if (!list.is_array()) malformed("added_tokens must be an array");
    std::unordered_map<std::string, size_t> index_of;  // content -> position in def.added
    const int64_t vocab_len = int64_t(def.vocab.size());
    int64_t max_id = -1;
    for (size_t i = 0; i < list.size(); ++i) {
      const json& t = list[i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      if (!t.is_object()) malformed(where + " must be an object");
      AddedToken tok;
      tok.content = get_string(t, "content", where);
      tok.special = get_bool(t, "special", false, where);
      tok.normalized = get_bool(t, "normalized", true, where);
      tok.single_word = get_bool(t, "single_word", false, where);
      tok.lstrip = get_bool(t, "lstrip", false, where);
      tok.rstrip = get_bool(t, "rstrip", false, where);
      if (auto id = t.find("id"); id == t.end() || !id->is_number_integer())
        malformed(where + ": \"id\" must be an integer");
      if (tok.content.empty()) continue;  // tokenizers ignores empty added tokens
      if (auto it = index_of.find(tok.content); it != index_of.end()) {
        tok.id = def.added[it->second].id;  // a repeated token keeps its id, takes the new flags
        def.added[it->second] = tok;
        continue;
      }
      // The id tokenizers gives on load (the file's "id" is only checked against it there).
      const int32_t in_vocab = def.vocab.find(tok.content);
      if (in_vocab >= 0)
        tok.id = in_vocab;
      else if (max_id < 0)
        tok.id = int32_t(vocab_len);
      else
        tok.id = int32_t(max_id >= vocab_len || vocab_len == 0 ? max_id + 1 : vocab_len);
      if (tok.id >= kMaxTokenId) malformed(where + ": too many tokens");
      max_id = std::max<int64_t>(max_id, tok.id);
      index_of[tok.content] = def.added.size();
      def.added.push_back(std::move(tok));
    }
  }

  TokenizerDefinition run() {
    const size_t bad_utf8 = find_invalid_utf8(text);
    if (bad_utf8 != std::string::npos) malformed("not valid UTF-8 (byte " + std::to_string(bad_utf8) + ")");

    struct Span {
      size_t offset = 0, size = 0;
      bool present = false;
    } vocab, merges;
    bool have_model = false;
    json model_options = json::object(), added = nullptr, normalizer = nullptr, pre_tokenizer = nullptr;
    auto span_of = [&](std::string_view raw) { return Span{size_t(raw.data() - text.data()), raw.size(), true}; };

    if (js.peek() != '{') js.fail("expected '{' (a tokenizer.json object)");
    js.read_object([&](std::string_view key) {
      if (key == "model") {
        have_model = true;
        if (js.peek() != '{') malformed("\"model\" is not an object");
        js.read_object([&](std::string_view model_key) {
          if (model_key == "vocab")
            vocab = span_of(js.skip_value());
          else if (model_key == "merges")
            merges = span_of(js.skip_value());
          else
            model_options[std::string(model_key)] = parse_small(js.skip_value());
        });
      } else if (key == "added_tokens") {
        added = parse_small(js.skip_value());
      } else if (key == "normalizer") {
        normalizer = parse_small(js.skip_value());
      } else if (key == "pre_tokenizer") {
        pre_tokenizer = parse_small(js.skip_value());
      } else {
        js.skip_value();
      }
    });
    js.expect_end();
    if (!have_model) malformed("no \"model\" section");
    if (!vocab.present) malformed("no \"model.vocab\"");
    if (!merges.present) malformed("no \"model.merges\"");

    read_vocab(vocab.offset, vocab.size);
    read_merges(merges.offset, merges.size);
    read_model_options(model_options);
    read_normalizer(normalizer);
    read_pre_tokenizer(pre_tokenizer);
    read_added_tokens(added);
    return std::move(def);
  }
};

}  // namespace

TokenizerDefinition parse_tokenizer_json(const std::string& text, const std::string& path) {
  return Loader(text, path).run();
}

TokenizerDefinition read_tokenizer_json(const std::string& path) {
  return parse_tokenizer_json(read_text_file(path), path);
}

}  // namespace moss
