// `bench`'s whole stages (diagnostics/bench_stages.h) on the host backend at the tiny model's
// shapes: every stage runs through the generation's own code on random in-memory weights and
// gives its summary line (times are not asserted: speed goals live in bench/).
#include <gtest/gtest.h>

#include <regex>

#include "diagnostics/bench_stages.h"
#include "model/random_weights.h"
#include "util/error.h"
#include "model/vae.h"

using namespace moss;

namespace {

const std::string kTiny = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss";

BenchShapes tiny_shapes() {
  BenchShapes s;
  s.name = "tiny-moss";
  s.te = parse_text_encoder_config(kTiny + "/text_encoder/config.json");
  s.dit = parse_dit_config(kTiny + "/transformer/config.json");
  s.vae = parse_vae_config(kTiny + "/vae/config.json");
  return s;
}

// The one line that matches `pattern`; fails naming the lines otherwise.
std::string line_matching(const StageBench& b, const std::string& pattern) {
  const std::regex re(pattern);
  std::vector<std::string> found;
  for (const std::string& l : b.lines)
    if (std::regex_search(l, re)) found.push_back(l);
  std::string all;
  for (const std::string& l : b.lines) all += "\n  " + l;
  EXPECT_EQ(found.size(), 1u) << "/" << pattern << "/ in:" << all;
  return found.empty() ? "" : found[0];
}

// The options of a 32x32 run of `steps` steps, the size every stage test uses.
BenchOptions small_run(int steps) {
  BenchOptions o;
  o.width = o.height = 32;
  o.steps = steps;
  return o;
}

}  // namespace

TEST(BenchStages, EveryStageRunsOnRandomInMemoryWeightsAndGivesItsLine) {
  auto be = make_host_backend();
  BenchOptions o = small_run(3);
  const BenchShapes shapes = tiny_shapes();
  const int blocks = int(shapes.dit.layers);
  ASSERT_GE(blocks, 2);
  const StageBench b = run_stage_bench(*be, shapes, o, 8);
  EXPECT_TRUE(b.ok);
  line_matching(b, "^stages on random tiny-moss weights made in host memory .*no model files, nothing written");
  line_matching(b, "^text encoder forward \\(.*: [0-9]+ layers, hidden [0-9]+\\), 2 x 8 tokens, layers .*: "
                   "[0-9.]+ s median of passes 2\\.\\.4");
  // Three steps: the first a warm-up, the median of the other two, every step's time listed.
  const std::string step = "[0-9.]+ s median of steps 2\\.\\.3 \\([0-9.]+ [0-9.]+ [0-9.]+\\)";
  line_matching(b, "^DiT step 32x32, cfg 3 \\(2 rows\\), " + std::to_string(blocks) + " of " + std::to_string(blocks) +
                       " blocks resident .*: " + step + "$");
  // No budget given: planned to keep part of the blocks (half of them, or with the tiny model's
  // few blocks as many as fit below the all-resident plan), the others streamed.
  const std::string streamed = line_matching(
      b, "^DiT step 32x32, cfg 3 \\(2 rows\\), streamed \\(budget [0-9.]+ GiB\\): [0-9]+ of " + std::to_string(blocks) +
             " blocks resident, [0-9]+ streamed from .* pinned host memory: " + step +
             "; [0-9.]+ (MiB|GiB) copied a step, [0-9.]+ GB/s");
  std::smatch counts;
  ASSERT_TRUE(std::regex_search(streamed, counts, std::regex("([0-9]+) of [0-9]+ blocks resident, ([0-9]+) streamed")));
  const int resident = std::stoi(counts[1]), streamed_blocks = std::stoi(counts[2]);
  EXPECT_LT(resident, blocks);
  EXPECT_EQ(resident + streamed_blocks, blocks);
  // The streamed blocks' images crossed (here, on the host backend, a copy in memory) every step.
  ASSERT_TRUE(std::regex_search(streamed, counts, std::regex("; ([0-9.]+) (MiB|GiB) copied a step")));
  EXPECT_GT(std::stod(counts[1]), 0.0) << streamed;
  line_matching(b, "^VAE decode 32x32 \\(.*\\): [0-9.]+ s median of decodes 2\\.\\.4");
  line_matching(b, "^memory plan \\(the CLI's planner, 8-token prompts\\): all blocks resident: .*streamed at");
  for (const std::string& l : b.lines) {
    EXPECT_EQ(l.find("not measured"), std::string::npos) << l;
    std::printf("%s\n", l.c_str());  // the block's stage lines, for the log
  }
}

