#include <gtest/gtest.h>

#include "model/dit.h"
#include "pipeline/dit_residency.h"
#include "pipeline/noise.h"

using namespace moss;

namespace {

const std::string kTransformer = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss/transformer";

Tensor states(const DitConfig& cfg, int64_t t, float scale) {
  Tensor s = host_tensor(DType::F32, {t, cfg.text_dim});
  for (int64_t i = 0; i < s.numel(); ++i) s.ptr<float>()[i] = float(i % 11 - 5) * scale;
  return s;
}

// cond + uncond (skipping block 2) through one pass, for a given weight source.
std::vector<std::vector<float>> run(Backend& be, std::unique_ptr<DitWeightSource> src, const DitConfig& cfg) {
  Dit dit(be, std::move(src), cfg);
  Dit::Text cond = dit.embed_text(states(cfg, 7, 0.04f)), uncond = dit.embed_text(states(cfg, 3, -0.02f));
  Tensor latent = host_tensor(DType::F32, {cfg.latent_channels, 2, 3});
  const std::vector<float> z = initial_noise(7, cfg.latent_channels, 2, 3);
  std::copy(z.begin(), z.end(), latent.ptr<float>());
  std::vector<std::vector<float>> out;
  for (int pass = 0; pass < 2; ++pass)  // a second pass reuses the slots (and its prefetched first block)
    for (const Tensor& v : dit.forward_rows(latent, {Dit::Row{&cond, {}}, Dit::Row{&uncond, {2}}}, 700.0f + pass))
      out.push_back(to_f32_vector(v));
  // A pass that starts at another block than the one the last pass prefetched, then the usual one.
  for (const Tensor& v : dit.forward_rows(latent, {Dit::Row{&cond, {0}}, Dit::Row{&uncond, {0, 2}}}, 650.0f))
    out.push_back(to_f32_vector(v));
  for (const Tensor& v : dit.forward_rows(latent, {Dit::Row{&cond, {}}, Dit::Row{&uncond, {2}}}, 640.0f))
    out.push_back(to_f32_vector(v));
  return out;
}

}  // namespace

TEST(DitResidency, StreamedRunsEqualTheResidentRunBitForBit) {
  auto be = make_host_backend();
  const DitConfig cfg = parse_dit_config(kTransformer + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kTransformer);
  const auto reference = run(*be, make_upload_on_use_source(*be, w), cfg);
  for (int resident : {0, 1, 3, 4}) {
    const auto got = run(*be, make_resident_streaming_source(*be, w, cfg, resident), cfg);
    ASSERT_EQ(got.size(), reference.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], reference[i]) << resident << " resident, output " << i;
  }
}

TEST(DitResidency, StreamedWeightsComeFromTheSlots) {
  // With nothing resident, a block's weights are views into a slot, not into the file mapping:
  // a wrong slot would hand a block another block's weights.
  auto be = make_host_backend();
  const DitConfig cfg = parse_dit_config(kTransformer + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kTransformer);
  auto src = make_resident_streaming_source(*be, w, cfg, 0);
  src->begin_forward({0, 1, 2, 3});
  for (int b = 0; b < 4; ++b) {
    src->before_block(b);
    const std::string name = "layers." + std::to_string(b) + ".proj.q.weight";
    const Tensor t = src->get(name), f = w.get(name);
    EXPECT_NE(t.data, f.data);
    EXPECT_EQ(to_f32_vector(t), to_f32_vector(f)) << name;
  }
  EXPECT_THROW(src->get("layers.1.proj.q.weight"), std::logic_error);  // not the running block
}
