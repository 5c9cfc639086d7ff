#include "io/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "io/files.h"
#include "io/stale_temporaries.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/test_pause.h"

namespace moss {
namespace {

// Small enough that a signal during a large write is seen within milliseconds.
constexpr size_t kWriteChunk = 1 << 20;

mode_t creation_mode() {
  const mode_t mask = umask(0);
  umask(mask);
  return 0644 & ~mask;
}

// The temporaries made so far; every one is removed unless commit() renamed it.
struct Temporaries {
  std::vector<std::string> names;
  ~Temporaries() {
    for (const std::string& n : names) ::unlink(n.c_str());
  }
};

// Writes bytes to fd in chunks, checking for signals between them; on an error or a signal closes
// fd (when close_on_error) and throws.
void write_all(int fd, const std::string& path, const char* data, size_t bytes, bool close_on_error) {
  auto fail = [&](int err) {
    if (close_on_error) ::close(fd);
    return failure(path + ": write failed (" + std::strerror(err) + ")");
  };
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::write(fd, data + done, std::min(kWriteChunk, bytes - done));
    if (pending_signal()) {
      if (close_on_error) ::close(fd);
      check_interrupted();
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail(errno);
    done += size_t(n);
  }
}

// Syncs, gives the file the mode a new file gets, closes it.
void finish(int fd, const std::string& path) {
  auto fail = [&](int err) {
    ::close(fd);
    return failure(path + ": write failed (" + std::strerror(err) + ")");
  };
  if (fsync(fd) != 0) throw fail(errno);
  if (fchmod(fd, creation_mode()) != 0) throw fail(errno);
  if (::close(fd) != 0) throw failure(path + ": write failed (" + std::strerror(errno) + ")");
}

// Writes `bytes` to a new temporary beside `path`; returns its name.
std::string write_temporary(const std::string& path, const std::string& bytes, Temporaries& temps) {
  const std::string dir = parent_dir(path);
  std::string name = temporary_template(dir);
  const int fd = mkstemp(name.data());
  if (fd < 0) throw failure(path + ": cannot create a file in " + dir + " (" + std::strerror(errno) + ")");
  temps.names.push_back(name);
  write_all(fd, path, bytes.data(), bytes.size(), true);
  finish(fd, path);
  return name;
}

}  // namespace

void OutputFiles::add(const std::string& path, std::string bytes) { files_.emplace_back(path, std::move(bytes)); }

void OutputFiles::commit() {
  Temporaries temps;
  for (const auto& [path, bytes] : files_) {
    write_temporary(path, bytes, temps);
    test_pause("write");
    check_interrupted();
  }
  test_pause("rename");
  check_interrupted();
  // The commit point: from here the renames run to the end. Should one fail, the outputs
  // already renamed are removed too, so the run still leaves none.
  for (size_t i = 0; i < files_.size(); ++i) {
    if (std::rename(temps.names[i].c_str(), files_[i].first.c_str()) != 0) {
      const int err = errno;
      for (size_t j = 0; j < i; ++j) ::unlink(files_[j].first.c_str());
      throw failure(files_[i].first + ": cannot rename the finished file into place (" + std::strerror(err) + ")");
    }
    temps.names[i].clear();
  }
  temps.names.clear();
}

StreamedOutputFile::StreamedOutputFile(const std::string& path) : path_(path) {
  const std::string dir = parent_dir(path);
  temporary_ = temporary_template(dir);
  fd_ = mkstemp(temporary_.data());
  if (fd_ < 0) {
    temporary_.clear();
    throw failure(path + ": cannot create a file in " + dir + " (" + std::strerror(errno) + ")");
  }
}

StreamedOutputFile::~StreamedOutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

void StreamedOutputFile::append(const void* data, size_t bytes) {
  if (fd_ < 0) throw std::logic_error("StreamedOutputFile::append after commit");
  write_all(fd_, path_, static_cast<const char*>(data), bytes, false);
  written_ += bytes;
}

void StreamedOutputFile::commit() {
  test_pause("write");
  check_interrupted();
  const int fd = fd_;
  fd_ = -1;  // finish() closes it, whatever happens
  finish(fd, path_);
  test_pause("rename");
  check_interrupted();
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0)
    throw failure(path_ + ": cannot rename the finished file into place (" + std::strerror(errno) + ")");
  temporary_.clear();
}

}  // namespace moss
