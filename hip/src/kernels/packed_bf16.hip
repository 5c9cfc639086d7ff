#include "kernels/packed_bf16.h"

namespace moss {
namespace {

// A workgroup unpacks kChunksPerGroup chunks; each lane, 8 values of a chunk at a time (one
// 8-byte load of codes, one 4-byte load of offsets, two 8-byte stores), the group's chunks
// issued together so each lane has several loads in flight.
constexpr int64_t kValuesPerLane = 8;
constexpr int64_t kChunksPerGroup = 4;
static_assert(PackedBf16::kChunk == kWorkgroupSize * kValuesPerLane, "a wave unpacks one chunk per pass");

__global__ __launch_bounds__(kWorkgroupSize) void unpack_bf16_kernel(const uint8_t* __restrict__ packed,
                                                                     const uint8_t* __restrict__ offsets,
                                                                     const uint8_t* __restrict__ bases,
                                                                     uint16_t* __restrict__ out, int64_t n) {
#pragma unroll
  for (int64_t c = 0; c < kChunksPerGroup; ++c) {
    const int64_t chunk = int64_t(block_x()) * kChunksPerGroup + c;
    const int64_t i0 = chunk * PackedBf16::kChunk + int64_t(lane_id()) * kValuesPerLane;
    if (i0 >= n) return;
    const uint64_t codes = *reinterpret_cast<const uint64_t*>(packed + i0);
    const uint32_t offs = *reinterpret_cast<const uint32_t*>(offsets + i0 / 2);
    const uint32_t base = bases[chunk];
    uint64_t half[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < int(kValuesPerLane); ++j) {
      const uint32_t v = unpacked_bf16(uint32_t(codes >> (8 * j)) & 0xFFu, (offs >> (4 * j)) & 0xFu, base);
      half[j / 4] |= uint64_t(v) << (16 * (j % 4));
    }
    uint64_t* o = reinterpret_cast<uint64_t*>(out + i0);
    o[0] = half[0];
    o[1] = half[1];
  }
}

// The exceptions, after the values: one lane each.
__global__ __launch_bounds__(kWorkgroupSize) void scatter_exceptions_kernel(const uint32_t* __restrict__ indices,
                                                                            const uint16_t* __restrict__ values,
                                                                            uint16_t* __restrict__ out, int64_t k) {
  const int64_t i = int64_t(block_x()) * kWorkgroupSize + lane_id();
  if (i < k) out[indices[i]] = values[i];
}

}  // namespace

void unpack_bf16_device(const PackedBf16& layout, const uint8_t* packed, uint16_t* out, hipStream_t stream) {
  if (layout.n == 0) return;
  if (!packable_bf16_count(layout.n) || reinterpret_cast<uintptr_t>(out) % 16 || reinterpret_cast<uintptr_t>(packed) % 16)
    throw std::invalid_argument("unpack_bf16: values in eights, 16-byte aligned packing and output only");
  const int64_t groups = (layout.chunks() + kChunksPerGroup - 1) / kChunksPerGroup;
  hipLaunchKernelGGL(unpack_bf16_kernel, dim3(unsigned(groups)), dim3(kWorkgroupSize), 0, stream, packed,
                     packed + layout.offsets_at(), packed + layout.bases_at(), out, layout.n);
  MOSS_HIP_CHECK(hipGetLastError());
  if (layout.exceptions == 0) return;
  hipLaunchKernelGGL(scatter_exceptions_kernel, dim3(unsigned((layout.exceptions + kWorkgroupSize - 1) / kWorkgroupSize)),
                     dim3(kWorkgroupSize), 0, stream,
                     reinterpret_cast<const uint32_t*>(packed + layout.exception_indices_at()),
                     reinterpret_cast<const uint16_t*>(packed + layout.exception_values_at()), out, layout.exceptions);
  MOSS_HIP_CHECK(hipGetLastError());
}

}  // namespace moss
