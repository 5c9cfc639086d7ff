// The one request path (issue 30): the command line, a jobs line and a server body set a
// GenerationRequest through pipeline/request_fields.h, with the same checks; the A1111 body's
// types, nulls, depth and settings rules (issue 35's request-parser items); drawn seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cli/options.h"
#include "frontend/a1111_options.h"
#include "frontend/a1111_request.h"
#include "pipeline/request_fields.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"
#include "util/random_seed.h"

using namespace moss;
using nlohmann::json;

namespace {

RequestContext server(std::vector<std::string> serve_flags = {}) {
  std::vector<std::string> args = {"--model", "models/tiny-moss"};
  args.insert(args.end(), serve_flags.begin(), serve_flags.end());
  RequestContext c;
  c.defaults = parse_args(args, ArgsFor::Serve).run;
  c.settings = a1111_settings("MOSS-Image (tiny-moss, MOSSImagePipeline)", "tiny-moss", true);
  return c;
}

RequestError refusal(const json& body, const RequestContext& c = server()) {
  try {
    parse_a1111_request(body, c);
  } catch (const RequestError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted " << body.dump();
  return RequestError(0, "", "");
}

// The fields a request sets, as one comparable tuple.
auto settings_of(const GenerationRequest& r) {
  return std::make_tuple(r.prompt, r.negative, r.width, r.height, r.steps, r.cfg, r.shift, r.seed, r.seed_drawn,
                         r.skip_layers, r.max_seq, r.tier, r.sampler, r.scheduler);
}

// Text values around every numeric field's limits, and malformed ones.
// ("-0" is left out: JSON's -0 is the integer 0, which A1111 reads as 0 too; -0.0 is refused.)
const char* const kNumberTexts[] = {"0",    "1",     "-1",   "2",      "15",    "16",    "17",
                                    "64",   "100",   "1000", "1001",  "1023",   "1024",  "4096",  "4097",
                                    "4112", "32768", "32769", "0.5",  "100.5",  "1000.0001", "7.0",
                                    "99999999999999999999", "18446744073709551615", "18446744073709551616"};

}  // namespace

// The same value given as the command line's text and as a JSON number is accepted or refused
// alike, with the same result: one validation, whatever the source.
TEST(RequestFields, TextAndJsonAgreeOnEveryNumber) {
  for (const FieldNames& f : request_fields()) {
    // Texts, and the LoRA list (file names; its weights are checked in test_lora.cpp).
    if (f.field == RequestField::Prompt || f.field == RequestField::Negative || f.field == RequestField::Tier ||
        f.field == RequestField::Lora)
      continue;
    for (const char* text : kNumberTexts) {
      GenerationRequest from_text, from_json;
      bool text_ok = true, json_ok = true;
      try {
        set_field(from_text, f.field, std::string(text));
      } catch (const FieldError& e) {
        text_ok = false;
        EXPECT_EQ(e.cli.rfind(f.flag, 0), 0u) << e.cli;
      }
      try {
        // skip_layers takes a list of blocks in JSON (or the command line's text).
        const json v = json::parse(text);
        set_field(from_json, f.field, f.field == RequestField::SkipLayers ? json::array({v}) : v);
      } catch (const FieldError& e) {
        json_ok = false;
        EXPECT_EQ(e.body.rfind(f.name, 0), 0u) << e.body;
        EXPECT_EQ(e.field, f.field);
      }
      // "7.0" is an integer's value as a JSON number, not as the strict text parser's.
      if (std::string(text) == "7.0" && f.field != RequestField::Cfg && f.field != RequestField::Shift) continue;
      EXPECT_EQ(text_ok, json_ok) << f.name << " " << text;
      if (text_ok && json_ok) {
        EXPECT_EQ(settings_of(from_text), settings_of(from_json)) << f.name << " " << text;
      }
    }
  }
}

TEST(RequestFields, NegativeZeroIsASign) {
  for (const char* name : {"steps", "width", "cfg_scale", "shift", "max_seq"})
    EXPECT_EQ(refusal({{"prompt", "p"}, {name, -0.0}}).field, name);
}

TEST(RequestFields, WrongJsonTypesNameTheField) {
  // (Numeric text converts as in A1111: Leniency below; text that is not a number does not.)
  const json wrong_for_number[] = {"five", true, json::array({1}), json::object({{"a", 1}})};
  const json wrong_for_text[] = {5, 1.5, false, json::array(), json::object()};
  for (const FieldNames& f : request_fields()) {
    const bool text = f.field == RequestField::Prompt || f.field == RequestField::Negative ||
                      f.field == RequestField::Tier || f.field == RequestField::Sampler ||
                      f.field == RequestField::Scheduler;
    for (const json& v : text ? std::vector<json>(std::begin(wrong_for_text), std::end(wrong_for_text))
                              : std::vector<json>(std::begin(wrong_for_number), std::end(wrong_for_number))) {
      if (f.field == RequestField::SkipLayers && (v.is_string() || v.is_array())) continue;  // its two forms
      if (f.field == RequestField::Lora) continue;  // a client's body may not name LoRA files at all (test_lora.cpp)
      json body = {{"prompt", "p"}};
      body[f.name] = v;
      const RequestError e = refusal(body);
      EXPECT_EQ(e.status, 422) << f.name << " " << v.dump();
      EXPECT_EQ(e.field, f.name) << v.dump();
      const std::string why = e.what();
      EXPECT_TRUE(why.find("expected") != std::string::npos || why.find("'five': not a") != std::string::npos) << why;
    }
  }
}

// null is a field's default, for every field A1111 or this engine knows; the request is then
// exactly the server's defaults.
TEST(RequestFields, NullIsTheDefaultEverywhere) {
  const char* const fields[] = {
      "prompt", "negative_prompt", "styles", "seed", "subseed", "subseed_strength", "seed_resize_from_h",
      "seed_resize_from_w", "sampler_name", "sampler_index", "scheduler", "batch_size", "n_iter", "steps",
      "cfg_scale", "width", "height", "restore_faces", "tiling", "do_not_save_samples", "do_not_save_grid", "eta",
      "denoising_strength", "s_min_uncond", "s_churn", "s_tmax", "s_tmin", "s_noise", "override_settings",
      "override_settings_restore_afterwards", "refiner_checkpoint", "refiner_switch_at", "disable_extra_networks",
      "firstpass_image", "comments", "enable_hr", "firstphase_width", "firstphase_height", "hr_scale",
      "hr_upscaler", "hr_second_pass_steps", "hr_resize_x", "hr_resize_y", "hr_checkpoint_name",
      "hr_sampler_name", "hr_scheduler", "hr_prompt", "hr_negative_prompt", "hr_additional_modules",
      "force_task_id", "script_name", "script_args", "send_images", "save_images", "alwayson_scripts",
      "infotext", "init_images", "mask", "shift", "skip_layers", "max_seq", "tier", "output"};
  const RequestContext c = server({"--seed", "9", "--steps", "3"});
  json body = json::object();
  for (const char* f : fields) body[f] = nullptr;
  const A1111Request r = parse_a1111_request(body, c);
  ASSERT_EQ(r.images.size(), 1u);  // "batch_size": null is 1, not an error
  EXPECT_EQ(settings_of(r.images[0]), settings_of(c.defaults));
  EXPECT_TRUE(r.send_images);
  // Each alone, too: null never refuses.
  for (const char* f : fields) EXPECT_NO_THROW(parse_a1111_request(json{{f, nullptr}}, c)) << f;
}

TEST(RequestFields, KnownFieldsOfTheWrongTypeAre422) {
  // Text converts where A1111's pydantic models convert it (below); what does not convert, and
  // every other wrong type, is refused naming the field.
  const std::pair<const char*, json> cases[] = {
      {"batch_size", "two"},      {"batch_size", 1.5},           {"n_iter", true},
      {"send_images", "maybe"},   {"save_images", 2},            {"enable_hr", "perhaps"},
      {"styles", "anime"},        {"override_settings", json::array()}, {"alwayson_scripts", 3},
      {"sampler_name", 5},        {"scheduler", json::array()}, {"eta", "zero"},
      {"hr_scale", "2x"},         {"comments", "x"},            {"subseed", 1.25},
      {"do_not_save_grid", 3},    {"infotext", json::object()}, {"output", 5},
      {"styles", json::array({1})}, {"batch_size", "1.5"},      {"hr_scale", "nan"},
      {"eta", "inf"},             {"n_iter", ""},               {"hr_scale", "1e3"},
  };
  for (const auto& [field, value] : cases) {
    const RequestError e = refusal({{"prompt", "p"}, {field, value}});
    EXPECT_EQ(e.status, 422) << field << " " << value.dump();
    EXPECT_EQ(e.field, field) << e.what();
  }
}

// A1111's models are pydantic 1 models: numeric text converts to the field's number (blanks and
// a '+' allowed), boolean text ("true", "no", "1", ...) and 0 / 1 to booleans. The converted value
// then meets the field's own checks, so limits hold for text as for numbers.
TEST(Leniency, NumericTextConvertsAsInA1111) {
  const RequestContext c = server();
  // The clients' bodies: AIYA's cfg_scale "7.0", the Photoshop plugin's seed "-1",
  // text-generation-webui's hr_scale "1.0".
  const A1111Request r = parse_a1111_request(
      {{"prompt", "p"}, {"cfg_scale", "7.0"}, {"seed", "-1"}, {"hr_scale", "1.0"}, {"steps", " 12 "},
       {"width", "+64"}, {"height", "32"}, {"batch_size", "2"}, {"n_iter", "1"}, {"eta", "0"},
       {"enable_hr", "false"}, {"send_images", "true"}, {"save_images", 1}, {"restore_faces", "no"}},
      c);
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].cfg, 7.0f);
  EXPECT_TRUE(r.images[0].seed_drawn);
  EXPECT_EQ(r.images[0].steps, 12);
  EXPECT_EQ(r.images[0].width, 64);
  EXPECT_EQ(r.images[0].height, 32);
  EXPECT_EQ(parse_a1111_request({{"prompt", "p"}, {"seed", "18446744073709551615"}}, c).images[0].seed,
            18446744073709551615ull);
  EXPECT_EQ(parse_a1111_request({{"prompt", "p"}, {"seed", "1234"}}, c).images[0].seed, 1234u);
  // Converted text meets the same limits and refusals as a number: out of range, a fraction
  // where an integer goes, not a number, NaN, infinities, exponents (which the one parser does
  // not read).
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"steps", "0"}, {"steps", "7.5"}, {"steps", "abc"}, {"cfg_scale", "nan"}, {"cfg_scale", "inf"},
           {"cfg_scale", "-1"}, {"cfg_scale", "1e2"}, {"seed", "-2"}, {"seed", "18446744073709551616"},
           {"width", "30"}, {"width", ""}, {"enable_hr", "true"}, {"restore_faces", "yes"}}) {
    const RequestError e = refusal({{"prompt", "p"}, {name, text}}, c);
    EXPECT_EQ(e.status, 422) << name << " " << text;
    EXPECT_EQ(e.field, name) << e.what();
  }
}

