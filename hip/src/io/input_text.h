// Text inputs named on the command line (--prompt-file, --negative-file, --jobs): a regular
// file, or stdin for "-", read whole but never beyond a limit (README "Limits"):
//   - a prompt file: 1 MiB. The longest prompt that runs is --max-seq 32768 tokens, a few
//     bytes each (under 256 KiB of text); the server takes bodies of at most 1 MiB, so the same
//     prompt fits both ways;
//   - a jobs file: 64 MiB, the whole file held while its lines are checked (every line is
//     checked before any compute): thousands of ordinary requests, or 64 lines as long as
//     the longest server body, in bounded memory (`--jobs - < /dev/zero` stops at the limit).
#pragma once
#include <cstddef>
#include <string>

namespace moss {

constexpr size_t kPromptFileLimit = size_t(1) << 20;
constexpr size_t kJobsFileLimit = size_t(64) << 20;

// "1 MiB", "64 MiB", "1000 bytes".
std::string size_text(size_t bytes);

// The text of `path` ("-": stdin, io/standard_streams.h) for option `flag`. Throws moss::Error
// naming the flag and the path: exit 2 when the file is missing, not a regular file or longer
// than `limit`; exit 1 when reading fails (stdin closed, a directory on stdin, EIO).
std::string read_input_text(const std::string& flag, const std::string& path, size_t limit);

}  // namespace moss
