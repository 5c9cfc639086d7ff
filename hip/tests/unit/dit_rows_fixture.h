// The DiT inputs and the cond + uncond passes that the tests comparing weight sources share
// (test_dit_streaming.cpp: fp32 streaming; test_int8_dit.cpp: the INT8 DiT streamed), so that
// both drive the slots the same way and a change to the pattern reaches both.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/dit.h"
#include "pipeline/noise.h"
#include "tensor/tensor.h"

namespace moss::test {

// Text states f32 [t, text_dim]: a fixed pattern of 11 values times `scale`.
inline Tensor text_states(const DitConfig& cfg, int64_t t, float scale) {
  Tensor s = host_tensor(DType::F32, {t, cfg.text_dim});
  for (int64_t i = 0; i < s.numel(); ++i) s.ptr<float>()[i] = float(i % 11 - 5) * scale;
  return s;
}

// A latent f32 [channels, gh, gw] holding the pipeline's initial noise for `seed`.
inline Tensor noise_latent(uint64_t seed, int64_t channels, int64_t gh, int64_t gw) {
  Tensor latent = host_tensor(DType::F32, {channels, gh, gw});
  const std::vector<float> z = initial_noise(seed, channels, gh, gw);
  std::copy(z.begin(), z.end(), latent.ptr<float>());
  return latent;
}

// The rows of one forward_rows call, appended to `out` as host vectors.
inline void append_rows(std::vector<std::vector<float>>& out, const std::vector<Tensor>& rows) {
  for (const Tensor& v : rows) out.push_back(to_f32_vector(v));
}

// cond (7 tokens) and uncond (3 tokens) texts and a latent of 2x3 tokens on the noise of `seed`.
struct CondUncond {
  Dit::Text cond, uncond;
  Tensor latent;
  CondUncond(Dit& dit, const DitConfig& cfg, uint64_t seed)
      : cond(dit.embed_text(text_states(cfg, 7, 0.04f))),
        uncond(dit.embed_text(text_states(cfg, 3, -0.02f))),
        latent(noise_latent(seed, cfg.latent_channels, 2, 3)) {}
};

// cond + uncond (skipping block 2) through two passes at t 700 and 701 (the second reuses the
// slots): the rows of both.
inline std::vector<std::vector<float>> two_passes(Dit& dit, const CondUncond& in) {
  std::vector<std::vector<float>> out;
  for (int pass = 0; pass < 2; ++pass)
    append_rows(out, dit.forward_rows(in.latent, {Dit::Row{&in.cond, {}}, Dit::Row{&in.uncond, {2}}}, 700.0f + pass));
  return out;
}

}  // namespace moss::test
