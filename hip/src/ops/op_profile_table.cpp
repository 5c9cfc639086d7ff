#include "ops/op_profile_table.h"

#include <algorithm>
#include <cstdio>

namespace moss {

std::string format_op_profile(const std::string& title, std::vector<OpProfileRow> rows) {
  // Largest total first, ties by name (std::sort with a total order: stable_sort's temporary
  // buffer is deprecated in libstdc++ 12 under clang 22, the release compiler).
  std::sort(rows.begin(), rows.end(), [](const OpProfileRow& a, const OpProfileRow& b) {
    return a.total_ms != b.total_ms ? a.total_ms > b.total_ms : a.name < b.name;
  });
  double sum_ms = 0;
  int64_t sum_calls = 0;
  size_t width = 2;  // "op"
  for (const OpProfileRow& r : rows) {
    sum_ms += r.total_ms;
    sum_calls += r.calls;
    width = std::max(width, r.name.size());
  }
  std::string out = "op profile: " + title + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %10s %12s %10s %7s\n", int(width), "op", "calls", "total ms", "mean ms",
                "share");
  out += line;
  for (const OpProfileRow& r : rows) {
    const double mean = r.calls > 0 ? r.total_ms / double(r.calls) : 0.0;
    const double share = sum_ms > 0 ? 100.0 * r.total_ms / sum_ms : 0.0;
    std::snprintf(line, sizeof line, "%-*s %10lld %12.3f %10.4f %6.1f%%\n", int(width), r.name.c_str(),
                  (long long)r.calls, r.total_ms, mean, share);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-*s %10lld %12.3f\n", int(width), "all ops", (long long)sum_calls, sum_ms);
  out += line;
  return out;
}

}  // namespace moss
