// The HIP VAE op family (VaeOps on device tensors). make_hip_vae_ops (ops/hip/hip_context.h)
// gives the decode's choice, bf16x3 convolutions (fp32-class results); this factory also lets
// the kernel check run the plain bf16 convolution through the same op.
#pragma once
#include <memory>

#include "kernels/conv2d.h"
#include "ops/hip/hip_context.h"
#include "ops/vae_ops.h"

namespace moss {

std::unique_ptr<VaeOps> make_hip_vae_ops(HipContext& ctx, ConvPrecision conv_precision);

}  // namespace moss