TEST(BenchStages, AVramBudgetThatKeepsEveryBlockResidentStillTimesAStreamedStep) {
  auto be = make_host_backend();
  BenchOptions o = small_run(2);
  o.vram_budget_gib = 4000;  // far more than the tiny model needs
  const StageBench b = run_stage_bench(*be, tiny_shapes(), o, 4);
  EXPECT_TRUE(b.ok);
  line_matching(b, "streamed \\(budget [0-9.]+ GiB; --vram-budget 4000\\.0 keeps all [0-9]+ blocks resident, so "
                   "planned for [0-9.]+ GiB\\)");
}

TEST(BenchStages, FewerTextEncoderLayersAreScaledToTheModelsCountAndSaySo) {
  auto be = make_host_backend();
  BenchOptions o = small_run(2);
  BenchShapes shapes = tiny_shapes();
  ASSERT_EQ(shapes.te.layers, 8);
  shapes.te_layers_timed = 4;
  const StageBench b = run_stage_bench(*be, shapes, o, 4);
  EXPECT_TRUE(b.ok);
  const std::string te = line_matching(b, "^text encoder forward \\(.*: 4 layers, hidden [0-9]+\\), 2 x 4 tokens, .*: "
                                          "([0-9.]+) s median of passes 2\\.\\.4 .*; ([0-9.]+) s a layer, x 8 layers = "
                                          "([0-9.]+) s \\(scaled: 4 of 8 layers made, for the host's memory\\)$");
  std::smatch t;
  ASSERT_TRUE(std::regex_search(te, t, std::regex(": ([0-9.]+) s median.*; ([0-9.]+) s a layer, x 8 layers = ([0-9.]+) s")));
  EXPECT_NEAR(std::stod(t[2]), std::stod(t[1]) / 4, 1e-4) << te;
  EXPECT_NEAR(std::stod(t[3]), std::stod(t[1]) * 2, 2e-4) << te;
  // Every layer made: no scaling.
  shapes.te_layers_timed = 0;
  const StageBench all = run_stage_bench(*be, shapes, o, 4);
  EXPECT_EQ(line_matching(all, "^text encoder forward \\(.*: 8 layers").find("scaled"), std::string::npos);
}

TEST(BenchStages, ABudgetBelowTheDitsMinimumIsAFailedLineNamingThePlan) {
  auto be = make_host_backend();
  BenchOptions o = small_run(2);
  o.vram_budget_gib = 0.001;
  const StageBench b = run_stage_bench(*be, tiny_shapes(), o, 4);
  EXPECT_FALSE(b.ok);
  line_matching(b, "^memory plan: failed: ");
}

TEST(RandomWeights, AreThoseOfBenchRandomModelAndIndependentOfTheSplit) {
  // Element i is a function of (salt, i) alone: two halves filled apart equal one whole fill.
  const WeightDraw d{0.0f, 0.5f};
  std::vector<uint16_t> whole(1000), parts(1000);
  fill_random_weights(whole.data(), DType::BF16, 0, 1000, d, 77);
  fill_random_weights(parts.data(), DType::BF16, 0, 400, d, 77);
  fill_random_weights(parts.data() + 400, DType::BF16, 400, 600, d, 77);
  EXPECT_EQ(whole, parts);
  std::vector<uint16_t> other(1000);
  fill_random_weights(other.data(), DType::BF16, 0, 1000, d, 78);
  EXPECT_NE(whole, other);
  // Norm weights near their neutral value; fan-in scaled matrices.
  EXPECT_FLOAT_EQ(weight_draw("x.norm.weight", {64}, false).mean, 1.0f);
  EXPECT_FLOAT_EQ(weight_draw("x.norm.weight", {64}, true).mean, 0.0f);
  EXPECT_FLOAT_EQ(weight_draw("x.proj.weight", {8, 64}, false).std, 0.125f);
}

