// --from-png through the one request table (issue 30): a PNG's record fills the request from its
// JSON values (pipeline/request_fields.h), a flag on the command line wins over the record's
// field, a refused record value names the record's field, and a record made from a request gives
// that request back bit for bit. Also: a jobs line's sd_model_checkpoint answers to the names a
// server's does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cli/options.h"
#include "frontend/a1111_settings.h"
#include "frontend/jobs_file.h"
#include "io/image_files.h"
#include "pipeline/moss_model.h"
#include "pipeline/record.h"
#include "pipeline/request_fields.h"
#include "util/error.h"
#include "test_support.h"

using namespace moss;
using nlohmann::json;

namespace {

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "replay-request-" + std::to_string(getpid()) + "-" + name;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  ASSERT_TRUE(f.good()) << path;
}

// A PNG carrying `record` as its generation record, as the engine writes it.
std::string record_png(const std::string& name, const std::string& record) {
  const std::string path = temp_path(name + ".png");
  const uint8_t rgb[2 * 2 * 3] = {};
  write_png(path, rgb, 2, 2, {{"generation", record}});
  return path;
}

ParsedArgs replay(const std::string& png, std::vector<std::string> flags = {}) {
  std::vector<std::string> args = {"--model", "m", "--from-png", png, "-o", "x.png"};
  args.insert(args.end(), flags.begin(), flags.end());
  return parse_args(args);
}

// Every setting of a request, floats by their bits (a replay must give the same float, not a
// close one).
auto settings_of(const GenerationRequest& r) {
  uint32_t cfg, shift;
  std::memcpy(&cfg, &r.cfg, 4);
  std::memcpy(&shift, &r.shift, 4);
  std::vector<std::tuple<std::string, std::string, uint32_t, std::string>> loras;
  for (const LoraChoice& c : r.loras) {
    uint32_t weight;
    std::memcpy(&weight, &c.weight, 4);
    loras.emplace_back(c.path, c.name, weight, c.hash);
  }
  return std::make_tuple(r.prompt, r.negative, r.width, r.height, r.steps, cfg, shift, r.seed, r.seed_drawn,
                         r.skip_layers, r.skip_layers_text, r.max_seq, r.tier, r.sampler, r.scheduler, loras);
}

// A request with every setting away from its default, and its record as the engine writes it.
GenerationRequest sample_request() {
  GenerationRequest r;
  r.prompt = "a lighthouse at dusk";
  r.negative = "fog";
  r.width = 48;
  r.height = 32;
  r.steps = 7;
  r.cfg = 4.35f;
  r.shift = 0.3f;
  r.seed = 123456789012ull;
  r.skip_layers = {1, 3};
  r.skip_layers_text = "1,3";
  r.max_seq = 40;
  r.loras = {{"/loras/style.safetensors", "style", 0.35f, "0123456789ab"}, {"fix.safetensors", "fix", -1.0f, "ba9876543210"}};
  r.sampler = "dpmpp_2m";
  r.scheduler = "karras";
  return r;
}

json record_of(const GenerationRequest& request) {
  RunRecord r;
  r.request = request;
  r.steps_run = request.steps;
  r.model_identity = "MOSS-Image m (dim 64, 2 blocks)";
  r.backend = "host";
  return json::parse(record_json(r));
}

// Values each setting's checks refuse, as a record might hold them: the wrong JSON type, out of
// range, malformed. Every setting of the table has some (checked below).
const std::map<RequestField, std::vector<json>>& refused_values() {
  static const std::map<RequestField, std::vector<json>> values = {
      {RequestField::Prompt, {5, true, json::array(), json::object(), 1.5}},
      {RequestField::Negative, {5, false, json::array({"x"}), json::object()}},
      {RequestField::Width, {"48", 30, 8, 0, 8192, -16, 16.5, true, json::array({48})}},
      {RequestField::Height, {"32", 40, 0, 4112, -32, 31.9, false, json::object()}},
      {RequestField::Steps, {"3", 0, 1001, -1, 2.5, json::array({3}), json::object()}},
      {RequestField::Cfg, {"3", -0.5, 500, 100.01, json::object(), true}},
      {RequestField::Shift, {"5", 0, -1, 1000.5, 1e-50, json::array()}},
      {RequestField::Seed, {"x", "7", 1.5, -2, 18446744073709551616.0, true, json::array({7})}},
      {RequestField::SkipLayers, {json::array({1024}), json::array({-1}), json::array({"1"}), json::array({1.5}), 5,
                                  "1,,2", "x", true, json::object()}},
      {RequestField::MaxSeq, {0, 32769, "40", -5, json::array()}},
      {RequestField::Tier, {"turbo", "", 1, json::array()}},
      {RequestField::Lora, {"x.safetensors", 5, json::array({1}), json::array({json::object({{"weight", "1"}})}),
                            json::array({json::object({{"path", "a"}, {"weight", 500}})}), json::array({""}),
                            json::array({json::object({{"path", 7}})})}},
      {RequestField::Sampler, {"euler_b", "", "DPM++ 2M Karras", 2, json::array({"euler"}), json::object()}},
      {RequestField::Scheduler, {"uniform", "", "kl_optimal", 0, true, json::array({"karras"})}},
  };
  return values;
}

