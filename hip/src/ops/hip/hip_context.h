// What every HIP op family shares: the device, its architecture, the compute stream and a
// scratch arena for temporaries. Kernels are launched on `stream`; ops never synchronise the
// host (the backend's download/synchronize do), and never call hipMalloc (they take device
// memory from `scratch`, which grows only outside the denoise loop's steady state).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "ops/core_ops.h"
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

 private:
  int device_;
  std::string arch_;
  hipStream_t stream_;
  int multiprocessors_ = 0;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

std::unique_ptr<CoreOps> make_hip_core_ops(HipContext& ctx);
std::unique_ptr<TextOps> make_hip_text_ops(HipContext& ctx);
std::unique_ptr<VaeOps> make_hip_vae_ops(HipContext& ctx);

}  // namespace moss
