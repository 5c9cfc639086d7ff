// The device side of tensor/packed_bf16.h: unpacks a packed bf16 tensor (on the device) into
// its values, bit for bit as unpack_bf16_reference, on `stream`.
#pragma once

#include "runtime/portability.h"
#include "tensor/packed_bf16.h"

namespace moss {

// `out` (layout.n values) must be 16-byte aligned, `packed` as the layout's sections are.
void unpack_bf16_device(const PackedBf16& layout, const uint8_t* packed, uint16_t* out, hipStream_t stream);

}  // namespace moss
