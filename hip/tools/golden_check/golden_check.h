// golden_check: one tool, one subcommand per pipeline stage. Each subcommand file registers
// itself with GOLDEN_SUBCOMMAND; each prints per-case metrics and a final line
// "N passed, M failed" and returns 0 only when every case passed.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../golden_compare.h"  // rel_l2, cosine, max_abs_diff, Tally, report, flag

namespace golden {

using Command = std::function<int(const std::vector<std::string>& args)>;
struct Subcommand {
  std::string usage;
  Command run;
};
std::map<std::string, Subcommand>& registry();

struct Registrar {
  Registrar(const char* name, const char* usage, Command run) { registry()[name] = {usage, run}; }
};
#define GOLDEN_SUBCOMMAND(name, usage, fn) static ::golden::Registrar golden_registrar_##fn(name, usage, fn)

}  // namespace golden