// A field whose value changes nothing here is accepted and named in not_used; one that asks for
// what this engine does not do is refused naming it.
TEST(Leniency, StylesAndOptionsThatChangeNothing) {
  const RequestContext c = server();
  // KoboldAI Lite's override_settings (A1111's defaults), AIYA's styles.
  const json lite = {{"ddim_discretize", "uniform"}, {"img2img_fix_steps", false}, {"sd_hypernetwork", "None"},
                     {"inpainting_mask_weight", 1.0}, {"initial_noise_multiplier", 1.0},
                     {"comma_padding_backtrack", 20}};
  const A1111Request r = parse_a1111_request(
      {{"prompt", "p"}, {"override_settings", lite}, {"styles", {"None", "cinematic"}}}, c);
  EXPECT_EQ(r.not_used.size(), lite.size() + 2);
  for (const auto& [key, value] : lite.items())
    EXPECT_NE(std::find(r.not_used.begin(), r.not_used.end(), "override_settings." + key), r.not_used.end()) << key;
  EXPECT_NE(std::find(r.not_used.begin(), r.not_used.end(), "styles.None"), r.not_used.end());
  // Options with no meaning here: any value (clip skip, saving, img2img, face restoration).
  const json no_meaning = {{"CLIP_stop_at_last_layers", 2}, {"samples_save", true}, {"img2img_fix_steps", true},
                          {"face_restoration_model", "GFPGAN"}, {"sd_hypernetwork", "anime"}, {"outdir_samples", "/tmp"}};
  for (const auto& [key, value] : no_meaning.items()) {
    EXPECT_TRUE(setting_refusal(c.settings, key, value).empty()) << key;
    EXPECT_FALSE(setting_used(key)) << key;
  }
  // Options whose other values ask for what this engine does not do: A1111's default only.
  const json other_feature = {{"sd_vae", "anything.vae.pt"}, {"tiling", true}, {"k_sched_type", "karras"},
                             {"eta_noise_seed_delta", 31337}, {"token_merging_ratio", 0.5}};
  for (const auto& [key, value] : other_feature.items()) {
    EXPECT_NE(setting_refusal(c.settings, key, value).find("not supported"), std::string::npos) << key;
    EXPECT_EQ(refusal({{"prompt", "p"}, {"override_settings", {{key, value}}}}, c).field, "override_settings." + key);
  }
  // Options this engine honours: only its value; an unknown name: refused.
  EXPECT_FALSE(setting_refusal(c.settings, "samples_format", "jpg").empty());
  EXPECT_TRUE(setting_refusal(c.settings, "samples_format", "png").empty());
  EXPECT_TRUE(setting_used("samples_format"));
  EXPECT_FALSE(setting_refusal(c.settings, "not_an_a1111_option", 1).empty());
  // GET /options reports every option of the table: posting it all back changes nothing.
  for (const A1111Option& o : a1111_options()) EXPECT_TRUE(c.settings.values.contains(o.name)) << o.name;
  for (const auto& [key, value] : c.settings.values.items())
    EXPECT_TRUE(setting_refusal(c.settings, key, value).empty()) << key;
}

