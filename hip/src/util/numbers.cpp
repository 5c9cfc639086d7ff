#include "util/numbers.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace moss {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "[-]digits" and nothing else; returns false for anything strtoull would bend.
bool well_formed_integer(const std::string& t, bool sign_allowed) {
  size_t i = 0;
  if (sign_allowed && i < t.size() && t[i] == '-') ++i;
  if (i == t.size()) return false;
  for (; i < t.size(); ++i)
    if (!is_digit(t[i])) return false;
  return true;
}

// Magnitude of a digit string, saturating: `overflow` is set when it exceeds 2^64-1.
uint64_t digits_value(const char* p, const char* end, bool& overflow) {
  uint64_t v = 0;
  overflow = false;
  for (; p != end; ++p) {
    const uint64_t d = uint64_t(*p - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) {
      overflow = true;
      return std::numeric_limits<uint64_t>::max();
    }
    v = v * 10 + d;
  }
  return v;
}

}  // namespace

ParsedInt parse_strict_int(const std::string& t, int64_t lo, int64_t hi) {
  ParsedInt r;
  if (!well_formed_integer(t, true)) {
    r.error = NumberError::NotANumber;
    return r;
  }
  const bool negative = t[0] == '-';
  if (negative && lo >= 0) {  // no sign where no negative value is allowed, not even "-0"
    r.error = NumberError::OutOfRange;
    return r;
  }
  bool overflow = false;
  const uint64_t mag = digits_value(t.data() + (negative ? 1 : 0), t.data() + t.size(), overflow);
  const uint64_t limit = negative ? uint64_t(std::numeric_limits<int64_t>::max()) + 1
                                  : uint64_t(std::numeric_limits<int64_t>::max());
  if (overflow || mag > limit) {
    r.error = NumberError::OutOfRange;
    return r;
  }
  r.value = negative ? int64_t(0 - mag) : int64_t(mag);
  if (r.value < lo || r.value > hi) r.error = NumberError::OutOfRange;
  return r;
}

ParsedUint parse_strict_uint(const std::string& t) {
  ParsedUint r;
  if (!well_formed_integer(t, false)) {
    r.error = NumberError::NotANumber;
    return r;
  }
  bool overflow = false;
  r.value = digits_value(t.data(), t.data() + t.size(), overflow);
  if (overflow) r.error = NumberError::OutOfRange;
  return r;
}

ParsedDecimal parse_strict_decimal(const std::string& t, double lo, double hi) {
  ParsedDecimal r;
  size_t i = 0, digits = 0;
  if (i < t.size() && t[i] == '-') {
    if (lo >= 0) {  // "-0" would read as -0.0, which compares equal to 0
      r.error = NumberError::OutOfRange;
      return r;
    }
    ++i;
  }
  for (; i < t.size() && is_digit(t[i]); ++i) ++digits;
  if (i < t.size() && t[i] == '.')
    for (++i; i < t.size() && is_digit(t[i]); ++i) ++digits;
  if (digits == 0 || i != t.size()) {
    r.error = NumberError::NotANumber;
    return r;
  }
  // The text is plain decimal now, which strtod reads exactly as written (to the nearest
  // double); ERANGE is an underflow of a value with hundreds of digits.
  errno = 0;
  char* end = nullptr;
  r.value = std::strtod(t.c_str(), &end);
  if (errno == ERANGE || !std::isfinite(r.value) || !(r.value >= lo && r.value <= hi))
    r.error = NumberError::OutOfRange;
  return r;
}

ParsedInt checked_int(int64_t value, int64_t lo, int64_t hi) {
  ParsedInt r;
  r.value = value;
  if (value < lo || value > hi) r.error = NumberError::OutOfRange;
  return r;
}

ParsedInt checked_int(double value, int64_t lo, int64_t hi) {
  ParsedInt r;
  if (!std::isfinite(value) || std::trunc(value) != value) {
    r.error = NumberError::NotANumber;
    return r;
  }
  // Beyond +-2^63 no int64 holds it: out of range whatever the bounds (and no UB converting).
  if ((std::signbit(value) && lo >= 0) || std::fabs(value) >= 9223372036854775808.0) {
    r.error = NumberError::OutOfRange;
    return r;
  }
  return checked_int(int64_t(value), lo, hi);
}

ParsedDecimal checked_decimal(double value, double lo, double hi) {
  ParsedDecimal r;
  r.value = value;
  if (!std::isfinite(value) || (std::signbit(value) && lo >= 0) || !(value >= lo && value <= hi))
    r.error = NumberError::OutOfRange;
  return r;
}

std::string integer_problem(const ParsedInt& p, int64_t lo, int64_t hi) {
  if (p.error == NumberError::NotANumber) return "not an integer";
  return "must be between " + std::to_string(lo) + " and " + std::to_string(hi);
}

}  // namespace moss
