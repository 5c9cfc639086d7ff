// The tokenizer's parts against behaviour checked with Hugging Face `tokenizers` 0.23 (the
// full-coverage comparison is moss-check on the case files; these pin each rule alone).
#include <gtest/gtest.h>

#include <fstream>

#include "test_tokenizer_support.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_scanner.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

using moss::Tokenizer;
using moss_test::small_tokenizer_json;
using moss_test::tiny_tokenizer;
using moss_test::tokenizer_from;
using Ids = std::vector<int32_t>;

namespace {

Ids concat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const Ids& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// The pieces the tiny tokenizer's own pre-tokenizer regex cuts `text` into.
std::vector<std::string> pieces(const std::string& text) {
  static const moss::TokenizerDefinition def = moss::read_tokenizer_json(moss_test::tiny_tokenizer_path());
  static const moss::RegexSplitter splitter(def.split_pattern, def.split_literal, "tiny");
  std::vector<moss::PieceSpan> spans;
  splitter.split(text, spans);
  std::vector<std::string> out;
  for (const auto& s : spans) out.push_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

moss::ExitCode error_code_of(const std::function<void()>& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const moss::Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return moss::ExitCode::Ok;
}

}  // namespace

TEST(Tokenizer, TinyVocabularyEncodesAGoldenSentence) {
  const Tokenizer& tok = tiny_tokenizer();
  EXPECT_EQ(tok.encode("a red apple on a wooden table"), (Ids{64, 5227, 6505, 653, 268, 6918, 2965}));
  EXPECT_EQ(tok.vocab_size(), 12033u);
  EXPECT_EQ(tok.token_id("<|im_start|>"), 12001);
  EXPECT_EQ(tok.token_id("Ċ"), 198);
  EXPECT_EQ(tok.token_id("no such token"), -1);
  EXPECT_TRUE(tok.encode("").empty());
}

TEST(Tokenizer, AddedTokensAreCutWholeFromTheRawText) {
  const Tokenizer& tok = tiny_tokenizer();
  EXPECT_EQ(tok.encode("a<|im_end|>b"), concat({tok.encode("a"), {12002}, tok.encode("b")}));
  EXPECT_EQ(tok.encode("<think>x</think>"), concat({{12024}, tok.encode("x"), {12025}}));
  // A token glued to words on both sides is still cut out.
  EXPECT_EQ(tok.encode("ab<|im_start|>cd"), concat({tok.encode("ab"), {12001}, tok.encode("cd")}));
  // An incomplete token is plain text.
  const Ids partial = tok.encode("<|im_start");
  EXPECT_EQ(std::count(partial.begin(), partial.end(), 12001), 0);
  // Matching happens before NFC: a combining mark after a token does not join it.
  EXPECT_EQ(tok.encode("<|im_start|>\u0301"), concat({{12001}, tok.encode("\u0301")}));
}

TEST(AddedTokenMatcher, LeftmostLongestAndFlags) {
  auto token = [](int32_t id, const char* content) {
    moss::AddedToken t;
    t.id = id;
    t.content = content;
    return t;
  };
  auto segments = [](const moss::AddedTokenMatcher& m, const std::string& text) {
    std::vector<moss::TextSegment> s;
    m.split(text, s);
    std::vector<std::string> out;
    for (const auto& x : s)
      out.push_back((x.id >= 0 ? std::to_string(x.id) + ":" : "") + text.substr(x.begin, x.end - x.begin));
    return out;
  };
  moss::AddedTokenMatcher plain({token(1, "<a>"), token(2, "<a><b>"), token(3, "b>")});
  EXPECT_EQ(segments(plain, "x<a><b>b>y"), (std::vector<std::string>{"x", "2:<a><b>", "3:b>", "y"}));
  EXPECT_EQ(segments(plain, "<a><b"), (std::vector<std::string>{"1:<a>", "<b"}));

  // Flag behaviour as tokenizers 0.23 shows it.
  moss::AddedToken l = token(10, "<L>"), r = token(11, "<R>"), w = token(12, "zqj");
  l.lstrip = true;
  r.rstrip = true;
  w.single_word = true;
  moss::AddedTokenMatcher flagged({l, r, w});
  EXPECT_EQ(segments(flagged, "b  <L>b"), (std::vector<std::string>{"b", "10:  <L>", "b"}));
  EXPECT_EQ(segments(flagged, "<R>\u0085x"), (std::vector<std::string>{"11:<R>\u0085", "x"}));  // U+0085 is white space
  EXPECT_EQ(segments(flagged, "<R>  <L>x"), (std::vector<std::string>{"11:<R>  ", "10:<L>", "x"}));
  EXPECT_EQ(segments(flagged, "-zqj-"), (std::vector<std::string>{"-", "12:zqj", "-"}));
  EXPECT_EQ(segments(flagged, "bzqj"), (std::vector<std::string>{"bzqj"}));
  EXPECT_EQ(segments(flagged, "zqj_"), (std::vector<std::string>{"zqj_"}));
  EXPECT_EQ(segments(flagged, "\u0301zqj"), (std::vector<std::string>{"\u0301zqj"}));  // marks are word characters
  EXPECT_EQ(segments(flagged, "x\u00a0zqj"), (std::vector<std::string>{"x\u00a0", "12:zqj"}));
}

TEST(Tokenizer, AddedTokenIdsFollowTokenizersNotTheFile) {
  // tokenizers ignores the "id" written in the file: a token already in the vocabulary gets
  // its id, the others the next free id after the vocabulary.
  auto j = small_tokenizer_json({"a", "b", "Ġ"}, {});
  j["added_tokens"] =
      nlohmann::json::array({{{"id", 99}, {"content", "<x>"}, {"special", true}, {"normalized", false}},
                             {{"id", 5}, {"content", "a"}, {"special", false}, {"normalized", false}},
                             {{"id", 7}, {"content", "<y>"}, {"special", true}, {"normalized", false}}});
  const Tokenizer tok = tokenizer_from(j);
  EXPECT_EQ(tok.encode("<x>a<y>b"), (Ids{3, 0, 4, 1}));
  EXPECT_EQ(tok.vocab_size(), 5u);
}

TEST(Tokenizer, NormalisesToNfcLikeTokenizers) {
  EXPECT_EQ(moss::nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(moss::nfc("\u1100\u1161"), "\uac00");         // Hangul jamo compose
  EXPECT_EQ(moss::nfc("e\u0301\u0327"), "\u0229\u0301");  // reordered (202 before 230), then composed
  EXPECT_EQ(moss::nfc("plain ascii"), "plain ascii");
  // U+0898 got combining class 230 in Unicode 14; tokenizers' tables predate it, so it
  // stays an inert starter and nothing around it is reordered.
  EXPECT_TRUE(moss::is_nfc_inert_for_tokenizers(0x898));
  EXPECT_FALSE(moss::is_nfc_inert_for_tokenizers(0x301));
  EXPECT_EQ(moss::nfc("e\u0898\u0327"), "e\u0898\u0327");
  EXPECT_EQ(moss::nfc("e\u0301\u0898e\u0301"), "\u00e9\u0898\u00e9");
  const Tokenizer& tok = tiny_tokenizer();
  EXPECT_EQ(tok.encode("e\u0301"), tok.encode("\u00e9"));
  EXPECT_EQ(tok.encode("e\u0301"), (Ids{2100}));
}

TEST(PreTokenizerRegex, Contractions) {
  EXPECT_EQ(pieces("I'M HERE, it'S"), (std::vector<std::string>{"I", "'M", " HERE", ",", " it", "'S"}));
  EXPECT_EQ(pieces("don't"), (std::vector<std::string>{"don", "'t"}));
  EXPECT_EQ(pieces("we'LL 'Ve"), (std::vector<std::string>{"we", "'LL", " '", "Ve"}));
}

TEST(PreTokenizerRegex, DigitsOneByOne) {
  EXPECT_EQ(pieces("12345 67"), (std::vector<std::string>{"1", "2", "3", "4", "5", " ", "6", "7"}));
  EXPECT_EQ(pieces("1st"), (std::vector<std::string>{"1", "st"}));
}

TEST(PreTokenizerRegex, WhitespaceRunsBeforeNewlines) {
  EXPECT_EQ(pieces("a  \n  b"), (std::vector<std::string>{"a", "  \n", " ", " b"}));
  EXPECT_EQ(pieces("hello!!!\n\nworld"), (std::vector<std::string>{"hello", "!!!\n\n", "world"}));
  EXPECT_EQ(pieces("\r\n\r\nx"), (std::vector<std::string>{"\r\n\r\n", "x"}));
  EXPECT_EQ(pieces("x\n"), (std::vector<std::string>{"x", "\n"}));
}

TEST(PreTokenizerRegex, WhitespaceNotFollowedByNonSpace) {
  // \s+(?!\S): a run before a word leaves its last space to the word.
  EXPECT_EQ(pieces("a   b"), (std::vector<std::string>{"a", "  ", " b"}));
  EXPECT_EQ(pieces("a   "), (std::vector<std::string>{"a", "   "}));
  EXPECT_EQ(pieces("\t\tx"), (std::vector<std::string>{"\t", "\tx"}));
  EXPECT_EQ(pieces("x\u00a0\u00a0y"), (std::vector<std::string>{"x", "\u00a0", "\u00a0y"}));
}

TEST(PreTokenizerRegex, UnicodeClassesMatchOniguruma) {
  EXPECT_EQ(pieces("e\u0301t"), (std::vector<std::string>{"e\u0301t"}));  // marks join letters
  EXPECT_EQ(pieces(" ?!"), (std::vector<std::string>{" ?!"}));
  // U+180E is not white space for Oniguruma (PCRE2's \s would take it).
  EXPECT_EQ(pieces("a\u180eb"), (std::vector<std::string>{"a", "\u180eb"}));
  // U+1C89 became a letter in Unicode 16 (PCRE2 10.42 knows Unicode 14 only).
  EXPECT_EQ(pieces("x\u1c89y"), (std::vector<std::string>{"x\u1c89y"}));
}

TEST(Bpe, MergesApplyByRank) {
  const std::vector<std::string> vocab = {"a", "b", "c", "ab", "bc", "abc"};
  EXPECT_EQ(tokenizer_from(small_tokenizer_json(vocab, {{"b", "c"}, {"a", "b"}})).encode("abc"), (Ids{0, 4}));
  EXPECT_EQ(tokenizer_from(small_tokenizer_json(vocab, {{"a", "b"}, {"b", "c"}})).encode("abc"), (Ids{3, 2}));
  EXPECT_EQ(tokenizer_from(small_tokenizer_json(vocab, {{"b", "c"}, {"a", "bc"}})).encode("abc"), (Ids{5}));
  EXPECT_EQ(tokenizer_from(small_tokenizer_json(vocab, {{"a", "b"}, {"ab", "c"}})).encode("abc"), (Ids{5}));
}

TEST(Bpe, EqualRanksMergeLeftmostFirst) {
  const std::vector<std::string> vocab = {"a", "aa", "aaaa"};
  EXPECT_EQ(tokenizer_from(small_tokenizer_json(vocab, {{"a", "a"}})).encode("aaa"), (Ids{1, 0}));
  EXPECT_EQ(tokenizer_from(small_tokenizer_json(vocab, {{"a", "a"}, {"aa", "aa"}})).encode("aaaaa"), (Ids{2, 0}));
}

TEST(Bpe, BothMergeFormsReadTheSame) {
  const std::vector<std::string> vocab = {"a", "b", "Ġ", "ab", "Ġa", "Ġab"};
  const std::vector<std::pair<std::string, std::string>> merges = {{"Ġ", "a"}, {"Ġa", "b"}, {"a", "b"}};
  const Ids pairs = tokenizer_from(small_tokenizer_json(vocab, merges, false)).encode(" ab ab");
  EXPECT_EQ(pairs, (Ids{5, 5}));
  EXPECT_EQ(tokenizer_from(small_tokenizer_json(vocab, merges, true)).encode(" ab ab"), pairs);
}

TEST(Bpe, LongRunsStayFastAndLossless) {
  // 20,000 identical letters are one pre-token: the merge loop must not rescan it per merge.
  const Tokenizer& tok = tiny_tokenizer();
  for (const std::string& text : {std::string(20000, 'x'), std::string(9000, ' ') + "y", std::string(5000, '!')}) {
    const Ids ids = tok.encode(text);
    EXPECT_LT(ids.size(), text.size());
    EXPECT_EQ(tok.decode(ids), text);
  }
}

TEST(Tokenizer, DecodeInvertsEncode) {
  const Tokenizer& tok = tiny_tokenizer();
  for (const char* text :
       {"A photo of a cat, 4k.\n\n  Zweite Zeile — über", "<|im_start|>user\n一只猫<|im_end|>", "🍎 \t\r\n"})
    EXPECT_EQ(tok.decode(tok.encode(text)), text);
  EXPECT_EQ(tok.token(12001), "<|im_start|>");
  EXPECT_EQ(tok.token(198), "Ċ");
}

TEST(Tokenizer, InvalidUtf8IsAUsageError) {
  const Tokenizer& tok = tiny_tokenizer();
  for (const char* bad : {"\xff", "ok \xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                          "a\x80"
                          "b"}) {
    std::string message;
    EXPECT_EQ(error_code_of([&] { tok.encode(bad); }, &message), moss::ExitCode::Usage) << bad;
    EXPECT_NE(message.find("UTF-8"), std::string::npos);
  }
}

TEST(Utf8, Validation) {
  EXPECT_EQ(moss::find_invalid_utf8("plain ascii text, long enough for the fast path"), std::string::npos);
  EXPECT_EQ(moss::find_invalid_utf8("\u00e9\u4e2d\U0001f34e"), std::string::npos);
  EXPECT_EQ(moss::find_invalid_utf8("0123456789abcdef\xfe"), 16u);
  EXPECT_EQ(moss::find_invalid_utf8("\xe2\x82"), 0u);  // truncated
  EXPECT_TRUE(moss::is_python_space(0x1c));
  EXPECT_FALSE(moss::is_unicode_white_space(0x1c));
  EXPECT_TRUE(moss::is_unicode_white_space(0x85));
  EXPECT_FALSE(moss::is_python_space(0x180e));
  EXPECT_FALSE(moss::is_python_space(0x200b));
}

TEST(ByteLevel, Gpt2Alphabet) {
  EXPECT_EQ(moss::byte_level_char(' '), "Ġ");
  EXPECT_EQ(moss::byte_level_char('\n'), "Ċ");
  EXPECT_EQ(moss::byte_level_char('a'), "a");
  EXPECT_EQ(moss::byte_level_char(0xad), "Ń");
  std::string all, back;
  for (int b = 0; b < 256; ++b) all += char(b);
  ASSERT_TRUE(moss::byte_level_to_bytes(moss::bytes_to_byte_level(all), back));
  EXPECT_EQ(back, all);
  EXPECT_FALSE(moss::byte_level_to_bytes("<|im_start|>x\u4e2d", back));
}

TEST(JsonScanner, StringsAndErrors) {
  const std::string text = R"({"k": "a\u00e9\ud83c\udf4e\n\"", "n": [1, -2.5e3, true, null]})";
  moss::JsonScanner js(text, "x.json");
  std::string scratch, value;
  std::string raw;
  js.read_object([&](std::string_view key) {
    if (key == "k")
      value = std::string(js.read_string(scratch));
    else
      raw = std::string(js.skip_value());
  });
  js.expect_end();
  EXPECT_EQ(value, "a\u00e9\U0001f34e\n\"");
  EXPECT_EQ(raw, "[1, -2.5e3, true, null]");
  for (const char* bad : {R"({"k": "\ud83c"})", R"({"k": 01})", R"({"k": [1,]})", R"({"k": 1)", "{\"k\": \"a\nb\"}"}) {
    moss::JsonScanner b(bad, "bad.json");
    std::string message;
    EXPECT_EQ(error_code_of(
                  [&] {
                    b.skip_value();
                    b.expect_end();
                  },
                  &message),
              moss::ExitCode::Failure)
        << bad;
    EXPECT_NE(message.find("bad.json"), std::string::npos);
  }
}