TEST(RequestFields, JsonDepthIsBounded) {
  const auto nested = [](int depth) { return std::string(size_t(depth), '[') + std::string(size_t(depth), ']'); };
  EXPECT_NO_THROW(parse_request_json(nested(kMaxJsonDepth)));
  for (int depth : {kMaxJsonDepth + 1, 1000, 200000}) {
    try {
      parse_request_json("{\"prompt\": \"p\", \"x\": " + nested(depth) + "}");
      ADD_FAILURE() << "depth " << depth << " accepted";
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status, 400);
      EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxJsonDepth)), std::string::npos) << e.what();
    }
  }
  try {
    parse_request_json("{\"prompt\": ");
    ADD_FAILURE() << "accepted";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.status, 400);
  }
}

TEST(RequestFields, ParametersEchoKnownFieldsOnly) {
  const json body = {{"prompt", "p"}, {"url", "http://127.0.0.1:7860"}, {"auth", "user:pw"},
                     {"unknown", {{"deep", {{"deeper", 1}}}}}, {"eta", 0}, {"seed", 5}};
  const A1111Request r = parse_a1111_request(body, server());
  EXPECT_FALSE(r.parameters.contains("url"));
  EXPECT_FALSE(r.parameters.contains("auth"));
  EXPECT_FALSE(r.parameters.contains("unknown"));
  EXPECT_EQ(r.parameters["eta"], 0);
  EXPECT_EQ(r.parameters["seed"], 5);
  EXPECT_EQ(r.parameters["prompt"], "p");
}

