#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "io/safetensors.h"
#include "pipeline/schedule.h"
#include "util/error.h"

using namespace moss;

namespace {

// The training grid (1000 values, linspace(1, 0.001) in float32), for membership checks.
std::vector<float> training_grid() { return linspace_f32(1.0f, float(1.0 / 1000.0), kTrainSteps); }

bool on_grid(float s, const std::vector<float>& grid) {
  return std::find(grid.begin(), grid.end(), s) != grid.end();
}

}  // namespace

TEST(Schedule, LinspaceEndpointsAndSingleValue) {
  const std::vector<float> v = linspace_f32(1.0f, 0.001f, 1000);
  ASSERT_EQ(v.size(), 1000u);
  EXPECT_EQ(v.front(), 1.0f);
  EXPECT_EQ(v.back(), 0.001f);
  EXPECT_EQ(linspace_f32(0.5f, 2.0f, 1), std::vector<float>{0.5f});
  EXPECT_TRUE(linspace_f32(0.5f, 2.0f, 0).empty());
  // One rounding of start + step·i: 1 + 30·step is 0.96999997f, not the twice-rounded 0.97f.
  EXPECT_EQ(v[30], 0.96999997f);
}

TEST(Schedule, OneStepIsSigmaOneThenZero) {
  EXPECT_EQ(make_schedule(1, 5.0f), (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ(make_schedule(1, 1.0f), (std::vector<float>{1.0f, 0.0f}));
}

TEST(Schedule, ThousandStepsAtShiftFiveRun615) {
  const std::vector<float> s = make_schedule(1000, 5.0f);
  ASSERT_EQ(s.size(), 616u);  // 615 distinct sigmas, then 0
  EXPECT_EQ(s.front(), 1.0f);
  EXPECT_EQ(s.back(), 0.0f);
  const std::vector<float> grid = training_grid();
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    EXPECT_TRUE(on_grid(s[i], grid)) << "sigma " << i << " = " << s[i] << " is off the training grid";
    EXPECT_GT(s[i], s[i + 1]) << "sigmas must strictly decrease at " << i;
  }
}

TEST(Schedule, ShiftOneWithAllTrainingStepsIsTheGrid) {
  const std::vector<float> s = make_schedule(1000, 1.0f);
  std::vector<float> grid = training_grid();
  grid.push_back(0.0f);
  EXPECT_EQ(s, grid);
}

TEST(Schedule, TimestepIsThousandSigmaInFloat32) {
  EXPECT_EQ(sigma_to_timestep(1.0f), 1000.0f);
  EXPECT_EQ(sigma_to_timestep(0.987f), 0.987f * 1000.0f);
}

TEST(Schedule, MatchesTheGoldenSchedulesBitForBit) {
  auto g = SafetensorsFile::open(std::string(MOSSINFER_TEST_DATA) + "/golden_dit.safetensors");
  int cases = 0;
  for (const auto& [name, info] : g->tensors()) {
    int steps = 0;
    float shift = 0;
    if (std::sscanf(name.c_str(), "schedule.steps%d_shift%f", &steps, &shift) != 2) continue;
    ++cases;
    const std::vector<float> want = to_f32_vector(g->get(name)), got = make_schedule(steps, shift);
    ASSERT_EQ(got.size(), want.size()) << name;
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << name;
  }
  EXPECT_EQ(cases, 8);
}

TEST(Schedule, RefusesBadRequests) {
  EXPECT_THROW(make_schedule(0, 5.0f), Error);
  EXPECT_THROW(make_schedule(-3, 5.0f), Error);
  EXPECT_THROW(make_schedule(4, 0.0f), Error);
  EXPECT_THROW(make_schedule(4, -1.0f), Error);
  try {
    make_schedule(0, 5.0f);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Usage);
  }
}
