#include <gtest/gtest.h>

#include <tuple>

#include "cli/options.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"
#include "util/error.h"

using namespace moss;

static ParsedArgs parse(std::vector<std::string> a) { return parse_args(a); }

static std::string refusal(std::vector<std::string> a) {
  try {
    parse_args(a);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Usage);
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// --size, --steps, --cfg, --shift and --seed as one tuple: a failure prints them all, got and wanted.
using SizeAndSampling = std::tuple<int64_t, int64_t, int, float, float, uint64_t>;
static SizeAndSampling size_and_sampling(const RunOptions& o) {
  return {o.width, o.height, o.steps, o.cfg, o.shift, o.seed};
}

TEST(Options, Defaults) {
  ParsedArgs p = parse({"--model", "m", "--prompt", "p", "-o", "x.png"});
  const RunOptions& o = p.run;
  EXPECT_EQ(p.action, Action::Run);
  EXPECT_EQ(size_and_sampling(o), SizeAndSampling(1024, 1024, 50, 3.0f, 5.0f, 42));
  EXPECT_EQ(o.skip_layers, std::vector<int>{22});
  EXPECT_EQ(o.max_seq, 4096);
  EXPECT_EQ(o.tier, "reference");
  EXPECT_FALSE(o.vram_budget_gib.has_value());
  EXPECT_TRUE(o.devices.indexes.empty() && !o.devices.all);
  EXPECT_EQ(o.negative, "");
}

TEST(Options, Values) {
  const RunOptions o = parse({"--model=m", "--prompt", "", "--negative", "bad", "--latent-out", "l.npy", "--size",
                              "96x64", "--steps", "4", "--cfg", "1", "--shift", "2.5", "--seed", "18446744073709551615",
                              "--skip-layers", "3, 1,3", "--max-seq", "77", "--vram-budget", "6.5", "--device", "1",
                              "--no-metadata", "--quiet"})
                           .run;
  EXPECT_EQ(size_and_sampling(o), SizeAndSampling(96, 64, 4, 1.0f, 2.5f, 18446744073709551615ull));
  EXPECT_EQ(o.skip_layers, (std::vector<int>{3, 1}));
  EXPECT_EQ(o.max_seq, 77);
  EXPECT_DOUBLE_EQ(*o.vram_budget_gib, 6.5);
  EXPECT_EQ(o.devices.indexes, std::vector<int>{1});
  EXPECT_TRUE(o.no_metadata && o.quiet);
  EXPECT_EQ(o.latent_out, "l.npy");
  EXPECT_TRUE(o.output_png.empty());
}

TEST(Options, EmptySkipListAndWidthHeight) {
  const RunOptions o = parse({"--model", "m", "--prompt", "p", "-o", "x.png", "--skip-layers", "", "--width", "512",
                              "--height", "768"})
                           .run;
  EXPECT_TRUE(o.skip_layers.empty());
  EXPECT_EQ(o.width, 512);
  EXPECT_EQ(o.height, 768);
}

TEST(Options, RandomSeedIsDrawn) {
  const RunOptions o = parse({"--model", "m", "--prompt", "p", "-o", "x.png", "--seed", "-1"}).run;
  EXPECT_TRUE(o.seed_drawn);
}

TEST(Options, Actions) {
  EXPECT_EQ(parse({"--help"}).action, Action::Help);
  EXPECT_EQ(parse({"--version"}).action, Action::Version);
  EXPECT_EQ(parse({"--list-devices"}).action, Action::ListDevices);
}

TEST(Options, Refusals) {
  const std::vector<std::string> base = {"--model", "m", "--prompt", "p", "-o", "x.png"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return refusal(a);
  };
  EXPECT_NE(with({"--sampler", "dpm"}).find("--sampler 'dpm': unknown sampler (known: euler, euler_ancestral"),
            std::string::npos);
  EXPECT_NE(with({"--scheduler", "uniform"}).find("--scheduler 'uniform': unknown scheduler (known: moss, simple"),
            std::string::npos);
  EXPECT_NE(with({"--sampling-method", "dpm"}).find("use --sampler NAME"), std::string::npos);
  EXPECT_NE(with({"--lora-model-dir", "x"}).find("--lora-model-dir: not supported: this LoRA option (give --lora FILE[:WEIGHT]"), std::string::npos);
  EXPECT_NE(with({"--hires-scale", "2"}).find("--hires-scale: not supported: hires"), std::string::npos);
  EXPECT_NE(with({"--control-image", "c.png"}).find("control adapters"), std::string::npos);
  EXPECT_NE(with({"--tier", "fast"}).find("--tier fast"), std::string::npos);
  EXPECT_NE(with({"--offload-to-cpu"}).find("use --vram-budget"), std::string::npos);
  EXPECT_NE(with({"--bogus"}).find("unknown option '--bogus'"), std::string::npos);
  EXPECT_NE(with({"--size", "4096x4096"}).find("4.2 megapixels"), std::string::npos);
  EXPECT_NE(with({"--size", "1000x1024"}).find("multiples of 16"), std::string::npos);
  EXPECT_NE(refusal({"--model", "m", "--prompt", "p"}).find("-o FILE.png or --latent-out"), std::string::npos);
  EXPECT_NE(refusal({"--model", "m", "-o", "x.png"}).find("--prompt is required"), std::string::npos);
  EXPECT_NE(refusal({"--help", "--version"}).find("together"), std::string::npos);
}

// Which request settings the command line named (issue 51): a refusal of a default names it as the
// default, never as a flag the user did not type.
TEST(Options, GivenSettingsAreTheNamedOnes) {
  const RunOptions plain = parse({"--model", "m", "--prompt", "p", "-o", "x.png"}).run;
  EXPECT_EQ(plain.given.count(RequestField::SkipLayers), 0u);
  EXPECT_EQ(plain.given.count(RequestField::Steps), 0u);
  EXPECT_EQ(plain.given.count(RequestField::Prompt), 1u);
  const RunOptions named = parse({"--model", "m", "--prompt", "p", "-o", "x.png", "--skip-layers", "", "--steps=3",
                                  "--size", "32x32"}).run;
  for (RequestField f : {RequestField::SkipLayers, RequestField::Steps, RequestField::Width, RequestField::Height})
    EXPECT_EQ(named.given.count(f), 1u);
  EXPECT_EQ(named.given.count(RequestField::Cfg), 0u);
  // A value that looks like an option is a value: --negative "--skip-layers" names --negative only.
  const RunOptions value = parse({"--model", "m", "--prompt", "p", "-o", "x.png", "--negative", "--skip-layers"}).run;
  EXPECT_EQ(value.given.count(RequestField::SkipLayers), 0u);
  EXPECT_EQ(value.given.count(RequestField::Negative), 1u);
}

// --help lists every sampler and schedule the engine has (its list is written by hand), and
// --sampler takes each of them.
TEST(Options, HelpNamesEverySamplerAndSchedule) {
  const std::string help = help_text();
  auto lists = [&](const std::string& name) {  // as a whole word: uni_pc is not uni_pc_bh2's prefix
    for (size_t at = help.find(name); at != std::string::npos; at = help.find(name, at + 1)) {
      const char after = at + name.size() < help.size() ? help[at + name.size()] : ' ';
      if ((at == 0 || help[at - 1] == ' ') && (after == ',' || after == ' ' || after == '\n')) return true;
    }
    return false;
  };
  for (const SamplerName& n : sampler_names()) {
    EXPECT_TRUE(lists(n.name)) << n.name;
    EXPECT_EQ(parse({"--model", "m", "--prompt", "p", "-o", "o.png", "--sampler", n.name}).run.sampler, n.name);
  }
  for (const ScheduleName& n : schedule_names()) EXPECT_TRUE(lists(n.name)) << n.name;
}
