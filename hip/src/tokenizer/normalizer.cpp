#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <memory>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace moss {

namespace {

struct Range {
  char32_t lo, hi;
};

// Code points whose normalisation data tokenizers 0.23 lacks while utf8proc 2.8 or Unicode
// 16-17 has it: the marks and decomposable letters of Unicode 10.0 onwards, plus the two
// Dives Akuru letters (U+11930, U+11935) that utf8proc composes into U+11938. Found by
// comparing tokenizers' NFC and NFD with utf8proc's over every code point that has a
// combining class or decomposition (alone, and next to marks of 13 different classes),
// over every canonical decomposition's recomposition, and by adding the code points
// Unicode 15.1-17 gave such properties.
constexpr Range kInertForTokenizers[] = {
    {0x5C8, 0x5C9},     {0x7FD, 0x7FD},     {0x897, 0x89F},     {0x8CA, 0x8D3},     {0x9FE, 0x9FE},
    {0xC3C, 0xC3C},     {0xD3B, 0xD3C},     {0xEBA, 0xEBA},     {0x1715, 0x1715},   {0x1ABF, 0x1AF0},
    {0x1DF6, 0x1DFA},   {0xA82C, 0xA82C},   {0x105C9, 0x105C9}, {0x105D2, 0x105D2}, {0x105DA, 0x105DA},
    {0x105E4, 0x105E4}, {0x10D24, 0x10D27}, {0x10D69, 0x10D6D}, {0x10EAB, 0x10EAC}, {0x10ECB, 0x10ECF},
    {0x10EF0, 0x10EFB}, {0x10EFD, 0x10EFF}, {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070},
    {0x1133B, 0x1133B}, {0x11382, 0x11385}, {0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x11391},
    {0x113B8, 0x113B8}, {0x113BB, 0x113BB}, {0x113C2, 0x113C2}, {0x113C5, 0x113C5}, {0x113C7, 0x113C9},
    {0x113CE, 0x113D0}, {0x1145E, 0x1145E}, {0x11839, 0x1183A}, {0x11930, 0x11930}, {0x11935, 0x11935},
    {0x11938, 0x11938}, {0x1193D, 0x1193E}, {0x11943, 0x11943}, {0x119E0, 0x119E0}, {0x11A34, 0x11A34},
    {0x11A47, 0x11A47}, {0x11A99, 0x11A99}, {0x11D42, 0x11D42}, {0x11D44, 0x11D45}, {0x11D97, 0x11D97},
    {0x11F41, 0x11F42}, {0x1611E, 0x16129}, {0x1612F, 0x1612F}, {0x16D63, 0x16D63}, {0x16D67, 0x16D6A},
    {0x16FF0, 0x16FF1}, {0x1D127, 0x1D128}, {0x1D250, 0x1D252}, {0x1D25B, 0x1D25C}, {0x1D25F, 0x1D25F},
    {0x1D280, 0x1D281}, {0x1E08F, 0x1E08F}, {0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF},
    {0x1E4EC, 0x1E4EF}, {0x1E5EE, 0x1E5EF}, {0x1E6E3, 0x1E6E3}, {0x1E6E6, 0x1E6E6}, {0x1E6EE, 0x1E6EF},
    {0x1E6F5, 0x1E6F5}};

void append_utf8proc_nfc(std::string_view text, std::string& out) {
  if (text.empty()) return;
  if (is_trivially_nfc(text)) {
    out.append(text.data(), text.size());
    return;
  }
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), utf8proc_ssize_t(text.size()), &mapped,
                   utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) throw usage_error(std::string("text cannot be normalised: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owner(mapped, &std::free);
  out.append(reinterpret_cast<const char*>(mapped), size_t(n));
}

}  // namespace

bool is_nfc_inert_for_tokenizers(char32_t cp) {
  if (cp < kInertForTokenizers[0].lo) return false;
  const Range* end = std::end(kInertForTokenizers);
  const Range* it =
      std::upper_bound(std::begin(kInertForTokenizers), end, cp, [](char32_t c, const Range& r) { return c < r.lo; });
  return it != std::begin(kInertForTokenizers) && cp <= (it - 1)->hi;
}

bool is_trivially_nfc(std::string_view text) {
  // 0xCC 0x80 is U+0300, the first combining mark; every lead byte below 0xCC starts a code
  // point below it.
  for (unsigned char c : text)
    if (c >= 0xcc) return false;
  return true;
}

std::string nfc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t run_begin = 0;
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0xcc) {  // below U+0300: never inert
      ++i;
      continue;
    }
    char32_t cp;
    const size_t n = decode_utf8(text, i, cp);
    if (is_nfc_inert_for_tokenizers(cp)) {
      append_utf8proc_nfc(text.substr(run_begin, i - run_begin), out);
      out.append(text.data() + i, n);
      run_begin = i + n;
    }
    i += n;
  }
  append_utf8proc_nfc(text.substr(run_begin), out);
  return out;
}

}  // namespace moss
