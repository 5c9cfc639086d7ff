// Output numbering, replay expansion and the A1111 body mapping (issue 18).
#include <gtest/gtest.h>

#include "cli/batch.h"
#include "cli/options.h"
#include "cli/replay.h"
#include "frontend/a1111_request.h"

using namespace moss;
using nlohmann::json;

TEST(NumberedOutput, PatternsAndSuffixes) {
  EXPECT_EQ(numbered_output("-o", "out.png", 1, 1), "out.png");
  EXPECT_EQ(numbered_output("-o", "out.png", 2, 3), "out-0002.png");
  EXPECT_EQ(numbered_output("-o", "dir.v1/out", 2, 3), "dir.v1/out-0002");
  EXPECT_EQ(numbered_output("-o", "o%d.png", 12, 20), "o12.png");
  EXPECT_EQ(numbered_output("-o", "o%03d.png", 7, 20), "o007.png");
  EXPECT_EQ(numbered_output("-o", "o%03d.png", 1, 1), "o001.png");
  EXPECT_EQ(numbered_output("-o", "100%%-%d.png", 2, 2), "100%-2.png");
  EXPECT_EQ(numbered_output("-o", "100%.png", 1, 1), "100%.png");  // one image: the name as given
  EXPECT_THROW(numbered_output("-o", "o%s.png", 1, 2), Error);
  EXPECT_THROW(numbered_output("-o", "o%10d.png", 1, 2), Error);
}

TEST(Replay, WithoutFromPngNothingIsSupplied) {
  const ParsedArgs a = parse_args({"--model", "m", "--prompt", "p", "-o", "x.png"});
  EXPECT_TRUE(a.replay.flag.empty());
  EXPECT_TRUE(a.replay.fields.empty());
}

TEST(Replay, MissingFileIsUsageError) {
  try {
    parse_args({"--model", "m", "--from-png", "/nonexistent/x.png", "-o", "y.png"});
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Usage);
    EXPECT_NE(std::string(e.what()).find("--from-png /nonexistent/x.png"), std::string::npos);
  }
}

// A server's context: the defaults of `serve --steps 20 --skip-layers 1`.
static RequestContext defaults() {
  RequestContext c;
  c.defaults = parse_args({"--model", "m", "--steps", "20", "--skip-layers", "1"}, ArgsFor::Serve).run;
  c.settings = a1111_settings("MOSS-Image (m)", "m", true);
  return c;
}

TEST(A1111Request, FieldsAndBatch) {
  json body = {{"prompt", "a cat"}, {"negative_prompt", "dog"}, {"steps", 7}, {"cfg_scale", 4.5}, {"width", 64},
               {"height", 32}, {"seed", 10}, {"batch_size", 2}, {"n_iter", 2}, {"sampler_name", "Euler"},
               {"sampler_index", "Euler a"}, {"enable_hr", false}, {"styles", json::array()},
               {"alwayson_scripts", json::object()}, {"scheduler", "automatic"}, {"eta", 1.0},
               {"denoising_strength", 0.7}, {"override_settings", json::object()}};
  A1111Request r = parse_a1111_request(body, defaults());
  ASSERT_EQ(r.images.size(), 4u);
  EXPECT_EQ(r.images[0].prompt, "a cat");
  EXPECT_EQ(r.images[0].negative, "dog");
  EXPECT_EQ(r.images[0].steps, 7);
  EXPECT_EQ(r.images[0].cfg, 4.5f);
  EXPECT_EQ(r.images[0].width, 64);
  EXPECT_EQ(r.images[0].height, 32);
  EXPECT_EQ(r.images[3].seed, 13u);
  EXPECT_EQ(r.images[0].skip_layers, std::vector<int>{1});  // the command line's default
  EXPECT_TRUE(r.images[0].output_png.empty());
}

static RequestError refused(const json& body) {
  try {
    parse_a1111_request(body, defaults());
  } catch (const RequestError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted " << body.dump();
  return RequestError(0, "", "");
}

TEST(A1111Request, RefusalsNameTheField) {
  EXPECT_EQ(refused({{"steps", 0}}).field, "steps");
  EXPECT_EQ(refused({{"steps", 0}}).status, 422);
  EXPECT_EQ(refused({{"steps", "x"}}).field, "steps");
  EXPECT_EQ(refused({{"cfg_scale", true}}).field, "cfg_scale");
  EXPECT_EQ(refused({{"width", 30}}).field, "width");
  EXPECT_EQ(refused({{"width", 4096}, {"height", 4096}}).field, "width");
  EXPECT_EQ(refused({{"seed", -2}}).field, "seed");
  EXPECT_EQ(refused({{"sampler_name", "LMS"}}).field, "sampler_name");
  EXPECT_EQ(refused({{"sampler_index", "PLMS"}}).field, "sampler_index");
  EXPECT_EQ(refused({{"scheduler", "kl_optimal"}}).field, "scheduler");
  EXPECT_EQ(refused({{"enable_hr", true}}).field, "enable_hr");
  EXPECT_EQ(refused({{"restore_faces", true}}).field, "restore_faces");
  EXPECT_EQ(refused({{"script_name", "x/y/z plot"}}).field, "script_name");
  EXPECT_EQ(refused({{"alwayson_scripts", {{"controlnet", json::object()}}}}).field, "alwayson_scripts");
  EXPECT_EQ(refused({{"init_images", {"abc"}}}).field, "init_images");
  EXPECT_EQ(refused({{"prompt", "x <lora:a:1>"}}).field, "prompt");
  EXPECT_EQ(refused({{"override_settings", {{"sd_model_checkpoint", "other"}}}}).field,
            "override_settings.sd_model_checkpoint");
  EXPECT_EQ(refused({{"output", "x.png"}}).field, "output");
  EXPECT_EQ(refused({{"batch_size", 0}}).field, "batch_size");
  EXPECT_EQ(refused({{"batch_size", 8}, {"n_iter", 9}}).field, "n_iter");
  EXPECT_EQ(refused(json::array()).status, 400);
}

// JSON numbers reach the same checks as the command line's text (util/numbers.h), as numbers:
// small and large values keep their value; fractions, signs and ranges are refused alike.
TEST(A1111Request, SmallAndLargeNumbers) {
  json body = {{"prompt", "p"}, {"cfg_scale", 0.00001}};
  EXPECT_FLOAT_EQ(parse_a1111_request(body, defaults()).images[0].cfg, 0.00001f);
  // The strict parser's refusals hold for bodies too: a fraction where an integer goes, a
  // negative seed other than -1, a value past the range (never wrapped).
  for (const json& bad : {json{{"prompt", "p"}, {"steps", 7.5}}, json{{"prompt", "p"}, {"seed", -2}},
                          json{{"prompt", "p"}, {"max_seq", 1e300}}, json{{"prompt", "p"}, {"steps", -0.0}}})
    EXPECT_THROW(parse_a1111_request(bad, defaults()), RequestError) << bad.dump();
}
