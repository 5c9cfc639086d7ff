// moss-check fp8-e4m3: the host conversion fp32 -> OCP FP8 E4M3 (kernels/fp8_e4m3.h) over a file of
// little-endian fp32 values, one code byte out per value in order, so that a test in another language
// compares the one definition with its own reference (bench/tests/test_fp8_e4m3_torch.py: PyTorch's
// float8_e4m3fn). --decode reads codes and writes their fp32 values instead.
//   moss-check fp8-e4m3 --in FILE --out FILE [--decode]
#include <cstring>

#include "io/files.h"
#include "kernels/fp8_e4m3.h"
#include "subcommand.h"
#include "util/error.h"

namespace {

int fp8_e4m3(const std::vector<std::string>& args) {
  using namespace moss;
  const std::string in = golden::flag(args, "--in"), out = golden::flag(args, "--out");
  const bool decode = golden::has_flag(args, "--decode");
  const std::string bytes = read_text_file(in);  // raw bytes: read_text_file does not interpret them
  std::string result;
  if (decode) {
    result.resize(bytes.size() * 4);
    for (size_t i = 0; i < bytes.size(); ++i) {
      const uint32_t bits = e4m3::to_f32_bits(uint8_t(bytes[i]));
      std::memcpy(&result[4 * i], &bits, 4);
    }
  } else {
    if (bytes.size() % 4 != 0)
      throw failure("fp8-e4m3: " + in + " holds " + std::to_string(bytes.size()) +
                    " bytes, not a whole number of fp32 values");
    result.resize(bytes.size() / 4);
    for (size_t i = 0; i < result.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &bytes[4 * i], 4);
      result[i] = char(e4m3::from_f32_bits(bits));
    }
  }
  write_file_atomic(out, result);
  std::printf("%s %zu values\n1 passed, 0 failed\n", decode ? "decoded" : "converted",
              decode ? bytes.size() : result.size());
  return 0;
}

}  // namespace

CHECK_SUBCOMMAND("fp8-e4m3", "--in FILE --out FILE [--decode]: fp32 values to OCP e4m3 codes (or back), as the kernels round",
                 fp8_e4m3);
