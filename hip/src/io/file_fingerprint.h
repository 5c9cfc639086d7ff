// A short content hash of a weights file for the generation record and `info`: enough for a
// replay to tell that a file differs, cheap enough for a 17 GB file at every load (hashing every
// byte would take longer than the load). It covers the size, the first 1 MiB (a safetensors
// header, which names every tensor with its dtype, shape and offsets) and 64 pieces of 4 KiB
// spread evenly over the rest; a change elsewhere goes unseen (docs/model_files.md).
#pragma once
#include <string>
#include <vector>

namespace moss {

// 12 hex digits (FNV-1a 64, the top 48 bits); throws moss::Error naming an unreadable file.
std::string file_fingerprint(const std::string& path);
// One fingerprint for several files (a sharded component): the hash of theirs in order.
std::string combined_fingerprint(const std::vector<std::string>& paths);

}  // namespace moss
