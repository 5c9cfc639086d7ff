#include "io/json_text.h"

#include <algorithm>

namespace moss {

void refuse_nul_bytes(const std::string& text, const std::string& file, int first_line, ExitCode code) {
  const size_t nul = text.find('\0');
  if (nul == std::string::npos) return;
  const size_t line_start = text.rfind('\n', nul) == std::string::npos ? 0 : text.rfind('\n', nul) + 1;
  const int line = first_line + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(nul), '\n'));
  throw Error(code, file + ":" + std::to_string(line) + ": a NUL byte at column " +
                        std::to_string(nul - line_start + 1) + " (not valid in JSON)");
}

}  // namespace moss
