#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "io/safetensors.h"
#include "util/error.h"

using namespace moss;

static std::string tmp_path(const char* name) { return testing::TempDir() + name; }

static void write_raw(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f.put(char((n >> (8 * i)) & 0xff));
  f << header << data;
}

TEST(Safetensors, RoundTrip) {
  Tensor a = host_tensor(DType::F32, {2, 3});
  for (int i = 0; i < 6; ++i) a.ptr<float>()[i] = float(i) * 0.5f;
  Tensor b = host_tensor(DType::BF16, {4});
  for (int i = 0; i < 4; ++i) b.ptr<uint16_t>()[i] = f32_to_bf16(float(i) + 0.25f);
  std::string p = tmp_path("rt.safetensors");
  write_safetensors(p, {{"a", a}, {"b", b}}, {{"k", "v"}});
  auto f = SafetensorsFile::open(p);
  EXPECT_EQ(f->metadata().at("k"), "v");
  Tensor ra = f->get("a");
  EXPECT_EQ(ra.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ra.ptr<float>()[5], 2.5f);
  EXPECT_EQ(to_f32_vector(f->get("b"))[3], 3.25f);
}

TEST(Safetensors, TinyModelOpens) {
  auto w = WeightFiles::open_folder(std::string(MOSSINFER_TEST_DATA) + "/tiny-moss/transformer");
  EXPECT_TRUE(w.has("layers.0.proj.q.weight"));
  EXPECT_EQ(w.info("layers.0.proj.q.weight").dtype, DType::BF16);
}

TEST(Safetensors, RefusesMalformedHeaders) {
  struct Case {
    const char* name;
    std::string header, data, expect;
  } cases[] = {
      {"notjson", "{oops", "", "not valid JSON"},
      {"beyond", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234", "beyond"},
      {"size", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678", "does not match"},
      {"overlap", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       "12345678", "overlap"},
      {"negshape", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", "", "non-negative"},
      // The tensors must tile the data section: no bytes before, between or after them.
      {"gap_first", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "12345678",
       "bytes [0, 4) of the data section belong to no tensor (a gap before the first tensor 'a' [4, 8))"},
      {"gap_between", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
       "123456789abc", "bytes [4, 8) of the data section belong to no tensor (a gap after 'a' [0, 4))"},
      {"gap_end", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "12345678",
       "bytes [4, 8) at the end of the data section belong to no tensor"},
      {"no_tensors_but_data", R"({"__metadata__":{"k":"v"}})", "1234", "bytes [0, 4) at the end"},
      {"overlap_nested", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       "123456789abc", "overlap"},
  };
  for (auto& c : cases) {
    std::string p = tmp_path(c.name);
    write_raw(p, c.header, c.data);
    try {
      SafetensorsFile::open(p);
      ADD_FAILURE() << c.name << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << c.name << ": " << e.what();
    }
  }
  // header length beyond the file
  std::string p = tmp_path("hdrlen");
  std::ofstream(p, std::ios::binary) << std::string("\xff\xff\x00\x00\x00\x00\x00\x00{}", 10);
  EXPECT_THROW(SafetensorsFile::open(p), Error);
}
