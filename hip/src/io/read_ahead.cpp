#include "io/read_ahead.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <system_error>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older headers lack the name, older kernels answer EINVAL
#endif

namespace moss {
namespace {

// A piece a worker maps at once: small enough that several workers share a large tensor, large
// enough that taking one costs nothing beside mapping it.
constexpr size_t kPieceBytes = size_t(4) << 20;

size_t page_size() {
  static const size_t p = size_t(sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096);
  return p;
}

// Makes the page tables of [p, p + n); false when the kernel cannot (EINVAL: no
// MADV_POPULATE_READ) or would not (EFAULT, ENOMEM: beyond a truncated file, not mapped).
bool populate(const char* p, size_t n) {
  const uintptr_t page = page_size();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + n;
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0 || errno == EINTR;
}

}  // namespace

bool ReadAhead::supported() {
  static const bool ok = [] {
    void* p = mmap(nullptr, page_size(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    const bool yes = madvise(p, page_size(), MADV_POPULATE_READ) == 0;
    munmap(p, page_size());
    return yes;
  }();
  return ok;
}

ReadAhead::ReadAhead(std::vector<std::pair<const void*, size_t>> ranges, size_t threads, size_t window)
    : window_(window) {
  size_t offset = 0;
  for (const auto& [start, bytes] : ranges) {
    for (size_t at = 0; at < bytes; at += kPieceBytes)
      pieces_.push_back({static_cast<const char*>(start) + at, std::min(kPieceBytes, bytes - at), offset + at});
    offset += bytes;
    range_end_.push_back(offset);
  }
  if (!supported() || pieces_.empty()) return;
  threads = std::min(threads, pieces_.size());
  try {
    for (size_t t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
  } catch (const std::system_error&) {
    // No more threads to be had: the ones started go on (none: the reader takes its faults).
  }
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ReadAhead::done(size_t i) {
  if (workers_.empty() || i >= range_end_.size()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    read_end_ = std::max(read_end_, range_end_[i]);
  }
  cv_.notify_all();
}

void ReadAhead::work() {
  for (;;) {
    Piece piece;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // The next piece once it lies within the window past the reader (the first piece always).
      cv_.wait(lock, [&] {
        return stop_ || next_ >= pieces_.size() || pieces_[next_].offset < read_end_ + window_;
      });
      if (stop_ || next_ >= pieces_.size()) return;
      piece = pieces_[next_++];
    }
    populate(piece.start, piece.bytes);  // a refusal leaves the faults to the reader
  }
}

}  // namespace moss
