// The device-only part of golden_stages.h (device builds, MOSSINFER_CHECK_DEVICE=1): the HIP
// allocator's counters, read through ops/hip/hip_backend.h (a HIP header).
#include "golden_stages.h"
#include "ops/hip/hip_backend.h"

namespace golden {

std::optional<DeviceMemory> device_memory(moss::Backend& be) {
  if (on_host(be)) return std::nullopt;
  const moss::HipMemoryStats s = moss::hip_memory_stats(be);
  return DeviceMemory{s.device_allocations, s.cached_bytes};
}

}  // namespace golden
