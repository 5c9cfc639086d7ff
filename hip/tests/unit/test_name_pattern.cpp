// The tensor-name patterns of util/name_pattern.h, which the weight-name mappers
// (model/weight_names.cpp) and the other-model detection (pipeline/model_files.cpp) classify
// every stored name with. Each table row is checked against the std::regex it replaced, over
// the names of the full-size model in every layout and thousands of mutations of them: the
// same names match, with the same canonical result.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <set>

#include "model/dit.h"
#include "model/full_size_config.h"
#include "model/text_encoder.h"
#include "model/vae_config.h"
#include "util/name_pattern.h"

using namespace moss;

namespace {

bool matches(const char* pattern, const std::string& name, std::vector<std::string>* caps = nullptr) {
  std::vector<std::string_view> m;
  const bool ok = NamePattern(pattern).match(name, &m);
  if (caps) caps->assign(m.begin(), m.end());
  return ok;
}

}  // namespace

TEST(NamePattern, EachWildcardMatchesItsClassAndCaptures) {
  std::vector<std::string> c;
  EXPECT_TRUE(matches("layers.#.proj.qkv.weight", "layers.17.proj.qkv.weight", &c));
  EXPECT_EQ(c, (std::vector<std::string>{"layers.17.proj.qkv.weight", "17"}));
  for (const char* bad : {"layers..proj.qkv.weight", "layers.1a.proj.qkv.weight", "layers.1.proj.qkv.weights",
                          "xlayers.1.proj.qkv.weight", "layers.1.proj.qkv.weigh", ""})
    EXPECT_FALSE(matches("layers.#.proj.qkv.weight", bad)) << bad;
  // ?: one lowercase part (a-z, 0-9, _), never empty, never across a dot.
  EXPECT_TRUE(matches("blocks.#.?.bias", "blocks.0.ffn_up.bias", &c));
  EXPECT_EQ(c[2], "ffn_up");
  for (const char* bad : {"blocks.0..bias", "blocks.0.a.b.bias", "blocks.0.Up.bias", "blocks.0.up-1.bias"})
    EXPECT_FALSE(matches("blocks.#.?.bias", bad)) << bad;
  // *: anything, empty too, backtracking to let the rest match; no line breaks.
  EXPECT_TRUE(matches("decoder.mid.block_1.*", "decoder.mid.block_1.", &c));
  EXPECT_EQ(c[1], "");
  EXPECT_TRUE(matches("a.*.b.*", "a.x.b.y.b.z", &c));
  EXPECT_EQ(c, (std::vector<std::string>{"a.x.b.y.b.z", "x.b.y", "z"}));  // the first * takes the longest
  EXPECT_FALSE(matches("a.*", "a.x\ny"));
  // {a|b}: literal alternatives, trying each until the rest matches.
  EXPECT_TRUE(matches("layers.#.{q|q_norm}.weight", "layers.2.q_norm.weight", &c));
  EXPECT_EQ(c[2], "q_norm");
  EXPECT_FALSE(matches("{a|b}.x", "c.x"));
  EXPECT_FALSE(matches("{a|b}.x", "ab.x"));
  // #: the longest run first, fewer digits when the rest needs them.
  EXPECT_TRUE(matches("n#1", "n1231", &c));
  EXPECT_EQ(c[1], "123");
}

TEST(NamePattern, AnyPartMatchesFromTheStartOrAfterADotOnly) {
  const NamePattern visual("{visual|mtp}.*");
  for (const char* yes : {"visual.blocks.0.norm1.weight", "model.visual.merger.weight", "a.b.mtp.norm.weight", "mtp."})
    EXPECT_TRUE(visual.match_any_part(yes)) << yes;
  for (const char* no : {"model.nonvisual.x", "visualx.y", "model.visual", "mtp", "", "x.mtp"})
    EXPECT_FALSE(visual.match_any_part(no)) << no;
  // As the regex (^|.*\.)X did: no start after a line break.
  EXPECT_FALSE(visual.match_any_part("a\nb.visual.x"));
  EXPECT_FALSE(visual.match_any_part("a.visual.x\ny"));  // nor a '*' across one
  EXPECT_TRUE(NamePattern("lm_head.weight").match_any_part("model.lm_head.weight"));
  EXPECT_FALSE(NamePattern("lm_head.weight").match_any_part("model.xlm_head.weight"));
}

