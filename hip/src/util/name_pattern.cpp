#include "util/name_pattern.h"

#include <algorithm>
#include <stdexcept>

namespace moss {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_part_char(char c) { return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_'; }

// Matches p[pi..] against n[ni..] whole, trying the longest run of each wildcard first and
// backtracking; caps holds the captures made so far (popped again on a dead end).
bool match_from(std::string_view p, size_t pi, std::string_view n, size_t ni, std::vector<std::string_view>* caps) {
  while (pi < p.size()) {
    const char c = p[pi];
    if (c == '#' || c == '?' || c == '*') {
      size_t end = ni;
      if (c == '*')
        while (end < n.size() && n[end] != '\n' && n[end] != '\r') ++end;
      else
        while (end < n.size() && (c == '#' ? is_digit(n[end]) : is_part_char(n[end]))) ++end;
      const size_t shortest = c == '*' ? ni : ni + 1;
      for (size_t e = end + 1; e-- > shortest;) {
        if (caps) caps->push_back(n.substr(ni, e - ni));
        if (match_from(p, pi + 1, n, e, caps)) return true;
        if (caps) caps->pop_back();
      }
      return false;
    }
    if (c == '{') {
      const size_t close = p.find('}', pi);
      if (close == std::string_view::npos) throw std::logic_error("name pattern without '}': " + std::string(p));
      for (size_t a = pi + 1; a <= close;) {
        size_t bar = p.find('|', a);
        if (bar == std::string_view::npos || bar > close) bar = close;
        const std::string_view alt = p.substr(a, bar - a);
        if (n.substr(ni, alt.size()) == alt) {
          if (caps) caps->push_back(n.substr(ni, alt.size()));
          if (match_from(p, close + 1, n, ni + alt.size(), caps)) return true;
          if (caps) caps->pop_back();
        }
        a = bar + 1;
      }
      return false;
    }
    if (ni >= n.size() || n[ni] != c) return false;
    ++pi;
    ++ni;
  }
  return ni == n.size();
}

}  // namespace

NamePattern::NamePattern(std::string pattern) : pattern_(std::move(pattern)) {}

bool NamePattern::match(std::string_view name, std::vector<std::string_view>* captures) const {
  if (captures) {
    captures->clear();
    captures->push_back(name);
  }
  return match_from(pattern_, 0, name, 0, captures);
}

bool NamePattern::match_any_part(std::string_view name) const {
  // The parts before the start may hold no line break: '*' never crosses one either.
  const size_t line_break = std::min(name.find('\n'), name.find('\r'));
  for (size_t start = 0;;) {
    if (match_from(pattern_, 0, name.substr(start), 0, nullptr)) return true;
    const size_t dot = name.find('.', start);
    if (dot == std::string_view::npos || dot > line_break) return false;
    start = dot + 1;
  }
}

std::string expand_captures(const std::string& format, const std::vector<std::string_view>& captures) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '$' && i + 1 < format.size() && is_digit(format[i + 1])) {
      const size_t k = size_t(format[++i] - '0');
      if (k >= captures.size()) throw std::logic_error("name format '" + format + "' uses $" + std::to_string(k));
      out += captures[k];
    } else {
      out += format[i];
    }
  }
  return out;
}

}  // namespace moss
