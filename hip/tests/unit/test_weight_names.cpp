// The name mappers of model/weight_names.h and the renamed views of io/weight_views.cpp
// (docs/model_files.md): each layout's names map to the canonical ones, a fused qkv is three
// views into the mapping (no copy), and the DiT's streaming sizes are the folder's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <regex>

#include "model/dit_streaming.h"
#include "model/weight_names.h"
#include "pipeline/model_files.h"
#include "pipeline/moss_model.h"
#include "util/error.h"

using namespace moss;

namespace {

const std::string kModel = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss";

std::map<std::string, TensorInfo> infos(const std::vector<std::pair<std::string, std::vector<int64_t>>>& names) {
  std::map<std::string, TensorInfo> out;
  for (const auto& [n, shape] : names) {
    TensorInfo i;
    i.name = n;
    i.dtype = DType::F32;
    i.dtype_name = "F32";
    i.shape = shape;
    out[n] = i;
  }
  return out;
}

std::string temp_file(const std::string& name) {
  return ::testing::TempDir() + "/weight_names_" + std::to_string(getpid()) + "_" + name;
}

}  // namespace

TEST(WeightNames, VaeLdmNamesMapToDiffusersWithLevelsReversedAndConvAttentionSqueezed) {
  const auto stored = infos({{"decoder.conv_in.weight", {96, 32, 3, 3}},
                             {"decoder.mid.block_1.norm1.weight", {96}},
                             {"decoder.mid.block_2.conv2.bias", {96}},
                             {"decoder.mid.attn_1.norm.weight", {96}},
                             {"decoder.mid.attn_1.q.weight", {96, 96, 1, 1}},
                             {"decoder.mid.attn_1.proj_out.weight", {96, 96, 1, 1}},
                             {"decoder.up.3.block.0.conv1.weight", {96, 96, 3, 3}},
                             {"decoder.up.0.block.2.nin_shortcut.weight", {24, 48, 1, 1}},
                             {"decoder.up.2.upsample.conv.weight", {96, 96, 3, 3}},
                             {"decoder.norm_out.bias", {24}},
                             {"post_quant_conv.weight", {32, 32, 1, 1}},
                             {"encoder.conv_in.weight", {24, 3, 3, 3}},
                             {"quant_conv.weight", {64, 64, 1, 1}}});
  const ComponentLayout l = map_vae_names(stored);
  ASSERT_TRUE(l.found());
  EXPECT_NE(l.layout.find("LDM"), std::string::npos);
  const std::map<std::string, std::string> want = {
      {"decoder.mid_block.resnets.0.norm1.weight", "decoder.mid.block_1.norm1.weight"},
      {"decoder.mid_block.resnets.1.conv2.bias", "decoder.mid.block_2.conv2.bias"},
      {"decoder.mid_block.attentions.0.group_norm.weight", "decoder.mid.attn_1.norm.weight"},
      {"decoder.mid_block.attentions.0.to_q.weight", "decoder.mid.attn_1.q.weight"},
      {"decoder.mid_block.attentions.0.to_out.0.weight", "decoder.mid.attn_1.proj_out.weight"},
      {"decoder.up_blocks.0.resnets.0.conv1.weight", "decoder.up.3.block.0.conv1.weight"},
      {"decoder.up_blocks.3.resnets.2.conv_shortcut.weight", "decoder.up.0.block.2.nin_shortcut.weight"},
      {"decoder.up_blocks.1.upsamplers.0.conv.weight", "decoder.up.2.upsample.conv.weight"},
      {"decoder.conv_norm_out.bias", "decoder.norm_out.bias"},
      {"post_quant_conv.weight", "post_quant_conv.weight"},
      {"decoder.conv_in.weight", "decoder.conv_in.weight"}};
  EXPECT_EQ(l.names.size(), want.size());
  for (const auto& [canonical, stored_name] : want) {
    ASSERT_TRUE(l.names.count(canonical)) << canonical;
    EXPECT_EQ(l.names.at(canonical).stored, stored_name);
  }
  EXPECT_EQ(l.names.at("decoder.mid_block.attentions.0.to_q.weight").shape, (std::vector<int64_t>{96, 96}));
  EXPECT_TRUE(l.names.at("decoder.up_blocks.0.resnets.0.conv1.weight").shape.empty());
  EXPECT_EQ(l.unused, 2u);  // the encoder side
  EXPECT_EQ(l.consumed.size(), stored.size());
}

