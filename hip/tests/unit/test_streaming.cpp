// The weight-streaming module (streaming/) and what it reports to the memory planner: the
// planner's text-encoder and DiT figures are the streamers' own, and equal what the streamers
// allocate on the device (counted on the measuring backend, which allocates nothing real).
#include <gtest/gtest.h>

#include "model/te_weights.h"
#include "model/text_encoder.h"
#include "ops/measure/measuring_backend.h"
#include "model/dit_streaming.h"
#include "pipeline/planner.h"
#include "streaming/block_image.h"
#include "streaming/block_names.h"

using namespace moss;

namespace {
const std::string kModel = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss";
}

TEST(Streaming, OneParserOfBlockNames) {
  EXPECT_EQ(block_index("layers.0.proj.q.weight"), 0);
  EXPECT_EQ(block_index("layers.41.norm1.weight"), 41);
  EXPECT_EQ(block_index("model.language_model.layers.7.mlp.up_proj.weight", "model.language_model."), 7);
  EXPECT_EQ(block_index("model.language_model.layers.7.mlp.up_proj.weight", "language_model."), -1);
  EXPECT_EQ(block_index("mtp.layers.0.mlp.up_proj.weight", "language_model."), -1);
  EXPECT_EQ(block_index("text_embedder.blocks.1.norm1.weight"), -1);
  EXPECT_EQ(block_index("layers.x.norm1.weight"), -1);
  EXPECT_EQ(block_index("layers..norm1.weight"), -1);
  EXPECT_EQ(block_index("layers.3"), -1);
  EXPECT_EQ(block_index("rope.bands"), -1);
  EXPECT_EQ(block_head("language_model.", 12), "language_model.layers.12.");
}

TEST(Streaming, ImageLayout) {
  // Groups back to back (one stacked view), then the rest singly, each at a 256-byte offset;
  // packed tensors after the raw ones in the slot, their packings in the staging region.
  std::vector<uint16_t> a(3 * 8, 1), b(5 * 8, 2), c(7, 3);
  std::vector<uint16_t> big(64 * 64);
  for (size_t i = 0; i < big.size(); ++i) big[i] = uint16_t(0x3f80 + (i % 5));
  BlockImage img;
  img.add("x.c", Tensor(c.data(), DType::BF16, {7}, Where::Host));
  img.add("x.big", Tensor(big.data(), DType::BF16, {64, 64}, Where::Host));
  img.add("x.a", Tensor(a.data(), DType::BF16, {3, 8}, Where::Host));
  img.add("x.b", Tensor(b.data(), DType::BF16, {5, 8}, Where::Host));
  img.choose_packing(1024);
  img.lay_out({{"x.a", "x.b"}});
  ASSERT_TRUE(img.find("x.big")->packed.n);
  EXPECT_EQ(img.find("x.a")->offset, 0u);
  EXPECT_EQ(img.find("x.b")->offset, 48u);
  EXPECT_EQ(img.find("x.c")->offset, 256u);
  EXPECT_EQ(img.raw_bytes(), 512u);
  EXPECT_EQ(img.find("x.big")->offset, 512u);
  EXPECT_EQ(img.slot_bytes(), 512u + 8192u);
  EXPECT_EQ(img.packed_bytes(), image_aligned(img.find("x.big")->packed.bytes()));
  EXPECT_LE(img.image_bytes(), img.slot_bytes());  // the planner counts a pinned image at its slot's size
  std::vector<uint8_t> slot(img.slot_bytes());
  const Tensor base(slot.data(), DType::U8, {int64_t(slot.size())}, Where::Host);
  const std::optional<Tensor> ab = img.fused_view(base, {"x.a", "x.b"});
  ASSERT_TRUE(ab);
  EXPECT_EQ(ab->dims(), (std::vector<int64_t>{8, 8}));
  EXPECT_FALSE(img.fused_view(base, {"x.b", "x.a"}));
  // The image in pinned memory, copied and unpacked into a slot, gives the tensors back.
  auto be = make_host_backend();
  const Tensor pinned = img.pinned(*be, 1);
  Tensor dev = be->alloc(DType::U8, {int64_t(img.slot_bytes())});
  Tensor staging = be->alloc(DType::U8, {int64_t(img.packed_bytes())});
  img.copy(*be, pinned, dev, &staging, 0, 0, 0);
  img.unpack(*be, dev, staging);
  for (const BlockImage::Part& p : img.parts()) {
    const Tensor t = BlockImage::view(dev, p);
    EXPECT_EQ(to_f32_vector(t), to_f32_vector(p.host)) << p.name;
  }
}

