#include "tensor/packed_bf16.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace moss {
namespace {

uint32_t exponent_of(uint16_t v) { return (v >> 7) & 0xFFu; }

// The chunk's base: its largest finite exponent (0 when it holds no finite value).
uint32_t chunk_base(const uint16_t* bits, int64_t begin, int64_t end) {
  uint32_t base = 0;
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t e = exponent_of(bits[i]);
    if (e != 0xFFu) base = std::max(base, e);
  }
  return base;
}

bool escaped(uint16_t v, uint32_t base) {
  const uint32_t e = exponent_of(v);
  return e == 0xFFu || base - e >= PackedBf16::kEscape;  // base >= e for every finite value
}

}  // namespace

PackedBf16 plan_bf16_packing(const uint16_t* bits, int64_t n) {
  if (!packable_bf16_count(n)) throw std::invalid_argument("pack_bf16: the value count must be a positive multiple of 8");
  PackedBf16 layout;
  layout.n = n;
  for (int64_t c = 0; c < layout.chunks(); ++c) {
    const int64_t begin = c * PackedBf16::kChunk, end = std::min(n, begin + PackedBf16::kChunk);
    const uint32_t base = chunk_base(bits, begin, end);
    for (int64_t i = begin; i < end; ++i) layout.exceptions += escaped(bits[i], base);
  }
  return layout;
}

void pack_bf16(const uint16_t* bits, const PackedBf16& layout, uint8_t* out) {
  std::memset(out, 0, layout.bytes());
  uint8_t* offsets = out + layout.offsets_at();
  uint8_t* bases = out + layout.bases_at();
  uint8_t* indices = out + layout.exception_indices_at();
  uint8_t* values = out + layout.exception_values_at();
  int64_t k = 0;
  for (int64_t c = 0; c < layout.chunks(); ++c) {
    const int64_t begin = c * PackedBf16::kChunk, end = std::min(layout.n, begin + PackedBf16::kChunk);
    const uint32_t base = chunk_base(bits, begin, end);
    bases[c] = uint8_t(base);
    for (int64_t i = begin; i < end; ++i) {
      const uint16_t v = bits[i];
      const bool esc = escaped(v, base);
      const uint32_t offset = esc ? PackedBf16::kEscape : base - exponent_of(v);
      out[i] = uint8_t((v >> 8 & 0x80u) | (v & 0x7Fu));
      offsets[i / 2] |= uint8_t(offset << (i % 2 ? 4 : 0));
      if (esc) {
        if (k == layout.exceptions) throw std::logic_error("pack_bf16: the layout was planned for other values");
        const uint32_t index = uint32_t(i);
        std::memcpy(indices + 4 * k, &index, 4);
        std::memcpy(values + 2 * k, &v, 2);
        ++k;
      }
    }
  }
  if (k != layout.exceptions) throw std::logic_error("pack_bf16: the layout was planned for other values");
}

void unpack_bf16_reference(const PackedBf16& layout, const uint8_t* packed, uint16_t* out) {
  const uint8_t* offsets = packed + layout.offsets_at();
  const uint8_t* bases = packed + layout.bases_at();
  for (int64_t i = 0; i < layout.n; ++i)
    out[i] = unpacked_bf16(packed[i], offsets[i / 2] >> (i % 2 ? 4 : 0) & 0xFu, bases[i / PackedBf16::kChunk]);
  for (int64_t k = 0; k < layout.exceptions; ++k) {
    uint32_t index;
    uint16_t value;
    std::memcpy(&index, packed + layout.exception_indices_at() + 4 * k, 4);
    std::memcpy(&value, packed + layout.exception_values_at() + 2 * k, 2);
    out[index] = value;
  }
}

}  // namespace moss