TEST(WeightNames, TextEncoderEveryPrefixMapsToTheCanonicalOneAndSkipsUnusedParts) {
  for (const std::string prefix : {"language_model.", "model.language_model.", "model.", "",
                                   "text_encoders.qwen35_9b.transformer.model.language_model."}) {
    const auto stored = infos({{prefix + "embed_tokens.weight", {16, 8}},
                               {prefix + "norm.weight", {8}},
                               {prefix + "layers.0.linear_attn.in_proj_qkv.weight", {24, 8}},
                               {prefix + "layers.3.self_attn.q_proj.weight", {16, 8}},
                               {"visual.blocks.0.norm1.weight", {8}},
                               {"model.visual.merger.weight", {8}},
                               {"lm_head.weight", {16, 8}},
                               {"mtp.layers.0.norm.weight", {8}}});
    const ComponentLayout l = map_text_encoder_names(stored);
    ASSERT_TRUE(l.found()) << prefix;
    EXPECT_EQ(l.names.size(), 4u) << prefix;
    EXPECT_EQ(l.names.at("language_model.embed_tokens.weight").stored, prefix + "embed_tokens.weight");
    EXPECT_EQ(l.names.at("language_model.layers.3.self_attn.q_proj.weight").stored,
              prefix + "layers.3.self_attn.q_proj.weight");
    EXPECT_EQ(l.unused, 4u) << prefix;
    EXPECT_EQ(l.consumed.size(), stored.size()) << prefix;
    EXPECT_FALSE(map_dit_names(stored).found());
    EXPECT_FALSE(map_vae_names(stored).found());
  }
}

TEST(WeightNames, DitPrefixesAndFusedQkvSplitIntoThirds) {
  for (const std::string prefix : {"", "model.diffusion_model.", "diffusion_model."}) {
    const auto stored = infos({{prefix + "video_embedder.weight", {8, 4}},
                               {prefix + "layers.0.proj.qkv.weight", {24, 8}},
                               {prefix + "layers.0.norm1.weight", {8}},
                               {prefix + "layers.1.proj.q.weight", {8, 8}},
                               {prefix + "rope.bands", {4}},
                               {prefix + "layers.0.proj.lora_down.weight", {2, 8}}});
    const ComponentLayout l = map_dit_names(stored);
    ASSERT_TRUE(l.found()) << prefix;
    for (int i = 0; i < 3; ++i) {
      const TensorSource& s = l.names.at(std::string("layers.0.proj.") + "qkv"[i] + ".weight");
      EXPECT_EQ(s.stored, prefix + "layers.0.proj.qkv.weight");
      EXPECT_EQ(s.row_begin, 8 * i);
      EXPECT_EQ(s.shape, (std::vector<int64_t>{8, 8}));
    }
    EXPECT_EQ(l.names.at("layers.1.proj.q.weight").stored, prefix + "layers.1.proj.q.weight");
    EXPECT_FALSE(l.consumed.count(prefix + "layers.0.proj.lora_down.weight"));  // not placed: refused later
    EXPECT_TRUE(l.duplicates.empty());
  }
}

