// The text encoder's config, tensor list, prefix rule and forward on the tiny model folder.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <tuple>
#include <sys/stat.h>

#include "model/text_encoder.h"
#include "test_support.h"
#include "util/error.h"

using namespace moss;

namespace {

const std::string kData = MOSSINFER_TEST_DATA;
const std::string kFolder = kData + "/tiny-moss/text_encoder";
const std::string kGolden = kData + "/golden_text_encoder.safetensors";

std::string temp_dir(const std::string& name) {
  const std::string d = testing::TempDir() + name;
  ::mkdir(d.c_str(), 0755);
  return d;
}

std::vector<int32_t> golden_ids(const SafetensorsFile& g, int c) {
  const Tensor t = g.get("case" + std::to_string(c) + ".ids");
  return std::vector<int32_t>(t.ptr<const int32_t>(), t.ptr<const int32_t>() + t.numel());
}

TEST(TextEncoderConfig, ParsesTinyConfig) {
  const TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  // One tuple per group of sizes: a failure prints the whole group, got and wanted.
  using Sizes = std::tuple<int64_t, int64_t, int64_t, int64_t>;
  EXPECT_EQ(Sizes(c.hidden, c.layers, c.intermediate, c.vocab), Sizes(256, 8, 512, 12288));
  EXPECT_EQ(Sizes(c.heads, c.kv_heads, c.head_dim, c.rot_dim), Sizes(4, 1, 64, 16));  // rot_dim: 64 · 0.25
  EXPECT_EQ(c.rope_theta, 1e7);
  EXPECT_EQ(Sizes(c.linear_key_heads, c.linear_key_dim, c.linear_value_heads, c.linear_value_dim), Sizes(2, 32, 4, 32));
  EXPECT_EQ(c.conv_kernel, 4);
  EXPECT_EQ(c.conv_width(), 256);
  EXPECT_FLOAT_EQ(c.eps, 1e-6f);
  ASSERT_EQ(c.layer_types.size(), 8u);
  for (int l = 0; l < 8; ++l)
    EXPECT_EQ(c.layer_types[size_t(l)],
              l % 4 == 3 ? TextLayerKind::FullAttention : TextLayerKind::LinearAttention) << l;
}

TEST(TextEncoderConfig, RefusesMissingKeyNamingFileAndKey) {
  const std::string path = temp_dir("te_cfg") + "/config.json";
  std::ofstream(path) << R"({"text_config": {"hidden_size": 256, "num_hidden_layers": 2}})";
  const Error e = error_of([&] { parse_text_encoder_config(path); });
  EXPECT_EQ(e.code(), ExitCode::Failure);
  EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("intermediate_size"), std::string::npos) << e.what();
}

TEST(TextEncoderConfig, RefusesUnknownLayerType) {
  std::ifstream in(kFolder + "/config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("\"full_attention\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 16, "\"sliding_attention\"");
  const std::string path = temp_dir("te_cfg_lt") + "/config.json";
  std::ofstream(path) << text;
  const Error e = error_of([&] { parse_text_encoder_config(path); });
  EXPECT_NE(std::string(e.what()).find("sliding_attention"), std::string::npos) << e.what();
}

TEST(TextEncoderWeights, TinyFolderMatchesTheConfig) {
  const TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kFolder);
  const std::string prefix = text_encoder_prefix(w);
  EXPECT_EQ(prefix, "model.language_model.");
  const std::vector<ExpectedTensor> expected = text_encoder_expected_tensors(c, prefix);
  EXPECT_EQ(expected.size(), 6u * 14 + 2u * 11 + 2);  // docs/text_encoder.md 2.3
  EXPECT_NO_THROW(check_tensors(w, expected, text_encoder_ignored_prefixes()));
}

TEST(TextEncoderWeights, ShapeMismatchNamesTheTensor) {
  TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  c.intermediate = 1024;
  const WeightFiles w = WeightFiles::open_folder(kFolder);
  const Error e = error_of([&] { check_tensors(w, text_encoder_expected_tensors(c, text_encoder_prefix(w))); });
  EXPECT_NE(std::string(e.what()).find("mlp."), std::string::npos) << e.what();
}

