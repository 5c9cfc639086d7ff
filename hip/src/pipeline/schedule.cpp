#include "pipeline/schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "util/error.h"

namespace moss {

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

}  // namespace moss
