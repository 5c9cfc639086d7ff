// The two device slots a streamer copies its blocks into, used in turn, and the fences that
// keep a copy from overwriting a slot the compute still reads. A block's copy into slot s waits
// for read[s], the compute fence taken after the last block that read s; the block's compute
// waits for the copy. So one block computes while the next one crosses the bus, and no more
// than two blocks are ever on the device.
#pragma once
#include <algorithm>
#include <cstddef>

#include "ops/backend.h"

namespace moss {

struct SlotPair {
  Tensor slot[2];
  Backend::Fence read[2] = {0, 0};  // compute through each slot's last reader (0: none yet)

  // Two slots of `bytes` each (at least 1).
  void allocate(Backend& be, size_t bytes) {
    for (Tensor& s : slot) s = be.alloc(DType::U8, {int64_t(std::max<size_t>(bytes, 1))});
  }
  void release() {
    for (Tensor& s : slot) s = Tensor();
  }
  // A new sequence of copies that owes nothing to earlier readers (the host has seen them done).
  void forget_readers() { read[0] = read[1] = 0; }
};

}  // namespace moss
