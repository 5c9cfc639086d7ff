// Files of the program's own cache (the self-test's record of passes and its logs, under
// $XDG_CACHE_HOME/moss-infer-hip): only a directory and regular files that belong to the user are
// used. Each is opened without following a link (a link planted there could send a truncating
// write anywhere the user may write) and without blocking (a FIFO in place of a file would hang
// every run), then checked by what was opened (fstat), not by its name. A refusal is a sentence
// saying why; the caller reports it and goes on without the cache.
#pragma once
#include <string>

namespace moss {

// Makes `dir` (and its parents) when missing, the last one 0700; "" when it is a directory of the
// user's own (not a link), else why not.
std::string private_dir_refusal(const std::string& dir);

// The text of `path` (at most `max_bytes`): true with `text` (empty when there is no such file),
// or false with `why`.
bool read_private_file(const std::string& path, std::string& text, std::string& why, size_t max_bytes = 1 << 20);

// A descriptor for writing `path` (made 0600 when missing), appended to or emptied: -1 with `why`
// when it is not a regular file of the user's own.
enum class WriteMode { Append, Replace };
int open_private_file(const std::string& path, WriteMode mode, std::string& why);

}  // namespace moss
