// The HIP backend (ops/hip/hip_backend.hip): device tensors from a caching allocator, uploads
// through pinned staging, and the HIP op families. make_hip_backend is declared in
// ops/backend.h; this header adds what tools need to look inside one.
#pragma once
#include <cstddef>

#include "ops/backend.h"
#include "ops/hip/hip_context.h"

namespace moss {

// The context (device, stream, scratch) of a HIP backend, for tools that launch kernels
// directly; null when `be` is not a HIP backend.
HipContext* hip_context_of(Backend& be);

// The caching allocator's counters. Steady-state loops (the denoise steps) should leave
// device_allocations unchanged: freed tensors return their blocks to size-bucketed free lists
// and the next allocation of that size class takes them back.
struct HipMemoryStats {
  size_t in_use_bytes = 0;         // held by live tensors (size classes, not requested sizes)
  size_t cached_bytes = 0;         // free blocks kept for reuse
  size_t device_allocations = 0;   // hipMalloc calls so far
};
HipMemoryStats hip_memory_stats(Backend& be);  // zeros when `be` is not a HIP backend

}  // namespace moss
