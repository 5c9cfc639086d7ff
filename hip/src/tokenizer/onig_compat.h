// tokenizers compiles the pre-tokenizer pattern with Oniguruma (Unicode 16.0 in tokenizers
// 0.23); the engine uses PCRE2, whose Unicode tables may be older (10.42: Unicode 14.0) and
// whose \s also takes U+180E MONGOLIAN VOWEL SEPARATOR (a format character since Unicode
// 6.3, not white space for Oniguruma). This rewrites a pattern so PCRE2 in UTF + UCP mode
// matches the same characters:
//   \s, \S        -> Unicode White_Space exactly (U+180E excluded / included);
//   \p{L} \p{M} \p{N} (and \pL ...) -> PCRE2's class plus the code points Unicode 15.0 to
//                    16.0 added to it.
// Inside a character class the replacement is spliced into that class. Everything else
// passes through unchanged.
#pragma once
#include <string>

namespace moss {

std::string oniguruma_to_pcre2(const std::string& pattern);

}  // namespace moss
