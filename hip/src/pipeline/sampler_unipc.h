// uni_pc and uni_pc_bh2: the UniPC multistep solver as ComfyUI runs it on a flow (CONST) model
// (comfy/extra_samplers/uni_pc.py, Comfy-Org/ComfyUI 0748e38f: sample_unipc, UniPC.sample with
// method "multistep", multistep_uni_pc_bh_update with predict_x0, variant bh1 or bh2;
// docs/samplers.md). Used by run_sampler (sampler.h), one instance per run.
//
// ComfyUI hands the flow sigmas to SigmaConvert as if they were variance-exploding sigmas: its
// alpha_t = 1/√(1+σ²) and std_t = σ/√(1+σ²) cancel out of every update once the latent is written
// as x = y/alpha_t (its predict_eps_sigma does that conversion around each model call), leaving
// UniPC on dx/dσ = (x − D)/σ with λ = −log σ, the flow's own ODE. That is the form here, in
// double; ComfyUI evaluates λ through log(1 − exp(…)) in float32, which the closed form only
// makes more precise.
//
// The steps are ComfyUI's progress steps, one DiT call each: step 0 only evaluates D at the
// noise; step i (1 ≤ i < N) moves to σ_i, predictor then corrector, the corrector's DiT call (at
// the predicted latent) also being the next step's history; the last step also moves on to the
// final sigma with the predictor alone. The order is min(3, N − 1), lower at the start (the
// history is short) and at the end (lower_order_final). A final sigma of 0 becomes 0.001 and the
// result is divided by 1 − 0.001: sample_unipc writes 0.001 into the schedule itself
// (timesteps = sigmas[:] is a view), so KSAMPLER's CONST.inverse_noise_scaling sees it.
#pragma once
#include <cmath>
#include <functional>
#include <vector>

namespace moss {

class UniPc {
 public:
  using Vec = std::vector<float>;
  using Model = std::function<Vec(const Vec& x, double sigma)>;

  // bh2: B(h) = e^h − 1 (uni_pc_bh2) rather than h (uni_pc, bh1).
  UniPc(std::vector<double> sigmas, bool bh2);
  int steps() const { return steps_; }
  // Step i from x (the previous step's result); calls model once (none in a one-step run).
  // Throws what model throws, with the history unchanged.
  Vec step(int i, const Vec& x, const Model& model);

  // What the last sigma of 0 becomes (ComfyUI's timesteps[-1]).
  static constexpr double kFinalSigma = 0.001;

 private:
  struct Point {
    double sigma;
    Vec denoised;  // D there
    double lambda() const { return -std::log(sigma); }
  };
  // multistep_uni_pc_bh_update (predict_x0) from the history to sigma `to` with `order` points;
  // with `corrector`, calls model at the predicted latent and stores D there in *model_out;
  // without, the predicted latent times `scale` (final_scale_ on the last move).
  Vec update(const Vec& x, double to, int order, bool corrector, const Model& model, Vec* model_out,
             double scale = 1.0) const;

  std::vector<double> tau_;  // the sigmas, the final 0 replaced by kFinalSigma
  double final_scale_;       // 1/(1 − kFinalSigma) after a final 0, else 1
  bool bh2_;
  int steps_, order_;
  std::vector<Point> history_;  // oldest first, at most order_ points
};

}  // namespace moss
