// The strict number parser (util/numbers.h) every numeric flag and environment variable uses.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "util/numbers.h"

using namespace moss;

TEST(StrictInt, PlainDigitsOnly) {
  EXPECT_EQ(parse_strict_int("8", 1, 1000).value, 8);
  EXPECT_EQ(parse_strict_int("0008", 1, 1000).value, 8);  // leading zeros: the same value
  EXPECT_EQ(parse_strict_int("-5", -10, 10).value, -5);
  for (const char* bad : {"", " 8", "8 ", "\t8", "8\n", "+8", "--8", "8abc", "0x8", "8e0", "1e3", "8.0", "1,000", "-",
                          "+", " ", "inf", "nan", "\xef\xbc\x98" /* fullwidth 8 */})
    EXPECT_EQ(parse_strict_int(bad, -1000, 1000).error, NumberError::NotANumber) << "'" << bad << "'";
}

TEST(StrictInt, RangeAndOverflowNeverWrap) {
  EXPECT_EQ(parse_strict_int("1001", 1, 1000).error, NumberError::OutOfRange);
  EXPECT_EQ(parse_strict_int("0", 1, 1000).error, NumberError::OutOfRange);
  EXPECT_EQ(parse_strict_int("9223372036854775807", 0, INT64_MAX).value, INT64_MAX);
  EXPECT_EQ(parse_strict_int("9223372036854775808", 0, INT64_MAX).error, NumberError::OutOfRange);
  EXPECT_EQ(parse_strict_int("-9223372036854775808", INT64_MIN, 0).value, INT64_MIN);
  EXPECT_EQ(parse_strict_int("-9223372036854775809", INT64_MIN, 0).error, NumberError::OutOfRange);
  EXPECT_EQ(parse_strict_int("99999999999999999999999", 0, 10).error, NumberError::OutOfRange);
  // No sign where no negative value is allowed, not even "-0".
  EXPECT_EQ(parse_strict_int("-0", 0, 10).error, NumberError::OutOfRange);
  EXPECT_EQ(parse_strict_int("-2", 1, 10).error, NumberError::OutOfRange);
}

TEST(StrictUint, FullRangeNoSign) {
  EXPECT_EQ(parse_strict_uint("18446744073709551615").value, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parse_strict_uint("18446744073709551616").error, NumberError::OutOfRange);
  EXPECT_EQ(parse_strict_uint("0").value, 0u);
  // The bug of issue 16: " -2" went through strtoull as 18446744073709551614.
  for (const char* bad : {" -2", "-2", "-0", "+2", " 2", "2 ", "2abc", ""})
    EXPECT_EQ(parse_strict_uint(bad).error, NumberError::NotANumber) << "'" << bad << "'";
}

TEST(StrictDecimal, PlainDecimalNotation) {
  EXPECT_DOUBLE_EQ(parse_strict_decimal("3", 0, 100).value, 3.0);
  EXPECT_DOUBLE_EQ(parse_strict_decimal("3.", 0, 100).value, 3.0);
  EXPECT_DOUBLE_EQ(parse_strict_decimal(".5", 0, 100).value, 0.5);
  EXPECT_DOUBLE_EQ(parse_strict_decimal("-1.25", -10, 10).value, -1.25);
  for (const char* bad : {"", ".", "-", " 3", "3 ", "+3", "3e0", "1e3", "0x1p3", "inf", "nan", "infinity", "3,5",
                          "3.5.5", "3abc", "--3"})
    EXPECT_EQ(parse_strict_decimal(bad, -100, 100).error, NumberError::NotANumber) << "'" << bad << "'";
  EXPECT_EQ(parse_strict_decimal("100.001", 0, 100).error, NumberError::OutOfRange);
  EXPECT_EQ(parse_strict_decimal("-0", 0, 100).error, NumberError::OutOfRange);  // -0.0 == 0 otherwise
  EXPECT_EQ(parse_strict_decimal("1" + std::string(400, '0'), 0, 1e300).error, NumberError::OutOfRange);
}

TEST(StrictInt, ProblemWording) {
  EXPECT_EQ(integer_problem(parse_strict_int("x", 1, 5), 1, 5), "not an integer");
  EXPECT_EQ(integer_problem(parse_strict_int("9", 1, 5), 1, 5), "must be between 1 and 5");
}
