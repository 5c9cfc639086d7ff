#include "diagnostics/diagnostics_options.h"

#include "util/error.h"
#include "util/numbers.h"

namespace moss {

const char* const kSelfTestUsage = "usage: moss-infer-hip self-test [--device N] [--full]";
const char* const kBenchUsage =
    "usage: moss-infer-hip bench [--device N] [--size WxH] [--steps N] [--vram-budget GiB] [--stages-only] [--int8]";

// What --help prints: every flag with its range and default (docs/usage.md holds the same table;
// ctest `help_matches_docs` compares them).
const char* const kSelfTestHelp =
    "usage: moss-infer-hip self-test [--device N] [--full]\n\n"
    "Runs every kernel the device would run against its host replay; exit 0 when every family\n"
    "passed, 1 when one failed or there is no supported device, 2 for a bad flag.\n\n"
    "  --device N     HIP device index (0 to 255)                       default: first supported\n"
    "  --full         also the model's real shapes and the VAE's golden decode (a minute or two)\n"
    "  --help, -h     this text\n";
const char* const kBenchHelp =
    "usage: moss-infer-hip bench [--device N] [--size WxH] [--steps N] [--vram-budget GiB] [--stages-only] [--int8]\n\n"
    "Checks and times every kernel at the model's real shapes, then the whole stages (text encoder,\n"
    "DiT step resident and streamed, VAE decode) on random weights in host memory (about 26 GiB),\n"
    "and ends with a summary block to paste into an issue.\n\n"
    "  --device N        HIP device index (0 to 255)                    default: first supported\n"
    "  --size WxH        image size of the stages; sides 16 to 4096,     default: 1024x1024\n"
    "                    multiples of 16\n"
    "  --steps N         denoise steps timed (2 to 100)                 default: 4\n"
    "  --vram-budget GiB the streamed step's memory plan (above 0, at most 4096)\n"
    "                                                                   default: half the blocks streamed\n"
    "  --stages-only     skip the kernel checks and rates; time the stages only\n"
    "  --int8            the stages' DiT in INT8 ConvRot (its block projections, group 256)\n"
    "  --help, -h        this text\n";

namespace {

Error bad_value(const char* usage, const std::string& flag, const std::string& value, const std::string& why) {
  return usage_error(flag + " '" + value + "': " + why + "\n" + usage);
}

int parse_int_flag(const char* usage, const std::string& flag, const std::string& value, int64_t lo, int64_t hi) {
  const ParsedInt p = parse_strict_int(value, lo, hi);
  if (p.error != NumberError::None) throw bad_value(usage, flag, value, integer_problem(p, lo, hi));
  return int(p.value);
}

// The flag's value: the next argument, or the text after '=' (--steps=4).
struct Walker {
  Walker(const std::vector<std::string>& a, const char* u) : args(a), usage(u) {}
  const std::vector<std::string>& args;
  const char* usage;
  size_t i = 0;
  std::string flag, value;
  bool has_inline = false;
  bool next() {
    if (i >= args.size()) return false;
    flag = args[i++];
    has_inline = false;
    const size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline = true;
    }
    return true;
  }
  const std::string& take() {
    if (!has_inline) {
      if (i >= args.size()) throw usage_error(flag + ": needs a value\n" + usage);
      value = args[i++];
    }
    return value;
  }
  void no_value() const {
    if (has_inline) throw usage_error(flag + ": takes no value\n" + usage);
  }
  Error unknown() const {
    return usage_error("unknown option '" + flag + "'\n" + usage);
  }
};

}  // namespace

SelfTestOptions parse_self_test_args(const std::vector<std::string>& args) {
  SelfTestOptions o;
  Walker w(args, kSelfTestUsage);
  while (w.next()) {
    if (w.flag == "--device") o.device = parse_int_flag(kSelfTestUsage, w.flag, w.take(), 0, 255);
    else if (w.flag == "--full") w.no_value(), o.full = true;
    else if (w.flag == "--help" || w.flag == "-h") o.help = true;
    else throw w.unknown();
  }
  return o;
}

BenchOptions parse_bench_args(const std::vector<std::string>& args) {
  BenchOptions o;
  Walker w(args, kBenchUsage);
  while (w.next()) {
    if (w.flag == "--device") {
      o.device = parse_int_flag(kBenchUsage, w.flag, w.take(), 0, 255);
    } else if (w.flag == "--size") {
      const std::string v = w.take();
      const size_t x = v.find_first_of("xX");
      if (x == std::string::npos) throw bad_value(kBenchUsage, w.flag, v, "expected WxH, e.g. 1024x1024");
      const ParsedInt pw = parse_strict_int(v.substr(0, x), 16, 4096), ph = parse_strict_int(v.substr(x + 1), 16, 4096);
      if (pw.error != NumberError::None || ph.error != NumberError::None)
        throw bad_value(kBenchUsage, w.flag, v, "each side must be an integer between 16 and 4096");
      if (pw.value % 16 || ph.value % 16) throw bad_value(kBenchUsage, w.flag, v, "image sides must be multiples of 16");
      o.width = int(pw.value);
      o.height = int(ph.value);
    } else if (w.flag == "--steps") {
      o.steps = parse_int_flag(kBenchUsage, w.flag, w.take(), 2, 100);
    } else if (w.flag == "--vram-budget") {
      const std::string v = w.take();
      const ParsedDecimal g = parse_strict_decimal(v, 0, 4096);
      if (g.error != NumberError::None || g.value <= 0)
        throw bad_value(kBenchUsage, w.flag, v, "must be a positive number of GiB, at most 4096");
      o.vram_budget_gib = g.value;
    } else if (w.flag == "--stages-only") {
      w.no_value();
      o.stages_only = true;
    } else if (w.flag == "--int8") {
      w.no_value();
      o.int8 = true;
    } else if (w.flag == "--help" || w.flag == "-h") {
      o.help = true;
    } else {
      throw w.unknown();
    }
  }
  return o;
}

}  // namespace moss