// A flag's value for each setting, unlike the sample's.
const std::map<RequestField, std::string>& flag_values() {
  static const std::map<RequestField, std::string> values = {
      {RequestField::Prompt, "a flag's prompt"}, {RequestField::Negative, "a flag's negative"},
      {RequestField::Width, "64"},               {RequestField::Height, "16"},
      {RequestField::Steps, "9"},                {RequestField::Cfg, "1.5"},
      {RequestField::Shift, "2.25"},             {RequestField::Seed, "77"},
      {RequestField::SkipLayers, "0, 2"},        {RequestField::MaxSeq, "100"},
      {RequestField::Tier, "reference"},
      {RequestField::Lora, "flag.safetensors:0.5"},
      {RequestField::Sampler, "lcm"},            {RequestField::Scheduler, "beta"},
  };
  return values;
}

}  // namespace

TEST(ReplayRecord, TheTableCoversEverySettingTheRecordHolds) {
  const json record = record_of(sample_request());
  for (const FieldNames& f : request_fields()) {
    EXPECT_TRUE(record.contains(f.record)) << f.record << ": a setting the record does not hold";
    EXPECT_TRUE(refused_values().count(f.field)) << f.record << ": no refused values tested";
    EXPECT_TRUE(flag_values().count(f.field)) << f.record << ": no flag value tested";
  }
}

// Every setting of the record comes back, and nothing else is read from the record.
TEST(ReplayRecord, EveryRecordFieldFillsTheRequest) {
  const GenerationRequest want = sample_request();
  const ParsedArgs a = replay(record_png("sample", record_of(want).dump()));
  EXPECT_EQ(settings_of(a.run), settings_of(want));
  EXPECT_EQ(a.replay.fields.size(), request_fields().size());
  for (const FieldNames& f : request_fields()) EXPECT_TRUE(a.replay.supplied(f.field)) << f.record;
}

// A record without a setting (or with null) leaves the default, as a body's missing field does.
TEST(ReplayRecord, AMissingOrNullFieldKeepsTheDefault) {
  for (const FieldNames& f : request_fields()) {
    if (f.field == RequestField::Prompt) continue;  // required: tested in the CLI's refusals
    for (const bool null : {false, true}) {
      json record = record_of(sample_request());
      if (null) record[f.record] = nullptr;
      else record.erase(f.record);
      const ParsedArgs a = replay(record_png("missing", record.dump()));
      GenerationRequest want = sample_request();
      const GenerationRequest defaults;
      switch (f.field) {
        case RequestField::Negative: want.negative = defaults.negative; break;
        case RequestField::Width: want.width = defaults.width; break;
        case RequestField::Height: want.height = defaults.height; break;
        case RequestField::Steps: want.steps = defaults.steps; break;
        case RequestField::Cfg: want.cfg = defaults.cfg; break;
        case RequestField::Shift: want.shift = defaults.shift; break;
        case RequestField::Seed: want.seed = defaults.seed; break;
        case RequestField::SkipLayers:
          want.skip_layers = defaults.skip_layers;
          want.skip_layers_text = defaults.skip_layers_text;
          break;
        case RequestField::MaxSeq: want.max_seq = defaults.max_seq; break;
        case RequestField::Tier: want.tier = defaults.tier; break;
        case RequestField::Lora: want.loras = defaults.loras; break;
        case RequestField::Sampler: want.sampler = defaults.sampler; break;
        case RequestField::Scheduler: want.scheduler = defaults.scheduler; break;
        case RequestField::Prompt: break;
      }
      EXPECT_EQ(settings_of(a.run), settings_of(want)) << f.record << (null ? " null" : " missing");
      EXPECT_FALSE(a.replay.supplied(f.field)) << f.record;
    }
  }
}