TEST(Vocabulary, FindsBothWays) {
  moss::Vocabulary v;
  EXPECT_TRUE(v.add("a", 0));
  EXPECT_TRUE(v.add("Ġthe", 7));
  EXPECT_FALSE(v.add("other", 7));
  std::string duplicate;
  ASSERT_TRUE(v.build_index(duplicate));
  EXPECT_EQ(v.find("Ġthe"), 7);
  EXPECT_EQ(v.find("the"), -1);
  EXPECT_EQ(v.token(7), "Ġthe");
  EXPECT_EQ(v.id_limit(), 8u);
  EXPECT_TRUE(v.add("a", 1));
  EXPECT_FALSE(v.build_index(duplicate));
  EXPECT_EQ(duplicate, "a");
}

// Malformed or unsupported tokenizer.json files are refused (exit 1) naming the file.
TEST(TokenizerJson, MalformedFilesAreRefusedNamingTheFile) {
  auto good = small_tokenizer_json({"a", "b", "ab"}, {{"a", "b"}});
  struct Case {
    std::string text, expect;
  };
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    return j.dump();
  };
  const std::vector<Case> cases = {
      {"this is not JSON", "malformed JSON at line 1, column 1"},
      {"{\"model\": {\"vocab\": {\"a\": 0}", "unexpected end of file"},
      {"[1, 2]", "malformed JSON"},
      {"{}", "no \"model\""},
      {with([](auto& j) { j["model"].erase("vocab"); }), "no \"model.vocab\""},
      {with([](auto& j) { j["model"].erase("merges"); }), "no \"model.merges\""},
      {with([](auto& j) { j["model"]["vocab"]["c"] = "x"; }), "is not a number"},
      {with([](auto& j) { j["model"]["vocab"]["c"] = 0; }), "given to two tokens"},
      {with([](auto& j) {
         j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"a", "z"})});
       }),
       "merges[0]: token \"z\" is not in the vocabulary"},
      {with([](auto& j) {
         j["model"]["merges"] = nlohmann::json::array({"a b", "b a"});
       }),
       "merges[1]: the merged token \"ba\""},
      {with([](auto& j) { j["model"]["merges"] = nlohmann::json::array({"a b c"}); }), "merges[0]: a merge string"},
      {with([](auto& j) {
         j["model"]["merges"] = nlohmann::json::array({nlohmann::json::array({"a", "b", "c"})});
       }),
       "merges[0]: a merge pair"},
      {with([](auto& j) { j["model"]["merges"] = nlohmann::json::array({7}); }), "merges[0]: a merge must be"},
      {with([](auto& j) { j["model"]["type"] = "WordPiece"; }), "unsupported tokenizer: model type"},
      {with([](auto& j) {
         j["normalizer"] = {{"type", "Lowercase"}};
       }),
       "unsupported tokenizer: normalizer Lowercase"},
      {with([](auto& j) { j["pre_tokenizer"]["use_regex"] = true; }), "use_regex"},
      {with([](auto& j) { j["model"]["continuing_subword_prefix"] = "##"; }), "continuing_subword_prefix"},
      {with([](auto& j) {
         j["added_tokens"] = nlohmann::json::array({{{"content", "<x>"}}});
       }),
       "added_tokens[0]: \"id\" must be an integer"},
  };
  for (const Case& c : cases) {
    std::string message;
    EXPECT_EQ(error_code_of([&] { Tokenizer::from_json_text(c.text, "/models/x/tokenizer.json"); }, &message),
              moss::ExitCode::Failure)
        << c.text;
    EXPECT_NE(message.find("/models/x/tokenizer.json"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expect), std::string::npos) << message;
  }
  // A missing file names itself too.
  std::string message;
  EXPECT_EQ(error_code_of([&] { Tokenizer::load("/nonexistent/tokenizer.json"); }, &message), moss::ExitCode::Failure);
  EXPECT_NE(message.find("/nonexistent/tokenizer.json"), std::string::npos);
}

TEST(TokenizerJson, ReadsTheQwenStructure) {
  const moss::TokenizerDefinition def = moss::read_tokenizer_json(moss_test::tiny_tokenizer_path());
  EXPECT_TRUE(def.nfc);
  EXPECT_TRUE(def.has_split);
  EXPECT_FALSE(def.split_literal);
  EXPECT_EQ(def.split_pattern.substr(0, 10), "(?i:'s|'t|");  // taken from the file
  EXPECT_EQ(def.vocab.size(), 12000u);
  EXPECT_EQ(def.merges.size(), 11744u);
  ASSERT_EQ(def.added.size(), 33u);
  EXPECT_EQ(def.added[0].content, "<|endoftext|>");
  EXPECT_EQ(def.added[0].id, 12000);
  EXPECT_TRUE(def.added[0].special);
  EXPECT_FALSE(def.added[24].special);  // <think>
}
