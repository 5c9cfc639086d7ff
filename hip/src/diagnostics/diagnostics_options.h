// The flags of `moss-infer-hip self-test` and `moss-infer-hip bench` (README "Self-test and
// benchmark"). A bad flag or value throws usage_error (exit 2) naming it.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace moss {

struct SelfTestOptions {
  int device = -1;    // --device N (-1: the first supported device)
  bool full = false;  // --full: the real shapes too, not only the small ones
  bool help = false;
};

struct BenchOptions {
  int device = -1;
  int width = 1024, height = 1024;  // --size WxH: the DiT step's image
  int steps = 4;                    // --steps N: timed DiT steps per placement (the first is a warm-up)
  // --vram-budget GiB: the streamed step's budget, planned as the CLI plans it; unset (or a budget
  // that keeps every block resident): a budget that keeps half the DiT's blocks resident.
  std::optional<double> vram_budget_gib;
  bool stages_only = false;  // --stages-only: the whole stages alone, not the kernels' checks and rates
  bool int8 = false;         // --int8: the stages' DiT in INT8 ConvRot (docs/int8_convrot.md)
  bool help = false;
};

SelfTestOptions parse_self_test_args(const std::vector<std::string>& args);
BenchOptions parse_bench_args(const std::vector<std::string>& args);

extern const char* const kSelfTestUsage;
extern const char* const kBenchUsage;
extern const char* const kSelfTestHelp;  // --help: every flag, its range and default
extern const char* const kBenchHelp;

}  // namespace moss
