// The DiT's small host-side tables (docs/model.md section 4, steps 1 and 2): the timestep
// sinusoid and the 4-axis RoPE sin/cos tables. Computed in plain C++ on the host, then
// uploaded; they are tiny next to the activations.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace moss {

// [cos(t·f_k) | sin(t·f_k)], f_k = 10000^(−k/half), k < half = freq_dim/2, in float64 from the
// float32 timestep, rounded to fp32.
std::vector<float> timestep_sinusoid(float timestep, int64_t freq_dim);

// head_dim/8 frequencies 1/base^(j/n) in fp32, shared by the four position axes.
std::vector<float> rope_bands(int64_t head_dim, double base);

// 4-axis fp32 positions: image token (i, j) row-major at (0, T, i − (gh−1)/2, j − (gw−1)/2),
// then text token k at (0, k, 0, 0). gh = gw = 0 gives the text rows alone.
std::vector<std::array<float, 4>> dit_positions(int64_t n_text, int64_t gh, int64_t gw);

// sin and cos host f32 [positions, head_dim]: phase slot p < head_dim/2 is axis p / n, band p % n
// (n = head_dim/8); both halves of a row hold the same slots.
struct RopeTables {
  Tensor sin, cos;
};
RopeTables rope_tables(const std::vector<std::array<float, 4>>& positions, int64_t head_dim, double base);

}  // namespace moss
