#include "io/file_fingerprint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "io/files.h"
#include "util/error.h"

namespace moss {

namespace {

struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void add(const void* p, size_t n) {
    const unsigned char* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
};

std::string hex12(uint64_t h) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string(hex, 12);
}

}  // namespace

std::string combined_fingerprint(const std::vector<std::string>& paths) {
  if (paths.size() == 1) return file_fingerprint(paths[0]);
  Fnv f;
  for (const std::string& p : paths) {
    const std::string h = file_fingerprint(p);
    f.add(h.data(), h.size());
  }
  return hex12(f.h);
}

std::string file_fingerprint(const std::string& path) {
  const int fd = open_regular_file(path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw failure(path + ": cannot stat (" + std::strerror(err) + ")");
  }
  const uint64_t size = uint64_t(st.st_size);
  Fnv f;
  f.add(&size, sizeof size);
  constexpr uint64_t kHead = 1 << 20, kPiece = 4096, kPieces = 64;
  std::vector<char> buf(kHead);
  auto read_at = [&](uint64_t offset, uint64_t n) {
    const ssize_t got = pread(fd, buf.data(), size_t(n), off_t(offset));
    if (got < 0) {
      const int err = errno;
      ::close(fd);
      throw failure(path + ": read failed (" + std::strerror(err) + ")");
    }
    f.add(buf.data(), size_t(got));
  };
  read_at(0, kHead);
  if (size > kHead)
    for (uint64_t i = 0; i < kPieces; ++i) read_at(kHead + (size - kHead) / kPieces * i, kPiece);
  ::close(fd);
  return hex12(f.h);
}

}  // namespace moss
