// Helpers that several files share: the config integer table (io/model_folder.h), the 2-D
// slices' one view (tensor/tensor.h), the host row norms' group loop (ops/host/host_op_parts.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/model_folder.h"
#include "ops/host/host_op_parts.h"
#include "tensor/tensor.h"
#include "util/error.h"
#include "util/thread_pool.h"

using namespace moss;

namespace {

struct ThreeSizes {
  int64_t a = 0, b = 0, layers = 0;
};

std::string refusal(const nlohmann::json& j) {
  try {
    ThreeSizes s;
    read_config_ints(j, "cfg.json", {{s.a, "a"}, {s.layers, "layers", 8}, {s.b, "b"}});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ReadConfigInts, FillsEachFieldFromItsKey) {
  ThreeSizes s;
  read_config_ints(nlohmann::json{{"a", 3}, {"b", 5}, {"layers", 8}, {"unrelated", -1}}, "cfg.json",
                   {{s.a, "a"}, {s.layers, "layers", 8}, {s.b, "b"}});
  EXPECT_EQ(s.a, 3);
  EXPECT_EQ(s.b, 5);
  EXPECT_EQ(s.layers, 8);
}

TEST(ReadConfigInts, RefusesTheFirstBadKeyInListOrder) {
  // Sizes are positive: 0 is outside config_int's lower bound.
  EXPECT_NE(refusal({{"a", 0}, {"b", 0}, {"layers", 1}}).find("key 'a' is 0, outside 1.."), std::string::npos);
  // "layers" comes before "b" in the list, so it is the one named; its own bound applies.
  EXPECT_NE(refusal({{"a", 1}, {"b", 0}, {"layers", 9}}).find("key 'layers' is 9, outside 1..8"), std::string::npos);
  EXPECT_NE(refusal({{"a", 1}, {"layers", 2}}).find("'b'"), std::string::npos);  // missing
  EXPECT_EQ(refusal({{"a", 1}, {"b", kConfigIntMax}, {"layers", 2}}), "");
}

TEST(TensorSlices, RowsAndColumnsViewTheSameStorage) {
  Tensor t = host_tensor(DType::F32, {4, 6});
  for (int64_t i = 0; i < 24; ++i) t.ptr<float>()[i] = float(i);
  const Tensor rows = t.slice_rows(1, 2);
  EXPECT_EQ(rows.shape_str(), "[2, 6]");
  EXPECT_EQ(rows.row_stride(), 6);
  EXPECT_EQ(rows.row<const float>(1)[0], 12.0f);
  const Tensor cols = t.slice_cols(2, 3);
  EXPECT_EQ(cols.shape_str(), "[4, 3]");
  EXPECT_EQ(cols.row_stride(), 6);
  EXPECT_EQ(cols.row<const float>(3)[2], 22.0f);
  // A slice of a slice keeps the parent's row stride.
  const Tensor block = cols.slice_rows(2, 1);
  EXPECT_EQ(block.shape_str(), "[1, 3]");
  EXPECT_EQ(block.row<const float>(0)[0], 14.0f);
  EXPECT_THROW(t.slice_rows(3, 2), std::out_of_range);
  EXPECT_THROW(t.slice_cols(-1, 1), std::out_of_range);
}

TEST(GroupSumOfSquares, VisitsEveryGroupOfEveryRowOnce) {
  const int64_t M = 5, C = 12, group = 4;
  Tensor wide = host_tensor(DType::F32, {M, C + 3});
  for (int64_t i = 0; i < wide.numel(); ++i) wide.ptr<float>()[i] = 0.25f * float(i % 7) - 0.5f;
  const Tensor x = wide.slice_cols(3, C);  // a strided matrix, as the ops get
  std::vector<float> got(size_t(M * C / group), -1.0f);
  std::vector<int> visits(got.size(), 0);
  ThreadPool pool(3);
  for_each_group_sum_of_squares(pool, x, group, [&](int64_t r, int64_t g0, float ss) {
    const size_t slot = size_t(r * (C / group) + g0 / group);
    got[slot] = ss;
    ++visits[slot];
  });
  for (int64_t r = 0; r < M; ++r)
    for (int64_t g0 = 0; g0 < C; g0 += group) {
      float want = 0.0f;
      for (int64_t c = 0; c < group; ++c) want += x.row<const float>(r)[g0 + c] * x.row<const float>(r)[g0 + c];
      const size_t slot = size_t(r * (C / group) + g0 / group);
      EXPECT_EQ(visits[slot], 1);
      EXPECT_EQ(got[slot], want) << "row " << r << " group at " << g0;
    }
}
