#include "pipeline/sampler.h"

#include "util/cancel.h"

#include <algorithm>
#include <chrono>

#include "pipeline/schedule.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace moss {

namespace {

// A backend f32 vector of n copies of v: the per-column gate of CoreOps::add, which is how a
// scalar multiplies here.
Tensor filled(Backend& be, int64_t n, float v) {
  Tensor h = host_tensor(DType::F32, {n});
  std::fill(h.ptr<float>(), h.ptr<float>() + n, v);
  return be.upload(h);
}

}  // namespace

Tensor sample(Dit& dit, const Dit::Text& cond, const Dit::Text* uncond, const Tensor& noise,
              const std::vector<float>& sigmas, const SamplerSettings& s,
              const std::function<void(int, int, double)>& on_step, SamplerTrace* trace) {
  const bool use_uncond = guided(s.cfg);
  if (use_uncond && !uncond) throw usage_error("cfg " + std::to_string(s.cfg) + " needs an unconditional text");
  if (sigmas.size() < 2) throw usage_error("the schedule needs at least one step");

  // The latent stays on the backend, token-major (Dit::forward_tokens), for the whole loop: the
  // guidance and the Euler update are CoreOps::add passes with the scalars as gate vectors, the
  // same fp32 operations in the same order as the reference's loop over elements.
  Backend& be = dit.backend();
  CoreOps& ops = be.core();
  Tensor x = be.upload(latent_to_tokens(noise));  // a fresh tensor (noise checked there), updated in place
  const int64_t C = noise.shape[0], gh = noise.shape[1], gw = noise.shape[2];
  const Tensor minus_one = filled(be, C, -1.0f), cfg = filled(be, C, s.cfg);
  auto to_host = [&](const Tensor& t) { return tokens_to_latent(be.download(t), gh, gw); };
  const int total = int(sigmas.size()) - 1;
  for (int i = 0; i < total; ++i) {
    // An interrupt (stop_after_step) that cancels the job inside a step (util/cancel.h) keeps the
    // latents of the last finished step (the initial noise inside the first step, as A1111 keeps
    // its sampler's last latents): the partial step is dropped, and the caller decodes x as it is,
    // so an interrupted request is always answered with an image.
    const auto t0 = std::chrono::steady_clock::now();
    const float t = sigma_to_timestep(sigmas[size_t(i)]);
    std::vector<Dit::Row> rows = {Dit::Row{&cond, {}}};
    if (use_uncond) rows.push_back(Dit::Row{uncond, s.skip_layers});
    Tensor v;
    try {
      check_interrupted();  // a signal, or the job's cancellation, ends the run
      std::vector<Tensor> velocities = dit.forward_tokens(x, gh, gw, rows, t);
      if (trace) trace->v_cond.push_back(to_host(velocities[0]));
      v = velocities[0];
      if (use_uncond) {
        Tensor& c = velocities[0];
        Tensor& u = velocities[1];
        if (trace) trace->v_uncond.push_back(to_host(u));
        ops.add(c, u, &minus_one);  // diff = c − u (u·(−1) is exact)
        ops.add(u, c, &cfg);        // u + cfg·diff
        v = u;
      }
      check_interrupted();  // a loop cut short above left v unfinished: it must not reach x
    } catch (const Cancelled&) {
      if (s.stop_after_step && s.stop_after_step->load()) break;
      throw;
    }
    const Tensor dt = filled(be, C, sigmas[size_t(i) + 1] - sigmas[size_t(i)]);
    {
      // The update is never cut short by a cancellation: x stays a finished step's latents.
      CancelScope whole(nullptr);
      ops.add(x, v, &dt);  // x + v·dt
    }
    if (trace) trace->latent.push_back(to_host(x));
    // The step's wall time is its device time: wait for it (the next step needs it anyway).
    be.synchronize();
    if (on_step) {
      try {
        on_step(i, total, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      } catch (const Cancelled&) {
        if (s.stop_after_step && s.stop_after_step->load()) break;  // this step finished: keep it
        throw;
      }
    }
    if (s.stop_after_step && s.stop_after_step->load()) break;
  }
  return to_host(x);
}

}  // namespace moss
