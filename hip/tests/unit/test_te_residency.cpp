// The text encoder's weight sources (model/te_weights.h) on the host backend, where the copy
// "stream" is an immediate memcpy: uploaded on use, streamed through the two staging buffers and
// slots, and resident give the same states bit for bit; and the planner's choice between the
// resident and the streamed text encoder.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "model/text_encoder.h"
#include "pipeline/planner.h"
#include "stage_sizes_fixture.h"

using namespace moss;

namespace {

const std::string kData = MOSSINFER_TEST_DATA;
const std::string kFolder = kData + "/tiny-moss/text_encoder";

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dims() == b.dims() && a.dtype == b.dtype && std::memcmp(a.data, b.data, a.nbytes()) == 0;
}

std::vector<std::vector<int32_t>> two_prompts() {
  return {{1, 5, 9, 200, 31, 7, 7, 64, 2, 3, 11, 90, 17}, {4, 8, 15, 16, 23, 42}};
}

}  // namespace

TEST(TextEncoderResidency, StreamedAndResidentEqualUploadOnUseBitForBit) {
  const TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kFolder);
  std::unique_ptr<Backend> be = make_host_backend();
  const auto prompts = two_prompts();

  TextEncoder plain(*be, w, c);
  EXPECT_EQ(plain.residency(), TeResidency::UploadOnUse);  // Auto on the host
  const std::vector<Tensor> want = plain.encode_many(prompts);

  TextEncoder streamed(*be, w, c, TeResidency::Streamed), resident(*be, w, c, TeResidency::Resident);
  for (int pass = 0; pass < 2; ++pass) {  // a second pass reuses the staging buffers and slots
    const std::vector<Tensor> s = streamed.encode_many(prompts), r = resident.encode_many(prompts);
    ASSERT_EQ(s.size(), 2u);
    ASSERT_EQ(r.size(), 2u);
    for (size_t p = 0; p < 2; ++p) {
      EXPECT_TRUE(same_bits(s[p], want[p])) << "streamed, pass " << pass << ", prompt " << p;
      EXPECT_TRUE(same_bits(r[p], want[p])) << "resident, pass " << pass << ", prompt " << p;
    }
    EXPECT_EQ(streamed.times().load_s, 0.0);
    EXPECT_GT(streamed.times().encode_s, 0.0);
    if (pass == 0) EXPECT_GT(resident.times().load_s, 0.0);  // loaded once, by the first pass
    else EXPECT_EQ(resident.times().load_s, 0.0);
  }
  // Pinned host: the files are read once (the first pass's load), every pass after copies from
  // the pinned images.
  TextEncoder pinned(*be, w, c, TeResidency::PinnedHost);
  for (int pass = 0; pass < 3; ++pass) {
    const std::vector<Tensor> h = pinned.encode_many(prompts);
    ASSERT_EQ(h.size(), 2u);
    for (size_t p = 0; p < 2; ++p) EXPECT_TRUE(same_bits(h[p], want[p])) << "pinned host, pass " << pass;
    if (pass == 0) EXPECT_GT(pinned.times().load_s, 0.0);
    else EXPECT_EQ(pinned.times().load_s, 0.0);
  }
  EXPECT_STREQ(te_residency_name(TeResidency::PinnedHost), "pinned host");
  // The layer hook sees the same layers whatever the source.
  int seen = 0;
  streamed.encode(prompts[0], [&](int, const Tensor&) { ++seen; });
  EXPECT_EQ(seen, int(c.layers));
}

// Sizes shaped like Qwen3.5-9B (18 GB of layers in 32 images) beside a 1024x1024 DiT.
static StageSizes nine_b_like() {
  StageSizes s = real_like_stage_sizes();
  s.te_layer_bytes = size_t(0.60 * double(kGiB));
  s.te_all_layers_bytes = size_t(16.8 * double(kGiB));
  s.te_activation_bytes = size_t(0.10 * double(kGiB));
  return s;
}

TEST(TextEncoderResidency, PlannerKeepsTheLayersOnlyWhenAllFit) {
  const StageSizes s = nine_b_like();
  const MemoryPlan big = plan_memory(s, 139 * kGiB, false, 0);
  EXPECT_TRUE(big.te_resident);
  EXPECT_EQ(big.te_peak, s.vae_weight_bytes + s.te_fixed_bytes + s.te_all_layers_bytes + s.te_activation_bytes);
  const MemoryPlan budget16 = plan_memory(s, 16 * kGiB, true, 0);  // docs/product.md: a 16 GiB card streams
  EXPECT_FALSE(budget16.te_resident);
  EXPECT_EQ(budget16.te_peak, s.vae_weight_bytes + s.te_fixed_bytes + 2 * s.te_layer_bytes + s.te_activation_bytes);
  // The boundary, in free memory: all layers, activations, VAE weights and the reserve.
  const size_t need = s.vae_weight_bytes + s.te_fixed_bytes + s.te_all_layers_bytes + s.te_activation_bytes + kReserveBytes;
  EXPECT_TRUE(plan_memory(s, need, false, 0).te_resident);
  EXPECT_FALSE(plan_memory(s, need - 1, false, 0).te_resident);
  // Any --vram-budget streams, however large: it stands for a card of that size.
  EXPECT_FALSE(plan_memory(s, 139 * kGiB, true, 0).te_resident);
}

TEST(TextEncoderResidency, MeasuresEveryLayerOfTheTinyModel) {
  MossModel m = open_moss_model(kData + "/tiny-moss");
  const StageSizes s = measure_stages(m, 96, 64, 19, true);
  EXPECT_GT(s.te_layer_bytes, 0u);
  EXPECT_GE(s.te_all_layers_bytes, s.te_layer_bytes * size_t(m.te_config.layers) / 2);
  EXPECT_LE(s.te_all_layers_bytes, s.te_layer_bytes * size_t(m.te_config.layers));
}