TEST(Seeds, DrawnBelow2To32) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    const uint64_t s = draw_random_seed();
    EXPECT_LT(s, uint64_t(1) << 32);
    seen.insert(s);
  }
  EXPECT_GT(seen.size(), 1990u);  // 2000 draws from 2^32 values: a few repeats at most
}

// A request without a seed (or -1, or null) draws one per request at a server without --seed;
// `serve --seed N` fixes N for them; a seed in the body always wins.
TEST(Seeds, ServerDefaults) {
  std::set<uint64_t> drawn;
  for (const json& body : {json{{"prompt", "p"}}, json{{"prompt", "p"}, {"seed", -1}},
                           json{{"prompt", "p"}, {"seed", nullptr}}, json{{"prompt", "p"}, {"seed", -1.0}}}) {
    const A1111Request r = parse_a1111_request(body, server());
    EXPECT_TRUE(r.images[0].seed_drawn) << body.dump();
    EXPECT_LT(r.images[0].seed, uint64_t(1) << 32);
    drawn.insert(r.images[0].seed);
  }
  EXPECT_GT(drawn.size(), 1u);
  EXPECT_EQ(parse_a1111_request({{"prompt", "p"}}, server({"--seed", "7"})).images[0].seed, 7u);
  EXPECT_EQ(parse_a1111_request({{"prompt", "p"}, {"seed", 11}}, server({"--seed", "7"})).images[0].seed, 11u);
  EXPECT_TRUE(parse_a1111_request({{"prompt", "p"}, {"seed", -1}}, server({"--seed", "7"})).images[0].seed_drawn);
  // The command line keeps 42 by default; --seed -1 draws below 2^32.
  EXPECT_EQ(parse_args({"--model", "m", "--prompt", "p", "-o", "x.png"}).run.seed, 42u);
  EXPECT_LT(parse_args({"--model", "m", "--prompt", "p", "-o", "x.png", "--seed", "-1"}).run.seed, uint64_t(1) << 32);
}

