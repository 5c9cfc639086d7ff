// The text encoder's stacked pass (model/text_encoder.h): encode_many runs the prompts' rows
// together through every per-token op and splits them only for the causal conv, the delta rule
// and attention. On the host reference, whose ops treat rows independently, that must give each
// prompt exactly what encoding it alone gives; and the fused projection weights must be served by
// every weight source (one GEMM per group on the GPU).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>

#include "model/text_encoder.h"

using namespace moss;

namespace {

const std::string kFolder = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss/text_encoder";

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dims() != b.dims() || a.dtype != b.dtype) return false;
  const size_t es = dtype_size(a.dtype);
  for (int64_t r = 0; r < a.rows(); ++r)
    if (std::memcmp(static_cast<const char*>(a.data) + size_t(r * a.row_stride()) * es,
                    static_cast<const char*>(b.data) + size_t(r * b.row_stride()) * es, size_t(a.cols()) * es) != 0)
      return false;
  return true;
}

// Lengths around the delta rule's 64-token blocks and a single token.
std::vector<std::vector<int32_t>> prompts_of(const std::vector<int>& lengths) {
  std::vector<std::vector<int32_t>> out;
  for (size_t p = 0; p < lengths.size(); ++p) {
    std::vector<int32_t> ids;
    for (int i = 0; i < lengths[p]; ++i) ids.push_back(int32_t((i * 37 + int(p) * 11 + 3) % 200));
    out.push_back(ids);
  }
  return out;
}

}  // namespace

TEST(TextEncoderBatching, EncodeManyEqualsEachPromptAloneBitForBit) {
  const TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kFolder);
  std::unique_ptr<Backend> be = make_host_backend();
  const auto prompts = prompts_of({70, 13, 1, 64});
  for (TeResidency r : {TeResidency::UploadOnUse, TeResidency::Resident}) {
    TextEncoder te(*be, w, c, r);
    const std::vector<Tensor> many = te.encode_many(prompts);
    ASSERT_EQ(many.size(), prompts.size());
    for (size_t p = 0; p < prompts.size(); ++p) {
      const Tensor alone = te.encode(prompts[p]);
      EXPECT_EQ(many[p].rows(), int64_t(prompts[p].size()));
      EXPECT_TRUE(same_bits(many[p], alone)) << te_residency_name(r) << ", prompt " << p;
    }
  }
}

TEST(TextEncoderBatching, EveryWeightSourceServesTheFusedProjections) {
  const TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kFolder);
  std::unique_ptr<Backend> be = make_host_backend();
  const std::string prefix = text_encoder_prefix(w);
  for (TeResidency r :
       {TeResidency::UploadOnUse, TeResidency::Streamed, TeResidency::Resident, TeResidency::PinnedHost}) {
    std::set<std::string> seen;  // groups found in some layer: names that stopped matching would check none
    std::unique_ptr<TeWeightSource> src = make_te_weight_source(*be, w, prefix, int(c.layers), r);
    src->load({});
    src->begin_pass();
    for (int l = 0; l < int(c.layers); ++l) {
      src->before_layer(l);
      for (const std::vector<std::string>& group : te_fused_groups()) {
        std::vector<std::string> full;
        int64_t rows = 0;
        bool present = true;
        for (const std::string& n : group) {
          full.push_back(prefix + "layers." + std::to_string(l) + "." + n);
          present = present && w.has(full.back());
          if (present) rows += w.get(full.back()).rows();
        }
        if (!present) continue;  // the other layer kind's group
        seen.insert(group[0]);
        const std::optional<Tensor> f = src->get_fused(l, full);
        ASSERT_TRUE(f.has_value()) << te_residency_name(r) << " layer " << l << " " << group[0];
        EXPECT_EQ(f->rows(), rows);
        // The stacked weight's row blocks are the tensors themselves.
        int64_t r0 = 0;
        for (const std::string& n : full) {
          const Tensor part = src->get(l, n), block = f->slice_rows(r0, part.rows());
          EXPECT_TRUE(same_bits(block, part)) << n;
          r0 += part.rows();
        }
      }
      src->after_layer(l);
    }
    src->end_pass();
    EXPECT_EQ(seen.size(), te_fused_groups().size()) << te_residency_name(r);
  }
}