// Every refused value of every field: exit 2, the message names the record's field (never the
// flag the user did not type) and says why as the command line's check does.
TEST(ReplayRecord, EveryRefusedValueNamesTheRecordsField) {
  for (const FieldNames& f : request_fields()) {
    for (const json& bad : refused_values().at(f.field)) {
      json record = record_of(sample_request());
      record[f.record] = bad;
      const std::string png = record_png("refused", record.dump());
      const auto [code, msg] = outcome_of([&] { replay(png); });
      const std::string named = "--from-png " + png + ": the record's " + f.record;
      EXPECT_EQ(code, 2) << f.record << " = " << bad.dump() << ": " << msg;
      EXPECT_EQ(msg.compare(0, named.size(), named), 0) << f.record << " = " << bad.dump() << ": " << msg;
      const char next = msg.size() > named.size() ? msg[named.size()] : '\0';
      EXPECT_TRUE(next == ' ' || next == ':') << msg;
      // The reason is the one the table gives a body's value: the same check, worded for the record.
      GenerationRequest r;
      std::string body_reason;
      try {
        set_field(r, f.field, bad);
      } catch (const FieldError& e) {
        body_reason = e.body.substr(std::string(f.name).size());
      }
      if (!body_reason.empty()) {
        EXPECT_EQ(msg, named + body_reason) << f.record << " = " << bad.dump();
      }
    }
  }
  // What no single field decides: a size above 4.2 megapixels names both of the record's sides.
  json record = record_of(sample_request());
  record["width"] = 4096;
  record["height"] = 4096;
  const std::string png = record_png("area", record.dump());
  EXPECT_EQ(outcome_of([&] { replay(png); }).second,
            "--from-png " + png + ": the record's width and height: size 4096x4096: above 4.2 megapixels");
  // With one side from a flag, the message is the command line's.
  EXPECT_EQ(outcome_of([&] { replay(png, {"--width", "2048"}); }).second, "size 2048x4096: above 4.2 megapixels");
}

// Every field's flag wins over the record's value, even one the checks would refuse (it is never
// read); spelled "--flag value" or "--flag=value".
TEST(ReplayRecord, EveryFieldIsOverriddenByItsFlag) {
  const json good = record_of(sample_request());
  for (const FieldNames& f : request_fields()) {
    const std::string value = flag_values().at(f.field);
    GenerationRequest want = replay(record_png("good", good.dump())).run;
    if (f.field == RequestField::Lora) want.loras.clear();  // the flags' LoRAs replace the record's list
    set_field(want, f.field, value);
    for (const json& bad : refused_values().at(f.field)) {
      json record = good;
      record[f.record] = bad;
      const std::string png = record_png("override", record.dump());
      for (const bool inline_value : {false, true}) {
        const std::vector<std::string> flags =
            inline_value ? std::vector<std::string>{std::string(f.flag) + "=" + value}
                         : std::vector<std::string>{f.flag, value};
        ParsedArgs a;
        const auto [code, msg] = outcome_of([&] { a = replay(png, flags); });
        ASSERT_EQ(code, -1) << f.flag << " " << value << " over " << bad.dump() << ": " << msg;
        EXPECT_EQ(settings_of(a.run), settings_of(want)) << f.flag;
        EXPECT_FALSE(a.replay.supplied(f.field)) << f.flag;
      }
    }
  }
}

// The options that stand for settings: --size for both sides, --prompt-file and --negative-file
// for the texts. And every flag at once: the record is read, but none of its values.
TEST(ReplayRecord, OptionsThatStandForSettingsOverrideToo) {
  json record = record_of(sample_request());
  for (const char* key : {"width", "height", "prompt", "negative"}) record[key] = json::array();
  const std::string png = record_png("stand-ins", record.dump());
  const std::string prompt_file = temp_path("prompt.txt"), negative_file = temp_path("negative.txt");
  write_text(prompt_file, "from a file\n");
  write_text(negative_file, "negative from a file");
  const ParsedArgs a = replay(png, {"--size", "64x16", "--prompt-file", prompt_file, "--negative-file", negative_file});
  EXPECT_EQ(a.run.width, 64);
  EXPECT_EQ(a.run.height, 16);
  EXPECT_EQ(a.run.prompt, "from a file");
  EXPECT_EQ(a.run.negative, "negative from a file");
  EXPECT_EQ(a.run.steps, 7);  // the rest still from the record

  json all_bad = record;
  for (const FieldNames& f : request_fields()) all_bad[f.record] = refused_values().at(f.field).front();
  std::vector<std::string> flags;
  for (const FieldNames& f : request_fields()) {
    flags.push_back(f.flag);
    flags.push_back(flag_values().at(f.field));
  }
  const ParsedArgs b = replay(record_png("all-bad", all_bad.dump()), flags);
  EXPECT_TRUE(b.replay.fields.empty());
  EXPECT_EQ(b.run.prompt, "a flag's prompt");
  EXPECT_EQ(b.run.skip_layers, (std::vector<int>{0, 2}));
}

