// The LoRA merge's kernel (ops/lora_ops.h defines the arithmetic; ops/hip/lora_ops_hip.hip checks
// the operands and launches it): W' = round(float(W) + Σ coef·ΔW) in one pass over the weight,
// every delta of the weight in one launch (their descriptors in device memory, any number), each value's sums in the order the host reference
// takes, so the two agree bit for bit.
#pragma once
#include <cstdint>

#include "runtime/portability.h"

namespace moss {

// A factor: the f32 matrix a [rows, cols] (b null), or the product a [rows, rank] · b [rank, cols].
struct LoraFactorArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  int64_t rows = 0, cols = 0, rank = 0;
};

enum LoraFormArg : int32_t { kLoraSingle = 0, kLoraHadamard = 1, kLoraKronecker = 2 };

struct LoraDeltaArgs {
  int32_t form = kLoraSingle;
  float coef = 0;
  int64_t row0 = 0;
  LoraFactorArgs f1, f2;
};

struct LoraMergeArgs {
  void* w = nullptr;  // bf16 or f32 [rows, cols], contiguous; merged in place
  bool w_bf16 = true;
  int64_t rows = 0, cols = 0;
  const LoraDeltaArgs* deltas = nullptr;  // `count` descriptors in device memory, in the merge's order
  int32_t count = 0;
};

void lora_merge(const LoraMergeArgs& a, hipStream_t stream);

}  // namespace moss
