#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "util/error.h"

namespace moss {

bool is_trivially_nfc(std::string_view text) {
  // 0xCC 0x80 is U+0300, the first combining mark; every lead byte below 0xCC starts a code
  // point below it.
  for (unsigned char c : text)
    if (c >= 0xcc) return false;
  return true;
}

std::string nfc(std::string_view text) {
  if (is_trivially_nfc(text)) return std::string(text);
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          utf8proc_ssize_t(text.size()), &out, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (n < 0) throw usage_error(std::string("text cannot be normalised: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), size_t(n));
}

}  // namespace moss
