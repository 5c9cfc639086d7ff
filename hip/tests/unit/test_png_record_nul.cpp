// A NUL in a prompt and the PNG's text chunks: libpng takes a text up to its first NUL, so the
// encoder refuses such a value rather than cut it, and the record's chunks replace the NUL in the
// `parameters` text (U+FFFD) while the `generation` JSON keeps it (\u0000): the record
// round-trips exactly through the file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/image_files.h"
#include "pipeline/record.h"
#include "util/error.h"

using namespace moss;

TEST(PngRecordNul, EncoderRefusesATextWithNul) {
  const std::vector<uint8_t> rgb(3 * 2 * 2, 7);
  EXPECT_THROW(encode_png(rgb.data(), 2, 2, {{"parameters", std::string("a\0b", 3)}}), Error);
}

TEST(PngRecordNul, RecordRoundTripsThroughTheFile) {
  RunRecord r;
  r.request.prompt = std::string("apple\0pear\0", 11);
  r.request.negative = std::string("\0", 1);
  r.request.width = r.request.height = 2;
  const std::vector<uint8_t> rgb(3 * 2 * 2, 7);
  const std::string path = testing::TempDir() + "nul.png";
  write_png(path, rgb.data(), 2, 2, png_record_chunks(r));
  const PngImage img = read_png(path);
  ASSERT_EQ(img.text.size(), 2u);
  EXPECT_EQ(img.text[0].key, "parameters");
  EXPECT_EQ(img.text[0].value.rfind("apple\xEF\xBF\xBDpear\xEF\xBF\xBD\nNegative prompt: \xEF\xBF\xBD\nSteps: ", 0), 0u)
      << img.text[0].value;
  EXPECT_NE(img.text[0].value.find("Version: "), std::string::npos);  // not cut
  const nlohmann::json j = nlohmann::json::parse(img.text[1].value);
  EXPECT_EQ(j["prompt"].get<std::string>(), r.request.prompt);
  EXPECT_EQ(j["negative"].get<std::string>(), r.request.negative);
}
