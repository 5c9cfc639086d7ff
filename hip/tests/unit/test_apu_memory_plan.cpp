// The memory plan on the devices issue 31 names, each described by what the runtime and the
// driver report for it (DeviceMemory): two cards, and a Strix Halo APU with a 96 GB carve-out and
// with a 512 MB carve-out and a large GTT, and a small APU whose DiT does not fit. On an APU
// nothing is pinned: streamed blocks come from the mapped model files.
#include <gtest/gtest.h>

#include "pipeline/planner.h"
#include "stage_sizes_fixture.h"
#include "util/error.h"

using namespace moss;

namespace {

size_t gib(double g) { return size_t(g * double(kGiB)); }

// The real model's sizes at 1024x1024 with its 32 text-encoder layers (16.8 GiB).
StageSizes full_model() {
  StageSizes s = real_like_stage_sizes();
  s.te_all_layers_bytes = gib(16.8);
  return s;
}

struct Board {
  const char* name;
  DeviceMemory device;
  size_t host_available;
};

MemoryPlan plan_on(const Board& b, const StageSizes& s) {
  return plan_memory(s, device_allocatable(b.device, b.host_available), false, b.host_available, b.device.integrated);
}

// Radeon RX 7600 (8 GB): 7.6 GiB free beside the desktop; 32 GiB of system memory.
const Board kRx7600{"RX 7600", {false, gib(7.6), 0, 0}, gib(26)};
// Radeon RX 7800 XT (16 GB).
const Board kRx7800Xt{"RX 7800 XT", {false, gib(15.5), 0, 0}, gib(26)};
// Strix Halo, 128 GB, BIOS carve-out 96 GB: the runtime reports the carve-out; the OS has the
// other 32 GB, whose default GTT is smaller than the carve-out.
const Board kHalo96{"Strix Halo 96 GB carve-out", {true, gib(95.5), gib(96), gib(15.5)}, gib(26)};
// Strix Halo, 128 GB, BIOS carve-out 512 MB, amdgpu.gttsize / ttm pages_limit raised to 120 GiB; a
// runtime that reports the carve-out alone.
const Board kHaloGtt{"Strix Halo 512 MB carve-out, 120 GiB GTT", {true, gib(0.45), gib(0.5), gib(120)}, gib(118)};
// Phoenix laptop, 16 GB: 512 MB carve-out, the kernel's default GTT (half the memory).
const Board kPhoenix16{"Radeon 780M, 16 GB laptop", {true, gib(0.45), gib(0.5), gib(7.5)}, gib(9)};

}  // namespace

TEST(ApuMemoryPlan, WhatTheDeviceCanAllocate) {
  EXPECT_EQ(device_allocatable(kRx7600.device, kRx7600.host_available), gib(7.6));
  EXPECT_EQ(device_allocatable(kRx7800Xt.device, kRx7800Xt.host_available), gib(15.5));
  // A carve-out at least as large as the GTT: the runtime's free carve-out alone.
  EXPECT_EQ(device_allocatable(kHalo96.device, kHalo96.host_available), gib(95.5));
  // A GTT larger than the carve-out: the GTT, bounded by the host's available memory.
  EXPECT_EQ(device_allocatable(kHaloGtt.device, kHaloGtt.host_available), gib(118));
  EXPECT_EQ(device_allocatable(kHaloGtt.device, gib(200)), gib(120));
  EXPECT_EQ(device_allocatable(kHaloGtt.device, 0), gib(120));  // unknown host memory: the GTT
  // A runtime that already adds the GTT to its free figure is believed.
  EXPECT_EQ(device_allocatable({true, gib(110), gib(0.5), gib(100)}, gib(90)), gib(110));
  // A card's GTT is host memory it reaches over the bus: never counted.
  EXPECT_EQ(device_allocatable({false, gib(15.5), gib(16), gib(64)}, gib(100)), gib(15.5));
}

TEST(ApuMemoryPlan, Rx7600StreamsPartOfTheDitFromPinnedMemory) {
  const StageSizes s = full_model();
  const MemoryPlan p = plan_on(kRx7600, s);
  EXPECT_TRUE(p.streamed());
  EXPECT_GT(p.resident_blocks, 0);
  EXPECT_LT(p.resident_blocks, s.dit_blocks);
  EXPECT_EQ(p.pinned_host_bytes, size_t(s.dit_blocks - p.resident_blocks) * s.dit_slot_bytes);
  EXPECT_FALSE(p.dit_from_files());
  EXPECT_FALSE(p.te_resident);
  EXPECT_LE(p.dit_peak + kReserveBytes, gib(7.6));
  EXPECT_LE(p.te_peak + kReserveBytes, gib(7.6));
}

TEST(ApuMemoryPlan, Rx7800XtHoldsTheDitAndStreamsTheTextEncoder) {
  const StageSizes s = full_model();
  const MemoryPlan p = plan_on(kRx7800Xt, s);
  EXPECT_FALSE(p.streamed());
  EXPECT_EQ(p.pinned_host_bytes, 0u);
  EXPECT_FALSE(p.te_resident);  // 16.8 GiB of layers do not fit beside the reserve in 15.5
  EXPECT_FALSE(plan_holds_all_loaded(p));
}

