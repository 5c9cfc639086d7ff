// Issue 49's "8 GB memory plan": the full-size DiT in INT8 ConvRot (every main block's four
// projections quantized, group 256, docs/int8_convrot.md section 5) at 1024x1024 keeps every
// block resident on an 8 GB card, where the bf16 DiT streams. The DiT's sizes are the planner's
// own (measure_dit_stage: the streaming source's layout of the weights, the forward's activations
// on the measuring backend) from shape-only weights of the full-size config; the text encoder's
// and the VAE's are the real model's (stage_sizes_fixture.h).
#include <gtest/gtest.h>

#include <cstdio>

#include "model/full_size_config.h"
#include "model/int8_convrot_layers.h"
#include "pipeline/planner.h"
#include "stage_sizes_fixture.h"

namespace moss {
namespace {

// Weights of the config's names, dtypes and shapes, with no data (the planner reads no value).
WeightFiles shape_only(const DitConfig& cfg) {
  std::map<std::string, Tensor> t;
  for (const ExpectedTensor& e : dit_expected_tensors(cfg))
    if (!e.optional) t[e.name] = Tensor(nullptr, e.dtypes[0], e.shape, Where::Host);
  return WeightFiles::in_memory("full-size DiT, shapes only", t);
}

DitConfig full_size(bool int8) {
  DitConfig cfg = dit_config_from_json(full_size_dit_config(), "built-in");
  if (int8) {
    std::map<std::string, int64_t> layers;
    for (const QuantizedDitLayer& l : int8_convrot_dit_layers(cfg)) layers[l.name] = 256;
    cfg.int8_groups = int8_projection_groups(layers, cfg);
  }
  return cfg;
}

// The real model's stages at 1024x1024 with the DiT's measured for `int8` (both prompts at 256
// tokens, a long prompt's length).
StageSizes stages(bool int8) {
  StageSizes s = real_like_stage_sizes();
  const DitConfig cfg = full_size(int8);
  measure_dit_stage(shape_only(cfg), cfg, 1024, 1024, 256, s);
  return s;
}

size_t gib(double g) { return size_t(g * double(kGiB)); }

TEST(Int8MemoryPlan, EveryBlockResidentOnAn8GBCard) {
  const StageSizes bf16 = stages(false), int8 = stages(true);
  // A block: 113.2 M int8 values and their 23.5 K scales beside its bf16 norms, against 226 MB.
  EXPECT_EQ(int8.dit_blocks, 42);
  EXPECT_EQ(int8.dit_block_bytes, size_t(4 * 3072 * 3072 + 3 * 3072 * 8192) + 4 * size_t(4 * 3072 + 2 * 8192 + 3072) +
                                      2 * size_t(2 * 3072 + 2 * 128));
  EXPECT_LT(double(int8.dit_block_bytes), 0.51 * double(bf16.dit_block_bytes));
  EXPECT_EQ(int8.dit_fixed_bytes, bf16.dit_fixed_bytes);  // everything outside the blocks stays bf16
  EXPECT_EQ(int8.dit_staging_bytes, 0u);                  // I8 never packs; the norms are too small
  std::printf("full-size DiT at 1024x1024: block %.3f GiB INT8 (bf16 %.3f), 42 blocks %.2f GiB (bf16 %.2f), fixed "
              "%.2f GiB, activations %.2f GiB INT8 (bf16 %.2f)\n",
              double(int8.dit_block_bytes) / kGiB, double(bf16.dit_block_bytes) / kGiB,
              42.0 * double(int8.dit_block_bytes) / kGiB, 42.0 * double(bf16.dit_block_bytes) / kGiB,
              double(int8.dit_fixed_bytes) / kGiB, double(int8.dit_activation_bytes) / kGiB,
              double(bf16.dit_activation_bytes) / kGiB);

  // An 8 GB card (an RX 7600: 7.6 GiB free beside the desktop) and --vram-budget 8 and 7.
  for (const auto& [budget, user] : std::vector<std::pair<size_t, bool>>{{gib(7.6), false}, {gib(8), true}, {gib(7), true}}) {
    const MemoryPlan p = plan_memory(int8, budget, user, gib(26));
    EXPECT_EQ(p.resident_blocks, 42) << format_gib(budget);
    EXPECT_FALSE(p.streamed());
    EXPECT_EQ(p.pinned_host_bytes, 0u);
    EXPECT_LE(p.dit_peak + kReserveBytes, budget);
    std::printf("INT8 on %s%s: %d of 42 blocks resident, DiT peak %s\n", format_gib(budget).c_str(),
                user ? " (--vram-budget)" : " free", p.resident_blocks, format_gib(p.dit_peak).c_str());
    const MemoryPlan b = plan_memory(bf16, budget, user, gib(26));
    EXPECT_LT(b.resident_blocks, 42) << "the bf16 DiT streams on " << format_gib(budget);
    std::printf("bf16 on %s: %d of 42 blocks resident\n", format_gib(budget).c_str(), b.resident_blocks);
  }
  // Below, the INT8 DiT streams too, with twice the bf16 plan's resident blocks or more.
  const MemoryPlan small_int8 = plan_memory(int8, gib(4), true, gib(26)), small_bf16 = plan_memory(bf16, gib(4), true, gib(26));
  EXPECT_TRUE(small_int8.streamed());
  EXPECT_GE(small_int8.resident_blocks, 2 * small_bf16.resident_blocks);
  EXPECT_LE(small_int8.dit_peak + kReserveBytes, gib(4));
  // An APU (a Phoenix laptop's 7.5 GiB GTT): all resident, nothing pinned.
  const MemoryPlan apu = plan_memory(int8, gib(7.5), false, gib(9), true);
  EXPECT_EQ(apu.resident_blocks, 42);
  EXPECT_EQ(apu.pinned_host_bytes, 0u);
}

}  // namespace
}  // namespace moss
