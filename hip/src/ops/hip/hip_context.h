// What every HIP op family shares: the device, its architecture, the compute stream and a
// scratch arena for temporaries. Kernels are launched on `stream`; ops never synchronise the
// host (the backend's download/synchronize do), and never call hipMalloc (they take device
// memory from `scratch`, which grows only outside the denoise loop's steady state).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "ops/core_ops.h"
#include "ops/lora_ops.h"
#include "ops/text_ops.h"
#include "ops/vae_ops.h"
#include "runtime/portability.h"

namespace moss {

class HipContext {
 public:
  HipContext(int device, hipStream_t stream);
  ~HipContext();
  HipContext(const HipContext&) = delete;
  HipContext& operator=(const HipContext&) = delete;

  int device() const { return device_; }
  const std::string& arch() const { return arch_; }  // "gfx1100", "sm_90", ...
  hipStream_t stream() const { return stream_; }
  int multiprocessors() const { return multiprocessors_; }

  // Device memory for an op's temporaries, valid until the next scratch() call on this
  // context (ops are stream-ordered, so reuse after the next launch is safe). Grows (with a
  // stream synchronisation) when a larger request comes; never shrinks until destruction.
  void* scratch(size_t bytes);

  // Copies `bytes` of host memory (pageable is fine) to device memory `dst`, ordered on
  // stream(): the data goes through pinned staging buffers, so the host memory may be reused
  // as soon as the call returns, and every later launch on stream() sees the copy. The host
  // waits only when a staging buffer is still in flight (large copies overlap the host-side
  // memcpy of one buffer with the transfer of the other).
  void copy_to_device(void* dst, const void* src, size_t bytes);

 private:
  struct Staging;  // pinned buffers and their events (ops/hip/hip_context.hip)
  int device_;
  std::string arch_;
  hipStream_t stream_;
  int multiprocessors_ = 0;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::unique_ptr<Staging> staging_;
};

std::unique_ptr<CoreOps> make_hip_core_ops(HipContext& ctx);
std::unique_ptr<TextOps> make_hip_text_ops(HipContext& ctx);
std::unique_ptr<VaeOps> make_hip_vae_ops(HipContext& ctx);
std::unique_ptr<LoraOps> make_hip_lora_ops(HipContext& ctx);

}  // namespace moss