TEST(ApuMemoryPlan, StrixHaloWithALargeCarveOutHoldsEverything) {
  const StageSizes s = full_model();
  const MemoryPlan p = plan_on(kHalo96, s);
  EXPECT_TRUE(p.integrated);
  EXPECT_FALSE(p.streamed());
  EXPECT_TRUE(p.te_resident);
  EXPECT_TRUE(plan_holds_all_loaded(p));
  EXPECT_EQ(p.pinned_host_bytes, 0u);
}

TEST(ApuMemoryPlan, StrixHaloWithASmallCarveOutUsesTheGtt) {
  const StageSizes s = full_model();
  const MemoryPlan p = plan_on(kHaloGtt, s);
  EXPECT_EQ(p.budget_bytes, gib(118));
  EXPECT_FALSE(p.streamed());
  EXPECT_TRUE(p.te_resident);
  EXPECT_TRUE(plan_holds_all_loaded(p));
  // Planned on the carve-out alone, the same machine could not run at all.
  EXPECT_THROW(plan_memory(s, kHaloGtt.device.free_bytes, false, kHaloGtt.host_available, true), Error);
}

TEST(ApuMemoryPlan, AnApuThatCannotHoldTheDitReadsItsBlocksFromTheFiles) {
  const StageSizes s = full_model();
  const MemoryPlan p = plan_on(kPhoenix16, s);
  EXPECT_TRUE(p.streamed());
  EXPECT_TRUE(p.dit_from_files());
  EXPECT_EQ(p.pinned_host_bytes, 0u);  // never a second, pinned copy of the same memory
  EXPECT_FALSE(p.te_resident);
  EXPECT_FALSE(plan_pins_text_encoder(p, gib(64)));
  EXPECT_LE(p.dit_peak + kReserveBytes, p.budget_bytes);
}

TEST(ApuMemoryPlan, AnApuNeedsNoPackedStaging) {
  StageSizes s = full_model();
  s.dit_staging_bytes = gib(0.1);
  const MemoryPlan card = plan_memory(s, gib(6), true, 0, false);
  const MemoryPlan apu = plan_memory(s, gib(6), true, 0, true);
  EXPECT_EQ(apu.dit_minimum() + gib(0.1), card.dit_minimum());
  EXPECT_GE(apu.resident_blocks, card.resident_blocks);
}

TEST(ApuMemoryPlan, VramBudgetKeepsItsMeaningOnAnApu) {
  const StageSizes s = full_model();
  for (double budget : {3.0, 6.0, 12.0}) {
    const MemoryPlan card = plan_memory(s, gib(budget), true, gib(100), false);
    const MemoryPlan apu = plan_memory(s, gib(budget), true, gib(100), true);
    EXPECT_EQ(apu.resident_blocks, card.resident_blocks) << budget;  // the same blocks on the device
    EXPECT_EQ(apu.budget_bytes, gib(budget));
    EXPECT_EQ(apu.pinned_host_bytes, 0u);
    EXPECT_EQ(apu.te_resident, card.te_resident);
  }
  EXPECT_EQ(plan_memory(s, gib(6), true, 0, true).resident_blocks, 17);  // docs/product.md's reference point
}

// README, "Radeon cards and APUs": what a Strix Halo with 32, 64 and 128 GB gets with a 512 MB
// BIOS carve-out and the GTT the README gives for each (the system's own use taken off the host's
// available memory).
TEST(ApuMemoryPlan, StrixHaloConfigurationsOfTheReadme) {
  const StageSizes s = full_model();
  struct Row {
    const char* what;
    Board board;
    bool dit_resident, te_resident, all_kept;
  };
  const Row rows[] = {
      {"32 GB, default GTT (half)", {"", {true, gib(0.45), gib(0.5), gib(15.3)}, gib(26)}, true, false, false},
      {"32 GB, GTT 24 GiB", {"", {true, gib(0.45), gib(0.5), gib(24)}, gib(26)}, true, true, false},
      {"64 GB, default GTT (half)", {"", {true, gib(0.45), gib(0.5), gib(31)}, gib(58)}, true, true, true},
      {"64 GB, GTT 48 GiB", {"", {true, gib(0.45), gib(0.5), gib(48)}, gib(58)}, true, true, true},
      {"128 GB, GTT 112 GiB", {"", {true, gib(0.45), gib(0.5), gib(112)}, gib(122)}, true, true, true},
      {"128 GB, 96 GB carve-out", kHalo96, true, true, true},
  };
  for (const Row& r : rows) {
    const MemoryPlan p = plan_on(r.board, s);
    EXPECT_EQ(!p.streamed(), r.dit_resident) << r.what;
    EXPECT_EQ(p.te_resident, r.te_resident) << r.what;
    EXPECT_EQ(plan_holds_all_loaded(p), r.all_kept) << r.what;
    EXPECT_EQ(p.pinned_host_bytes, 0u) << r.what;
  }
  // 16 GB of RAM (a Phoenix or Strix Point laptop): the DiT streams from the files.
  EXPECT_TRUE(plan_on(kPhoenix16, s).dit_from_files());
}
