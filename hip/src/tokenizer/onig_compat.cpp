#include "tokenizer/onig_compat.h"

namespace moss {

namespace {

// Unicode White_Space, the set Oniguruma's \s matches.
constexpr const char* kWhiteSpaceItems =
    "\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

// Code points that are L, M or N in Unicode 16.0 but were unassigned in Unicode 14.0 (the
// additions of Unicode 15.0, 15.1 and 16.0), as observed from tokenizers 0.23's Oniguruma.
// Adding them to PCRE2's own class is harmless where PCRE2's tables already have them.
constexpr const char* kLetterAdditions =
    "\\x{1C89}-\\x{1C8A}\\x{A7CB}-\\x{A7CD}\\x{A7DA}-\\x{A7DC}\\x{105C0}-\\x{105F3}\\x{10D4A}-\\x{10D65}"
    "\\x{10D6F}-\\x{10D85}\\x{10EC2}-\\x{10EC4}\\x{1123F}-\\x{11240}\\x{11380}-\\x{11389}\\x{1138B}\\x{1138E}"
    "\\x{11390}-\\x{113B5}\\x{113B7}\\x{113D1}\\x{113D3}\\x{11BC0}-\\x{11BE0}\\x{11F02}\\x{11F04}-\\x{11F10}"
    "\\x{11F12}-\\x{11F33}\\x{1342F}\\x{13441}-\\x{13446}\\x{13460}-\\x{143FA}\\x{16100}-\\x{1611D}"
    "\\x{16D40}-\\x{16D6C}\\x{18CFF}\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}\\x{1E030}-\\x{1E06D}"
    "\\x{1E4D0}-\\x{1E4EB}\\x{1E5D0}-\\x{1E5ED}\\x{1E5F0}\\x{2B739}\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}";
constexpr const char* kMarkAdditions =
    "\\x{897}\\x{CF3}\\x{ECE}\\x{10D69}-\\x{10D6D}\\x{10EFC}-\\x{10EFF}\\x{11241}\\x{113B8}-\\x{113C0}\\x{113C2}"
    "\\x{113C5}\\x{113C7}-\\x{113CA}\\x{113CC}-\\x{113D0}\\x{113D2}\\x{113E1}-\\x{113E2}\\x{11F00}-\\x{11F01}"
    "\\x{11F03}\\x{11F34}-\\x{11F3A}\\x{11F3E}-\\x{11F42}\\x{11F5A}\\x{13440}\\x{13447}-\\x{13455}"
    "\\x{1611E}-\\x{1612F}\\x{1E08F}\\x{1E4EC}-\\x{1E4EF}\\x{1E5EE}-\\x{1E5EF}";
constexpr const char* kNumberAdditions =
    "\\x{10D40}-\\x{10D49}\\x{116D0}-\\x{116E3}\\x{11BF0}-\\x{11BF9}\\x{11F50}-\\x{11F59}\\x{16130}-\\x{16139}"
    "\\x{16D70}-\\x{16D79}\\x{1CCF0}-\\x{1CCF9}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}\\x{1E5F1}-\\x{1E5FA}";

const char* additions_for(char category) {
  switch (category) {
    case 'L':
      return kLetterAdditions;
    case 'M':
      return kMarkAdditions;
    case 'N':
      return kNumberAdditions;
    default:
      return nullptr;
  }
}

}  // namespace

std::string oniguruma_to_pcre2(const std::string& p) {
  std::string out;
  out.reserve(p.size() * 4);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == '[' && in_class && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX [:name:]
      const size_t end = p.find(":]", i + 2);
      if (end != std::string::npos) {
        out.append(p, i, end + 2 - i);
        i = end + 1;
        continue;
      }
    }
    if (c == ']' && in_class) {
      in_class = false;
      out += c;
      continue;
    }
    if (c != '\\' || i + 1 >= p.size()) {
      out += c;
      continue;
    }
    const char e = p[i + 1];
    if (e == 's') {
      out += in_class ? std::string(kWhiteSpaceItems) : "[" + std::string(kWhiteSpaceItems) + "]";
      ++i;
      continue;
    }
    if (e == 'S') {  // PCRE2's \S lacks U+180E, which is not white space
      out += in_class ? "\\S\\x{180E}" : "[\\S\\x{180E}]";
      ++i;
      continue;
    }
    if (e == 'p') {
      // \p{X} or \pX with X one of L, M, N: add Unicode 15.0-16.0's code points.
      size_t name_begin = i + 2, name_end = i + 3;
      if (name_begin < p.size() && p[name_begin] == '{') {
        ++name_begin;
        name_end = p.find('}', name_begin);
        if (name_end == std::string::npos) name_end = name_begin;
      }
      const std::string name = p.substr(name_begin, name_end - name_begin);
      const char* extra = name.size() == 1 ? additions_for(name[0]) : nullptr;
      if (extra) {
        const std::string item = "\\p{" + name + "}" + extra;
        out += in_class ? item : "[" + item + "]";
        i = (p[i + 2] == '{' ? name_end : name_end - 1);
        continue;
      }
    }
    out += c;  // any other escape: copied with its next character
    out += e;
    ++i;
  }
  return out;
}

}  // namespace moss
