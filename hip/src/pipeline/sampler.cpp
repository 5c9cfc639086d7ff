#include "pipeline/sampler.h"

#include <chrono>
#include <cstring>

#include "pipeline/schedule.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace moss {

namespace {

Tensor copy_of(const Tensor& t) {
  Tensor out = host_tensor(t.dtype, t.dims());
  std::memcpy(out.data, t.data, t.nbytes());
  return out;
}

}  // namespace

Tensor sample(Dit& dit, const Dit::Text& cond, const Dit::Text* uncond, const Tensor& noise,
              const std::vector<float>& sigmas, const SamplerSettings& s,
              const std::function<void(int, int, double)>& on_step, SamplerTrace* trace) {
  const bool guided = s.cfg != 1.0f;
  if (guided && !uncond) throw usage_error("cfg " + std::to_string(s.cfg) + " needs an unconditional text");
  if (sigmas.size() < 2) throw usage_error("the schedule needs at least one step");
  if (noise.where != Where::Host || noise.dtype != DType::F32 || !noise.contiguous())
    throw failure("sampler: the initial latent must be a contiguous host f32 tensor, got " + noise.shape_str());

  Tensor x = copy_of(noise);
  float* xs = x.ptr<float>();
  const size_t n = size_t(x.numel());
  const int total = int(sigmas.size()) - 1;
  for (int i = 0; i < total; ++i) {
    check_interrupted();  // a signal ends the run between steps
    const auto t0 = std::chrono::steady_clock::now();
    const float t = sigma_to_timestep(sigmas[size_t(i)]);
    std::vector<Dit::Row> rows = {Dit::Row{&cond, {}}};
    if (guided) rows.push_back(Dit::Row{uncond, s.skip_layers});
    const std::vector<Tensor> velocities = dit.forward_rows(x, rows, t);
    const Tensor v_cond = velocities[0];
    Tensor v = v_cond;
    if (guided) {
      const Tensor& v_uncond = velocities[1];
      v = host_tensor(DType::F32, x.dims());
      const float* c = v_cond.ptr<const float>();
      const float* u = v_uncond.ptr<const float>();
      float* o = v.ptr<float>();
      // Each operation rounded to fp32 on its own, in the reference's order.
      for (size_t e = 0; e < n; ++e) {
        const float diff = c[e] - u[e];
        const float scaled = s.cfg * diff;
        o[e] = u[e] + scaled;
      }
      if (trace) trace->v_uncond.push_back(v_uncond);
    }
    const float dt = sigmas[size_t(i) + 1] - sigmas[size_t(i)];
    const float* vs = v.ptr<const float>();
    for (size_t e = 0; e < n; ++e) {
      const float step = vs[e] * dt;
      xs[e] = xs[e] + step;
    }
    if (trace) {
      trace->v_cond.push_back(v_cond);
      trace->latent.push_back(copy_of(x));
    }
    if (on_step)
      on_step(i, total, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return x;
}

}  // namespace moss
