// The VAE's config, tensor list, activation plan and 8-bit conversion, and the decoder on the
// tiny model folder (the golden comparison itself is `moss-check vae`, tests/suites/vae.cmake).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <sys/stat.h>

#include "model/image_u8.h"
#include "model/vae.h"
#include "test_support.h"
#include "util/error.h"

using namespace moss;

namespace {

const std::string kData = MOSSINFER_TEST_DATA;
const std::string kFolder = kData + "/tiny-moss/vae";
const std::string kGolden = kData + "/golden_vae.safetensors";
constexpr size_t kGiB = size_t(1) << 30, kMiB = size_t(1) << 20;

std::string write_config(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The real small decoder's config (docs/vae.md section 3.5).
VaeConfig small_decoder() {
  VaeConfig c;
  c.block_out_channels = {96, 192, 384, 384};
  return c;
}

TEST(VaeConfig, ParsesTinyModel) {
  const VaeConfig c = parse_vae_config(kFolder + "/config.json");
  EXPECT_EQ(c.block_out_channels, (std::vector<int64_t>{24, 48, 96, 96}));  // decoder widths, not the encoder's
  EXPECT_EQ(c.latent_channels, 32);
  EXPECT_EQ(c.layers_per_block, 2);
  EXPECT_EQ(c.norm_num_groups, 8);
  EXPECT_EQ(c.patch_size, 2);
  EXPECT_FLOAT_EQ(c.batch_norm_eps, 1e-4f);
  EXPECT_TRUE(c.use_post_quant_conv);
  EXPECT_TRUE(c.mid_block_add_attention);
  EXPECT_EQ(c.packed_channels(), 128);
  EXPECT_EQ(c.packed_scale(), 16);
}

TEST(VaeConfig, FallsBackToBlockOutChannels) {
  const VaeConfig c = parse_vae_config(write_config(
      "vae_full.json", R"({"block_out_channels": [128, 256, 512, 512], "latent_channels": 32,
                           "layers_per_block": 2, "norm_num_groups": 32, "patch_size": [2, 2]})"));
  EXPECT_EQ(c.block_out_channels, (std::vector<int64_t>{128, 256, 512, 512}));
}

TEST(VaeConfig, RefusesBadConfigsNamingFileAndKey) {
  const std::string missing = write_config("vae_missing.json", R"({"block_out_channels": [32, 64],
                                            "latent_channels": 32, "norm_num_groups": 32})");
  Error e = error_of([&] { parse_vae_config(missing); });
  EXPECT_EQ(e.code(), ExitCode::Failure);
  EXPECT_NE(std::string(e.what()).find(missing), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("layers_per_block"), std::string::npos);

  const std::string groups = write_config("vae_groups.json", R"({"block_out_channels": [24, 48],
                                           "latent_channels": 32, "layers_per_block": 2, "norm_num_groups": 32})");
  EXPECT_EQ(error_of([&] { parse_vae_config(groups); }).code(), ExitCode::Failure);

  const std::string kind = write_config("vae_kind.json", R"({"_class_name": "AutoencoderKL",
      "block_out_channels": [32, 64], "latent_channels": 16, "layers_per_block": 2, "norm_num_groups": 32})");
  e = error_of([&] { parse_vae_config(kind); });
  EXPECT_EQ(e.code(), ExitCode::Usage);
  EXPECT_NE(std::string(e.what()).find("_class_name"), std::string::npos);

  EXPECT_EQ(error_of([&] { parse_vae_config(testing::TempDir() + "no_such_vae.json"); }).code(), ExitCode::Failure);
}

TEST(VaeConfig, SmallDecoderTensorsMatchTheParameterCount) {
  // docs/vae.md section 3.7: 140 tensors and 27,947,235 values for decoder + post_quant_conv.
  size_t tensors = 0;
  int64_t values = 0;
  for (const ExpectedTensor& e : vae_expected_tensors(small_decoder())) {
    if (e.name.rfind("bn.", 0) == 0) continue;
    ++tensors;
    int64_t n = 1;
    for (int64_t d : e.shape) n *= d;
    values += n;
  }
  EXPECT_EQ(tensors, 140u);
  EXPECT_EQ(values, 27947235);
}

