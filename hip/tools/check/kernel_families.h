// The kernel-check families in the order they run (runtime, dit, te, vae) and the one loop that
// runs them: `moss-check kernels` (kernels_cmd.hip) and the shipped binary's `self-test` and
// `bench` (src/diagnostics/) call the same tables, so the self-test a Radeon owner runs is the
// check the developers run, at a size cap (Options::max_elements) or at the real shapes.
#pragma once
#include <string>
#include <vector>

#include "kernel_check.h"

namespace kcheck {

struct Family {
  const char* name;
  void (*run)(Table&, const Options&);
  const char* groups;  // its --filter groups, separated by ";" (--list)
};
const std::vector<Family>& families();

// One family's verdict: its own table's counts and the worst relative L2 over its tolerance.
struct FamilyResult {
  std::string name;
  int passed = 0, failed = 0, skipped = 0;
  double worst = 0;  // max over the compared rows of rel_l2 / tolerance (a pass is <= 1)
  double seconds = 0;
  std::vector<Timing> timings;  // its timed cases
  bool ok() const { return failed == 0 && passed > 0; }
};

// Runs the families o.family selects ("all": each), each into a table of its own (one family's
// exception fails that family alone), printing their rows; then "total S s" and
// "N passed, M failed" over all of them. Returns one result per family run.
std::vector<FamilyResult> run_families(const Options& o);

}  // namespace kcheck
