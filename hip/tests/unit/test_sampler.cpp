#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>

#include "model/dit.h"
#include "pipeline/noise.h"
#include "pipeline/sampler.h"
#include "pipeline/sampler_unipc.h"
#include "pipeline/schedule.h"
#include "util/cancel.h"
#include "util/error.h"

using namespace moss;

namespace {

const std::string kTransformer = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss/transformer";

// Counts the weight requests, so a test can tell how many forwards ran and which blocks.
class CountingSource : public DitWeightSource {
 public:
  CountingSource(Backend& be, const WeightFiles& w) : inner_(make_upload_on_use_source(be, w)) {}
  Tensor get(const std::string& name) override {
    ++counts[name];
    return inner_->get(name);
  }
  std::map<std::string, int> counts;

 private:
  std::unique_ptr<DitWeightSource> inner_;
};

struct Fixture {
  std::unique_ptr<Backend> be = make_host_backend();
  DitConfig cfg = parse_dit_config(kTransformer + "/config.json");
  CountingSource* source = nullptr;
  std::unique_ptr<Dit> dit;
  Dit::Text cond, uncond;
  Tensor noise;

  Fixture() {
    auto src = std::make_unique<CountingSource>(*be, WeightFiles::open_folder(kTransformer));
    source = src.get();
    dit = std::make_unique<Dit>(*be, std::move(src), cfg);
    cond = dit->embed_text(states(7, 0.05f));
    uncond = dit->embed_text(states(4, -0.03f));
    noise = host_tensor(DType::F32, {cfg.latent_channels, 2, 2});
    const std::vector<float> z = initial_noise(42, cfg.latent_channels, 2, 2);
    std::copy(z.begin(), z.end(), noise.ptr<float>());
    source->counts.clear();
  }
  Tensor states(int64_t t, float scale) const {
    Tensor s = host_tensor(DType::F32, {t, cfg.text_dim});
    for (int64_t i = 0; i < s.numel(); ++i) s.ptr<float>()[i] = float(i % 13 - 6) * scale;
    return s;
  }
  // One pass over the blocks per step serves both rows (cond and uncond) and fetches the
  // head's weights once.
  int passes() { return source->counts["final_linear_video.weight"]; }
};

}  // namespace

TEST(Sampler, CfgOneRunsNoUnconditionalPass) {
  Fixture f;
  SamplerSettings s{1.0f, {2}};
  const std::vector<float> sigmas = make_schedule(4, 5.0f);
  SamplerTrace trace;
  int calls = 0;
  const Tensor x = sample(*f.dit, f.cond, nullptr, f.noise, sigmas, s, [&](int i, int n, double) {
    EXPECT_EQ(i, calls++);
    EXPECT_EQ(n, 4);
  }, &trace);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(f.passes(), 4);                                 // one DiT pass per step
  EXPECT_EQ(f.source->counts["layers.2.norm1.weight"], 4);  // and never the skipping row
  EXPECT_TRUE(trace.v_uncond.empty());
  ASSERT_EQ(trace.v_cond.size(), 4u);
  // Plain Euler: x ← x + v_cond·(σ_{i+1} − σ_i), in fp32.
  std::vector<float> ref = to_f32_vector(f.noise);
  for (size_t i = 0; i < 4; ++i) {
    const std::vector<float> v = to_f32_vector(trace.v_cond[i]);
    const float dt = sigmas[i + 1] - sigmas[i];
    for (size_t e = 0; e < ref.size(); ++e) ref[e] = ref[e] + v[e] * dt;
    EXPECT_EQ(to_f32_vector(trace.latent[i]), ref) << "step " << i;
  }
  EXPECT_EQ(to_f32_vector(x), ref);
}

TEST(Sampler, GuidanceRunsTheUnconditionalPassWithSkips) {
  Fixture f;
  SamplerSettings s{3.0f, {2}};
  const std::vector<float> sigmas = make_schedule(2, 5.0f);
  SamplerTrace trace;
  const Tensor x = sample(*f.dit, f.cond, &f.uncond, f.noise, sigmas, s, {}, &trace);
  EXPECT_EQ(f.passes(), 2);  // cond and uncond share each step's pass over the blocks
  EXPECT_EQ(f.source->counts["layers.1.norm1.weight"], 2);  // each block fetched once per pass
  EXPECT_EQ(f.source->counts["layers.2.norm1.weight"], 2);  // block 2 still runs for the cond row
  ASSERT_EQ(trace.v_uncond.size(), 2u);
  std::vector<float> ref = to_f32_vector(f.noise);
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<float> c = to_f32_vector(trace.v_cond[i]), u = to_f32_vector(trace.v_uncond[i]);
    const float dt = sigmas[i + 1] - sigmas[i];
    for (size_t e = 0; e < ref.size(); ++e) {
      const float v = u[e] + 3.0f * (c[e] - u[e]);
      ref[e] = ref[e] + v * dt;
    }
  }
  EXPECT_EQ(to_f32_vector(x), ref);
  // The input latent is left alone.
  EXPECT_EQ(to_f32_vector(f.noise), initial_noise(42, f.cfg.latent_channels, 2, 2));
}

