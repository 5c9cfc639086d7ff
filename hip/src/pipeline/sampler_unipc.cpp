#include "pipeline/sampler_unipc.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "pipeline/sampler_mix.h"
#include "util/error.h"

namespace moss {

namespace {

// Solves the n×n system a·r = b (n ≤ 3) by Gaussian elimination with partial pivoting, as
// torch.linalg.solve (LU) does for ComfyUI's rhos.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    std::swap(a[c], a[p]);
    std::swap(b[c], b[p]);
    if (a[c][c] == 0.0) throw std::logic_error("uni_pc: a singular system (two equal sigmas)");
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (size_t c = n; c-- > 0;) {
    double acc = b[c];
    for (size_t k = c + 1; k < n; ++k) acc -= a[c][k] * x[k];
    x[c] = acc / a[c][c];
  }
  return x;
}

}  // namespace

UniPc::UniPc(std::vector<double> sigmas, bool bh2)
    : tau_(std::move(sigmas)), final_scale_(1.0), bh2_(bh2), steps_(int(tau_.size()) - 1) {
  if (steps_ < 1) throw usage_error("the schedule needs at least one step");
  for (size_t i = 0; i + 1 < tau_.size(); ++i)
    if (!(tau_[i] > 0.0)) throw usage_error("uni_pc needs a positive sigma before the last");
  if (tau_.back() == 0.0) {
    tau_.back() = kFinalSigma;
    final_scale_ = 1.0 / (1.0 - kFinalSigma);  // CONST.inverse_noise_scaling at the written sigma
  }
  // A step of h = 0 would divide by zero (ComfyUI's NaN); no schedule here repeats a sigma.
  for (size_t i = 0; i + 1 < tau_.size(); ++i)
    if (tau_[i] == tau_[i + 1])
      throw usage_error("uni_pc: step " + std::to_string(i) + " does not move (sigma " + std::to_string(tau_[i]) +
                        " twice)");
  order_ = std::min(3, steps_ - 1);  // sample_unipc: min(3, len(timesteps) − 2)
}

UniPc::Vec UniPc::update(const Vec& x, double to, int order, bool corrector, const Model& model,
                         Vec* model_out, double scale) const {
  const Point& p0 = history_.back();
  const double h = -std::log(to) - p0.lambda();
  // rks and D1s: the earlier points' λ offsets in units of h, and their D differences over them.
  std::vector<double> rks;
  for (int j = 1; j < order; ++j)
    rks.push_back((history_[history_.size() - 1 - size_t(j)].lambda() - p0.lambda()) / h);
  rks.push_back(1.0);

  const double hh = -h;  // predict_x0
  const double h_phi_1 = std::expm1(hh);
  const double b_h = bh2_ ? std::expm1(hh) : hh;
  const size_t n = static_cast<size_t>(order);
  std::vector<std::vector<double>> R(n, std::vector<double>(n));  // R[i][k] = rks[k]^i
  std::vector<double> b(n);
  double h_phi_k = std::expm1(hh) / hh - 1.0, factorial = 1.0;
  for (int i = 1; i <= order; ++i) {
    for (int k = 0; k < order; ++k) R[size_t(i) - 1][size_t(k)] = std::pow(rks[size_t(k)], i - 1);
    b[size_t(i) - 1] = h_phi_k * factorial / b_h;
    factorial *= i + 1;
    h_phi_k = h_phi_k / hh - 1.0 / factorial;
  }

  // x_t_ = (σ_t/σ_0)·x − (e^{−h} − 1)·D0, and each residual term −B(h)·ρ_j·D1_j written out as
  // coefficients of the history's D: D1_j = (D_j − D0)/rk_j.
  const double base = to / p0.sigma;
  std::vector<std::pair<double, const Vec*>> plain = {{base, &x}, {-h_phi_1, &p0.denoised}};
  auto with_residuals = [&](const std::vector<double>& rhos, size_t count) {
    std::vector<std::pair<double, const Vec*>> terms = plain;
    for (size_t j = 0; j < count; ++j) {
      const double c = -b_h * rhos[j] / rks[j];
      terms.push_back({c, &history_[history_.size() - 2 - j].denoised});
      terms[1].first -= c;
    }
    return terms;
  };

  Vec predicted;
  if (order >= 2) {
    std::vector<double> rhos_p = {0.5};  // order 2: ComfyUI's simplified predictor
    if (order > 2) {
      std::vector<std::vector<double>> Rp(size_t(order) - 1);
      for (size_t r = 0; r + 1 < size_t(order); ++r) Rp[r].assign(R[r].begin(), R[r].end() - 1);
      rhos_p = solve(Rp, std::vector<double>(b.begin(), b.end() - 1));
    }
    std::vector<std::pair<double, const Vec*>> terms = with_residuals(rhos_p, size_t(order) - 1);
    if (!corrector)
      for (auto& t : terms) t.first *= scale;
    predicted = mix(terms);
  } else {
    if (!corrector)
      for (auto& t : plain) t.first *= scale;
    predicted = mix(plain);
  }
  if (!corrector) return predicted;

  const std::vector<double> rhos_c = order == 1 ? std::vector<double>{0.5} : solve(R, b);
  *model_out = model(predicted, to);
  // − B(h)·ρ_c,last·(D_t − D0)
  std::vector<std::pair<double, const Vec*>> terms = with_residuals(rhos_c, size_t(order) - 1);
  const double c = -b_h * rhos_c.back();
  terms.push_back({c, model_out});
  terms[1].first -= c;
  return mix(terms);
}

UniPc::Vec UniPc::step(int i, const Vec& x, const Model& model) {
  if (i == 0) {
    Vec d0 = model(x, tau_[0]);
    history_ = {Point{tau_[0], std::move(d0)}};
    // A one-step run: ComfyUI's order would be 0 and its loop would leave the noise as it is;
    // here the one step is the final step's predictor, an Euler step to the last sigma.
    return steps_ == 1 ? update(x, tau_[1], 1, false, model, nullptr, final_scale_) : x;
  }
  Vec d;
  const int order = i < order_ ? i : std::min(order_, steps_ + 1 - i);  // warm-up, then lower_order_final
  Vec next = update(x, tau_[size_t(i)], order, true, model, &d);
  if (int(history_.size()) == order_) history_.erase(history_.begin());
  history_.push_back(Point{tau_[size_t(i)], std::move(d)});
  // The last step goes on to the final sigma: order min(order, 1), no corrector, no DiT call.
  return i == steps_ - 1 ? update(next, tau_.back(), 1, false, model, nullptr, final_scale_) : next;
}

}  // namespace moss
