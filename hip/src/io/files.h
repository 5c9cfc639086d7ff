// Small file helpers. Outputs are written to a temporary file in the target directory and
// renamed into place, so a failure never leaves a partial file (product.md section 3).
#pragma once
#include <string>
#include <vector>

namespace moss {

std::string read_text_file(const std::string& path);  // throws moss::Error (exit 1)
bool file_exists(const std::string& path);
bool dir_exists(const std::string& path);
std::vector<std::string> list_dir(const std::string& path);  // names, sorted; throws when unreadable
bool ends_with(const std::string& s, const std::string& suffix);

// Writes `bytes` to `path` atomically (temp file + fsync + rename). Throws moss::Error.
void write_file_atomic(const std::string& path, const std::string& bytes);
// Checks up front that `path` can be created (its directory exists and is writable), so a
// run fails before any compute instead of after it.
void check_writable_output(const std::string& path, const std::string& flag);

}  // namespace moss