TEST(Sampler, GuidanceWithoutUnconditionalTextIsRefused) {
  Fixture f;
  SamplerSettings s{2.5f, {}};
  EXPECT_THROW(sample(*f.dit, f.cond, nullptr, f.noise, make_schedule(2, 5.0f), s), Error);
  EXPECT_EQ(f.passes(), 0);
}

namespace {
// A denoiser that always answers `target`: every consistent sampler ends there (the ODE's
// solution is a straight line to it), and the ones that add noise end there too (their last
// step to sigma 0 returns D). UniPC stops on that line at sigma 0.001 and divides by 1 − 0.001,
// as ComfyUI (sampler_unipc.h): target + 0.001·(x0 − target)/σ0, over 0.999.
std::vector<float> constant_target(size_t n) {
  std::vector<float> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = 0.25f * float(i % 5) - 0.5f;
  return t;
}
}  // namespace

TEST(Samplers, EveryOneReachesAConstantDenoisersTarget) {
  const std::vector<float> target = constant_target(32);
  for (const SamplerName& n : sampler_names()) {
    NoiseStream stream(3);
    std::vector<float> x = stream.next(2, 4, 4);
    int calls = 0;
    auto model = [&](const std::vector<float>&, double) {
      ++calls;
      return target;
    };
    const std::vector<float> sigmas = make_schedule(Schedule::Karras, 5, 3.0f);
    const std::vector<float> x0 = x;
    x = run_sampler(n.kind, model, x, sigmas, 3.0, [&]() { return stream.next(2, 4, 4); });
    const bool unipc = n.kind == SamplerKind::UniPc || n.kind == SamplerKind::UniPcBh2;
    for (size_t i = 0; i < x.size(); ++i) {
      const double end = unipc ? (target[i] + UniPc::kFinalSigma / sigmas[0] * (x0[i] - target[i])) /
                                     (1.0 - UniPc::kFinalSigma)
                               : target[i];
      ASSERT_NEAR(x[i], end, 2e-6) << n.name << " " << i;
    }
    EXPECT_EQ(calls, 5 * n.calls_per_step - (n.calls_per_step - 1)) << n.name;
  }
}

// An interrupt inside a step (the denoiser throws Cancelled with the stop flag raised) keeps the
// last finished step's latent; without the flag the cancellation goes on up. after_step returning
// true ends the loop after that step.
TEST(Samplers, StopKeepsTheLastFinishedStep) {
  const std::vector<float> target = constant_target(32);
  const std::vector<float> sigmas = make_schedule(Schedule::Simple, 4, 1.0f);
  const std::vector<float> noise = initial_noise(5, 2, 4, 4);
  for (const SamplerName& n : sampler_names()) {
    std::atomic<bool> stop{true};
    int calls = 0;
    auto model = [&](const std::vector<float>& x, double) {
      if (++calls > n.calls_per_step) throw Cancelled();
      return target;
    };
    NoiseStream stream(5);
    stream.next(2, 4, 4);
    auto draw = [&]() { return stream.next(2, 4, 4); };
    const std::vector<float> x = run_sampler(n.kind, model, noise, sigmas, 1.0, draw, {}, &stop);
    // One step ran: the result is that step's latent, which a one-step run from the same start gives.
    NoiseStream again(5);
    again.next(2, 4, 4);
    int calls2 = 0;
    auto model2 = [&](const std::vector<float>&, double) {
      ++calls2;
      return target;
    };
    const std::vector<float> one = run_sampler(
        n.kind, model2, noise, sigmas, 1.0, [&]() { return again.next(2, 4, 4); }, [](int) { return true; });
    EXPECT_EQ(x, one) << n.name;
    EXPECT_EQ(calls2, n.calls_per_step) << n.name;
    stop = false;
    calls = 0;
    EXPECT_THROW(run_sampler(n.kind, model, noise, sigmas, 1.0, draw, {}, &stop), Cancelled) << n.name;
  }
}

