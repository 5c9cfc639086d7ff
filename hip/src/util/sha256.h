// SHA-256 (FIPS 180-4), for the short content hashes of LoRA files that records carry as A1111
// writes them ("Lora hashes": the first 12 hex digits of the whole file's SHA-256).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace moss {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::string hex();  // the digest in lower-case hex; ends the hash

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

// The whole file's digest in hex; throws moss::Error (exit 1) when the file cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace moss
