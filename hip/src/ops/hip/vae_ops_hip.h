// The HIP VAE op family (VaeOps on device tensors). make_hip_vae_ops (ops/hip/hip_context.h)
// gives the decode's choice, fp16-operand convolutions (TF32-class, kernels/conv2d.h); this
// factory also lets the kernel check run the bf16x3 and plain bf16 convolutions through the same op.
#pragma once
#include <memory>

#include "kernels/conv2d.h"
#include "ops/hip/hip_context.h"
#include "ops/vae_ops.h"

namespace moss {

std::unique_ptr<VaeOps> make_hip_vae_ops(HipContext& ctx, ConvPrecision conv_precision);

}  // namespace moss
