#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "io/model_folder.h"
#include "model/dit.h"
#include "model/dit_tables.h"
#include "util/error.h"

using namespace moss;

namespace {

const std::string kTransformer = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss/transformer";

std::string write_config(const std::string& name, const std::string& body) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << body;
  return path;
}

// A host f32 tensor of a repeating ramp: element i is (i mod period)·step + offset.
Tensor ramp(const std::vector<int64_t>& dims, int period, float step, float offset) {
  Tensor t = host_tensor(DType::F32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = float(i % period) * step + offset;
  return t;
}

}  // namespace

TEST(DitConfig, ParsesTheTinyModel) {
  const DitConfig c = parse_dit_config(kTransformer + "/config.json");
  EXPECT_EQ(c.dim, 128);
  EXPECT_EQ(c.ffn_dim, 256);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.head_dim(), 32);
  EXPECT_EQ(c.layers, 4);
  EXPECT_EQ(c.text_dim, 256);
  EXPECT_EQ(c.freq_dim, 256);
  EXPECT_EQ(c.latent_channels, 128);
  EXPECT_EQ(c.rope_base, 10000.0);
}

TEST(DitConfig, MissingKeyNamesFileAndKey) {
  const std::string path = write_config("dit_missing.json", R"({"dim": 128, "ffn_dim": 256, "num_layers": 4,
    "text_dim": 256, "freq_dim": 256, "latent_channels": 128, "rope_base": 10000.0})");
  try {
    parse_dit_config(path);
    FAIL() << "a config without num_heads was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Failure);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("num_heads"), std::string::npos) << e.what();
  }
}

TEST(DitConfig, RefusesHeadsThatDoNotSplitForRope) {
  // head_dim 12 is not a multiple of 8 (four RoPE axes, split-half rotation).
  const std::string path = write_config("dit_heads.json", R"({"dim": 120, "ffn_dim": 256, "num_heads": 10,
    "num_layers": 4, "text_dim": 256, "freq_dim": 256, "latent_channels": 128, "rope_base": 10000.0})");
  EXPECT_THROW(parse_dit_config(path), Error);
}

TEST(DitConfig, ExpectedTensorsMatchTheTinyFolder) {
  const DitConfig c = parse_dit_config(kTransformer + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kTransformer);
  const std::vector<ExpectedTensor> e = dit_expected_tensors(c);
  EXPECT_NO_THROW(check_tensors(w, e));
  // 4 embedders/heads x2 + 2 text blocks x14 + 4 time/modulation + 4 layers x10 + 3 head + rope.bands
  EXPECT_EQ(e.size(), size_t(2 + 2 + 2 * 14 + 4 + 2 + 4 * 10 + 2 + 2 + 1));
}

TEST(DitConfig, AFolderOfAnotherSizeIsRefusedNamingTheTensor) {
  DitConfig c = parse_dit_config(kTransformer + "/config.json");
  c.ffn_dim = 512;
  const std::unique_ptr<Backend> be = make_host_backend();
  try {
    Dit dit(*be, WeightFiles::open_folder(kTransformer), c);
    FAIL() << "weights of ffn_dim 256 were accepted for ffn_dim 512";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Failure);
    EXPECT_NE(std::string(e.what()).find("ffn"), std::string::npos) << e.what();
  }
}