TEST(WeightNames, FusedQkvViewsPointIntoTheMappingAndStreamLikeTheFolder) {
  const WeightFiles folder = WeightFiles::open_folder(kModel + "/transformer");
  // The folder's DiT written with each block's q, k, v stacked as proj.qkv (Comfy-Org's layout).
  std::vector<Tensor> keep;
  std::vector<std::pair<std::string, Tensor>> out;
  static const std::regex kv(R"(layers\.\d+\.proj\.[kv]\.weight)"), q(R"(layers\.(\d+)\.proj\.q\.weight)");
  for (const std::string& n : folder.names()) {
    std::smatch m;
    if (std::regex_match(n, kv)) continue;
    if (!std::regex_match(n, m, q)) {
      out.push_back({n, folder.get(n)});
      continue;
    }
    const std::string p = "layers." + m[1].str() + ".proj.";
    const Tensor a = folder.get(p + "q.weight"), b = folder.get(p + "k.weight"), c = folder.get(p + "v.weight");
    Tensor qkv = host_tensor(a.dtype, {a.rows() * 3, a.cols()});
    std::memcpy(qkv.ptr<char>(), a.data, a.nbytes());
    std::memcpy(qkv.ptr<char>() + a.nbytes(), b.data, b.nbytes());
    std::memcpy(qkv.ptr<char>() + 2 * a.nbytes(), c.data, c.nbytes());
    keep.push_back(qkv);
    out.push_back({p + "qkv.weight", qkv});
  }
  const std::string path = temp_file("dit_fused.safetensors");
  write_safetensors(path, out);
  const ExaminedFile x = examine_weights_file(path);
  ASSERT_TRUE(x.unplaced.empty());
  const ComponentLayout* l = x.find(Component::Dit);
  ASSERT_NE(l, nullptr);
  const WeightFiles fused = WeightFiles::of_files(path, {x.file->renamed(l->names)});
  EXPECT_EQ(fused.names(), folder.names());
  const Tensor stored = x.file->get("layers.1.proj.qkv.weight");
  const char* base = static_cast<const char*>(stored.data);
  int i = 0;
  for (const char* part : {"q", "k", "v"}) {
    const std::string name = std::string("layers.1.proj.") + part + ".weight";
    const Tensor view = fused.get(name), want = folder.get(name);
    EXPECT_EQ(static_cast<const char*>(view.data), base + i++ * want.nbytes()) << name << ": a view, not a copy";
    EXPECT_EQ(view.dims(), want.dims());
    EXPECT_EQ(std::memcmp(view.data, want.data, want.nbytes()), 0) << name;
  }
  const DitStreamSizes a = dit_stream_sizes(folder), b = dit_stream_sizes(fused);
  EXPECT_EQ(a.fixed_bytes, b.fixed_bytes);
  EXPECT_EQ(a.block_bytes, b.block_bytes);
  EXPECT_EQ(a.slot_bytes, b.slot_bytes);
  EXPECT_EQ(a.staging_bytes, b.staging_bytes);
  EXPECT_EQ(a.blocks, b.blocks);
  ::unlink(path.c_str());
}

TEST(WeightNames, AViewThatDoesNotFitItsTensorIsRefusedNamingTheFile) {
  const std::string path = temp_file("small.safetensors");
  Tensor t = host_tensor(DType::F32, {6, 2});
  std::memset(t.data, 0, t.nbytes());
  write_safetensors(path, {{"w", t}});
  const auto file = SafetensorsFile::open(path);
  EXPECT_NO_THROW(file->renamed({{"a", {"w", 4, {2, 2}}}}));
  for (const TensorSource& bad : {TensorSource{"w", 5, {2, 2}}, TensorSource{"w", 0, {2, 3}},
                                  TensorSource{"w", -1, {1, 2}}, TensorSource{"missing", 0, {}}}) {
    try {
      file->renamed({{"a", bad}});
      ADD_FAILURE() << "accepted " << bad.stored << " from row " << bad.row_begin;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  ::unlink(path.c_str());
}

TEST(WeightNames, ComponentsThatDisagreeAreRefusedNamingBoth) {
  MossModel m = open_moss_model(kModel);
  EXPECT_NO_THROW(check_components_agree(m));
  MossModel wide = m;
  wide.te_config.hidden = m.dit_config.text_dim * 2;
  try {
    check_components_agree(wide);
    ADD_FAILURE() << "a text encoder of another width was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Failure);
    EXPECT_NE(std::string(e.what()).find("the components disagree: the diffusion model takes 256-wide text features"),
              std::string::npos)
        << e.what();
  }
  MossModel other_vae = m;
  other_vae.vae_config.latent_channels = 16;
  try {
    check_components_agree(other_vae);
    ADD_FAILURE() << "a VAE of other latents was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("128-channel latents, the VAE"), std::string::npos) << e.what();
  }
}
