// The samplers (docs/samplers.md). The default, euler, is the official Euler flow-matching
// sampler with classifier-free guidance (docs/model.md section 5). Each step:
// v_c = DiT(x, cond, t); with cfg != 1, v_u = DiT(x, uncond, t) skipping the skip layers and
// v = v_u + cfg·(v_c − v_u); x ← x + v·(σ_{i+1} − σ_i). With cfg == 1 there is no uncond pass.
// Its latents and update are fp32, on the DiT's backend during the loop (nothing crosses to the
// host between steps unless a trace asks for it); each step ends with a synchronisation, so
// on_step's time is the step's device time. ddim runs the same loop (on a flow model DDIM's
// update is Euler's).
//
// The other samplers follow ComfyUI's definitions for flow-matching (CONST) models
// (comfy/k_diffusion/sampling.py; uni_pc: comfy/extra_samplers/uni_pc.py, sampler_unipc.h),
// written once in plain C++ over host arrays against one
// denoiser call (run_sampler below): the same guided DiT call as Euler's, its velocity turned
// into the denoised estimate D = x − σ·v. The latent crosses to the host once per DiT call
// (2 MB at 1024x1024, next to a DiT call of a tenth of a second or more).
#pragma once
#include <atomic>
#include <functional>
#include <vector>

#include "model/dit.h"
#include "pipeline/noise.h"

namespace moss {

// Whether a guidance scale asks for classifier-free guidance (an unconditional pass): the one
// place that decides it (cfg 1 gives v = v_c exactly, so its uncond pass is skipped).
inline bool guided(float cfg) { return cfg != 1.0f; }

enum class SamplerKind {
  Euler, EulerAncestral, Heun, Dpm2, Dpmpp2m, Dpmpp2mSde, Dpmpp3mSde, DpmppSde, Lcm, Ddim, ResMultistep,
  UniPc, UniPcBh2
};

struct SamplerName {
  SamplerKind kind;
  const char* name;         // the request's, the record's and ComfyUI's: "dpmpp_2m"
  const char* label;        // A1111's: "DPM++ 2M"
  const char* alias;        // A1111's k-diffusion alias: "k_dpmpp_2m" ("" when none)
  int calls_per_step;       // DiT calls (each with its uncond row at cfg != 1) a step costs
  bool adds_noise;          // takes noise from the seed's stream after the initial noise
};
const std::vector<SamplerName>& sampler_names();
// By name, label or alias, case-insensitive; nullptr: unknown.
const SamplerName* find_sampler(const std::string& name);
const SamplerName& sampler_name(SamplerKind kind);

// The steps come from the schedule (sample's sigmas), not from here.
struct SamplerSettings {
  float cfg = 1.0f;
  std::vector<int> skip_layers;  // 0-based blocks the uncond pass skips
  // When set and true after a step (and its on_step), the loop ends there and returns the latent
  // as it is: an interrupt that still wants the image so far (the server's /interrupt).
  const std::atomic<bool>* stop_after_step = nullptr;
  SamplerKind kind = SamplerKind::Euler;
  float shift = 5.0f;            // the flow model's shift (the SNR samplers' first sigma)
  NoiseStream* noise = nullptr;  // the seed's stream after the initial noise (adds_noise samplers)
};

// Per step i, host f32 [C, gh, gw]: the velocities and the latent after the step (v_uncond
// stays empty at cfg 1). Euler and ddim only.
struct SamplerTrace {
  std::vector<Tensor> v_cond, v_uncond, latent;
};

// Runs len(sigmas)−1 steps from `noise` (host f32 [C, gh, gw]) and returns the final latent.
// uncond may be null only when s.cfg == 1. on_step(step_index, total_steps, seconds) is called
// after each step with the step's wall time.
Tensor sample(Dit& dit, const Dit::Text& cond, const Dit::Text* uncond, const Tensor& noise,
              const std::vector<float>& sigmas, const SamplerSettings& s,
              const std::function<void(int, int, double)>& on_step = {}, SamplerTrace* trace = nullptr);

// The host form every sampler is written in. model(x, σ) is the denoised estimate of x at σ
// (same layout as x); noise() the next draw of the stream (same size); after_step(i) runs after
// step i and returns true to end the loop there. The arithmetic is per element in double,
// stored as float. A Cancelled thrown by model() inside a step leaves x at the last finished
// step: with stop set (and true), the loop ends there, else it is rethrown.
using Denoiser = std::function<std::vector<float>(const std::vector<float>& x, double sigma)>;
using NoiseDraw = std::function<std::vector<float>()>;
std::vector<float> run_sampler(SamplerKind kind, const Denoiser& model, std::vector<float> x,
                               const std::vector<float>& sigmas, double shift, const NoiseDraw& noise,
                               const std::function<bool(int)>& after_step = {},
                               const std::atomic<bool>* stop = nullptr);

}  // namespace moss
