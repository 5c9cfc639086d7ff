// The op families' one wrapping mechanism (ops/op_hook.h) on the host reference: a hook sees
// every op under its profile name, after the op's shared operand checks and around its body;
// a hook that answers false skips the body; the measuring backend (a skipping hook) counts the
// scratch an op declares.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/measure/measuring_backend.h"

namespace moss {
namespace {

struct RecordingHook : OpHook {
  bool run = true;
  std::vector<std::string> names;
  int open = 0;
  bool begin(const OpCall& call) override {
    names.push_back(call.name);
    ++open;
    return run;
  }
  void end() override { --open; }
};

Tensor filled(const std::vector<int64_t>& dims, float v) {
  Tensor t = host_tensor(DType::F32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = v;
  return t;
}

TEST(OpHook, SeesEveryOpByNameAroundItsBody) {
  std::unique_ptr<Backend> be = make_host_backend();
  RecordingHook hook;
  be->core().set_hook(&hook);
  Tensor x = filled({2, 3}, 1.0f), w = filled({4, 3}, 0.5f), y = filled({2, 4}, 0.0f), g = filled({1, 2}, 2.0f);
  be->core().linear(x, w, nullptr, y);
  Tensor a = filled({2, 2}, 1.0f), d = filled({2, 2}, 1.0f);
  be->core().add(a, d, &g);
  be->core().set_hook(nullptr);
  EXPECT_EQ(hook.names, (std::vector<std::string>{"core.linear 4x3 x:F32", "core.add (gated)"}));
  EXPECT_EQ(hook.open, 0);
  EXPECT_FLOAT_EQ(y.ptr<float>()[0], 1.5f);
  EXPECT_FLOAT_EQ(a.ptr<float>()[0], 3.0f);
}

TEST(OpHook, FalseSkipsTheBodyAndChecksComeFirst) {
  std::unique_ptr<Backend> be = make_host_backend();
  RecordingHook hook;
  hook.run = false;
  be->text().set_hook(&hook);
  Tensor x = filled({3, 4}, 1.0f), y = filled({3, 4}, 7.0f);
  be->text().l2_norm(x, 1e-6f, 2, y);
  EXPECT_FLOAT_EQ(y.ptr<float>()[0], 7.0f);  // untouched
  Tensor wrong = filled({2, 4}, 0.0f);
  EXPECT_THROW(be->text().l2_norm(x, 1e-6f, 2, wrong), std::invalid_argument);
  EXPECT_EQ(hook.names, std::vector<std::string>{"text.l2_norm"});  // the refused call never reached it
  be->text().set_hook(nullptr);
}

TEST(OpHook, MeasuringBackendCountsDeclaredScratch) {
  MeasuringBackend be;
  Tensor x = be.alloc(DType::BF16, {8, 16}), w = be.upload(host_tensor(DType::BF16, {64, 16}));
  Tensor out = be.alloc(DType::BF16, {8, 32});
  be.reset_peaks();
  const size_t live = be.live_bytes();
  be.core().linear_gated_unit(GatedUnit::Situ, x, w, nullptr, out);
  EXPECT_EQ(be.live_bytes(), live);
  EXPECT_EQ(be.peak_bytes(), live + 8 * 64 * 2);  // the [M, 2F] bf16 product
  Tensor bad = be.alloc(DType::BF16, {8, 31});
  EXPECT_THROW(be.core().linear_gated_unit(GatedUnit::Situ, x, w, nullptr, bad), std::invalid_argument);
}

}  // namespace
}  // namespace moss
