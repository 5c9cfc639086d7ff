// Fuzz input as a file: the loaders under test read from a path (read_json_file,
// SafetensorsFile::open), so each input is written to an anonymous in-memory file
// (memfd) and handed over as /proc/self/fd/N: no disk traffic, nothing left behind.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace moss::fuzz {

class InputFile {
 public:
  InputFile() : fd_(memfd_create("moss-fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~InputFile() { close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Replaces the contents with `size` bytes of `data`; returns the path to read them from.
  const std::string& write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0 || (size && pwrite(fd_, data, size, 0) != ssize_t(size))) {
      std::perror("memfd write");
      std::abort();
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace moss::fuzz
