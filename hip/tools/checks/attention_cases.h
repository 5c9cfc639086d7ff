// Attention cases of the hip_*_kernel_check tools (first version: signature only; the cases
// follow). Included by hip_dit_kernel_check, hip_te_kernel_check and hip_vae_check.
#pragma once
#include <string>

#include "ops/backend.h"
#include "ops/hip/attention_op.h"
#include "ops/hip/hip_context.h"
#include "../kernel_check.h"

namespace moss_attention_check {}

// model: "dit", "te" or "vae".
inline void check_attention_cases(kcheck::Table& table, moss::HipContext& ctx, moss::Backend& host,
                                  const std::string& model) {
  (void)table;
  (void)ctx;
  (void)host;
  (void)model;
}
