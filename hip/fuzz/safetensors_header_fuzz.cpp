// libFuzzer target: the safetensors reader. The input is a whole file (8-byte length, JSON
// header, data), opened through SafetensorsFile::open so the length field and the mmap path
// are covered too. Refusals (moss::Error) are fine; a crash is not, and neither is a file
// that is accepted while breaking what the header check promises: every tensor inside the
// data section, its byte size matching dtype and shape, no two tensors overlapping.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "fuzz_input_file.h"
#include "io/safetensors.h"
#include "util/error.h"

namespace {

[[noreturn]] void broken_promise(const char* what, const std::string& tensor) {
  std::fprintf(stderr, "accepted a header that breaks its promise: %s (tensor '%s')\n", what, tensor.c_str());
  std::abort();
}

void check_accepted(const moss::SafetensorsFile& file, uint64_t data_size) {
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, info] : file.tensors()) {
    if (info.begin > info.end || info.end > data_size) broken_promise("data_offsets outside the data", name);
    if (info.shape.size() > size_t(moss::kMaxRank)) broken_promise("rank above the maximum", name);
    if (info.dtype == moss::DType::Unknown) continue;  // refused by get(), checked below
    uint64_t count = 1;
    for (int64_t d : info.shape) count *= uint64_t(d);
    if (count * moss::dtype_size(info.dtype) != info.end - info.begin) broken_promise("byte size mismatch", name);
    if (info.end > info.begin) spans.emplace_back(info.begin, info.end);
    // Touch the tensor's first and last byte through the view: both must lie in the mapping.
    moss::Tensor t = file.get(name);
    const size_t bytes = info.end - info.begin;
    if (bytes) {
      volatile uint8_t sink = static_cast<const uint8_t*>(t.data)[0];
      sink = static_cast<const uint8_t*>(t.data)[bytes - 1];
      (void)sink;
    }
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].first < spans[i - 1].second) broken_promise("overlapping tensors", "");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static moss::fuzz::InputFile input;
  const std::string& path = input.write(data, size);
  std::shared_ptr<moss::SafetensorsFile> file;
  try {
    file = moss::SafetensorsFile::open(path);
  } catch (const moss::Error&) {
    return 0;
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
  check_accepted(*file, uint64_t(size) - 8 - header_len);
  return 0;
}