TEST(NamePattern, CapturesExpandIntoFormats) {
  std::vector<std::string_view> m;
  ASSERT_TRUE(NamePattern("decoder.up.#.block.#.*").match("decoder.up.3.block.1.conv1.weight", &m));
  EXPECT_EQ(expand_captures("decoder.up_blocks.$1.resnets.$2.$3", m), "decoder.up_blocks.3.resnets.1.conv1.weight");
  EXPECT_EQ(expand_captures("$0", m), "decoder.up.3.block.1.conv1.weight");
  EXPECT_EQ(expand_captures("cost $", m), "cost $");
  EXPECT_THROW(expand_captures("$4", m), std::logic_error);
}

namespace {

// Every name a mapper or the other-model check is shown: the full-size model's own names in
// each layout (prefixed, fused qkv, LDM-named VAE, the text encoder under each prefix with its
// unused parts), other models' marker names, and seeded mutations of all of them (a character
// changed, dropped or doubled, a part dropped or doubled, the name cut short).
std::vector<std::string> name_class() {
  std::set<std::string> base;
  const DitConfig dit = dit_config_from_json(full_size_dit_config(), "test");
  for (const ExpectedTensor& e : dit_expected_tensors(dit)) {
    base.insert(e.name);
    base.insert("model.diffusion_model." + e.name);
  }
  for (int l : {0, 9, 41}) base.insert("layers." + std::to_string(l) + ".proj.qkv.weight");
  const TextEncoderConfig te = text_encoder_config_from_json(full_size_text_encoder_config(), "test");
  for (const char* prefix : {"", "model.", "language_model.", "model.language_model."})
    for (const ExpectedTensor& e : text_encoder_expected_tensors(te, prefix)) base.insert(e.name);
  for (const char* extra : {"visual.blocks.0.attn.qkv.weight", "model.visual.merger.mlp.0.weight", "lm_head.weight",
                            "mtp.layers.0.mlp.up_proj.weight", "mtp.fc.weight"})
    base.insert(extra);
  const VaeConfig vae = vae_config_from_json(full_size_vae_config(), "test");
  for (const ExpectedTensor& e : vae_expected_tensors(vae)) base.insert(e.name);
  for (const char* ldm :
       {"decoder.mid.block_1.norm1.weight", "decoder.mid.block_2.conv2.bias", "decoder.mid.attn_1.norm.weight",
        "decoder.mid.attn_1.q.weight", "decoder.mid.attn_1.v.bias", "decoder.mid.attn_1.proj_out.weight",
        "decoder.up.3.block.0.conv1.weight", "decoder.up.0.block.2.nin_shortcut.weight",
        "decoder.up.2.upsample.conv.weight", "decoder.norm_out.bias", "decoder.conv_in.weight", "decoder.conv_out.bias",
        "post_quant_conv.weight", "encoder.conv_in.weight", "quant_conv.bias", "bn.running_mean", "bn.running_var",
        "bn.num_batches_tracked", "first_stage_model.decoder.up.1.block.1.conv2.weight"})
    base.insert(ldm);
  for (const char* foreign :
       {"double_blocks.0.img_attn.qkv.weight", "model.diffusion_model.double_blocks.12.txt_mlp.0.bias",
        "transformer_blocks.3.img_mod.1.weight", "noise_refiner.0.attention.qkv.weight", "context_refiner.1.x",
        "input_blocks.4.1.proj_in.weight", "text_model.encoder.layers.0.mlp.fc1.weight",
        "encoder.block.0.layer.0.SelfAttention.q.weight", "decoder.conv1.weight", "vae.decoder.conv1.weight"})
    base.insert(foreign);
  std::vector<std::string> out(base.begin(), base.end());
  std::mt19937 rng(45);
  const std::string alphabet = std::string("._0123456789qkvlayersupAZ-\n");
  for (const std::string& b : std::vector<std::string>(base.begin(), base.end())) {
    for (int k = 0; k < 8; ++k) {
      std::string n = b;
      const size_t at = rng() % (n.size() + 1);
      switch (rng() % 6) {
        case 0:
          if (at < n.size()) n[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          if (at < n.size()) n.erase(at, 1);
          break;
        case 2: n.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        case 3: n = n.substr(0, at); break;
        case 4: {  // a part dropped
          const size_t dot = n.find('.', at);
          if (dot != std::string::npos) n.erase(at, dot - at + 1);
          break;
        }
        default: {  // a part doubled
          const size_t start = n.rfind('.', at), dot = n.find('.', at);
          const size_t s = start == std::string::npos ? 0 : start + 1;
          if (dot != std::string::npos) n.insert(s, n.substr(s, dot - s + 1));
        }
      }
      out.push_back(n);
    }
  }
  return out;
}

// One row of a mapper's table as it was written with std::regex, and as it is now.
struct Row {
  const char* regex;
  const char* regex_format;  // empty: match only
  const char* pattern;
  const char* pattern_format;
};

}  // namespace

TEST(NamePattern, EveryMapperRowMatchesWhatItsRegexMatched) {
  const std::vector<Row> rows = {
      // model/weight_names.cpp, the DiT
      {R"(layers\.(\d+)\.proj\.qkv\.weight)", "layers.$1.proj.k.weight", "layers.#.proj.qkv.weight",
       "layers.$1.proj.k.weight"},
      {R"((layers\.\d+\.(norm1|norm2|q_norm|k_norm)\.weight))", "$1", "layers.#.{norm1|norm2|q_norm|k_norm}.weight",
       "$0"},
      {R"((layers\.\d+\.proj\.(q|k|v|o|ffn_up_gate|ffn_down)\.weight))", "$1",
       "layers.#.proj.{q|k|v|o|ffn_up_gate|ffn_down}.weight", "$0"},
      {R"((text_embedder\.blocks\.\d+\.[a-z_0-9]+\.(weight|bias)))", "$1", "text_embedder.blocks.#.?.{weight|bias}",
       "$0"},
      {R"((text_embedder\.proj\.(weight|bias)))", "$1", "text_embedder.proj.{weight|bias}", "$0"},
      {R"((time_embedding\.\d+\.(weight|bias)))", "$1", "time_embedding.#.{weight|bias}", "$0"},
      {R"(((video_embedder|video_head_modulation|shared_block_modulation|final_linear_video)\.(weight|bias)))", "$1",
       "{video_embedder|video_head_modulation|shared_block_modulation|final_linear_video}.{weight|bias}", "$0"},
      {R"((final_norm_video\.weight|rope\.bands))", "$1", "{final_norm_video.weight|rope.bands}", "$0"},
      // the VAE, LDM names
      {R"(decoder\.mid\.block_1\.(.*))", "decoder.mid_block.resnets.0.$1", "decoder.mid.block_1.*",
       "decoder.mid_block.resnets.0.$1"},
      {R"(decoder\.mid\.block_2\.(.*))", "decoder.mid_block.resnets.1.$1", "decoder.mid.block_2.*",
       "decoder.mid_block.resnets.1.$1"},
      {R"(decoder\.mid\.attn_1\.norm\.(.*))", "g.$1", "decoder.mid.attn_1.norm.*", "g.$1"},
      {R"(decoder\.mid\.attn_1\.([qkv])\.(.*))", "to_$1.$2", "decoder.mid.attn_1.{q|k|v}.*", "to_$1.$2"},
      {R"(decoder\.mid\.attn_1\.proj_out\.(.*))", "o.$1", "decoder.mid.attn_1.proj_out.*", "o.$1"},
      {R"(decoder\.up\.(\d+)\.block\.(\d+)\.nin_shortcut\.(.*))", "$1.$2.$3", "decoder.up.#.block.#.nin_shortcut.*",
       "$1.$2.$3"},
      {R"(decoder\.up\.(\d+)\.block\.(\d+)\.(.*))", "$1.$2.$3", "decoder.up.#.block.#.*", "$1.$2.$3"},
      {R"(decoder\.up\.(\d+)\.upsample\.(.*))", "$1.$2", "decoder.up.#.upsample.*", "$1.$2"},
      {R"(decoder\.up\.(\d+)\..*)", "$1", "decoder.up.#.*", "$1"},
      {R"(decoder\.norm_out\.(.*))", "$1", "decoder.norm_out.*", "$1"},
      {R"(((decoder\.conv_in|decoder\.conv_out|post_quant_conv)\.(weight|bias)))", "$1",
       "{decoder.conv_in|decoder.conv_out|post_quant_conv}.{weight|bias}", "$0"},
      {R"((bn\.(running_mean|running_var|num_batches_tracked)))", "$1",
       "bn.{running_mean|running_var|num_batches_tracked}", "$0"},
      {R"((encoder|quant_conv)\..*)", "", "{encoder|quant_conv}.*", ""},
      // the VAE, diffusers names (one regex then, three rows now: checked apart below)
      {R"(decoder\..*)", "", "decoder.*", ""},
      {R"(post_quant_conv\.(weight|bias))", "", "post_quant_conv.{weight|bias}", ""},
  };
  const std::vector<std::string> names = name_class();
  ASSERT_GT(names.size(), 5000u);
  size_t matched = 0;
  for (const Row& r : rows) {
    const std::regex re(r.regex);
    const NamePattern p(r.pattern);
    std::vector<std::string_view> caps;
    for (const std::string& n : names) {
      std::smatch m;
      const bool want = std::regex_match(n, m, re), got = p.match(n, &caps);
      ASSERT_EQ(got, want) << r.pattern << " on '" << n << "'";
      if (!got) continue;
      ++matched;
      if (*r.regex_format) {
        EXPECT_EQ(expand_captures(r.pattern_format, caps), m.format(r.regex_format)) << n;
      }
    }
  }
  EXPECT_GT(matched, 1000u);  // the class holds matches of every kind, not only misses
}

TEST(NamePattern, UnusedPartsAndOtherModelsMatchWhereTheirRegexesDid) {
  const std::vector<std::pair<const char*, const char*>> rows = {
      // the text encoder's unused parts (model/weight_names.cpp), one regex then, two patterns now
      {R"((^|.*\.)(visual|mtp)\..*)", "{visual|mtp}.*"},
      {R"((^|.*\.)lm_head\.weight)", "lm_head.weight"},
      // other models' markers (pipeline/model_files.cpp)
      {R"((^|.*\.)double_blocks\.\d+\..*)", "double_blocks.#.*"},
      {R"((^|.*\.)transformer_blocks\.\d+\.img_mod\..*)", "transformer_blocks.#.img_mod.*"},
      {R"((^|.*\.)(noise_refiner|context_refiner)\.\d+\..*)", "{noise_refiner|context_refiner}.#.*"},
      {R"((^|.*\.)input_blocks\.\d+\..*)", "input_blocks.#.*"},
      {R"((^|.*\.)text_model\.encoder\.layers\..*)", "text_model.encoder.layers.*"},
      {R"((^|.*\.)encoder\.block\.\d+\.layer\..*)", "encoder.block.#.layer.*"},
      {R"((^|.*\.)decoder\.conv1\.weight)", "decoder.conv1.weight"},
  };
  const std::vector<std::string> names = name_class();
  size_t matched = 0;
  for (const auto& [regex, pattern] : rows) {
    const std::regex re(regex);
    const NamePattern p(pattern);
    for (const std::string& n : names) {
      const bool want = std::regex_match(n, re);
      ASSERT_EQ(p.match_any_part(n), want) << pattern << " on '" << n << "'";
      matched += want;
    }
  }
  EXPECT_GT(matched, 50u);
}
