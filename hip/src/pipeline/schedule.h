// The sampling schedule (docs/model.md section 5): a shifted float32 grid from 1 down to
// shift/(1000+shift-1), each value snapped to the 1000-step training grid, repeats dropped, a
// final 0 appended. Every step is float32 arithmetic in torch's order, so the sigmas match the
// official pipeline bit for bit.
#pragma once
#include <cstdint>
#include <vector>

namespace moss {

constexpr int kTrainSteps = 1000;

// torch.linspace(start, end, n) in float32 on the CPU: step = (end-start)/(n-1) in float32;
// value i = start + step·i for i < n/2, end − step·(n−1−i) otherwise, each rounded once.
std::vector<float> linspace_f32(float start, float end, int64_t n);

// Sigmas, then a final 0. steps >= 1, shift > 0 (usage_error otherwise).
std::vector<float> make_schedule(int steps, float shift);

// The DiT's timestep for a sigma: 1000·σ in float32.
inline float sigma_to_timestep(float sigma) { return sigma * float(kTrainSteps); }

}  // namespace moss
