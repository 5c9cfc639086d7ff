// moss-check kernels: every GPU kernel against its host replay, as one case table per family
// (ggml's test-backend-ops manner: each op, its shapes and dtypes, tolerance, timed or not),
// run through the shared machinery of kernel_check.h (random inputs, poisoned outputs, host
// replay vs device, one table row per case, timing and the closing summaries).
//
//   moss-check kernels [--family runtime|dit|te|vae|lora|all] [--filter WORD] [--device N] [--data DIR]
//                      [--sustain SECONDS] [--list]
//
// --family   which family runs (default all, in the order runtime, dit, te, vae, lora):
//              runtime  the HIP runtime, the portability helpers, the matrix_tile kernel
//                       (kernels_runtime.hip);
//              dit      every kernel the DiT runs (kernels_dit.hip);
//              te       every kernel the text encoder runs (kernels_te.hip);
//              vae      the VAE's kernels, its decoder and decode memory (kernels_vae.hip).
//              lora     the LoRA merge against its host reference, bit for bit (kernels_lora.hip).
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
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel_families.h"
#include "subcommand.h"

namespace {

constexpr const char* kUsage =
    "[--family runtime|dit|te|vae|lora|all] [--filter WORD] [--device N] [--data DIR] [--sustain SECONDS] [--list]";

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
  for (const kcheck::Family& f : kcheck::families()) known = known || o.family == f.name;
  if (!known) {
    std::fprintf(stderr, "moss-check kernels: unknown family '%s'\nusage: moss-check kernels %s\n", o.family.c_str(),
                 kUsage);
    return 2;
  }
  if (list) {
    for (const kcheck::Family& f : kcheck::families()) std::printf("%-8s %s\n", f.name, f.groups);
    return 0;
  }
  if (o.sustain_s > 0)
    std::printf("timed cases (dit, te): %d s back to back each, after as long a warm-up\n", o.sustain_s);
  int status = 0;
  int passed = 0;
  for (const kcheck::FamilyResult& r : kcheck::run_families(o)) {
    status |= r.failed ? 1 : 0;
    passed += r.passed;
  }
  return status == 0 && passed > 0 ? 0 : 1;
}

}  // namespace

static check::Registrar kernels_registrar("kernels", kUsage, kernels, true);
