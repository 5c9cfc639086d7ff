// The family table and the loop over it (kernel_families.h).
#include "kernel_families.h"

#include <chrono>
#include <cstdio>

namespace kcheck {

const std::vector<Family>& families() {
  static const std::vector<Family> table = {
      {"runtime", runtime_family, "runtime; portability; matrix_tile"},
      {"dit", dit_family, "gemm; gemm_gated_unit; gemm_skinny; rows; fused; attention; packed; int8"},
      {"te", te_family, "text family; core family; attention"},
      {"vae", vae_family,
       "group_norm_stats; conv2d; unpatchify, tokens; attention (G2); projections (G1); tiny decoder; "
       "1024x1024 decode; 2048x2048 decode"},
      {"lora", lora_family, "merge"},
  };
  return table;
}

std::vector<FamilyResult> run_families(const Options& o) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  std::vector<FamilyResult> results;
  Table total;
  for (const Family& f : families()) {
    if (o.family != "all" && o.family != f.name) continue;
    Table table;
    if (f.run != runtime_family) table.header();  // the runtime family prints its own
    const auto t = Clock::now();
    guarded(table, std::string("family ") + f.name, [&] { f.run(table, o); });
    std::fflush(stdout);
    FamilyResult r;
    r.name = f.name;
    r.passed = table.passed;
    r.failed = table.failed;
    r.skipped = table.skipped;
    r.worst = table.worst;
    r.timings = table.timings;
    r.seconds = std::chrono::duration<double>(Clock::now() - t).count();
    results.push_back(r);
    total.passed += table.passed;
    total.failed += table.failed;
    total.skipped += table.skipped;
  }
  std::printf("total %.1f s\n", std::chrono::duration<double>(Clock::now() - t0).count());
  total.finish();
  return results;
}

}  // namespace kcheck
