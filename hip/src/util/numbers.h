// The one parser for numbers that come from outside the program: every numeric flag and
// every numeric environment variable goes through here. Strict on purpose: strtoll/strtod
// skip leading blanks, accept '+', exponents, hex, "inf" and stop at junk, and the callers
// used to check only part of that (" -2" became 18446744073709551614, "2abc" became 2).
//
// Integers: an optional '-' (where lo >= 0 any sign is out of range, "-0" too) and digits,
// nothing else. Decimals: an optional '-', digits with an optional fraction ("3", "0.5",
// ".5", "3."); no exponents, no hex, no inf/nan. A value outside [lo, hi] is refused, never
// wrapped or clamped.
#pragma once
#include <cstdint>
#include <string>

namespace moss {

enum class NumberError { None, NotANumber, OutOfRange };

// Results carry the error instead of throwing, so the caller words the message (a flag and
// an environment variable name the problem differently, with different exit statuses).
struct ParsedInt {
  int64_t value = 0;
  NumberError error = NumberError::None;
};
struct ParsedUint {
  uint64_t value = 0;
  NumberError error = NumberError::None;
};
struct ParsedDecimal {
  double value = 0;
  NumberError error = NumberError::None;
};

ParsedInt parse_strict_int(const std::string& text, int64_t lo, int64_t hi);
ParsedUint parse_strict_uint(const std::string& text);  // 0 .. 2^64-1, no sign at all
ParsedDecimal parse_strict_decimal(const std::string& text, double lo, double hi);

// The same checks for a number that arrives already read (a JSON value): an integer is
// refused when it has a fraction, is not finite, or carries a sign where lo >= 0 (-0.0, as
// "-0" above); every value is refused outside [lo, hi], never wrapped or clamped.
ParsedInt checked_int(double value, int64_t lo, int64_t hi);
ParsedInt checked_int(int64_t value, int64_t lo, int64_t hi);
ParsedDecimal checked_decimal(double value, double lo, double hi);

// The usage error of a numeric flag, naming it and the accepted range: "--steps '2abc': not
// an integer" or "--steps '0': must be between 1 and 1000".
std::string integer_problem(const ParsedInt& p, int64_t lo, int64_t hi);

}  // namespace moss
