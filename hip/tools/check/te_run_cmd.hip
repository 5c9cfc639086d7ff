// moss-check te-run: the text encoder on the GPU backend against golden files, stage by stage:
//   token ids   our tokenizer on the case's prompt against the reference ids (when the file
//               names the prompt)
//   layers      each layer's output before the final norm, where the golden has it (reported)
//   hidden      the last hidden state (the verdict)
// Input: either format, detected from the file:
//   - the project's golden_text_encoder.safetensors (hip/tests/data holds the
//     copy): verdict against hidden_fp32 within 2x the golden's own hidden_bf16-vs-hidden_fp32
//     distance (about 3e-2 for the tiny model);
//   - a dump of tools/golden/dump_official.py: cond.ids / uncond.ids against cond.hidden /
//     uncond.hidden (official bf16 states: rel L2 <= 5e-2; a dump carrying *.hidden_fp32
//     twins, like moss-check's CI fixture, is judged like the goldens).
// Limits and line format: tools/check/golden_stages.h, tools/check/golden_compare.h.
//
//   moss-check te-run --model DIR --golden FILE [--case N|name|all] [--device N]
// Prints "PASS/FAIL <stage>: cos .. rel_l2 .. max|diff| .. (limit ..)" and "N passed, M failed";
// exit 0 only when every verdict passed (2: bad option, 1: unreadable file or model).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "golden_stages.h"
#include "subcommand.h"

namespace {

using namespace moss;

constexpr const char* kUsage = "usage: moss-check te-run --model DIR --golden FILE [--case N|name|all] [--device N]\n";

int run(const std::vector<std::string>& args) {
  golden::check_flags(args, {"--model", "--golden", "--case", "--device"});
  const std::string model = golden::flag(args, "--model"), path = golden::flag(args, "--golden");
  const std::string case_sel = golden::flag(args, "--case", "all");
  const int device = std::atoi(golden::flag(args, "--device", "0").c_str());

  const auto file = SafetensorsFile::open(path);
  std::vector<golden::TeReference> refs;
  if (golden::OfficialDump::is_dump(*file)) {
    const golden::OfficialDump dump(file);
    for (const golden::DumpCase& c : dump.cases())
      if (case_sel == "all" || case_sel == c.name || case_sel == std::to_string(c.index))
        for (golden::TeReference& r : golden::te_references_from_dump(dump, c)) refs.push_back(r);
    std::printf("moss-check te-run: %s (a dump_official.py dump, %zu case(s))\n", path.c_str(), dump.cases().size());
  } else {
    for (golden::TeReference& r : golden::te_references_from_golden(*file))
      if (case_sel == "all" || case_sel == r.label.substr(4)) refs.push_back(r);
    std::printf("moss-check te-run: %s (golden format)\n", path.c_str());
  }
  if (refs.empty()) throw usage_error("--case " + case_sel + ": no such case in " + path);

  const auto t0 = std::chrono::steady_clock::now();
  const std::unique_ptr<Backend> gpu = make_hip_backend(device);
  std::printf("device: %s\n", gpu->name().c_str());
  golden::Tally tally;
  golden::run_text_encoder(tally, *gpu, model, refs);
  std::printf("total %.3f s\n", golden::seconds_since(t0));
  return tally.finish();
}

}  // namespace

static int te_run_main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (golden::has_flag(args, "--help") || golden::has_flag(args, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    return run(args);
  } catch (const Error& e) {
    std::fprintf(stderr, "moss-check te-run: %s\n%s", e.what(), e.code() == ExitCode::Usage ? kUsage : "");
    return int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moss-check te-run: %s\n", e.what());
    return 1;
  }
}

CHECK_SUBCOMMAND_MAIN("te-run", "--model DIR --golden FILE [--case N|name|all] [--device N]", te_run_main);
