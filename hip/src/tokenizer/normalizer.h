// Unicode NFC, as tokenizers' "NFC" normalizer computes it, through utf8proc.
//
// tokenizers normalises with the tables of unicode-normalization-alignments, which predate
// Unicode 10: code points given a combining class or a canonical decomposition since then
// are plain starters to it (never reordered, decomposed or composed), while utf8proc (2.8:
// Unicode 15.0) knows them. The text is therefore cut at those code points; the stretches
// between them are normalised by utf8proc and the code points themselves are kept as they
// are. A starter that composes with nothing is a boundary for NFC, so this is exactly what
// tokenizers produces.
#pragma once
#include <string>
#include <string_view>

namespace moss {

// NFC form of valid UTF-8 text, as tokenizers computes it (see above).
std::string nfc(std::string_view text);
// True when `text` certainly is NFC without looking further: every code point is below
// U+0300, where nothing decomposes or combines.
bool is_trivially_nfc(std::string_view text);
// True for the code points tokenizers' NFC leaves alone but utf8proc or later Unicode
// versions would normalise (the table in normalizer.cpp).
bool is_nfc_inert_for_tokenizers(char32_t cp);

}  // namespace moss