TEST(TextEncoderWeights, RefusesAnUnknownPrefix) {
  const std::string dir = temp_dir("te_prefix");
  Tensor t = host_tensor(DType::BF16, {4, 2});
  write_safetensors(dir + "/model.safetensors", {{"model.embed_tokens.weight", t}});
  const Error e = error_of([&] { text_encoder_prefix(WeightFiles::open_folder(dir)); });
  EXPECT_EQ(e.code(), ExitCode::Failure);
  EXPECT_NE(std::string(e.what()).find(dir), std::string::npos) << e.what();
}

TEST(TextEncoder, MatchesGoldenAndReportsEveryLayer) {
  const TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  std::unique_ptr<Backend> be = make_host_backend();
  TextEncoder enc(*be, WeightFiles::open_folder(kFolder), c);
  auto g = SafetensorsFile::open(kGolden);
  const std::vector<int32_t> ids = golden_ids(*g, 1);
  std::vector<int> seen;
  const Tensor hidden = enc.encode(ids, [&](int l, const Tensor& x) {
    seen.push_back(l);
    EXPECT_EQ(x.dims(), (std::vector<int64_t>{int64_t(ids.size()), c.hidden}));
    const std::string name = "case1.layer" + std::to_string(l) + "_fp32";
    if (g->has(name)) {
      EXPECT_LT(rel_l2(x, g->get(name)), 1e-5) << name;
    }
  });
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(hidden.where, Where::Host);
  EXPECT_EQ(hidden.dtype, DType::F32);
  EXPECT_LT(rel_l2(hidden, g->get("case1.hidden_fp32")), 1e-5);
}

// The official files use the prefix "language_model." and carry tensors that are never
// loaded (vision tower, mtp.*): same weights under that layout give the same output.
TEST(TextEncoder, AcceptsTheOfficialPrefixAndIgnoresUnusedTensors) {
  const std::string dir = temp_dir("te_official");
  const WeightFiles tiny = WeightFiles::open_folder(kFolder);
  std::vector<std::pair<std::string, Tensor>> renamed;
  for (const std::string& name : tiny.names())
    renamed.push_back({name.substr(std::string("model.").size()), tiny.get(name)});
  renamed.push_back({"model.visual.blocks.0.attn.qkv.weight", host_tensor(DType::BF16, {6, 2})});
  renamed.push_back({"mtp.fc.weight", host_tensor(DType::BF16, {2, 2})});
  write_safetensors(dir + "/model.safetensors", renamed);

  const TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  const WeightFiles official = WeightFiles::open_folder(dir);
  ASSERT_EQ(text_encoder_prefix(official), "language_model.");
  EXPECT_NO_THROW(check_tensors(official, text_encoder_expected_tensors(c, "language_model."),
                                text_encoder_ignored_prefixes()));
  std::unique_ptr<Backend> be = make_host_backend();
  const std::vector<int32_t> ids = {12045, 5, 7, 5, 12046};
  const Tensor a = TextEncoder(*be, tiny, c).encode(ids), b = TextEncoder(*be, official, c).encode(ids);
  EXPECT_EQ(to_f32_vector(a), to_f32_vector(b));
}

TEST(TextEncoder, RefusesATokenOutsideTheVocabulary) {
  const TextEncoderConfig c = parse_text_encoder_config(kFolder + "/config.json");
  std::unique_ptr<Backend> be = make_host_backend();
  TextEncoder enc(*be, WeightFiles::open_folder(kFolder), c);
  const Error e = error_of([&] { enc.encode({1, 2, 12288}); });
  EXPECT_EQ(e.code(), ExitCode::Failure);
  EXPECT_NE(std::string(e.what()).find("12288"), std::string::npos) << e.what();
}

}  // namespace

TEST(TextEncoderBatch, EncodeManyEqualsEncodeOfEach) {
  // The prompt and the negative share one pass over the layers; each result must equal its
  // own encode() bit for bit.
  const std::string dir = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss/text_encoder";
  auto be = moss::make_host_backend();
  const moss::WeightFiles w = moss::WeightFiles::open_folder(dir);
  moss::TextEncoder te(*be, w, moss::parse_text_encoder_config(dir + "/config.json"));
  const std::vector<int32_t> a = {12001, 1969, 198, 64, 5227, 6505, 12002}, b = {12001, 198, 12002};
  const std::vector<moss::Tensor> both = te.encode_many({a, b});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(moss::to_f32_vector(both[0]), moss::to_f32_vector(te.encode(a)));
  EXPECT_EQ(moss::to_f32_vector(both[1]), moss::to_f32_vector(te.encode(b)));
}
