#include <gtest/gtest.h>

#include "pipeline/planner.h"
#include "stage_sizes_fixture.h"
#include "util/error.h"

using namespace moss;

static std::string refusal(const StageSizes& s, double gib) {
  try {
    plan_memory(s, size_t(gib * double(kGiB)), true, 0);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Usage);
    return e.what();
  }
  ADD_FAILURE() << "budget " << gib << " accepted";
  return "";
}

TEST(Planner, EverythingResidentOnABigCard) {
  MemoryPlan p = plan_memory(real_like_stage_sizes(), 140 * kGiB, false, 0);
  EXPECT_EQ(p.resident_blocks, 42);
  EXPECT_FALSE(p.streamed());
  EXPECT_EQ(p.pinned_host_bytes, 0u);
}

TEST(Planner, ResidentCountFollowsTheBudget) {
  const StageSizes s = real_like_stage_sizes();
  int last = -1;
  for (double gib = 3.0; gib <= 12.0; gib += 0.5) {
    MemoryPlan p = plan_memory(s, size_t(gib * double(kGiB)), true, 0);
    EXPECT_GE(p.resident_blocks, last);  // more budget never means fewer resident blocks
    last = p.resident_blocks;
    EXPECT_LE(p.dit_peak + kReserveBytes, size_t(gib * double(kGiB)));
    EXPECT_EQ(p.pinned_host_bytes, size_t(42 - p.resident_blocks) * s.dit_slot_bytes);
  }
  // docs/product.md section 5's reference points: 6 GiB keeps 17 blocks, 3 GiB keeps 2.
  EXPECT_EQ(plan_memory(s, 6 * kGiB, true, 0).resident_blocks, 17);
  EXPECT_EQ(plan_memory(s, 3 * kGiB, true, 0).resident_blocks, 2);
}

TEST(Planner, RefusalsGiveTheSizes) {
  StageSizes s = real_like_stage_sizes();
  EXPECT_NE(refusal(s, 2.2).find("below the DiT's minimum of 2.43 GiB"), std::string::npos) << refusal(s, 2.2);
  s.vae_decode_bytes = 6 * kGiB;  // 2048x2048
  std::string m = refusal(s, 4.0);
  EXPECT_NE(m.find("VAE decode does not fit"), std::string::npos) << m;
  EXPECT_NE(m.find("6.00 GiB"), std::string::npos) << m;
  EXPECT_NE(m.find("--vram-budget 4.00 GiB"), std::string::npos) << m;
  s = real_like_stage_sizes();
  s.dit_activation_bytes = 5 * kGiB;
  EXPECT_NE(refusal(s, 5.0).find("DiT activations do not fit"), std::string::npos);
}

TEST(Planner, CountsThePackedWeightStaging) {
  // The streamed blocks' packed tensors need a staging buffer beside the two slots: it raises
  // the minimum and the streamed peak by its size, and a budget keeps fewer blocks for it.
  StageSizes s = real_like_stage_sizes();
  const MemoryPlan without = plan_memory(s, 5 * kGiB, true, 0);
  s.dit_staging_bytes = size_t(0.114 * double(kGiB));  // the real model's FFN matrices at 13/16
  const MemoryPlan with = plan_memory(s, 5 * kGiB, true, 0);
  EXPECT_EQ(with.dit_minimum(), without.dit_minimum() + s.dit_staging_bytes);
  EXPECT_EQ(with.resident_blocks, without.resident_blocks - 1);  // 12.2 -> 11.7 blocks of room
  EXPECT_EQ(with.dit_peak, without.dit_peak + s.dit_staging_bytes - s.dit_block_bytes);
  EXPECT_LE(with.dit_peak + kReserveBytes, 5 * kGiB);
  EXPECT_NE(refusal(s, 2.2).find("packed-weight staging 0.11 GiB"), std::string::npos) << refusal(s, 2.2);
  s.dit_blocks = 1;  // all resident: no slots, no staging
  EXPECT_EQ(plan_memory(s, 5 * kGiB, true, 0).dit_peak,
            s.vae_weight_bytes + s.dit_fixed_bytes + s.dit_block_bytes + s.dit_activation_bytes);
}

TEST(Planner, PinnedHostMemoryIsChecked) {
  try {
    plan_memory(real_like_stage_sizes(), 3 * kGiB, true, kGiB);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not enough host memory to pin the 40 streamed DiT blocks"), std::string::npos)
        << e.what();
  }
}

TEST(Planner, MeasuresTheTinyModel) {
  MossModel m = open_moss_model(std::string(MOSSINFER_TEST_DATA) + "/tiny-moss");
  StageSizes small = measure_stages(m, 96, 64, 19, true);
  StageSizes big = measure_stages(m, 192, 128, 19, true);
  EXPECT_EQ(small.dit_blocks, 4);
  EXPECT_GT(small.dit_block_bytes, 0u);
  EXPECT_GT(small.dit_fixed_bytes, 0u);
  EXPECT_EQ(small.dit_staging_bytes, 0u);  // no tiny tensor is large enough to travel packed
  EXPECT_GT(small.te_layer_bytes, 0u);
  EXPECT_GT(small.vae_weight_bytes, 0u);
  EXPECT_GT(big.dit_activation_bytes, small.dit_activation_bytes);  // 4x the image rows
  EXPECT_GT(big.vae_decode_bytes, 3 * small.vae_decode_bytes);
  EXPECT_EQ(measure_stages(m, 96, 64, 19, false).vae_decode_bytes, 0u);
}

// Several images per load (issue 18): everything stays loaded on a card that holds the resident
// text encoder, the whole DiT and the decode together; elsewhere the text encoder's layers stay
// in pinned host memory when the host has room for them beside the DiT's pinned blocks.
TEST(Planner, WhatStaysLoadedBetweenImages) {
  StageSizes s = real_like_stage_sizes();
  s.te_all_layers_bytes = size_t(16.8 * double(kGiB));
  const MemoryPlan big = plan_memory(s, 140 * kGiB, false, 0);
  EXPECT_TRUE(plan_holds_all_loaded(big));
  const MemoryPlan mid = plan_memory(s, 24 * kGiB, false, 0);  // the encoder resident alone, not beside the DiT
  EXPECT_TRUE(mid.te_resident);
  EXPECT_FALSE(plan_holds_all_loaded(mid));
  const MemoryPlan small = plan_memory(s, 16 * kGiB, true, 0);
  EXPECT_FALSE(plan_holds_all_loaded(small));
  EXPECT_TRUE(plan_pins_text_encoder(small, 64 * kGiB));
  EXPECT_FALSE(plan_pins_text_encoder(small, 20 * kGiB));
  EXPECT_FALSE(plan_pins_text_encoder(small, 0));  // unknown host memory: nothing pinned
}
