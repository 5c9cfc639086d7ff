// Small file helpers. Outputs are written to a temporary file in the target directory and
// renamed into place, so a failure never leaves a partial file (docs/product.md section 3).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moss {

// Model files are opened only once they are known to be regular files: a FIFO would block
// open() forever, /dev/zero would be read without end, a directory or socket gives a
// misleading error. Both helpers refuse anything else naming the file and what it is
// ("<path>: not a regular file (a FIFO)"); a missing file is "<path>: missing file".
//
// open_regular_file: stat first (which never blocks), then open non-blocking and fstat the
// descriptor (the path may have been swapped in between). Returns the descriptor, O_CLOEXEC.
int open_regular_file(const std::string& path);
void require_regular_file(const std::string& path);
// "a FIFO", "a directory", "a character device", ... for messages; "" for a regular file.
std::string file_kind(const std::string& path);

// A regular file's text, at most `limit` bytes; throws moss::Error (exit 1).
std::string read_text_file(const std::string& path, size_t limit = SIZE_MAX);
bool file_exists(const std::string& path);
bool dir_exists(const std::string& path);
std::vector<std::string> list_dir(const std::string& path);  // names, sorted; throws when unreadable
bool ends_with(const std::string& s, const std::string& suffix);

// Writes `bytes` to `path` atomically (an OutputFiles of one file, io/output_files.h).
void write_file_atomic(const std::string& path, const std::string& bytes);
std::string parent_dir(const std::string& path);

}  // namespace moss
