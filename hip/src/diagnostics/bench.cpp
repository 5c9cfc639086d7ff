#include "diagnostics/bench.h"

#include <cstdio>

#include "diagnostics/diagnostics_options.h"
#include "diagnostics/kernel_runs.h"
#include "runtime/device_choice.h"

namespace moss {

int bench_command(const std::vector<std::string>& args) {
  const BenchOptions o = parse_bench_args(args);
  if (o.help) {
    std::fputs(kBenchHelp, stdout);
    return 0;
  }
  const DeviceInfo d = choose_device(o.device);
#if MOSSINFER_HAVE_HIP
  return run_bench(o, d.index);
#else
  (void)d;  // a host build lists no devices: choose_device has thrown
  return 1;
#endif
}

}  // namespace moss