TEST(DitTables, PositionsAreCentredImageRowsThenText) {
  const auto p = dit_positions(3, 2, 3);
  ASSERT_EQ(p.size(), 9u);
  EXPECT_EQ(p[0], (std::array<float, 4>{0.0f, 3.0f, -0.5f, -1.0f}));  // even side: half-integers
  EXPECT_EQ(p[5], (std::array<float, 4>{0.0f, 3.0f, 0.5f, 1.0f}));
  EXPECT_EQ(p[6], (std::array<float, 4>{0.0f, 0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(p[8], (std::array<float, 4>{0.0f, 2.0f, 0.0f, 0.0f}));
  EXPECT_EQ(dit_positions(2, 0, 0).size(), 2u);
}

TEST(DitTables, RopeRowsRepeatTheirSlotsInBothHalves) {
  const RopeTables t = rope_tables(dit_positions(2, 2, 2), 32, 10000.0);
  ASSERT_EQ(t.sin.dims(), (std::vector<int64_t>{6, 32}));
  const std::vector<float> bands = rope_bands(32, 10000.0);
  ASSERT_EQ(bands.size(), 4u);
  EXPECT_EQ(bands[0], 1.0f);
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t i = 0; i < 16; ++i) {
      EXPECT_EQ(t.sin.row<float>(r)[i], t.sin.row<float>(r)[i + 16]);
      EXPECT_EQ(t.cos.row<float>(r)[i], t.cos.row<float>(r)[i + 16]);
    }
  // Text row k = 1 at (0, 1, 0, 0): axis 1 (slots 4..7) turns with the bands, others stay at 0.
  const float* s = t.sin.row<float>(5);
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_FLOAT_EQ(s[4], std::sin(1.0f));
  EXPECT_EQ(s[8], 0.0f);
  EXPECT_EQ(t.cos.row<float>(5)[12], 1.0f);
}

TEST(DitTables, TimestepSinusoidIsCosThenSin) {
  const std::vector<float> e0 = timestep_sinusoid(0.0f, 256);
  ASSERT_EQ(e0.size(), 256u);
  for (int k = 0; k < 128; ++k) {
    EXPECT_EQ(e0[size_t(k)], 1.0f);
    EXPECT_EQ(e0[size_t(128 + k)], 0.0f);
  }
  const std::vector<float> e = timestep_sinusoid(987.0f, 256);
  EXPECT_EQ(e[0], float(std::cos(987.0)));   // f_0 = 1
  EXPECT_EQ(e[128], float(std::sin(987.0)));
}

TEST(Dit, ForwardShapeAndSkipRange) {
  const DitConfig c = parse_dit_config(kTransformer + "/config.json");
  const std::unique_ptr<Backend> be = make_host_backend();
  Dit dit(*be, WeightFiles::open_folder(kTransformer), c);
  const Dit::Text text = dit.embed_text(ramp({5, c.text_dim}, 7, 0.1f, -0.3f));
  EXPECT_EQ(text.tokens, 5);
  const Tensor latent = ramp({c.latent_channels, 2, 3}, 11, 0.2f, -1.0f);
  DitTrace trace;
  const Tensor v = dit.forward(latent, text, 500.0f, {1}, &trace);
  EXPECT_EQ(v.dims(), (std::vector<int64_t>{c.latent_channels, 2, 3}));
  EXPECT_EQ(trace.tensors.count("block1"), 0u);
  ASSERT_EQ(trace.tensors.count("block3"), 1u);
  EXPECT_EQ(trace.tensors["block3"].dims(), (std::vector<int64_t>{6 + 5, c.dim}));
  // Deterministic: the same call gives the same bits.
  const Tensor again = dit.forward(latent, text, 500.0f, {1});
  EXPECT_EQ(to_f32_vector(v), to_f32_vector(again));
  try {
    dit.forward(latent, text, 500.0f, {4});
    FAIL() << "skip layer 4 of a 4-layer DiT was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Usage);
  }
  EXPECT_THROW(dit.embed_text(host_tensor(DType::F32, {5, c.text_dim + 1})), Error);
}

// AMD's attention flow (each row's v projected transposed, CoreOps::linear_transposed, and read
// as Vᵀ by the attention) gives the same bits as the rows flow: rows of different lengths (keys
// padded differently), a block only one row runs (a run of one row) and runs of both.
TEST(Dit, TransposedValueFlowIsTheRowsFlow) {
  const DitConfig c = parse_dit_config(kTransformer + "/config.json");
  const Tensor latent = ramp({c.latent_channels, 3, 4}, 13, 0.15f, -0.9f);
  std::vector<std::vector<float>> results[2];
  for (const bool transposed : {false, true}) {
    const std::unique_ptr<Backend> be = make_host_backend(transposed);
    EXPECT_EQ(be->core().attention_reads_transposed_v(c.head_dim()), transposed);
    Dit dit(*be, WeightFiles::open_folder(kTransformer), c);
    const Dit::Text cond = dit.embed_text(ramp({9, c.text_dim}, 5, 0.1f, -0.2f));
    const Dit::Text uncond = dit.embed_text(ramp({2, c.text_dim}, 3, 0.2f, 0.1f));
    const std::vector<Dit::Row> rows = {Dit::Row{&cond, {}}, Dit::Row{&uncond, {2}}};
    for (const Tensor& t : dit.forward_rows(latent, rows, 300.0f)) results[transposed].push_back(to_f32_vector(t));
  }
  ASSERT_EQ(results[0].size(), 2u);
  EXPECT_EQ(results[0], results[1]);
}

TEST(Dit, LatentTokensAreTheChannelsOfEachPositionInRowOrder) {
  const Tensor latent = ramp({3, 2, 4}, 24, 1.0f, 0.0f);  // C = 3 on a 2 x 4 grid, element i = i
  const Tensor tokens = latent_to_tokens(latent);
  ASSERT_EQ(tokens.dims(), (std::vector<int64_t>{8, 3}));
  // Token r·gw + c, channel ch is latent[ch][r][c] = ch·8 + r·4 + c.
  EXPECT_EQ(tokens.ptr<float>()[(1 * 4 + 2) * 3 + 1], float(1 * 8 + 1 * 4 + 2));
  EXPECT_EQ(to_f32_vector(tokens_to_latent(tokens, 2, 4)), to_f32_vector(latent));
  EXPECT_THROW(tokens_to_latent(tokens, 3, 4), Error);
}

TEST(Dit, ForwardTokensIsForwardRowsWithoutTheHostRoundTrip) {
  const DitConfig c = parse_dit_config(kTransformer + "/config.json");
  const std::unique_ptr<Backend> be = make_host_backend();
  Dit dit(*be, WeightFiles::open_folder(kTransformer), c);
  const Dit::Text text = dit.embed_text(ramp({4, c.text_dim}, 5, 0.1f, -0.2f));
  const Tensor latent = ramp({c.latent_channels, 3, 2}, 13, 0.15f, -0.9f);
  const std::vector<Dit::Row> rows = {Dit::Row{&text, {}}, Dit::Row{&text, {2}}};
  const std::vector<Tensor> want = dit.forward_rows(latent, rows, 300.0f);
  const std::vector<Tensor> got = dit.forward_tokens(be->upload(latent_to_tokens(latent)), 3, 2, rows, 300.0f);
  ASSERT_EQ(got.size(), 2u);
  for (size_t r = 0; r < 2; ++r)
    EXPECT_EQ(to_f32_vector(tokens_to_latent(be->download(got[r]), 3, 2)), to_f32_vector(want[r])) << "row " << r;
  // The skipped block makes the rows differ; a token count that is not gh·gw is refused.
  EXPECT_NE(to_f32_vector(got[0]), to_f32_vector(got[1]));
  EXPECT_THROW(dit.forward_tokens(be->upload(latent_to_tokens(latent)), 2, 2, rows, 300.0f), Error);
}
