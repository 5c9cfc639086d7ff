// Lossless packing of bf16 weights for the streamed DiT's copies (model/dit_streaming.h),
// which are bound by the host-to-device bus: a quarter fewer bytes to copy, unpacked on the
// device bit for bit.
//
// A bf16 value is sign (1 bit), exponent (8), mantissa (7). Within a chunk of 256 weights the
// exponents sit a few octaves below the chunk's largest, so a value is kept as one byte (sign and
// mantissa) and a 4-bit offset below its chunk's largest finite exponent (the chunk's base): 12
// bits instead of 16. A value the offset cannot express (more than 14 octaves below the base,
// such as zeros in a chunk of large values, or an infinity or NaN) is escaped (offset 15) and
// kept whole in an exception list, which the unpacking writes after the rest.
//
// Layout of a packed tensor of n values (n a multiple of 8), each section starting 16-byte aligned:
//   codes               n bytes          sign << 7 | mantissa
//   offsets             n / 2 bytes      value i's in byte i / 2, the low nibble for even i
//   bases               n / 256 bytes    (rounded up) each chunk's largest finite exponent
//   exception indices   4 bytes each     uint32, ascending
//   exception values    2 bytes each     the value's bf16 bits
#pragma once
#include <cstddef>
#include <cstdint>

#ifndef MOSS_HOST_DEVICE
#define MOSS_HOST_DEVICE
#endif

namespace moss {

struct PackedBf16 {
  static constexpr int64_t kChunk = 256;    // values that share a base exponent
  static constexpr uint32_t kEscape = 15;   // the offset of an exception
  int64_t n = 0;           // values
  int64_t exceptions = 0;  // escaped values

  static constexpr size_t align16(size_t b) { return (b + 15) / 16 * 16; }
  int64_t chunks() const { return (n + kChunk - 1) / kChunk; }
  size_t offsets_at() const { return align16(size_t(n)); }
  size_t bases_at() const { return offsets_at() + align16(size_t(n) / 2); }
  size_t exception_indices_at() const { return bases_at() + align16(size_t(chunks())); }
  size_t exception_values_at() const { return exception_indices_at() + align16(4 * size_t(exceptions)); }
  size_t bytes() const { return exception_values_at() + align16(2 * size_t(exceptions)); }
};

// The bf16 bits of a value from its code, offset and chunk base (an escaped value's are
// meaningless until the exception list overwrites them). Host reference and device kernel alike.
MOSS_HOST_DEVICE inline uint16_t unpacked_bf16(uint32_t code, uint32_t offset, uint32_t base) {
  return uint16_t((code & 0x80u) << 8 | ((base - offset) & 0xFFu) << 7 | (code & 0x7Fu));
}

// Whether n values can be packed (a multiple of 8 values: the device unpacks 8 at a time).
inline bool packable_bf16_count(int64_t n) { return n > 0 && n % 8 == 0; }

// The layout of the packing of `n` values (bf16 bits): counts their exceptions.
PackedBf16 plan_bf16_packing(const uint16_t* bits, int64_t n);

// Writes the packing of `bits` (layout.n values) to `out` (layout.bytes() bytes, padding zeroed).
void pack_bf16(const uint16_t* bits, const PackedBf16& layout, uint8_t* out);

// The values back from their packing: what the device kernel (kernels/packed_bf16.hip) computes.
void unpack_bf16_reference(const PackedBf16& layout, const uint8_t* packed, uint16_t* out);

}  // namespace moss