// override_settings and POST /options: every current value is accepted, the model by its title
// or its name; any other value, or a setting this engine does not have, is refused naming it.
// Sides that are multiples of 8 and not of 16 (AIYA's 520): the next multiple of 16 is generated
// and centre-cropped to the size asked, at a server always and on the command line only with
// --crop-to-size; other sides are refused everywhere.
TEST(Leniency, SidesOfEightAreCropped) {
  const A1111Request r = parse_a1111_request({{"prompt", "p"}, {"width", 520}, {"height", "40"}}, server());
  EXPECT_EQ(r.images[0].width, 528);
  EXPECT_EQ(r.images[0].height, 48);
  EXPECT_EQ(r.images[0].output_width(), 520);
  EXPECT_EQ(r.images[0].output_height(), 40);
  EXPECT_EQ(r.parameters["width"], 520);
  const A1111Request square = parse_a1111_request({{"prompt", "p"}, {"width", 64}, {"height", 64}}, server());
  EXPECT_EQ(square.images[0].crop_width, 0);
  EXPECT_EQ(square.images[0].output_width(), 64);
  for (int side : {36, 44, 12, 8}) EXPECT_EQ(refusal({{"prompt", "p"}, {"width", side}}).field, "width") << side;
  const std::vector<std::string> run = {"--model", "m", "--prompt", "p", "-o", "x.png", "--size", "520x512"};
  try {
    parse_args(run);
    ADD_FAILURE() << "the command line accepted 520 without --crop-to-size";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Usage);
    EXPECT_NE(std::string(e.what()).find("--crop-to-size"), std::string::npos) << e.what();
  }
  std::vector<std::string> cropped = run;
  cropped.push_back("--crop-to-size");
  const ParsedArgs a = parse_args(cropped);
  EXPECT_EQ(a.run.width, 528);
  EXPECT_EQ(a.run.output_width(), 520);
  EXPECT_EQ(a.run.output_height(), 512);
  // A jobs line follows the command line's choice (its defaults are the run's).
  RequestContext jobs;
  jobs.defaults = parse_args({"--model", "m", "--prompt", "p", "-o", "x.png"}).run;
  EXPECT_THROW(parse_a1111_request({{"prompt", "p"}, {"width", 520}}, jobs), RequestError);
}

