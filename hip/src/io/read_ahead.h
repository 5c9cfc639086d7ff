// Reading a mapped weight file costs page faults before it costs bytes: on the Firecracker
// kernels of the GPU machines, copying from a fresh mapping ran at 4 GB/s against 12 GB/s from
// one whose page tables were already made (bench/NOTES.md, 2026-12-07). A single thread that
// copies tensors out of the mapping one by one (the DiT's resident upload, model/dit_streaming.cpp)
// pays every fault itself. ReadAhead makes the page tables of the ranges it will read on a few
// worker threads (madvise MADV_POPULATE_READ, Linux 5.14 on), in the reader's order and never
// more than `window` bytes ahead of it, so the reader finds its pages mapped and the faults run
// in parallel, whatever the page cache or the file system does per fault.
//
// Nothing is read into the program and nothing changes what the reader reads: a kernel without
// MADV_POPULATE_READ, or a range it refuses (a file truncated under the mapping: the reader's
// own read then reports it, io/mapping_faults.h), only leaves the faults to the reader.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace moss {

class ReadAhead {
 public:
  // `ranges`: (start, bytes) in the order the reader reads them.
  ReadAhead(std::vector<std::pair<const void*, size_t>> ranges, size_t threads, size_t window);
  ~ReadAhead();  // stops the workers (the reader may stop early: an error) and joins them
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The reader is done with ranges [0, i]: the workers may go `window` bytes past its end.
  void done(size_t i);

  // Whether this kernel makes page tables on request (MADV_POPULATE_READ); without it a
  // ReadAhead starts no threads.
  static bool supported();

 private:
  void work();

  struct Piece {
    const char* start;
    size_t bytes;
    size_t offset;  // bytes of all ranges before it
  };
  std::vector<Piece> pieces_;
  std::vector<size_t> range_end_;  // bytes of ranges [0, i]
  size_t window_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t next_ = 0;      // the next piece a worker takes
  size_t read_end_ = 0;  // bytes the reader is done with
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace moss