TEST(Streaming, PlannerTextEncoderBytesAreWhatTheStreamersAllocate) {
  const MossModel m = open_moss_model(kModel);
  const StageSizes s = measure_stages(m, 96, 64, 19, true);
  const std::string prefix = text_encoder_prefix(m.te_weights);
  const int layers = int(m.te_config.layers);
  const BlockBytes reported = te_layer_bytes(m.te_weights, prefix, layers);
  EXPECT_EQ(s.te_layer_bytes, reported.largest);
  EXPECT_EQ(s.te_all_layers_bytes, reported.total);
  {
    MeasuringBackend be;
    auto src = make_te_weight_source(be, m.te_weights, prefix, layers, TeResidency::Streamed);
    EXPECT_EQ(be.live_bytes(), 2 * s.te_layer_bytes);  // the two slots
  }
  {
    MeasuringBackend be;
    auto src = make_te_weight_source(be, m.te_weights, prefix, layers, TeResidency::Resident);
    src->load(nullptr);
    EXPECT_EQ(be.live_bytes(), s.te_all_layers_bytes);  // a buffer per layer
  }
  {
    MeasuringBackend be;
    auto src = make_te_weight_source(be, m.te_weights, prefix, layers, TeResidency::PinnedHost);
    src->load(nullptr);
    src->begin_pass();
    EXPECT_EQ(be.live_bytes(), 2 * s.te_layer_bytes);  // the two slots, during a pass
    for (int l = 0; l < layers; ++l) {
      src->before_layer(l);
      src->after_layer(l);
    }
    src->end_pass();
    EXPECT_EQ(be.live_bytes(), 0u);
  }
}

TEST(Streaming, PlannerDitBytesAreWhatTheStreamerAllocates) {
  const MossModel m = open_moss_model(kModel);
  const StageSizes s = measure_stages(m, 96, 64, 19, true);
  for (int64_t pack_min : {kPackMinValues, int64_t(8)}) {
    const DitStreamSizes z = dit_stream_sizes(m.dit_weights, pack_min);
    MeasuringBackend be;
    auto src = make_resident_streaming_source(be, m.dit_weights, m.dit_config, 0, pack_min);
    EXPECT_EQ(be.live_weight_bytes(), s.dit_fixed_bytes);
    // Two slots and the staging buffer the packings need (at most the planner's bound).
    EXPECT_GE(be.live_bytes(), 2 * s.dit_slot_bytes);
    EXPECT_LE(be.live_bytes(), 2 * s.dit_slot_bytes + z.staging_bytes);
    if (pack_min == kPackMinValues) {
      EXPECT_EQ(be.live_bytes(), 2 * s.dit_slot_bytes + s.dit_staging_bytes);
      EXPECT_EQ(z.staging_bytes, s.dit_staging_bytes);
    } else {
      EXPECT_GT(be.live_bytes(), 2 * s.dit_slot_bytes);  // something packed
    }
  }
  MeasuringBackend be;
  auto all = make_resident_streaming_source(be, m.dit_weights, m.dit_config, s.dit_blocks);
  EXPECT_EQ(be.live_bytes(), 0u);  // all resident: no slots
  EXPECT_LE(be.live_weight_bytes(), s.dit_fixed_bytes + size_t(s.dit_blocks) * s.dit_block_bytes);
  EXPECT_GT(be.live_weight_bytes(), s.dit_fixed_bytes + size_t(s.dit_blocks - 1) * s.dit_block_bytes);
}
