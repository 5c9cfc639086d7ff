// golden_check: one tool, one subcommand per pipeline stage. Each subcommand file registers
// itself with GOLDEN_SUBCOMMAND; each prints per-case metrics and a final line
// "N passed, M failed" and returns 0 only when every case passed.
#pragma once
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

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

// --flag value lookup; returns fallback (or throws with a message when required).
std::string flag(const std::vector<std::string>& args, const std::string& name, const char* fallback = nullptr);

// ||a - b|| / ||b|| in double precision.
double rel_l2(const float* a, const float* b, size_t n);
double max_abs_diff(const float* a, const float* b, size_t n);
double cosine(const float* a, const float* b, size_t n);

// Counts cases and prints the closing line.
struct Tally {
  int passed = 0, failed = 0;
  void check(bool ok, const std::string& what) {
    (ok ? passed : failed)++;
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  }
  int finish() const {
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
  }
};

}  // namespace golden
