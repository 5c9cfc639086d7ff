// io/read_ahead.h: the page tables of a mapped file made ahead of its reader, never more than the
// window past it, and a range the kernel refuses (a truncated file) left to the reader. What is
// mapped is seen in /proc/self/smaps (a mapped page of a file counts in the mapping's Rss).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "io/read_ahead.h"

using namespace moss;

namespace {

constexpr size_t kMiB = size_t(1) << 20;

// A file of `bytes` (in the page cache, just written) mapped read-only as the weights are.
struct MappedFile {
  std::string path;
  char* data = nullptr;
  size_t bytes = 0;
  explicit MappedFile(size_t n) : bytes(n) {
    path = ::testing::TempDir() + "/read_ahead_" + std::to_string(getpid()) + "_" + std::to_string(n);
    std::vector<char> content(n);
    for (size_t i = 0; i < n; ++i) content[i] = char(i * 131 + 7);
    std::ofstream(path, std::ios::binary).write(content.data(), std::streamsize(n));
    const int fd = open(path.c_str(), O_RDONLY);
    data = static_cast<char*>(mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0));
    close(fd);
  }
  ~MappedFile() {
    munmap(data, bytes);
    unlink(path.c_str());
  }
  // The mapping's resident bytes: its pages that have page-table entries.
  size_t mapped_bytes() const {
    std::ifstream smaps("/proc/self/smaps");
    char head[32];
    std::snprintf(head, sizeof head, "%lx-", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(data)));
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
      if (line.rfind(head, 0) == 0) inside = true;
      else if (inside && line.rfind("Rss:", 0) == 0) return size_t(std::stoull(line.substr(4))) * 1024;
    }
    return 0;
  }
  // Waits (up to 20 s) until at least `bytes` are mapped; the bytes mapped then.
  size_t wait_mapped(size_t bytes) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (mapped_bytes() < bytes && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return mapped_bytes();
  }
};

}  // namespace

TEST(ReadAhead, MapsAheadOfTheReaderWithinTheWindowOnly) {
  if (!ReadAhead::supported()) GTEST_SKIP() << "this kernel has no MADV_POPULATE_READ";
  MappedFile f(48 * kMiB);
  ASSERT_EQ(f.mapped_bytes(), 0u);
  const size_t window = 8 * kMiB;
  ReadAhead ahead({{f.data, 16 * kMiB}, {f.data + 16 * kMiB, 16 * kMiB}, {f.data + 32 * kMiB, 16 * kMiB}}, 3, window);
  // Before the reader has read anything: the window's first bytes, and never more.
  EXPECT_GE(f.wait_mapped(window), window);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LE(f.mapped_bytes(), window + 64 * 1024);
  // The reader is done with the first range: the window moves past it.
  ahead.done(0);
  EXPECT_GE(f.wait_mapped(16 * kMiB + window), 16 * kMiB + window);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_LE(f.mapped_bytes(), 16 * kMiB + window + 64 * 1024);
  ahead.done(2);
  EXPECT_EQ(f.wait_mapped(48 * kMiB), 48 * kMiB);
}

TEST(ReadAhead, ARefusedRangeIsLeftToTheReaderAndAnEarlyStopJoins) {
  MappedFile f(16 * kMiB);
  // The file cut to nothing under its mapping: reading it would raise SIGBUS; mapping its pages
  // ahead is refused by the kernel, silently.
  ASSERT_EQ(truncate(f.path.c_str(), 0), 0);
  {
    ReadAhead ahead({{f.data, f.bytes}}, 2, 64 * kMiB);
    ahead.done(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(f.mapped_bytes(), 0u);
  // A reader that stops before the end (an upload failed): the workers stop with it (the
  // destructor returns) and map nothing past the window.
  MappedFile g(32 * kMiB);
  { ReadAhead ahead({{g.data, g.bytes}}, 2, 4 * kMiB); }
  EXPECT_LE(g.mapped_bytes(), 4 * kMiB + 64 * 1024);
}
