#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "io/files.h"
#include "io/image_files.h"
#include "util/error.h"

using namespace moss;

TEST(Png, RoundTripWithTextChunks) {
  const int64_t w = 7, h = 5;
  std::vector<uint8_t> rgb(size_t(w * h * 3));
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 37 + 11);
  std::string path = testing::TempDir() + "rt.png";
  write_png(path, rgb.data(), w, h, {{"parameters", "a red apple\nSteps: 4"}, {"generation", "{\"prompt\":\"苹果\"}"}});
  PngImage img = read_png(path);
  EXPECT_EQ(img.width, w);
  EXPECT_EQ(img.height, h);
  EXPECT_EQ(img.rgb, rgb);
  ASSERT_EQ(img.text.size(), 2u);
  EXPECT_EQ(img.text[0].key, "parameters");
  EXPECT_EQ(img.text[0].value, "a red apple\nSteps: 4");
  EXPECT_EQ(img.text[1].value, "{\"prompt\":\"苹果\"}");  // UTF-8 survives (iTXt)
}

TEST(Npy, RoundTripAndHeaderAlignment) {
  std::vector<float> v(2 * 3 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) - 3.5f;
  std::string bytes = encode_npy_f32(v.data(), {2, 3, 4});
  size_t hlen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);  // numpy aligns the data to 64 bytes
  EXPECT_EQ(bytes[10 + hlen - 1], '\n');
  std::string path = testing::TempDir() + "rt.npy";
  write_npy_f32(path, v.data(), {2, 3, 4});
  NpyArray a = read_npy_f32(path);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(a.data, v);
}

TEST(AtomicWrite, FailureLeavesNothing) {
  // In a directory of its own: tests running beside this one write temporary files of their own.
  std::string dir = testing::TempDir() + "atomic-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  EXPECT_THROW(write_file_atomic(dir + "/no/such/dir/x.png", "data"), Error);
  // A failure after the temporary file was written: the target is a directory, the rename fails.
  ASSERT_EQ(mkdir((dir + "/target").c_str(), 0700), 0);
  EXPECT_THROW(write_file_atomic(dir + "/target", "data"), Error);
  for (const std::string& n : list_dir(dir)) EXPECT_EQ(n.rfind(".moss-infer-", 0), std::string::npos) << n;
  rmdir((dir + "/target").c_str());
  rmdir(dir.c_str());
}

TEST(AtomicWrite, ReplacesWholeFile) {
  std::string path = testing::TempDir() + "replace.txt";
  write_file_atomic(path, std::string(1000, 'a'));
  write_file_atomic(path, "short");
  EXPECT_EQ(read_text_file(path), "short");
}
