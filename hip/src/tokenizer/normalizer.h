// Unicode NFC (tokenizers' "NFC" normalizer) through utf8proc.
#pragma once
#include <string>
#include <string_view>

namespace moss {

// NFC form of valid UTF-8 text. Text made only of code points below U+0300 is already NFC
// (nothing there decomposes or combines), so it is returned as is without calling utf8proc.
std::string nfc(std::string_view text);
// True when `text` certainly is NFC without looking further (the test above).
bool is_trivially_nfc(std::string_view text);

}  // namespace moss
