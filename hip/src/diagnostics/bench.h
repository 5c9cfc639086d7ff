// `moss-infer-hip bench [--device N] [--size WxH] [--steps N] [--vram-budget GiB]`: the kernels at
// the models' real shapes and the DiT step on random weights made on the device (no model files),
// ending with one summary block to paste into an issue (README "Self-test and benchmark").
#pragma once
#include <string>
#include <vector>

namespace moss {

// Exit status: 0 done (every kernel check passed), 1 a check failed or no supported device, 2 a
// bad flag.
int bench_command(const std::vector<std::string>& args);

}  // namespace moss
