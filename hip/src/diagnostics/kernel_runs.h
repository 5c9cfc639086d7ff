// The device part of `self-test` and `bench` (kernel_runs.hip, device builds only): the kernel-check
// families of tools/check (kernel_families.h) on one device. Callers compile these calls only
// where MOSSINFER_HAVE_HIP is 1; a host build has no device to run them on.
#pragma once
#include <string>
#include <vector>

#include "diagnostics/diagnostics_options.h"

namespace moss {

struct FamilyVerdict {
  std::string name;
  int passed = 0, failed = 0, skipped = 0;
  double worst = 0;  // max relative L2 / tolerance over its compared cases (a pass is <= 1)
  double seconds = 0;
  bool ok() const { return failed == 0 && passed > 0; }
};

// Every kernel family against its host replay on `device`, printing each case's row to stdout:
// the small shapes (a size cap on every tensor a case makes), or with `full` the real ones too.
std::vector<FamilyVerdict> run_kernel_self_test(int device, bool full);

// "HIP runtime 7.0.x, driver 7.0.x" (on NVIDIA: the CUDA runtime's and driver's versions).
std::string runtime_versions();

// The benchmark (bench.cpp calls this): kernel rates at the real shapes (unless --stages-only) and
// the whole stages on random weights (bench_stages.h); ends with the summary block. Exit status.
int run_bench(const BenchOptions& o, int device);

}  // namespace moss
