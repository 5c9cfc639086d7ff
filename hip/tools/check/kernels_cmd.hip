// moss-check kernels: every GPU kernel against its host replay, as one case table per family
// (ggml's test-backend-ops manner: each op, its shapes and dtypes, tolerance, timed or not),
// run through the shared machinery of kernel_check.h (random inputs, poisoned outputs, host
// replay vs device, one table row per case, timing and the closing summaries).
//
//   moss-check kernels [--family runtime|dit|te|vae|all] [--filter WORD] [--device N] [--data DIR]
//                      [--sustain SECONDS] [--list]
//
// --family   which family runs (default all, in the order runtime, dit, te, vae):
//              runtime  the HIP runtime, the portability helpers, the matrix_tile kernel
//                       (kernels_runtime.hip);
//              dit      every kernel the DiT runs (kernels_dit.hip);
//              te       every kernel the text encoder runs (kernels_te.hip);
//              vae      the VAE's kernels, its decoder and decode memory (kernels_vae.hip).
// --filter   runs only the groups whose name contains WORD (every group when not given), in every
//            family chosen: "gemm" runs the DiT's gemm, gemm_gated_unit and gemm_skinny, "decode"
//            the VAE's tiny decoder and its 1024/2048 decodes, "attention" the attention cases of
//            the DiT, the text encoder and the VAE. A family none of whose groups is chosen does not
//            start. --list prints the families and their groups (separated by ";").
// --device   the GPU (default: the first supported one for runtime, device 0 for the others).
// --data     hip/tests/data (the default, from the repo root): the VAE's tiny decoder goldens.
// --sustain  the dit and te families' timed cases run back to back for SECONDS (1..600), after as
//            long a warm-up, instead of a short burst: the rate at the clock a sustained load
//            leaves under the card's power cap, which is what a kernel gets inside a DiT step (a
//            burst runs at the top clock; bench/NOTES.md, issue 19). Read the clock and power
//            beside it (nvidia-smi).
//
// Output: each family's banner and its groups ("-- family/group", the group's time after it),
// one table row per case, each family's summary of its timed cases ("time at the 1024x1024 DiT
// shapes ..." for dit, "timed cases ..." for te), then "total S s" and "N passed, M failed".
// Exit status 0 only when every case passed (and at least one ran); 2 for a bad option.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel_check.h"
#include "subcommand.h"

namespace {

struct Family {
  const char* name;
  void (*run)(kcheck::Table&, const kcheck::Options&);
  const char* groups;
};
const Family kFamilies[] = {
    {"runtime", kcheck::runtime_family, "runtime; portability; matrix_tile"},
    {"dit", kcheck::dit_family, "gemm; gemm_gated_unit; gemm_skinny; rows; fused; attention; packed"},
    {"te", kcheck::te_family, "text family; core family; attention"},
    {"vae", kcheck::vae_family,
     "group_norm_stats; conv2d; unpatchify, tokens; attention (G2); projections (G1); tiny decoder; "
     "1024x1024 decode; 2048x2048 decode"},
};

constexpr const char* kUsage =
    "[--family runtime|dit|te|vae|all] [--filter WORD] [--device N] [--data DIR] [--sustain SECONDS] [--list]";

int kernels(const std::vector<std::string>& args) {
  kcheck::Options o;
  bool list = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--family" && has_value) o.family = args[++i];
    else if (a == "--filter" && has_value) o.filter = args[++i];
    else if (a == "--device" && has_value) o.device = int(golden::parse_int_value(a, args[++i], 0, 1024));
    else if (a == "--data" && has_value) o.data = args[++i];
    else if (a == "--sustain" && has_value) o.sustain_s = int(golden::parse_int_value(a, args[++i], 1, 600));
    else if (a == "--list") list = true;
    else {
      std::fprintf(stderr, "usage: moss-check kernels %s\n", kUsage);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  bool known = o.family == "all";
  for (const Family& f : kFamilies) known = known || o.family == f.name;
  if (!known) {
    std::fprintf(stderr, "moss-check kernels: unknown family '%s'\nusage: moss-check kernels %s\n", o.family.c_str(),
                 kUsage);
    return 2;
  }
  if (list) {
    for (const Family& f : kFamilies) std::printf("%-8s %s\n", f.name, f.groups);
    return 0;
  }
  if (o.sustain_s > 0)
    std::printf("timed cases (dit, te): %d s back to back each, after as long a warm-up\n", o.sustain_s);
  const auto t0 = std::chrono::steady_clock::now();
  kcheck::Table table;
  bool header = false;
  for (const Family& f : kFamilies) {
    if (o.family != "all" && o.family != f.name) continue;
    // The kernel families share one table: its header once, before the first of them.
    if (!header && f.run != kcheck::runtime_family) {
      table.header();
      header = true;
    }
    kcheck::guarded(table, std::string("family ") + f.name, [&] { f.run(table, o); });
    std::fflush(stdout);
  }
  std::printf("total %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return table.finish();
}

}  // namespace

static check::Registrar kernels_registrar("kernels", kUsage, kernels, true);
