// P.V in fp8's values on the GPU (CoreOps::quantize_values_fp8 defines the arithmetic; ops/hip
// checks the operands and launches): one wave per row of Vᵀ (one channel of one head over the
// keys) takes the row's largest |v| and whether it is finite, then writes the row's OCP e4m3 codes
// (kernels/fp8_e4m3_device.h) four keys to a word, the padding's as zeros, and its scale; the
// same operations as the host body, so the two agree bit for bit (`moss-check kernels --family
// dit --filter fp8`).
#pragma once
#include <cstdint>

#include "runtime/portability.h"

namespace moss {

struct Fp8ValuesArgs {
  const void* vt = nullptr;  // f32 or bf16 [rows, ld], a row's first keys_pad values read
  bool bf16 = true;
  int64_t rows = 0, ld = 0;
  int64_t keys = 0, keys_pad = 0;  // keys_pad: a multiple of 4 (CoreOps::kTransposedVKeys)
  uint8_t* codes = nullptr;        // [rows, keys_pad], 4-byte aligned rows
  float* scale = nullptr;          // [rows]
};

void fp8_values_quantize(const Fp8ValuesArgs& a, hipStream_t stream);

}  // namespace moss