TEST(WeightFilesInMemory, ServesItsTensorsLikeAFolder) {
  std::map<std::string, Tensor> t;
  t["a.weight"] = host_tensor(DType::F32, {2, 3});
  for (int i = 0; i < 6; ++i) t["a.weight"].ptr<float>()[i] = float(i);
  const WeightFiles w = WeightFiles::in_memory("label", t);
  EXPECT_TRUE(w.has("a.weight"));
  EXPECT_FALSE(w.has("b.weight"));
  EXPECT_EQ(w.names(), std::vector<std::string>{"a.weight"});
  EXPECT_EQ(w.info("a.weight").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.info("a.weight").end - w.info("a.weight").begin, 24u);
  EXPECT_EQ(w.get("a.weight").ptr<float>()[5], 5.0f);
  try {
    w.get("b.weight");
    FAIL() << "no error for a missing tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label: missing tensor 'b.weight'"), std::string::npos) << e.what();
  }
}

// The one full-size config (model/full_size_config.h) parses, as a model folder's files would, into
// MOSS-Image's shapes (spec/model.md): what bench times is what the CLI loads from the real folder.
TEST(BenchStages, FullSizeShapesAreMossImagesPublishedConfigs) {
  const moss::BenchShapes s = moss::full_size_shapes();
  EXPECT_EQ(s.dit.dim, 3072);
  EXPECT_EQ(s.dit.ffn_dim, 8192);
  EXPECT_EQ(s.dit.heads, 24);
  EXPECT_EQ(s.dit.layers, 42);
  EXPECT_EQ(s.dit.text_dim, 4096);
  EXPECT_EQ(s.te.hidden, 4096);
  EXPECT_EQ(s.te.layers, 32);
  EXPECT_EQ(s.te.intermediate, 12288);
  EXPECT_EQ(s.te.vocab, 248320);
  EXPECT_EQ(s.te.kv_heads, 4);
  EXPECT_EQ(s.te.head_dim, 256);
  EXPECT_EQ(s.te.rot_dim, 64);
  ASSERT_EQ(s.te.layer_types.size(), 32u);
  int full = 0;
  for (size_t i = 0; i < s.te.layer_types.size(); ++i)
    if (s.te.layer_types[i] == moss::TextLayerKind::FullAttention) {
      EXPECT_EQ(i % 4, 3u) << "layer " << i;
      ++full;
    }
  EXPECT_EQ(full, 8);
  EXPECT_EQ(s.vae.block_out_channels, (std::vector<int64_t>{96, 192, 384, 384}));
  EXPECT_EQ(s.vae.latent_channels, 32);
  EXPECT_EQ(s.vae.norm_num_groups, 32);
}

// --int8: the stages' DiT has its block projections in INT8 ConvRot (the tiny widths take group
// 64); the steps run linear_int8 (the host backend's), the header and the resident line say so,
// and the streamed step copies each streamed block's I8 weights and scales: about half the bf16
// block's bytes (the plan's numbers at full size: Int8MemoryPlan.*).
TEST(BenchStages, Int8RunsTheDitInInt8ConvRotAndStreamsItsSmallerBlocks) {
  auto be = make_host_backend();
  BenchOptions o = small_run(2);
  const BenchShapes shapes = tiny_shapes();
  const StageBench bf16 = run_stage_bench(*be, shapes, o, 4);
  o.int8 = true;
  const StageBench int8 = run_stage_bench(*be, shapes, o, 4);
  EXPECT_TRUE(int8.ok);
  line_matching(int8, "^stages on random tiny-moss weights .*; the DiT's blocks in INT8 ConvRot \\(group 64\\)$");
  line_matching(int8, "blocks resident \\([0-9.]+ GiB of INT8 ConvRot \\(group 64\\) weights\\): ");
  line_matching(bf16, "blocks resident \\([0-9.]+ GiB of bf16 weights\\): ");
  // KiB a streamed block copies a step.
  auto per_block = [](const StageBench& b) {
    std::smatch m;
    const std::string line = line_matching(b, "streamed \\(budget");
    EXPECT_TRUE(std::regex_search(line, m, std::regex("([0-9]+) streamed from .*; ([0-9.]+) MiB copied a step"))) << line;
    return std::stod(m[2]) * 1024 / std::stoi(m[1]);
  };
  const double bf16_block = per_block(bf16), int8_block = per_block(int8);
  // bf16: 320 KiB of projections + 0.75 KiB of norms; INT8: 160 KiB + 5 KiB of scales + the norms.
  EXPECT_NEAR(bf16_block, 321, 60) << "(one decimal of MiB)";
  EXPECT_NEAR(int8_block, 166, 60) << "(one decimal of MiB)";
  for (const std::string& l : int8.lines) std::printf("%s\n", l.c_str());
}
