// JSON text read from a file (a config, a shard index, a jobs-file line). A raw NUL byte is
// never valid JSON (control characters must be escaped as \u0000 inside strings), and the JSON
// library takes one for the end of the input: `{"steps": 4}<NUL>{"steps": 9}` would parse as
// the first object, the rest silently dropped. So text is refused at its first NUL, named by
// file and line before it reaches the parser.
#pragma once
#include <string>

#include "util/error.h"

namespace moss {

// Throws Error(code, "FILE:LINE: a NUL byte at column C (not valid in JSON)") for the first NUL
// of `text`, whose first line is line `first_line` of `file`.
void refuse_nul_bytes(const std::string& text, const std::string& file, int first_line, ExitCode code);

}  // namespace moss
