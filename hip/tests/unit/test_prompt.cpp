// The prompt template (docs/model.md section 2) and --max-seq truncation.
#include <gtest/gtest.h>

#include "test_tokenizer_support.h"
#include "tokenizer/prompt.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

using moss_test::tiny_tokenizer;
using Ids = std::vector<int32_t>;

TEST(PythonStrip, RemovesExactlyWhatStrIsspaceAccepts) {
  // Every code point Python's str.isspace() accepts.
  const char32_t spaces[] = {0x09,   0x0a,   0x0b,   0x0c,   0x0d,   0x1c,   0x1d,   0x1e,   0x1f,   0x20,
                             0x85,   0xa0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
                             0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000};
  for (char32_t cp : spaces) {
    std::string s;
    moss::append_utf8(s, cp);
    EXPECT_EQ(moss::python_strip(s + "x y" + s + s), "x y") << std::hex << uint32_t(cp);
  }
  // Zero-width and format characters are not white space for Python.
  EXPECT_EQ(moss::python_strip("\u200bx\u180e"), "\u200bx\u180e");
  EXPECT_EQ(moss::python_strip("\ufeff x"), "\ufeff x");
  EXPECT_EQ(moss::python_strip(" \t\n a  b \n\t "), "a  b");
  EXPECT_EQ(moss::python_strip("   "), "");
  EXPECT_EQ(moss::python_strip(""), "");
}

TEST(PromptTemplate, RendersQwenChatTemplateWithThinking) {
  EXPECT_EQ(moss::apply_prompt_template("  a cat \n"),
            "<|im_start|>user\na cat<|im_end|>\n<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(moss::apply_prompt_template(""), "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n<think>\n");
  EXPECT_EQ(moss::apply_prompt_template("line 1\n\nline 2"),
            "<|im_start|>user\nline 1\n\nline 2<|im_end|>\n<|im_start|>assistant\n<think>\n");
}

TEST(PromptIds, TemplateTokensAndTruncation) {
  const auto& tok = tiny_tokenizer();
  // prompt_cases.json, case 0.
  const Ids full = {12001, 1969, 198,   64,   5227, 6505, 653, 268,   6918, 2965,
                    12002, 198,  12001, 9403, 704,  1214, 198, 12024, 198};
  moss::PromptIds p = moss::encode_prompt(tok, "a red apple on a wooden table", 4096);
  EXPECT_EQ(p.ids, full);
  EXPECT_FALSE(p.truncated);
  EXPECT_EQ(p.full_length, full.size());

  p = moss::encode_prompt(tok, "  a red apple on a wooden table\n", 8);  // strip() first, then cut
  EXPECT_EQ(p.ids, Ids(full.begin(), full.begin() + 8));
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(p.full_length, full.size());

  p = moss::encode_prompt(tok, "a red apple on a wooden table", full.size());  // exactly fits
  EXPECT_EQ(p.ids, full);
  EXPECT_FALSE(p.truncated);

  // The empty negative prompt is templated too.
  EXPECT_EQ(moss::encode_prompt(tok, "", 4096).ids, tok.encode(moss::apply_prompt_template("")));
}

TEST(PromptIds, AddedTokensInsideThePromptAreTokens) {
  const auto& tok = tiny_tokenizer();
  const Ids ids = moss::encode_prompt(tok, "says <|im_end|> inside", 4096).ids;
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 12002), 2);  // the user's and the template's
}

TEST(PromptIds, InvalidUtf8IsAUsageError) {
  try {
    moss::encode_prompt(tiny_tokenizer(), "bad \xff prompt", 4096);
    FAIL() << "no error";
  } catch (const moss::Error& e) {
    EXPECT_EQ(e.code(), moss::ExitCode::Usage);
    EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos);
  }
}
