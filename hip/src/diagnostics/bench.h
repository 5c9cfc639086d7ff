// `moss-infer-hip bench [--device N] [--size WxH] [--steps N] [--vram-budget GiB] [--stages-only]`:
// the kernels at the models' real shapes and the whole stages (bench_stages.h) on random weights
// held in memory (no model files, nothing written),
// ending with one summary block to paste into an issue (README "Self-test and benchmark").
#pragma once
#include <string>
#include <vector>

namespace moss {

// Exit status: 0 done (every kernel check passed), 1 a check failed or no supported device, 2 a
// bad flag.
int bench_command(const std::vector<std::string>& args);

}  // namespace moss
