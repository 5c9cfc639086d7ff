#include "pipeline/sampler.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "pipeline/sampler_mix.h"
#include "pipeline/sampler_unipc.h"
#include "pipeline/schedule.h"
#include "util/ascii_case.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace moss {

// ---- the names ----

const std::vector<SamplerName>& sampler_names() {
  static const std::vector<SamplerName> names = {
      {SamplerKind::Euler, "euler", "Euler", "k_euler", 1, false},
      {SamplerKind::EulerAncestral, "euler_ancestral", "Euler a", "k_euler_a", 1, true},
      {SamplerKind::Heun, "heun", "Heun", "k_heun", 2, false},
      {SamplerKind::Dpm2, "dpm_2", "DPM2", "k_dpm_2", 2, false},
      {SamplerKind::Dpmpp2m, "dpmpp_2m", "DPM++ 2M", "k_dpmpp_2m", 1, false},
      {SamplerKind::Dpmpp2mSde, "dpmpp_2m_sde", "DPM++ 2M SDE", "k_dpmpp_2m_sde", 1, true},
      {SamplerKind::Dpmpp3mSde, "dpmpp_3m_sde", "DPM++ 3M SDE", "k_dpmpp_3m_sde", 1, true},
      {SamplerKind::DpmppSde, "dpmpp_sde", "DPM++ SDE", "k_dpmpp_sde", 2, true},
      {SamplerKind::Lcm, "lcm", "LCM", "k_lcm", 1, true},
      {SamplerKind::Ddim, "ddim", "DDIM", "", 1, false},
      {SamplerKind::ResMultistep, "res_multistep", "Res Multistep", "", 1, false},
      {SamplerKind::UniPc, "uni_pc", "UniPC", "unipc", 1, false},
      {SamplerKind::UniPcBh2, "uni_pc_bh2", "UniPC BH2", "", 1, false},
  };
  return names;
}

const SamplerName* find_sampler(const std::string& name) {
  const std::string n = ascii_lowercase(name);
  for (const SamplerName& s : sampler_names())
    if (n == s.name || n == ascii_lowercase(s.label) || (*s.alias && n == s.alias)) return &s;
  return nullptr;
}

const SamplerName& sampler_name(SamplerKind kind) {
  for (const SamplerName& s : sampler_names())
    if (s.kind == kind) return s;
  throw std::logic_error("sampler without a name");
}

// ---- the host samplers (comfy/k_diffusion/sampling.py, commit 02159d81; docs/samplers.md) ----

namespace {

using Vec = std::vector<float>;

// k-diffusion's get_ancestral_step at eta 1: the sigma to step down to and the noise to add.
std::pair<double, double> ancestral_step(double from, double to) {
  const double up = std::min(to, std::sqrt(std::max(0.0, to * to * (from * from - to * to) / (from * from))));
  return {std::sqrt(std::max(0.0, to * to - up * up)), up};
}

// The half log-SNR of a flow sigma, log((1−σ)/σ), and back (sigma_to_half_log_snr for CONST).
double half_log_snr(double s) { return std::log((1.0 - s) / s); }
double snr_sigma(double lambda) { return 1.0 / (1.0 + std::exp(lambda)); }

}  // namespace

