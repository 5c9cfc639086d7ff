#include "pipeline/schedule.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <cmath>
#include <string>

#include "util/ascii_case.h"
#include "util/error.h"

namespace moss {

const std::vector<ScheduleName>& schedule_names() {
  static const std::vector<ScheduleName> names = {
      {Schedule::Moss, "moss", "Automatic"},       {Schedule::Simple, "simple", "Simple"},
      {Schedule::Normal, "normal", "Normal"},      {Schedule::Karras, "karras", "Karras"},
      {Schedule::Exponential, "exponential", "Exponential"}, {Schedule::SgmUniform, "sgm_uniform", "SGM Uniform"},
      {Schedule::Beta, "beta", "Beta"},
  };
  return names;
}

const ScheduleName* find_schedule(const std::string& name) {
  const std::string n = ascii_lowercase(name);
  for (const ScheduleName& s : schedule_names())
    if (n == s.name || n == ascii_lowercase(s.label)) return &s;
  if (n == "moss-image") return &schedule_names()[0];
  return nullptr;
}

const ScheduleName& schedule_name(Schedule sch) {
  for (const ScheduleName& s : schedule_names())
    if (s.schedule == sch) return s;
  throw std::logic_error("schedule without a name");
}

std::vector<float> linspace_f32(float start, float end, int64_t n) {
  std::vector<float> v(size_t(std::max<int64_t>(n, 0)));
  if (n == 1) v[0] = start;
  if (n <= 1) return v;
  const float step = (end - start) / float(n - 1);
  const int64_t halfway = n / 2;
  for (int64_t i = 0; i < n; ++i) {
    // One rounding of the exact start + step·i (resp. end − step·(n−1−i)): torch's kernel is
    // compiled with the product and sum fused. float(i) is exact for any schedule length here.
    v[size_t(i)] = i < halfway ? std::fma(step, float(i), start) : std::fma(-step, float(n - 1 - i), end);
  }
  return v;
}

namespace {

// s·v / (1 + (s−1)·v) over linspace(1, s/(1000+s−1), n), every operation in float32 as torch
// does it with a Python-float shift (the scalars are computed in double, then cast).
std::vector<float> shifted_grid(int64_t n, double shift) {
  const float lower = float(shift / (double(kTrainSteps) + shift - 1.0));
  std::vector<float> v = linspace_f32(1.0f, lower, n);
  const float s = float(shift), s_minus_1 = float(shift - 1.0);
  for (float& x : v) {
    const float num = s * x;
    const float den = 1.0f + s_minus_1 * x;
    x = num / den;
  }
  return v;
}

}  // namespace

std::vector<float> make_schedule(int steps, float shift) {
  if (steps < 1) throw usage_error("--steps must be at least 1 (got " + std::to_string(steps) + ")");
  if (!(shift > 0.0f) || !std::isfinite(shift))
    throw usage_error("--shift must be a positive number (got " + std::to_string(shift) + ")");
  std::vector<float> train = shifted_grid(kTrainSteps, 1.0);
  std::reverse(train.begin(), train.end());  // ascending, as searchsorted needs
  const std::vector<float> sig = shifted_grid(steps, double(shift));

  std::vector<float> out;
  for (float s : sig) {
    // searchsorted (left): the first grid value >= s, clamped to the last; then the nearer of it
    // and its lower neighbour, a tie going to the lower (smaller) one.
    const int64_t last = kTrainSteps - 1;
    int64_t up = std::lower_bound(train.begin(), train.end(), s) - train.begin();
    up = std::min(up, last);
    const int64_t lo = std::max<int64_t>(up - 1, 0);
    const float below = std::fabs(s - train[size_t(lo)]), above = std::fabs(train[size_t(up)] - s);
    const float snapped = train[size_t(below <= above ? lo : up)];
    if (out.empty() || out.back() != snapped) out.push_back(snapped);
  }
  out.push_back(0.0f);
  return out;
}

double flow_sigma(double shift, double t) { return shift == 1.0 ? t : shift * t / (1.0 + (shift - 1.0) * t); }

double incomplete_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  // The continued fraction (modified Lentz) converges fast for x < (a+1)/(a+b+2); the other
  // side uses the symmetry I_x(a, b) = 1 − I_{1−x}(b, a).
  if (x > (a + 1.0) / (a + b + 2.0)) return 1.0 - incomplete_beta(b, a, 1.0 - x);
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x)) / a;
  constexpr double kTiny = 1e-300;
  double f = 1.0, c = 1.0, d = 0.0;
  for (int i = 0; i <= 400; ++i) {
    const int m = i / 2;
    double numerator;
    if (i == 0) numerator = 1.0;
    else if (i % 2 == 0) numerator = (m * (b - m) * x) / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
    else numerator = -((a + m) * (a + b + m) * x) / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
    d = 1.0 + numerator * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    d = 1.0 / d;
    c = 1.0 + numerator / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    const double cd = c * d;
    f *= cd;
    if (std::fabs(1.0 - cd) < 1e-15) break;
  }
  return front * (f - 1.0);
}

