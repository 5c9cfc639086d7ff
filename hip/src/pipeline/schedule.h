// The sampling schedules. The default (docs/model.md section 5, kMoss): a shifted float32 grid
// from 1 down to shift/(1000+shift-1), each value snapped to the 1000-step training grid,
// repeats dropped, a final 0 appended; every step is float32 arithmetic in torch's order, so the
// sigmas match the official pipeline bit for bit. The others follow ComfyUI's schedulers
// (comfy/samplers.py) on a flow model (ModelSamplingDiscreteFlow with the request's shift:
// sigma(t) = shift·t/(1+(shift−1)·t), a table of sigma((i+1)/1000) for i < 1000); docs/samplers.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moss {

constexpr int kTrainSteps = 1000;

enum class Schedule { Moss, Simple, Normal, Karras, Exponential, SgmUniform, Beta };

struct ScheduleName {
  Schedule schedule;
  const char* name;   // the request's, the record's and ComfyUI's: "karras"
  const char* label;  // A1111's: "Karras" ("Automatic" for the MOSS-Image schedule)
};
const std::vector<ScheduleName>& schedule_names();
// By name or label, case-insensitive ("automatic" and "moss" are the default); nullptr: unknown.
const ScheduleName* find_schedule(const std::string& name);
const ScheduleName& schedule_name(Schedule s);

// torch.linspace(start, end, n) in float32 on the CPU: step = (end-start)/(n-1) in float32;
// value i = start + step·i for i < n/2, end − step·(n−1−i) otherwise, each rounded once.
std::vector<float> linspace_f32(float start, float end, int64_t n);

// The MOSS-Image sigmas, then a final 0. steps >= 1, shift > 0 (usage_error otherwise).
std::vector<float> make_schedule(int steps, float shift);
// Any schedule's sigmas (descending, ending in 0); kMoss is make_schedule.
std::vector<float> make_schedule(Schedule s, int steps, float shift);

// ComfyUI's flow sigma of a time in [0, 1] (time_snr_shift), in double.
double flow_sigma(double shift, double t);

// The regularized incomplete beta function I_x(a, b) and its inverse (the beta schedule's
// scipy.stats.beta.ppf), to about 1e-12.
double incomplete_beta(double a, double b, double x);
double beta_ppf(double q, double a, double b);

// The DiT's timestep for a sigma: 1000·σ in float32.
inline float sigma_to_timestep(float sigma) { return sigma * float(kTrainSteps); }

}  // namespace moss
