#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// Every schedule, at several lengths and shifts: steps + 1 values (the beta schedule's repeats
// dropped), strictly descending, at most 1, ending in 0; refusals as the MOSS schedule's.
TEST(Schedule, EveryScheduleDescendsToZero) {
  for (const ScheduleName& s : schedule_names())
    for (int steps : {1, 2, 5, 30, 1000})
      for (float shift : {0.3f, 1.0f, 3.0f, 12.0f}) {
        const std::vector<float> sig = make_schedule(s.schedule, steps, shift);
        if (s.schedule != Schedule::Moss && s.schedule != Schedule::Beta) {
          EXPECT_EQ(sig.size(), size_t(steps) + 1) << s.name << " " << steps;
        }
        EXPECT_LE(sig.front(), 1.0f) << s.name;
        EXPECT_EQ(sig.back(), 0.0f) << s.name;
        for (size_t i = 1; i < sig.size(); ++i) ASSERT_LT(sig[i], sig[i - 1]) << s.name << " " << steps << " " << i;
      }
  for (const ScheduleName& s : schedule_names()) {
    EXPECT_THROW(make_schedule(s.schedule, 0, 5.0f), Error) << s.name;
    EXPECT_THROW(make_schedule(s.schedule, 4, 0.0f), Error) << s.name;
  }
  EXPECT_EQ(make_schedule(Schedule::Moss, 7, 5.0f), make_schedule(7, 5.0f));
}

// Values ComfyUI's formulas give (worked by hand from comfy/samplers.py at shift 1, where the
// table is i/1000): simple at 4 steps picks 1, 0.75, 0.5, 0.25; karras starts at 1 and ends at
// 0.001; exponential's middle point is the geometric mean.
TEST(Schedule, KnownValues) {
  const std::vector<float> simple = make_schedule(Schedule::Simple, 4, 1.0f);
  EXPECT_EQ(simple, (std::vector<float>{1.0f, 0.75f, 0.5f, 0.25f, 0.0f}));
  const std::vector<float> karras = make_schedule(Schedule::Karras, 5, 1.0f);
  EXPECT_FLOAT_EQ(karras.front(), 1.0f);
  EXPECT_FLOAT_EQ(karras[4], 0.001f);
  const std::vector<float> exp3 = make_schedule(Schedule::Exponential, 3, 1.0f);
  EXPECT_NEAR(exp3[1], std::sqrt(0.001), 1e-7);
  // The incomplete beta function: I_x(1, 1) = x, I_x(a, b) = 1 − I_{1−x}(b, a), the median of a
  // symmetric beta is 1/2, and ppf inverts it.
  EXPECT_NEAR(incomplete_beta(1, 1, 0.3), 0.3, 1e-13);
  EXPECT_NEAR(incomplete_beta(0.6, 0.6, 0.5), 0.5, 1e-13);
  EXPECT_NEAR(incomplete_beta(2, 3, 0.4), 1 - incomplete_beta(3, 2, 0.6), 1e-13);
  EXPECT_NEAR(incomplete_beta(2, 3, 0.4), 0.5248, 1e-12);  // 1 − (1−x)^4 − 4x(1−x)^3 at 0.4
  for (double q : {0.01, 0.2, 0.5, 0.9, 0.999}) EXPECT_NEAR(incomplete_beta(0.6, 0.6, beta_ppf(q, 0.6, 0.6)), q, 1e-12);
  // Names: any case, A1111's labels, "automatic" for the MOSS-Image schedule.
  EXPECT_EQ(find_schedule("Karras")->schedule, Schedule::Karras);
  EXPECT_EQ(find_schedule("SGM Uniform")->schedule, Schedule::SgmUniform);
  EXPECT_EQ(find_schedule("automatic")->schedule, Schedule::Moss);
  EXPECT_EQ(find_schedule("uniform"), nullptr);
}
