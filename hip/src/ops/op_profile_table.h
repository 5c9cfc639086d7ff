// The op profiler's table (ops/hip/op_profiler.h), as plain text so it is testable on the host:
// one line per op name with calls, total and mean milliseconds and share of the total, sorted
// by total time (largest first), then a line with the sums.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moss {

struct OpProfileRow {
  std::string name;
  int64_t calls = 0;
  double total_ms = 0;
};

std::string format_op_profile(const std::string& title, std::vector<OpProfileRow> rows);

}  // namespace moss