std::vector<float> run_sampler(SamplerKind kind, const Denoiser& model, std::vector<float> x,
                               const std::vector<float>& sigmas_f, double shift, const NoiseDraw& noise,
                               const std::function<bool(int)>& after_step, const std::atomic<bool>* stop) {
  if (sigmas_f.size() < 2) throw usage_error("the schedule needs at least one step");
  std::vector<double> s(sigmas_f.begin(), sigmas_f.end());
  const bool snr = kind == SamplerKind::Dpmpp2mSde || kind == SamplerKind::Dpmpp3mSde || kind == SamplerKind::DpmppSde;
  // offset_first_sigma_for_snr: a first sigma of 1 has no log-SNR; ComfyUI starts at
  // percent_to_sigma(1e-4) = the shifted flow sigma of 1 − 1e-4.
  if (snr && s[0] >= 1.0) s[0] = flow_sigma(shift, 1.0 - 1e-4);
  auto draw = [&]() {
    Vec z = noise ? noise() : Vec();
    if (z.size() != x.size()) throw std::logic_error("the sampler's noise does not match the latent");
    return z;
  };
  Vec old_denoised, older_denoised;  // D of the previous steps (multistep samplers)
  double h_last = 0.0, h_before = 0.0;
  bool have_h_last = false, have_h_before = false;
  const int total = int(s.size()) - 1;
  // UniPC calls the DiT at its predicted latent, not at x: it makes its own call (sampler_unipc.h).
  std::optional<UniPc> unipc;
  if (kind == SamplerKind::UniPc || kind == SamplerKind::UniPcBh2) unipc.emplace(s, kind == SamplerKind::UniPcBh2);
  for (int i = 0; i < total; ++i) {
    const double si = s[size_t(i)], sn = s[size_t(i) + 1];
    Vec next;
    try {
      const Vec D = unipc ? Vec() : model(x, si);
      switch (kind) {
        case SamplerKind::UniPc:
        case SamplerKind::UniPcBh2:
          next = unipc->step(i, x, model);
          break;
        case SamplerKind::Euler:
        case SamplerKind::Ddim: {  // sample_euler: x + d·(σ'−σ), d = (x − D)/σ
          const double dt = sn - si;
          next = mix({{1.0 + dt / si, &x}, {-dt / si, &D}});
          break;
        }
        case SamplerKind::EulerAncestral: {  // sample_euler_ancestral_RF, eta 1
          if (sn == 0.0) {
            next = D;
            break;
          }
          const double down = sn * (1.0 + (sn / si - 1.0));
          const double alpha_next = 1.0 - sn, alpha_down = 1.0 - down;
          const double renoise =
              std::sqrt(std::max(0.0, sn * sn - down * down * alpha_next * alpha_next / (alpha_down * alpha_down)));
          const double ratio = down / si, scale = alpha_next / alpha_down;
          const Vec z = draw();
          next = mix({{scale * ratio, &x}, {scale * (1.0 - ratio), &D}, {renoise, &z}});
          break;
        }
        case SamplerKind::Heun: {  // sample_heun, s_churn 0
          const double dt = sn - si;
          const Vec x2 = mix({{1.0 + dt / si, &x}, {-dt / si, &D}});
          if (sn == 0.0) {
            next = x2;
            break;
          }
          const Vec D2 = model(x2, sn);
          // x + dt·(d + d2)/2 with d = (x − D)/σ, d2 = (x2 − D2)/σ'
          next = mix({{1.0 + 0.5 * dt / si, &x}, {-0.5 * dt / si, &D}, {0.5 * dt / sn, &x2}, {-0.5 * dt / sn, &D2}});
          break;
        }
        case SamplerKind::Dpm2: {  // sample_dpm_2, s_churn 0
          if (sn == 0.0) {
            const double dt = sn - si;
            next = mix({{1.0 + dt / si, &x}, {-dt / si, &D}});
            break;
          }
          const double mid = std::exp(0.5 * (std::log(si) + std::log(sn)));
          const double dt1 = mid - si, dt2 = sn - si;
          const Vec x2 = mix({{1.0 + dt1 / si, &x}, {-dt1 / si, &D}});
          const Vec D2 = model(x2, mid);
          next = mix({{1.0, &x}, {dt2 / mid, &x2}, {-dt2 / mid, &D2}});
          break;
        }
        case SamplerKind::Dpmpp2m: {  // sample_dpmpp_2m: t = −log σ
          if (sn == 0.0) {
            next = D;
          } else {
            const double h = std::log(si) - std::log(sn);
            const double a = sn / si, b = -std::expm1(-h);
            if (old_denoised.empty()) {
              next = mix({{a, &x}, {b, &D}});
            } else {
              const double r = (std::log(s[size_t(i) - 1]) - std::log(si)) / h;
              next = mix({{a, &x}, {b * (1.0 + 1.0 / (2.0 * r)), &D}, {-b / (2.0 * r), &old_denoised}});
            }
          }
          break;
        }
        case SamplerKind::Dpmpp2mSde:
        case SamplerKind::Dpmpp3mSde: {  // sample_dpmpp_2m_sde (midpoint) / sample_dpmpp_3m_sde, eta 1
          if (sn == 0.0) {
            next = D;
            break;
          }
          const double h = half_log_snr(sn) - half_log_snr(si), h_eta = 2.0 * h;
          const double alpha_t = sn * std::exp(half_log_snr(sn));  // 1 − σ'
          const double c = -std::expm1(-h_eta);
          const double phi_2 = std::expm1(-h_eta) / h_eta + 1.0;
          const Vec z = draw();
          const double noise_coef = sn * std::sqrt(-std::expm1(-2.0 * h));
          const double base = sn / si * std::exp(-h);
          if (kind == SamplerKind::Dpmpp2mSde) {
            if (!have_h_last) {
              next = mix({{base, &x}, {alpha_t * c, &D}, {noise_coef, &z}});
            } else {
              const double k = 0.5 * alpha_t * c * h / h_last;  // 0.5·α·c·(1/r), r = h_last/h
              next = mix({{base, &x}, {alpha_t * c + k, &D}, {-k, &old_denoised}, {noise_coef, &z}});
            }
          } else if (have_h_before) {
            const double r0 = h_last / h, r1 = h_before / h;
            const double phi_3 = phi_2 / h_eta - 0.5;
            // d1_0 = (D − D1)/r0, d1_1 = (D1 − D2)/r1, d1 = d1_0 + (d1_0 − d1_1)·r0/(r0+r1),
            // d2 = (d1_0 − d1_1)/(r0+r1); x += α·φ2·d1 − α·φ3·d2: the coefficients of D, D1, D2.
            const double w = r0 / (r0 + r1), v = 1.0 / (r0 + r1);
            const double c0 = 1.0 / r0, c1 = 1.0 / r1;  // d1_0 = c0·(D − D1), d1_1 = c1·(D1 − D2)
            const double cD = alpha_t * phi_2 * (c0 + w * c0) - alpha_t * phi_3 * v * c0;
            const double cD1 = alpha_t * phi_2 * (-c0 - w * (c0 + c1)) - alpha_t * phi_3 * v * (-c0 - c1);
            const double cD2 = alpha_t * phi_2 * (w * c1) - alpha_t * phi_3 * v * c1;
            next = mix({{base, &x}, {alpha_t * c + cD, &D}, {cD1, &old_denoised}, {cD2, &older_denoised}, {noise_coef, &z}});
          } else if (have_h_last) {
            const double k = alpha_t * phi_2 * h / h_last;  // α·φ2·(D − D1)/r
            next = mix({{base, &x}, {alpha_t * c + k, &D}, {-k, &old_denoised}, {noise_coef, &z}});
          } else {
            next = mix({{base, &x}, {alpha_t * c, &D}, {noise_coef, &z}});
          }
          h_before = h_last;
          have_h_before = have_h_last;
          h_last = h;
          have_h_last = true;
          break;
        }
        case SamplerKind::DpmppSde: {  // sample_dpmpp_sde, eta 1, r 1/2
          if (sn == 0.0) {
            next = D;
            break;
          }
          const double r = 0.5, fac = 1.0 / (2.0 * r);
          const double ls = half_log_snr(si), lt = half_log_snr(sn), h = lt - ls, ls1 = ls + r * h;
          const double s1 = snr_sigma(ls1);
          const double alpha_s = si * std::exp(ls), alpha_s1 = s1 * std::exp(ls1), alpha_t = sn * std::exp(lt);
          auto [sd1, su1] = ancestral_step(std::exp(-ls), std::exp(-ls1));
          const double h1 = -std::log(sd1) - ls;
          const Vec z1 = draw();
          const Vec x2 = mix({{alpha_s1 / alpha_s * std::exp(-h1), &x}, {-alpha_s1 * std::expm1(-h1), &D},
                              {alpha_s1 * su1, &z1}});
          const Vec D2 = model(x2, s1);
          auto [sd2, su2] = ancestral_step(std::exp(-ls), std::exp(-lt));
          const double h2 = -std::log(sd2) - ls;
          const double k = -alpha_t * std::expm1(-h2);
          const Vec z2 = draw();
          next = mix({{alpha_t / alpha_s * std::exp(-h2), &x}, {k * (1.0 - fac), &D}, {k * fac, &D2},
                      {alpha_t * su2, &z2}});
          break;
        }
        case SamplerKind::Lcm: {  // sample_lcm: D, renoised to σ' with CONST's noise_scaling
          if (sn > 0.0) {
            const Vec z = draw();
            next = mix({{sn, &z}, {1.0 - sn, &D}});
          } else {
            next = D;
          }
          break;
        }
        case SamplerKind::ResMultistep: {  // res_multistep, eta 0 (sample_res_multistep)
          if (sn == 0.0 || old_denoised.empty()) {
            const double dt = sn - si;
            next = mix({{1.0 + dt / si, &x}, {-dt / si, &D}});
          } else {
            // t = −log σ; with eta 0 the previous step's sigma_down is this step's sigma.
            const double t = -std::log(si), t_next = -std::log(sn), t_prev = -std::log(s[size_t(i) - 1]);
            const double h = t_next - t, c2 = (t_prev - t) / h;
            const double phi1 = std::expm1(-h) / -h, phi2 = (phi1 - 1.0) / -h;
            double b1 = phi1 - phi2 / c2, b2 = phi2 / c2;
            if (std::isnan(b1)) b1 = 0.0;
            if (std::isnan(b2)) b2 = 0.0;
            next = mix({{std::exp(-h), &x}, {h * b1, &D}, {h * b2, &old_denoised}});
          }
          break;
        }
      }
      older_denoised = std::move(old_denoised);
      old_denoised = D;
    } catch (const Cancelled&) {
      if (stop && stop->load()) break;
      throw;
    }
    x = std::move(next);
    if (after_step && after_step(i)) break;
  }
  return x;
}