TEST(Settings, OverridesEqualToCurrentAccepted) {
  const RequestContext c = server();
  for (const auto& [key, value] : c.settings.values.items()) {
    EXPECT_TRUE(setting_refusal(c.settings, key, value).empty()) << key;
    EXPECT_NO_THROW(parse_a1111_request({{"prompt", "p"}, {"override_settings", {{key, value}}}}, c)) << key;
    const A1111Option* option = find_a1111_option(key);
    ASSERT_NE(option, nullptr) << key;
    if (option->use == OptionUse::NoMeaning) continue;  // any value (Leniency tests)
    const json other = value.is_string() ? json(value.get<std::string>() + "x") : value.is_boolean()
                                                                                     ? json(!value.get<bool>())
                                                                                     : json(2);
    EXPECT_FALSE(setting_refusal(c.settings, key, other).empty()) << key;
    EXPECT_EQ(refusal({{"prompt", "p"}, {"override_settings", {{key, other}}}}, c).field, "override_settings." + key);
  }
  for (const char* name : {"MOSS-Image (tiny-moss, MOSSImagePipeline)", "tiny-moss"})
    EXPECT_TRUE(setting_refusal(c.settings, "sd_model_checkpoint", name).empty()) << name;
  EXPECT_TRUE(setting_refusal(c.settings, "eta_noise_seed_delta", 0.0).empty());  // 0 and 0.0 alike
  EXPECT_FALSE(setting_refusal(c.settings, "sd_model_checkpoint", "sd_xl_base_1.0.safetensors").empty());
  EXPECT_FALSE(setting_refusal(c.settings, "eta_noise_seed_delta", 2).empty());
  EXPECT_FALSE(setting_refusal(c.settings, "not_a_setting", 1).empty());
  // SillyTavern's overrides: clip skip 1, no VAE chosen (null).
  EXPECT_NO_THROW(parse_a1111_request(
      {{"prompt", "p"}, {"override_settings", {{"CLIP_stop_at_last_layers", 1}, {"sd_vae", nullptr}}}}, c));
  EXPECT_EQ(model_folder_name("models/tiny-moss/"), "tiny-moss");
  EXPECT_EQ(model_folder_name("tiny-moss"), "tiny-moss");
}

