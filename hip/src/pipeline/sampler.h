// Euler flow-matching sampler with classifier-free guidance (docs/model.md section 5). Each step:
// v_c = DiT(x, cond, t); with cfg != 1, v_u = DiT(x, uncond, t) skipping the skip layers and
// v = v_u + cfg·(v_c − v_u); x ← x + v·(σ_{i+1} − σ_i). With cfg == 1 there is no uncond pass.
// Latents and the update are fp32, on the DiT's backend during the loop (nothing crosses to the
// host between steps unless a trace asks for it); each step ends with a synchronisation, so
// on_step's time is the step's device time.
#pragma once
#include <atomic>
#include <functional>
#include <vector>

#include "model/dit.h"

namespace moss {

// Whether a guidance scale asks for classifier-free guidance (an unconditional pass): the one
// place that decides it (cfg 1 gives v = v_c exactly, so its uncond pass is skipped).
inline bool guided(float cfg) { return cfg != 1.0f; }

// The steps come from the schedule (sample's sigmas), not from here.
struct SamplerSettings {
  float cfg = 1.0f;
  std::vector<int> skip_layers;  // 0-based blocks the uncond pass skips
  // When set and true after a step (and its on_step), the loop ends there and returns the latent
  // as it is: an interrupt that still wants the image so far (the server's /interrupt).
  const std::atomic<bool>* stop_after_step = nullptr;
};

// Per step i, host f32 [C, gh, gw]: the velocities and the latent after the step (v_uncond
// stays empty at cfg 1).
struct SamplerTrace {
  std::vector<Tensor> v_cond, v_uncond, latent;
};

// Runs len(sigmas)−1 steps from `noise` (host f32 [C, gh, gw]) and returns the final latent.
// uncond may be null only when s.cfg == 1. on_step(step_index, total_steps, seconds) is called
// after each step with the step's wall time.
Tensor sample(Dit& dit, const Dit::Text& cond, const Dit::Text* uncond, const Tensor& noise,
              const std::vector<float>& sigmas, const SamplerSettings& s,
              const std::function<void(int, int, double)>& on_step = {}, SamplerTrace* trace = nullptr);

}  // namespace moss
