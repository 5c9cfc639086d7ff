// The gated units of CoreOps::gated_unit as one device function, shared by the row kernel
// (kernels/rows.hip) and the GEMMs' gated-unit epilogues (kernels/gemm.hip), so that all apply
// the host reference's formulas (ops/host/core_ops_host.cpp) with the accurate exp: these
// kernels are held to 1e-5 of the host in fp32.
#pragma once

#include "kernels/op_kinds.h"
#include "runtime/portability.h"

namespace moss {

__device__ inline float sigmoid_exact(float x) { return 1.0f / (1.0f + exp_f(-x)); }

// a and b as CoreOps::gated_unit names them (Situ: a the hidden half, b the gate half).
// kFast (the Wgmma GEMM's epilogue, whose outputs are usually rounded to bf16): tanh_fast,
// fast_exp, a fast reciprocal and a/25 as a·(1/25), relative error about 1e-3 at most, below a
// bf16 ulp (3.9e-3); that epilogue runs while the tensor cores idle, so its instruction count is
// the price. The portable (leaf) GEMM's epilogue keeps the accurate ones: a Radeon's GEMM is
// bound by its matrix rate, not by the few hundred epilogue instructions per lane.
template <GatedUnit kKind, bool kFast = false>
__device__ inline float gated_unit_value(float a, float b) {
  const auto tanh_ = [](float v) { return kFast ? tanh_fast(v) : tanh_f(v); };
  const auto sigmoid_ = [](float v) { return kFast ? fast_rcp(1.0f + fast_exp(-v)) : sigmoid_exact(v); };
  const float a_25 = kFast ? a * (1.0f / 25.0f) : a / 25.0f;
  if constexpr (kKind == GatedUnit::Situ) return (4.0f * tanh_(b / 4.0f) * sigmoid_(b)) * (25.0f * tanh_(a_25));
  else if constexpr (kKind == GatedUnit::SwiGlu) return a * sigmoid_(a) * b;
  else return a * sigmoid_(b);
}

}  // namespace moss