TEST(Settings, SaveImagesChangesNothing) {
  for (bool save : {true, false})
    EXPECT_EQ(parse_a1111_request({{"prompt", "p"}, {"save_images", save}}, server()).images.size(), 1u);
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Every sampler and schedule runs under each of its names (ComfyUI's, A1111's label, the
// k-diffusion alias, any case) from sampler_name, sampler_index or "sampler"; the combined names
// ("DPM++ 2M Karras") set both unless the body names a scheduler; parameters echo the request's
// spelling.
TEST(Samplers, EveryNameOfEverySamplerAndSchedule) {
  for (const SamplerName& n : sampler_names()) {
    std::vector<std::string> spellings = {n.name, n.label, lower(n.label)};
    if (*n.alias) spellings.push_back(n.alias);
    for (const std::string& spelling : spellings)
      for (const char* f : {"sampler_name", "sampler_index", "sampler"}) {
        const A1111Request r = parse_a1111_request({{"prompt", "p"}, {f, spelling}}, server());
        EXPECT_EQ(r.images[0].sampler, n.name) << f << " " << spelling;
        EXPECT_EQ(r.parameters["sampler_name"], r.images[0].sampler_label);
        EXPECT_TRUE(r.sampler_note.empty());
      }
    for (const ScheduleName& sch : schedule_names()) {
      for (const std::string& spelling : {std::string(sch.name), std::string(sch.label)}) {
        const A1111Request r =
            parse_a1111_request({{"prompt", "p"}, {"sampler_name", n.label}, {"scheduler", spelling}}, server());
        EXPECT_EQ(r.images[0].scheduler, sch.name) << spelling;
        EXPECT_EQ(r.images[0].sampler, n.name);
      }
      // "DPM++ 2M Karras": the label and the schedule's label.
      const std::string combined = std::string(n.label) + " " + sch.label;
      const A1111Request c = parse_a1111_request({{"prompt", "p"}, {"sampler_name", combined}}, server());
      EXPECT_EQ(c.images[0].sampler, n.name) << combined;
      EXPECT_EQ(c.images[0].scheduler, sch.name) << combined;
      EXPECT_EQ(c.parameters["sampler_name"], combined);
      // A scheduler the body gives wins over the combined name's.
      const A1111Request w =
          parse_a1111_request({{"prompt", "p"}, {"sampler_name", combined}, {"scheduler", "beta"}}, server());
      EXPECT_EQ(w.images[0].scheduler, "beta") << combined;
      // ... but not "automatic" (webuiapi sends it with every request): the combined name's runs.
      const A1111Request au =
          parse_a1111_request({{"prompt", "p"}, {"sampler_name", combined}, {"scheduler", "automatic"}}, server());
      EXPECT_EQ(au.images[0].scheduler, sch.name) << combined;
    }
  }
  // automatic is the MOSS-Image schedule, echoed as A1111 names it.
  const A1111Request a = parse_a1111_request({{"prompt", "p"}, {"scheduler", "Automatic"}}, server());
  EXPECT_EQ(a.images[0].scheduler, "moss");
  EXPECT_EQ(a.parameters["scheduler"], "automatic");
}

// Names that do not exist: refused by default (naming the field and the known names); with
// --sampler-fallback euler they run as Euler with the MOSS-Image schedule, the request otherwise
// the same, and the note names what was asked.
TEST(Samplers, UnknownNamesAreRefusedOrFallBackToEuler) {
  for (const char* bad : {"LMS", "DPM adaptive", "PLMS", "Euler Karras Karras", "DPM++ 2M Uniform", " "}) {
    const RequestError e = refusal({{"prompt", "p"}, {"sampler_name", bad}});
    EXPECT_EQ(e.field, "sampler_name") << bad;
    EXPECT_NE(std::string(e.what()).find("unknown sampler (known: \"Euler\", \"Euler a\""), std::string::npos)
        << e.what();
  }
  for (const char* bad : {"uniform", "kl_optimal", "align_your_steps", "polyexponential"}) {
    const RequestError e = refusal({{"prompt", "p"}, {"scheduler", bad}});
    EXPECT_EQ(e.field, "scheduler") << bad;
    EXPECT_NE(std::string(e.what()).find("unknown scheduler (known: moss, simple"), std::string::npos) << e.what();
  }
  const json body = {{"prompt", "p"}, {"sampler_name", "LMS"}, {"scheduler", "uniform"}, {"seed", 3}};
  RequestContext fallback = server();
  fallback.sampler_fallback = true;
  const A1111Request r = parse_a1111_request(body, fallback);
  EXPECT_NE(r.sampler_note.find("LMS"), std::string::npos) << r.sampler_note;
  EXPECT_NE(r.sampler_note.find("uniform"), std::string::npos) << r.sampler_note;
  EXPECT_NE(r.sampler_note.find("--sampler-fallback euler"), std::string::npos) << r.sampler_note;
  EXPECT_EQ(r.parameters["sampler_name"], "Euler");
  json euler = body;
  euler.erase("sampler_name");
  euler.erase("scheduler");
  EXPECT_EQ(settings_of(r.images[0]), settings_of(parse_a1111_request(euler, server()).images[0]));
  EXPECT_TRUE(parse_a1111_request(euler, server()).sampler_note.empty());
  // The fallback runs Euler with the MOSS-Image schedule even where the server's defaults are others.
  RequestContext other = server({"--sampler", "dpmpp_2m", "--scheduler", "karras"});
  other.sampler_fallback = true;
  EXPECT_EQ(parse_a1111_request({{"prompt", "p"}}, other).images[0].sampler, "dpmpp_2m");
  const A1111Request fell = parse_a1111_request(body, other);
  EXPECT_EQ(fell.images[0].sampler, "euler");
  EXPECT_EQ(fell.images[0].scheduler, "moss");
  // A known sampler is not a fallback, with the flag or without.
  const A1111Request known = parse_a1111_request({{"prompt", "p"}, {"sampler_name", "DDIM"}}, fallback);
  EXPECT_TRUE(known.sampler_note.empty());
  EXPECT_EQ(known.images[0].sampler, "ddim");
  // The fallback covers samplers only: hires fix and the rest stay refused.
  json hires = body;
  hires["enable_hr"] = true;
  EXPECT_EQ(refusal(hires, fallback).field, "enable_hr");
}
