// Random weights with a model's tensor names and shapes, for runs without the official files:
// bench_random_model writes them into a model folder, `moss-infer-hip bench` keeps them in memory
// (io/safetensors.h, WeightFiles::in_memory). Values are plausible for each kind of tensor (norm
// weights near their neutral value, positive variances, matrices scaled by their fan-in), so the
// activations stay finite through every layer and timings are those of real inputs.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/model_folder.h"
#include "tensor/tensor.h"

namespace moss {

// How a tensor's values are drawn: mean + std · (a normal of std 1).
struct WeightDraw {
  float mean = 0, std = 1;
};
// zero_centred_norms: the text encoder's RMSNorms scale by (1 + w), so their neutral value is 0.
// An INT8 ConvRot weight_scale is drawn for `shape` [out, in], its weight's shape.
WeightDraw weight_draw(const std::string& name, const std::vector<int64_t>& shape, bool zero_centred_norms);

// Element i of a tensor is a pure function of (salt, i): the values do not depend on how the work
// is split. Writes elements [first, first + n) to dst (bf16, f32 or i8 values).
void fill_random_weights(void* dst, DType dtype, int64_t first, int64_t n, WeightDraw draw, uint64_t salt);

// I8 weights (an INT8 ConvRot DiT's) are this std's normal draws rounded and clamped to [-127, 127].
constexpr float kRandomI8Std = 40.0f;

// Every non-optional tensor of `tensors` as a host tensor of its first accepted dtype; tensor k
// (in order) draws with salt salt0 + 1 + k. Filled on the global thread pool.
std::map<std::string, Tensor> random_host_weights(const std::vector<ExpectedTensor>& tensors, bool zero_centred_norms,
                                                  uint64_t salt0);

}  // namespace moss
