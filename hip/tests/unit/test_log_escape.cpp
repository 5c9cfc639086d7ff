// The one escaping of log lines (util/log_text.h, issue 50): whatever a client sends, a log line
// stays one line and moves no cursor; readable text is kept as it is.
#include <gtest/gtest.h>

#include <string>

#include "util/log_text.h"

using moss::log_escape;

TEST(LogEscape, EveryControlCharacterIsVisible) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string out = log_escape(std::string("a") + char(c) + "b");
    EXPECT_EQ(out.front(), 'a');
    EXPECT_EQ(out.back(), 'b');
    EXPECT_GT(out.size(), 3u) << c;
    for (char k : out) EXPECT_GE(static_cast<unsigned char>(k), 0x20) << c;
  }
  EXPECT_EQ(log_escape("x\ny"), "x\\ny");
  EXPECT_EQ(log_escape("x\r\ty"), "x\\r\\ty");
  EXPECT_EQ(log_escape("\x1b[2J"), "\\e[2J");
  EXPECT_EQ(log_escape(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(log_escape("\x7f"), "\\x7f");
  EXPECT_EQ(log_escape("\xc2\x9b" "31m"), "\\u009b31m");  // C1 CSI
  EXPECT_EQ(log_escape("\xc2\x85"), "\\u0085");           // C1 NEL
}

TEST(LogEscape, InvalidUtf8ByteByByte) {
  EXPECT_EQ(log_escape("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(log_escape("\xc3"), "\\xc3");                  // cut short
  EXPECT_EQ(log_escape("\xc0\xaf"), "\\xc0\\xaf");         // overlong '/'
  EXPECT_EQ(log_escape("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(log_escape("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

TEST(LogEscape, ReadableTextUnchanged) {
  for (const char* s : {"", "plain", "sampler 'DPM++ 2M'", "C:\\path\\n", "é ü 画像 🙂", "\xc2\xa0nbsp", "tab-free"})
    EXPECT_EQ(log_escape(s), s);
}
