// GPT-2's byte-to-unicode table, which byte-level BPE vocabularies are written in: the
// printable bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for themselves, every
// other byte b maps to U+0100 + (its rank among those other bytes). Vocabulary entries are
// turned back into raw bytes once at load, so encoding works on the text's own bytes.
#pragma once
#include <string>
#include <string_view>

namespace moss {

// UTF-8 form of the character that stands for byte b.
const std::string& byte_level_char(unsigned char b);

// Raw bytes of a byte-level string (e.g. "Ġp" -> " p"). Returns false when the string holds
// a character outside the 256-character alphabet (such a token can never come out of BPE).
bool byte_level_to_bytes(std::string_view token, std::string& bytes);

// Byte-level form of raw bytes (the inverse of byte_level_to_bytes).
std::string bytes_to_byte_level(std::string_view bytes);

}  // namespace moss