TEST(VaeDecoder, ActivationPlanIsTheCarefulPeak) {
  // docs/vae.md section 5.2: 1.5 GiB at 1024², 6.0 at 2048² (plus statistics: kilobytes).
  const VaeConfig c = small_decoder();
  const size_t at1024 = VaeDecoder::decode_activation_bytes(c, 1024, 1024);
  const size_t at2048 = VaeDecoder::decode_activation_bytes(c, 2048, 2048);
  EXPECT_GE(at1024, kGiB * 3 / 2);
  EXPECT_LT(at1024, kGiB * 3 / 2 + kMiB);
  EXPECT_GE(at2048, kGiB * 6);
  EXPECT_LT(at2048, kGiB * 6 + kMiB);
  EXPECT_EQ(error_of([&] { VaeDecoder::decode_activation_bytes(c, 1000, 1024); }).code(), ExitCode::Usage);
}

TEST(VaeDecoder, DecodesTinyLatentWithinThePlan) {
  const VaeConfig cfg = parse_vae_config(kFolder + "/config.json");
  std::unique_ptr<Backend> be = make_host_backend();
  VaeDecoder decoder(*be, WeightFiles::open_folder(kFolder), cfg);
  auto golden = SafetensorsFile::open(kGolden);
  const Tensor packed = golden->get("case1.latent_packed");  // 48x80
  const Tensor image = decoder.decode(packed);
  EXPECT_EQ(image.dims(), (std::vector<int64_t>{3, 48, 80}));
  EXPECT_EQ(decoder.last_peak_bytes(), VaeDecoder::decode_activation_bytes(cfg, 48, 80));
  // The same latent twice gives the same image bit for bit (the pool's split is fixed).
  const Tensor again = decoder.decode(packed);
  EXPECT_EQ(std::memcmp(image.data, again.data, image.nbytes()), 0);

  const Tensor wrong = host_tensor(DType::F32, {64, 3, 5});
  EXPECT_EQ(error_of([&] { decoder.decode(wrong); }).code(), ExitCode::Failure);
}

TEST(ImageU8, RoundsHalfToEvenAndWritesHwc) {
  EXPECT_EQ(image_value_to_u8(-1.0f), 0);
  EXPECT_EQ(image_value_to_u8(-7.0f), 0);
  EXPECT_EQ(image_value_to_u8(1.0f), 255);
  EXPECT_EQ(image_value_to_u8(3.0f), 255);
  EXPECT_EQ(image_value_to_u8(0.0f), 128);  // 127.5: the even neighbour
  EXPECT_EQ(image_value_to_u8(NAN), 0);
  // Exact ties k + 0.5 in fp32 go to the even k: find some in the upper half, where v = 2t − 1
  // and v·0.5 + 0.5 = t are exact.
  int ties = 0;
  for (int k = 128; k < 255; ++k) {
    float t = (float(k) + 0.5f) / 255.0f;
    for (int step = 0; step < 8; ++step, t = std::nextafter(t, 2.0f)) {
      if (t * 255.0f != float(k) + 0.5f) continue;
      EXPECT_EQ(image_value_to_u8(2.0f * t - 1.0f), k % 2 ? k + 1 : k) << "tie at " << k;
      ++ties;
    }
  }
  EXPECT_GT(ties, 0);

  Tensor img = host_tensor(DType::F32, {3, 1, 2});
  const float v[] = {-1.0f, 1.0f, 0.0f, -1.0f, 1.0f, 0.0f};  // R: 0,255  G: 128,0  B: 255,128
  std::copy(v, v + 6, img.ptr<float>());
  EXPECT_EQ(image_to_u8(img), (std::vector<uint8_t>{0, 128, 255, 255, 0, 128}));
}

}  // namespace