double beta_ppf(double q, double a, double b) {
  if (q <= 0.0) return 0.0;
  if (q >= 1.0) return 1.0;
  double lo = 0.0, hi = 1.0;  // I_x is increasing in x: bisection to double precision
  for (int i = 0; i < 200 && hi - lo > 1e-16; ++i) {
    const double mid = 0.5 * (lo + hi);
    (incomplete_beta(a, b, mid) < q ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

namespace {

// ModelSamplingDiscreteFlow's table: sigma((i+1)/1000), i < 1000, ascending (float32, as torch
// stores the buffer).
std::vector<float> flow_table(double shift) {
  std::vector<float> t(kTrainSteps);
  for (int i = 0; i < kTrainSteps; ++i) t[size_t(i)] = float(flow_sigma(shift, double(i + 1) / kTrainSteps));
  return t;
}

std::vector<float> with_zero(std::vector<double> v) {
  std::vector<float> out(v.begin(), v.end());
  out.push_back(0.0f);
  return out;
}

// numpy.linspace / torch.linspace in double: start + (end−start)·i/(n−1).
std::vector<double> linspace(double start, double end, int n) {
  std::vector<double> v(size_t(std::max(n, 0)));
  for (int i = 0; i < n; ++i) v[size_t(i)] = n == 1 ? start : start + (end - start) * double(i) / double(n - 1);
  return v;
}

}  // namespace

std::vector<float> make_schedule(Schedule sch, int steps, float shift_f) {
  if (sch == Schedule::Moss) return make_schedule(steps, shift_f);
  make_schedule(1, shift_f);  // the same checks of steps and shift
  if (steps < 1) throw usage_error("--steps must be at least 1 (got " + std::to_string(steps) + ")");
  const double shift = double(shift_f);
  const std::vector<float> table = flow_table(shift);
  const double sigma_min = table.front(), sigma_max = table.back();
  std::vector<double> s;
  switch (sch) {
    case Schedule::Moss: break;
    case Schedule::Simple: {  // comfy/samplers.py simple_scheduler
      const double ss = double(kTrainSteps) / steps;
      for (int x = 0; x < steps; ++x) s.push_back(table[size_t(kTrainSteps - 1 - int(x * ss))]);
      break;
    }
    case Schedule::Normal:
    case Schedule::SgmUniform: {  // comfy/samplers.py normal_scheduler (sgm: steps+1 points, the last dropped)
      // start and end are timesteps of the table's sigmas, which sigma() shifts again (as ComfyUI).
      const double start = sigma_max * kTrainSteps, end = sigma_min * kTrainSteps;
      std::vector<double> ts = sch == Schedule::SgmUniform ? linspace(start, end, steps + 1) : linspace(start, end, steps);
      if (sch == Schedule::SgmUniform) ts.pop_back();
      for (double t : ts) s.push_back(flow_sigma(shift, t / kTrainSteps));
      break;
    }
    case Schedule::Karras: {  // k_diffusion get_sigmas_karras, rho 7
      const double rho = 7.0, lo = std::pow(sigma_min, 1.0 / rho), hi = std::pow(sigma_max, 1.0 / rho);
      for (double r : linspace(0.0, 1.0, steps)) s.push_back(std::pow(hi + r * (lo - hi), rho));
      break;
    }
    case Schedule::Exponential:  // k_diffusion get_sigmas_exponential
      for (double l : linspace(std::log(sigma_max), std::log(sigma_min), steps)) s.push_back(std::exp(l));
      break;
    case Schedule::Beta: {  // comfy/samplers.py beta_scheduler, alpha = beta = 0.6, repeats dropped
      double last = -1.0;
      for (int i = 0; i < steps; ++i) {
        const double q = 1.0 - double(i) / steps;
        const double t = std::nearbyint(beta_ppf(q, 0.6, 0.6) * (kTrainSteps - 1));
        if (t != last) s.push_back(table[size_t(t)]);
        last = t;
      }
      break;
    }
  }
  return with_zero(s);
}

}  // namespace moss
