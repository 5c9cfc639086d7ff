#include "io/input_text.h"

#include "io/files.h"
#include "io/standard_streams.h"
#include "util/error.h"

namespace moss {

std::string size_text(size_t bytes) {
  if (bytes >= (size_t(1) << 20) && bytes % (size_t(1) << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::string read_input_text(const std::string& flag, const std::string& path, size_t limit) {
  if (path == "-") return read_stdin(flag + " -", limit);
  try {
    return read_text_file(path, limit);
  } catch (const Error& e) {
    if (e.code() != ExitCode::Failure) throw;  // a signal's status stays what it is
    throw usage_error(flag + " " + path + ": " + e.what());
  }
}

}  // namespace moss