// A record made from a request gives that request back, every float bit for bit: many cfg and
// shift values (those a decimal text cannot hold exactly among them), seeds at the ends of their
// range, prompts with NUL bytes, quotes and non-ASCII text, empty and long block lists.
TEST(ReplayRecord, ARecordGivesItsRequestBackBitForBit) {
  std::mt19937_64 random(30);
  std::uniform_real_distribution<float> cfg(0.0f, 100.0f), shift(0.0f, 1000.0f);
  std::vector<std::pair<float, float>> floats = {{0.0f, 1e-45f},
                                                 {100.0f, 1000.0f},
                                                 {std::nextafter(100.0f, 0.0f), std::nextafter(1000.0f, 0.0f)},
                                                 {1.0f / 3.0f, 2.0f / 3.0f},
                                                 {4.35f, 0.3f},
                                                 {1e-38f, 1.17549435e-38f}};
  for (int i = 0; i < 300; ++i) floats.push_back({cfg(random), std::max(shift(random), 1e-45f)});
  const std::vector<uint64_t> seeds = {0, 1, 4294967295ull, 4294967296ull, 18446744073709551615ull};
  const std::vector<std::string> prompts = {"", std::string("nul\0inside", 10), "quote \" and \\ backslash",
                                            "caf\xc3\xa9 \xe7\x81\xaf\xe5\xa1\x94 \xf0\x9f\x8c\x8a", "--seed"};
  const std::string png = temp_path("roundtrip.png");
  for (size_t i = 0; i < floats.size(); ++i) {
    GenerationRequest want = sample_request();
    want.cfg = floats[i].first;
    want.shift = floats[i].second;
    want.seed = i < seeds.size() ? seeds[i] : random();
    want.prompt = prompts[i % prompts.size()] + std::to_string(i);  // a prompt is required: never empty
    want.negative = prompts[(i + 1) % prompts.size()];
    if (i % 3 == 0) {
      want.skip_layers = {};
      want.skip_layers_text = "";
    } else if (i % 3 == 1) {
      want.skip_layers = {1023, 0, 5};
      want.skip_layers_text = "1023,0,5";
    }
    RunRecord record;
    record.request = want;
    record.steps_run = want.steps - 1;  // the record's steps_run is not a setting
    const uint8_t rgb[2 * 2 * 3] = {};
    write_png(png, rgb, 2, 2, png_record_chunks(record));
    const ParsedArgs a = replay(png);
    ASSERT_EQ(settings_of(a.run), settings_of(want)) << "cfg " << want.cfg << " shift " << want.shift;
  }
}

// A jobs line's override_settings.sd_model_checkpoint answers to the names a server gives the
// model: the engine's title (/sd-models "title") and the folder's name (its "model_name").
TEST(JobsOverride, TheModelAnswersToTheServersNames) {
  const std::string folder = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss";
  const std::string title = open_moss_model(folder).identity;  // what a server reports
  EXPECT_EQ(moss_model_title(folder), title);
  EXPECT_EQ(moss_model_title(folder + "/"), title);
  const auto jobs = [&](const std::string& checkpoint) {
    RunOptions o;
    o.model.path = folder;
    o.jobs_file = temp_path("override.jsonl");
    o.output_png = temp_path("override-%d.png");
    write_text(o.jobs_file,
               json{{"prompt", "x"}, {"override_settings", {{"sd_model_checkpoint", checkpoint}}}}.dump() + "\n");
    return read_jobs_file(o);
  };
  for (const std::string& name : {title, model_folder_name(folder)}) {
    const auto [code, msg] = outcome_of([&] { EXPECT_EQ(jobs(name).size(), 1u); });
    EXPECT_EQ(code, -1) << name << ": " << msg;
  }
  for (const std::string& other : {std::string("tiny-moss2"), title + " ", std::string("MOSS-Image other"),
                                   std::string("")}) {
    const auto [code, msg] = outcome_of([&] { jobs(other); });
    EXPECT_EQ(code, 2) << other;
    EXPECT_NE(msg.find("override_settings.sd_model_checkpoint: "), std::string::npos) << msg;
    EXPECT_NE(msg.find("is not the loaded model (one model per server: " + title + ")"), std::string::npos) << msg;
  }
  // A folder whose config cannot be read: the line is checked by the folder's name alone (the
  // folder itself is refused when the model opens).
  RunOptions o;
  o.model.path = temp_path("no-such-model/tiny-moss");
  o.jobs_file = temp_path("override2.jsonl");
  o.output_png = temp_path("override2-%d.png");
  write_text(o.jobs_file, R"({"prompt": "x", "override_settings": {"sd_model_checkpoint": "tiny-moss"}})" "\n");
  EXPECT_EQ(read_jobs_file(o).size(), 1u);
}
