// SHA-256 (FIPS 180-4), for the short content hashes of LoRA files that records carry as A1111
// writes them ("Lora hashes": the first 12 hex digits of the whole file's SHA-256).
//
// Two compressions of the same function: the portable C++ one, and on x86-64 processors with the
// SHA extensions (SHA-NI: every AMD Zen, Intel since Ice Lake and Goldmont) one on their
// sha256rnds2/msg1/msg2 instructions, chosen at run time by CPUID, several times faster (a 300 MiB
// LoRA in a fraction of a second instead of about 1.5 s). Both give the same digest, bit for bit
// (unit test Sha256.* compares them on many lengths and the NIST vectors).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace moss {

class Sha256 {
 public:
  enum class Path { Fastest, Portable };  // Portable: the C++ compression even where SHA-NI is
  explicit Sha256(Path path = Path::Fastest);
  void update(const void* data, size_t size);
  std::string hex();  // the digest in lower-case hex; ends the hash
  // Whether this processor has the SHA extensions (and the SSSE3 / SSE4.1 they are used with).
  static bool accelerated_available();
  bool accelerated() const { return accelerated_; }

 private:
  void blocks(const uint8_t* p, size_t count);  // `count` 64-byte blocks
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
  bool accelerated_ = false;
};

// The whole file's digest in hex; throws moss::Error (exit 1) when the file cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace moss