// uni_pc with one step: ComfyUI's order would be min(3, 0) = 0 and its loop would return the
// noise untouched; here the step is the final step's predictor (docs/samplers.md): one DiT call,
// x·σ_end/σ0 + D·(1 − σ_end/σ0) at σ_end = 0.001, over 1 − 0.001. bh1 and bh2 agree there (the
// predictor of order 1 has no B(h) term).
TEST(Samplers, UniPcOneStepIsAnEulerStepToTheFinalSigma) {
  const std::vector<float> x0 = initial_noise(9, 2, 4, 4);
  for (SamplerKind kind : {SamplerKind::UniPc, SamplerKind::UniPcBh2}) {
    for (const float s0 : {1.0f, 0.6f}) {
      int calls = 0;
      double seen = 0.0;
      auto model = [&](const std::vector<float>& x, double sigma) {
        ++calls;
        seen = sigma;
        std::vector<float> d(x.size());
        for (size_t i = 0; i < x.size(); ++i) d[i] = 0.5f * x[i] + 0.1f;
        return d;
      };
      const std::vector<float> x = run_sampler(kind, model, x0, {s0, 0.0f}, 1.0, {});
      EXPECT_EQ(calls, 1);
      EXPECT_EQ(seen, double(s0));
      const double r = UniPc::kFinalSigma / s0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double d = double(0.5f * x0[i] + 0.1f);
        ASSERT_NEAR(x[i], (r * x0[i] + (1.0 - r) * d) / (1.0 - UniPc::kFinalSigma), 1e-6) << i;
      }
    }
  }
}

// The two variants differ from the first corrector on (B(h) = h against e^h − 1), and a schedule
// with a repeated sigma is refused rather than divided by a zero step.
TEST(Samplers, UniPcVariantsDifferAndAZeroStepIsRefused) {
  const std::vector<float> x0 = initial_noise(4, 2, 4, 4);
  auto model = [](const std::vector<float>& x, double sigma) {
    std::vector<float> d(x.size());
    for (size_t i = 0; i < x.size(); ++i) d[i] = float(std::tanh(x[i]) * (1.0 - sigma));
    return d;
  };
  const std::vector<float> sigmas = make_schedule(Schedule::Simple, 5, 3.0f);
  const std::vector<float> a = run_sampler(SamplerKind::UniPc, model, x0, sigmas, 3.0, {});
  const std::vector<float> b = run_sampler(SamplerKind::UniPcBh2, model, x0, sigmas, 3.0, {});
  double diff = 0.0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, double(std::fabs(a[i] - b[i])));
  EXPECT_GT(diff, 1e-4);
  EXPECT_THROW(run_sampler(SamplerKind::UniPc, model, x0, {1.0f, 0.5f, 0.5f, 0.0f}, 3.0, {}), std::exception);
}

// An interrupt inside a later UniPC step keeps the previous step's latent (at that step's sigma),
// with the history the next steps would have used untouched: the result equals a run ended by
// after_step there, for every step of a 5-step run and both variants.
TEST(Samplers, UniPcStopInsideALaterStepKeepsTheStepBefore) {
  const std::vector<float> x0 = initial_noise(6, 2, 4, 4);
  const std::vector<float> sigmas = make_schedule(Schedule::Simple, 5, 3.0f);
  auto denoise = [](const std::vector<float>& x, double sigma) {
    std::vector<float> d(x.size());
    for (size_t i = 0; i < x.size(); ++i) d[i] = float(std::tanh(x[i]) * (1.0 - 0.5 * sigma));
    return d;
  };
  for (SamplerKind kind : {SamplerKind::UniPc, SamplerKind::UniPcBh2}) {
    for (int stop_in = 1; stop_in < 5; ++stop_in) {  // the step whose DiT call is interrupted
      std::atomic<bool> stop{true};
      int calls = 0;
      auto model = [&](const std::vector<float>& x, double s) {
        if (++calls > stop_in) throw Cancelled();  // step i makes call i + 1
        return denoise(x, s);
      };
      const std::vector<float> stopped = run_sampler(kind, model, x0, sigmas, 3.0, {}, {}, &stop);
      const std::vector<float> ended =
          run_sampler(kind, denoise, x0, sigmas, 3.0, {}, [&](int i) { return i == stop_in - 1; });
      EXPECT_EQ(stopped, ended) << sampler_name(kind).name << " stopped in step " << stop_in;
      if (stop_in > 1) {
        EXPECT_NE(stopped, x0) << stop_in;  // the latent had moved
      }
    }
  }
}