namespace {

// A backend f32 vector of n copies of v: the per-column gate of CoreOps::add, which is how a
// scalar multiplies here.
Tensor filled(Backend& be, int64_t n, float v) {
  Tensor h = host_tensor(DType::F32, {n});
  std::fill(h.ptr<float>(), h.ptr<float>() + n, v);
  return be.upload(h);
}

using ToHost = std::function<Tensor(const Tensor&)>;

// The DiT's rows at timestep t, guided: v_c, or v_u + cfg·(v_c − v_u) with an uncond row.
// x is token-major on the backend; minus_one and cfg are the gate vectors of `filled`.
Tensor guided_velocity(Dit& dit, const Tensor& x, int64_t gh, int64_t gw, const std::vector<Dit::Row>& rows, float t,
                       const Tensor& minus_one, const Tensor& cfg, const ToHost* to_host, SamplerTrace* trace) {
  CoreOps& ops = dit.backend().core();
  std::vector<Tensor> velocities = dit.forward_tokens(x, gh, gw, rows, t);
  if (trace) trace->v_cond.push_back((*to_host)(velocities[0]));
  if (rows.size() < 2) return velocities[0];
  Tensor& c = velocities[0];
  Tensor& u = velocities[1];
  if (trace) trace->v_uncond.push_back((*to_host)(u));
  ops.add(c, u, &minus_one);  // diff = c − u (u·(−1) is exact)
  ops.add(u, c, &cfg);        // u + cfg·diff
  return u;
}

// Every sampler but Euler: run_sampler with the guided DiT call as its denoiser, D = x − σ·v.
Tensor sample_on_host(Dit& dit, const Dit::Text& cond, const Dit::Text* uncond, const Tensor& noise,
                      const std::vector<float>& sigmas, const SamplerSettings& s,
                      const std::function<void(int, int, double)>& on_step) {
  Backend& be = dit.backend();
  const int64_t C = noise.shape[0], gh = noise.shape[1], gw = noise.shape[2];
  const Tensor minus_one = filled(be, C, -1.0f), cfg = filled(be, C, s.cfg);
  std::vector<Dit::Row> rows = {Dit::Row{&cond, {}}};
  if (guided(s.cfg)) rows.push_back(Dit::Row{uncond, s.skip_layers});
  Tensor host = host_tensor(DType::F32, {C, gh, gw});
  auto model = [&](const std::vector<float>& x, double sigma) {
    check_interrupted();  // a signal, or the job's cancellation, ends the run
    std::copy(x.begin(), x.end(), host.ptr<float>());
    const Tensor xt = be.upload(latent_to_tokens(host));
    const Tensor v = tokens_to_latent(be.download(guided_velocity(dit, xt, gh, gw, rows, sigma_to_timestep(float(sigma)),
                                                                  minus_one, cfg, nullptr, nullptr)),
                                      gh, gw);
    check_interrupted();
    std::vector<float> d(x.size());
    const float* vp = v.ptr<float>();
    for (size_t i = 0; i < d.size(); ++i) d[i] = float(double(x[i]) - sigma * double(vp[i]));
    return d;
  };
  NoiseDraw draw;
  if (s.noise) draw = [&]() { return s.noise->next(C, gh, gw); };
  const int total = int(sigmas.size()) - 1;
  auto t0 = std::chrono::steady_clock::now();
  auto after = [&](int i) {
    if (on_step) {
      try {
        on_step(i, total, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      } catch (const Cancelled&) {
        if (!(s.stop_after_step && s.stop_after_step->load())) throw;  // this step finished: keep it
      }
    }
    t0 = std::chrono::steady_clock::now();
    return s.stop_after_step && s.stop_after_step->load();
  };
  std::vector<float> x(noise.ptr<float>(), noise.ptr<float>() + noise.numel());
  x = run_sampler(s.kind, model, std::move(x), sigmas, double(s.shift), draw, after, s.stop_after_step);
  std::copy(x.begin(), x.end(), host.ptr<float>());
  return host;
}

}  // namespace

Tensor sample(Dit& dit, const Dit::Text& cond, const Dit::Text* uncond, const Tensor& noise,
              const std::vector<float>& sigmas, const SamplerSettings& s,
              const std::function<void(int, int, double)>& on_step, SamplerTrace* trace) {
  const bool use_uncond = guided(s.cfg);
  if (use_uncond && !uncond) throw usage_error("cfg " + std::to_string(s.cfg) + " needs an unconditional text");
  if (sigmas.size() < 2) throw usage_error("the schedule needs at least one step");
  if (s.kind != SamplerKind::Euler && s.kind != SamplerKind::Ddim) {
    if (trace) throw usage_error("a sampler trace is kept for euler and ddim only");
    return sample_on_host(dit, cond, uncond, noise, sigmas, s, on_step);
  }

  // The latent stays on the backend, token-major (Dit::forward_tokens), for the whole loop: the
  // guidance and the Euler update are CoreOps::add passes with the scalars as gate vectors, the
  // same fp32 operations in the same order as the reference's loop over elements.
  Backend& be = dit.backend();
  CoreOps& ops = be.core();
  Tensor x = be.upload(latent_to_tokens(noise));  // a fresh tensor (noise checked there), updated in place
  const int64_t C = noise.shape[0], gh = noise.shape[1], gw = noise.shape[2];
  const Tensor minus_one = filled(be, C, -1.0f), cfg = filled(be, C, s.cfg);
  const ToHost to_host = [&](const Tensor& t) { return tokens_to_latent(be.download(t), gh, gw); };
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
      v = guided_velocity(dit, x, gh, gw, rows, t, minus_one, cfg, trace ? &to_host : nullptr, trace);
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
