// HipContext (ops/hip/hip_context.h): device properties, the scratch arena and the pinned
// staging of host-to-device copies.
#include "ops/hip/hip_context.h"

#include <algorithm>
#include <cstring>

namespace moss {

// Two pinned buffers used in turn. A buffer is refilled only after the event recorded behind
// its last transfer has completed, so host memcpy into one overlaps the DMA of the other.
struct HipContext::Staging {
  static constexpr size_t kBufferBytes = size_t(8) << 20;
  void* buffer[2] = {nullptr, nullptr};
  hipEvent_t done[2] = {nullptr, nullptr};
  bool in_flight[2] = {false, false};
  int next = 0;

  Staging() {
    for (int i = 0; i < 2; ++i) {
      MOSS_HIP_CHECK(hipHostMalloc(&buffer[i], kBufferBytes, hipHostMallocDefault));
      MOSS_HIP_CHECK(hipEventCreateWithFlags(&done[i], hipEventDisableTiming));
    }
  }
  ~Staging() {
    for (int i = 0; i < 2; ++i) {
      if (done[i]) {
        (void)hipEventSynchronize(done[i]);
        (void)hipEventDestroy(done[i]);
      }
      if (buffer[i]) (void)hipHostFree(buffer[i]);
    }
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
};

HipContext::HipContext(int device, hipStream_t stream) : device_(device), stream_(stream) {
  MOSS_HIP_CHECK(hipSetDevice(device));
  hipDeviceProp_t prop{};
  MOSS_HIP_CHECK(hipGetDeviceProperties(&prop, device));
  arch_ = device_arch(prop);
  multiprocessors_ = prop.multiProcessorCount;
}

HipContext::~HipContext() {
  (void)hipStreamSynchronize(stream_);
  staging_.reset();
  if (scratch_) (void)hipFree(scratch_);
}

void* HipContext::scratch(size_t bytes) {
  if (bytes <= scratch_bytes_ && scratch_) return scratch_;
  // Earlier launches may still read the old arena.
  MOSS_HIP_CHECK(hipStreamSynchronize(stream_));
  const size_t old_bytes = scratch_bytes_;
  if (scratch_) MOSS_HIP_CHECK(hipFree(scratch_));
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  // Grow by at least half again, in whole MiB, so a slowly rising demand reallocates rarely.
  const size_t mib = size_t(1) << 20;
  size_t want = std::max(bytes, old_bytes + old_bytes / 2);
  want = (std::max(want, mib) + mib - 1) / mib * mib;
  MOSS_HIP_CHECK(hipMalloc(&scratch_, want));
  scratch_bytes_ = want;
  return scratch_;
}

void HipContext::copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (!staging_) staging_ = std::make_unique<Staging>();
  Staging& s = *staging_;
  for (size_t off = 0; off < bytes; off += Staging::kBufferBytes) {
    const size_t n = std::min(Staging::kBufferBytes, bytes - off);
    const int b = s.next;
    s.next ^= 1;
    if (s.in_flight[b]) MOSS_HIP_CHECK(hipEventSynchronize(s.done[b]));
    std::memcpy(s.buffer[b], static_cast<const char*>(src) + off, n);
    MOSS_HIP_CHECK(hipMemcpyAsync(static_cast<char*>(dst) + off, s.buffer[b], n, hipMemcpyHostToDevice, stream_));
    MOSS_HIP_CHECK(hipEventRecord(s.done[b], stream_));
    s.in_flight[b] = true;
  }
}

}  // namespace moss
