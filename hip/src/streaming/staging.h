// Streaming straight from the mmap'd weight files: a worker thread copies block l's image into
// one of two pinned staging buffers (l mod 2, each as large as the largest image), then one
// asynchronous copy takes it to the device. Pinned memory is what lets the copy run on the copy
// stream beside the compute; two buffers let the worker fill block l+1 while block l's copy is
// in flight. A buffer is refilled only once the host has seen the copy that last read it
// complete (host_wait), since the copy engine reads it asynchronously.
#pragma once
#include <future>
#include <vector>

#include "ops/backend.h"
#include "streaming/block_image.h"

namespace moss {

class FileStager {
 public:
  // `images` must outlive the stager.
  FileStager(Backend& be, const std::vector<BlockImage>& images);
  ~FileStager();
  FileStager(const FileStager&) = delete;
  FileStager& operator=(const FileStager&) = delete;

  // Starts filling buffer l mod 2 with block l on the worker thread. The caller has seen the
  // buffer's previous copy complete.
  void start_fill(int l) { start_fill(l, l % 2); }
  // Waits for block l's fill (rethrowing a failed one), then queues its image -> dst on the copy
  // stream after the compute fence `after`; returns the copy's fence.
  Backend::Fence copy(int l, Tensor& dst, Backend::Fence after) { return copy(l, l % 2, dst, after); }
  // The same with the buffer (0 or 1) named: for a streamer whose blocks do not come in the order
  // of `images` (the DiT's passes may skip blocks), the buffers alternate by copy, not by block.
  void start_fill(int l, int buffer);
  Backend::Fence copy(int l, int buffer, Tensor& dst, Backend::Fence after);
  // The host sees `copy` complete: the compute stream waits for it and is drained.
  void host_wait(Backend::Fence copy);

 private:
  Backend& be_;
  const std::vector<BlockImage>& images_;
  Tensor staging_[2];
  std::future<void> fill_[2];
};

}  // namespace moss
