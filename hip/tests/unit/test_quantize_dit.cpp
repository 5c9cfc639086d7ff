// `moss-infer-hip quantize`'s work (model/quantize_dit.h) on a DiT folder of random weights at the
// tiny widths 192 and 384 (dim 192, ffn_dim 384, two blocks), group 64:
// - the file read back holds exactly the Comfy-Org layout: each block's qkv (q | k | v rows), o,
//   ffn_up_gate and ffn_down as I8 weight, F32 [rows, 1] weight_scale and the comfy_quant record;
//   every int8 row and scale is the format's pieces (rotate, then quantize) applied to the source
//   row, bit for bit; every other tensor is copied byte for byte; nothing else is in the file;
// - refusals, each leaving no output and no temporary: an unknown format, group sizes that are
//   not powers of 4 or do not divide a layer's width (the layer named), a weight with a NaN (the
//   tensor and row named, exit 1), a DiT that is already quantized, a folder that is not one.
// - check_int8_convrot_dit, the loader's check to come, against the file and broken copies of it.
// (The comparison with the PyTorch reference on the tiny model: bench/tests/test_int8_convrot_ref.py.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <tuple>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "io/files.h"
#include "io/safetensors.h"
#include "model/dit.h"
#include "model/int8_convrot_layers.h"
#include "model/quantize_dit.h"
#include "model/random_weights.h"
#include "tensor/int8_convrot.h"
#include "test_support.h"

namespace moss {
namespace {

DitConfig tiny_config() {
  DitConfig c;
  c.dim = 192;
  c.ffn_dim = 384;
  c.heads = 3;
  c.layers = 2;
  c.text_dim = 192;
  c.freq_dim = 256;
  c.latent_channels = 128;
  return c;
}

// A model folder with just transformer/ (config and one safetensors file of random weights);
// `edit` may change the weights before they are written.
template <class Edit> std::string make_folder(const std::string& name, Edit edit) {
  const std::string dir = testing::TempDir() + name;
  const std::string t = dir + "/transformer";
  if (std::system(("rm -rf '" + dir + "' && mkdir -p '" + t + "'").c_str()) != 0) ADD_FAILURE() << "mkdir " << t;
  const DitConfig c = tiny_config();
  std::ofstream(t + "/config.json") << nlohmann::json{{"dim", c.dim},           {"ffn_dim", c.ffn_dim},
                                                      {"num_heads", c.heads},   {"num_layers", c.layers},
                                                      {"text_dim", c.text_dim}, {"freq_dim", c.freq_dim},
                                                      {"latent_channels", c.latent_channels}, {"rope_base", 10000.0}}
                                          .dump();
  std::map<std::string, Tensor> w = random_host_weights(dit_expected_tensors(c), false, 49);
  edit(w);
  std::vector<std::pair<std::string, Tensor>> list(w.begin(), w.end());
  write_safetensors(t + "/diffusion_pytorch_model.safetensors", list);
  return dir;
}
std::string make_folder(const std::string& name) {
  return make_folder(name, [](std::map<std::string, Tensor>&) {});
}

QuantizeOptions options(const std::string& model, const std::string& out, int64_t group = 64) {
  QuantizeOptions o;
  o.model = model;
  o.out = out;
  o.group_size = group;
  return o;
}

// No output and no temporary of ours in its folder.
void expect_nothing_written(const std::string& out) {
  EXPECT_FALSE(file_exists(out)) << out;
  for (const std::string& e : list_dir(parent_dir(out))) EXPECT_EQ(e.find(".moss-infer-"), std::string::npos) << e;
}

TEST(QuantizeDit, WritesTheComfyLayoutBitForBit) {
  const std::string model = make_folder("quantize_good");
  const std::string out = model + "/int8.safetensors";
  const QuantizeReport r = quantize_dit(options(model, out));
  EXPECT_EQ(r.quantized_layers, 8);
  const WeightFiles src = WeightFiles::open_folder(model + "/transformer");
  const std::shared_ptr<SafetensorsFile> f = SafetensorsFile::open(out);
  EXPECT_EQ(r.bytes, uint64_t(std::ifstream(out, std::ios::binary | std::ios::ate).tellg()));
  size_t seen = 0;
  const std::string record = R"({"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 64})";
  for (int n = 0; n < 2; ++n) {
    const std::string p = "layers." + std::to_string(n) + ".proj.";
    const std::vector<std::pair<std::string, std::vector<std::string>>> layers = {
        {"qkv", {"q", "k", "v"}}, {"o", {"o"}}, {"ffn_up_gate", {"ffn_up_gate"}}, {"ffn_down", {"ffn_down"}}};
    for (const auto& [layer, parts] : layers) {
      const Tensor q = f->get(p + layer + ".weight"), s = f->get(p + layer + ".weight_scale");
      const Tensor rec = f->get(p + layer + ".comfy_quant");
      seen += 3;
      ASSERT_EQ(q.dtype, DType::I8);
      ASSERT_EQ(s.dtype, DType::F32);
      ASSERT_EQ(rec.dtype, DType::U8);
      EXPECT_EQ(std::string(rec.ptr<const char>(), size_t(rec.numel())), record);
      int64_t row = 0;
      for (const std::string& part : parts) {
        const Tensor w = src.get(p + part + ".weight");
        const int64_t K = w.cols();
        ASSERT_EQ(q.cols(), K);
        std::vector<float> v(static_cast<size_t>(K));
        std::vector<int8_t> want(static_cast<size_t>(K));
        for (int64_t r0 = 0; r0 < w.rows(); ++r0, ++row) {
          for (int64_t k = 0; k < K; ++k) v[size_t(k)] = bf16_to_f32(w.ptr<const uint16_t>()[r0 * K + k]);
          convrot::rotate_groups(v.data(), K, 64);
          const float sw = convrot::quantize_row(v.data(), K, want.data());
          ASSERT_EQ(std::memcmp(want.data(), q.ptr<const int8_t>() + row * K, size_t(K)), 0) << p << layer << " " << row;
          ASSERT_EQ(sw, s.ptr<const float>()[row]) << p << layer << " " << row;
        }
      }
      EXPECT_EQ(q.dims(), (std::vector<int64_t>{row, q.cols()}));
      EXPECT_EQ(s.dims(), (std::vector<int64_t>{row, 1}));
    }
  }
  for (const std::string& name : src.names()) {
    if (name.find(".proj.") != std::string::npos && name.rfind("layers.", 0) == 0) continue;
    ASSERT_TRUE(f->has(name)) << name;
    const Tensor a = src.get(name), b = f->get(name);
    EXPECT_EQ(a.dtype, b.dtype) << name;
    EXPECT_EQ(a.dims(), b.dims()) << name;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes()), 0) << name;
    ++seen;
  }
  EXPECT_EQ(f->tensors().size(), seen);
  expect_nothing_written(model + "/absent.safetensors");
}

TEST(QuantizeDit, RefusesBadFormatsAndGroupSizesBeforeWriting) {
  const std::string model = make_folder("quantize_refusals");
  const std::string out = model + "/int8.safetensors";
  QuantizeOptions o = options(model, out);
  o.format = "int4-convrot";
  auto [code, msg] = outcome_of([&] { quantize_dit(o); });
  EXPECT_EQ(code, 2);
  EXPECT_NE(msg.find("--format 'int4-convrot': unknown quantization format"), std::string::npos) << msg;
  for (int64_t g : {1, 2, 8, 32, 128, 100}) {
    std::tie(code, msg) = outcome_of([&] { quantize_dit(options(model, out, g)); });
    EXPECT_EQ(code, 2) << g;
    EXPECT_NE(msg.find("must be a power of 4"), std::string::npos) << msg;
  }
  // 256 is a power of 4 but the widths are 192 and 384.
  std::tie(code, msg) = outcome_of([&] { quantize_dit(options(model, out, 256)); });
  EXPECT_EQ(code, 2);
  EXPECT_NE(msg.find("does not divide the input width 192 of layers.0.proj.qkv"), std::string::npos) << msg;
  std::tie(code, msg) = outcome_of([&] { quantize_dit(options(model + "/nowhere", out)); });
  EXPECT_EQ(code, 2);
  EXPECT_NE(msg.find("not a folder"), std::string::npos) << msg;
  std::tie(code, msg) = outcome_of([&] { quantize_dit(options(model, model + "/missing/dir/x.safetensors")); });
  EXPECT_EQ(code, 2);
  EXPECT_NE(msg.find("--out"), std::string::npos) << msg;
  expect_nothing_written(out);
}

TEST(QuantizeDit, RefusesANonFiniteWeightNamingItAndLeavesNothing) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const std::string model = make_folder("quantize_nan", [&](std::map<std::string, Tensor>& w) {
      Tensor& t = w.at("layers.1.proj.o.weight");
      t.ptr<uint16_t>()[5 * t.cols() + 17] = f32_to_bf16(bad);
    });
    const std::string out = model + "/int8.safetensors";
    auto [code, msg] = outcome_of([&] { quantize_dit(options(model, out)); });
    EXPECT_EQ(code, 1);
    EXPECT_NE(msg.find("layers.1.proj.o.weight: row 5 holds a NaN or an infinity"), std::string::npos) << msg;
    expect_nothing_written(out);
  }
}

TEST(QuantizeDit, RefusesAnAlreadyQuantizedDit) {
  const std::string model = make_folder("quantize_twice_src");
  const std::string once = testing::TempDir() + "quantize_twice/transformer";
  ASSERT_EQ(std::system(("rm -rf '" + once + "' && mkdir -p '" + once + "' && cp '" + model +
                         "/transformer/config.json' '" + once + "/'").c_str()),
            0);
  quantize_dit(options(model, once + "/diffusion_pytorch_model.safetensors"));
  const std::string out = testing::TempDir() + "quantize_twice/again.safetensors";
  auto [code, msg] = outcome_of([&] { quantize_dit(options(testing::TempDir() + "quantize_twice", out)); });
  EXPECT_EQ(code, 2);
  EXPECT_NE(msg.find("this DiT is already quantized"), std::string::npos) << msg;
  expect_nothing_written(out);
}

}  // namespace
}  // namespace moss

namespace moss {
namespace {

// check_int8_convrot_dit (model/int8_convrot_layers.h), the loader's check to come: it accepts
// what quantize writes (every layer's group read back), and refuses, naming the tensor, each
// class of bad layout: a missing weight_scale, a scale of the wrong shape or dtype, a weight of
// the wrong dtype or shape, another format, int8 without convrot, a group that does not divide
// the width, a layer quantized that must stay bf16.
class CheckInt8ConvRot : public testing::Test {
 protected:
  void SetUp() override {
    // A folder per test: ctest runs this fixture's tests at once (-j), each in its own process.
    const std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
    const std::string model = make_folder("check_src_" + test);
    dir_ = testing::TempDir() + "check_int8_" + test;
    ASSERT_EQ(std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "'").c_str()), 0);
    quantize_dit(options(model, dir_ + "/good.safetensors"));
    good_ = SafetensorsFile::open(dir_ + "/good.safetensors");
  }
  // The good file's tensors with `edit` applied, written alone into a folder and checked.
  template <class Edit> std::pair<int, std::string> check_edited(Edit edit) {
    std::map<std::string, Tensor> t;
    for (const auto& [name, info] : good_->tensors()) t[name] = good_->get(name);
    edit(t);
    const std::string folder = dir_ + "/case" + std::to_string(++cases_);
    EXPECT_EQ(std::system(("mkdir -p '" + folder + "'").c_str()), 0);
    write_safetensors(folder + "/model.safetensors", std::vector<std::pair<std::string, Tensor>>(t.begin(), t.end()));
    const WeightFiles w = WeightFiles::open_folder(folder);
    return outcome_of([&] { check_int8_convrot_dit(w, tiny_config()); });
  }
  static Tensor bytes(const std::string& s) {
    Tensor t = host_tensor(DType::U8, {int64_t(s.size())});
    std::memcpy(t.data, s.data(), s.size());
    return t;
  }
  std::string dir_;
  std::shared_ptr<SafetensorsFile> good_;
  int cases_ = 0;
};

TEST_F(CheckInt8ConvRot, AcceptsWhatQuantizeWrites) {
  const WeightFiles w = WeightFiles::open_folder(dir_);
  const std::map<std::string, int64_t> groups = check_int8_convrot_dit(w, tiny_config());
  EXPECT_EQ(groups.size(), 8u);
  for (const auto& [layer, g] : groups) EXPECT_EQ(g, 64) << layer;
  EXPECT_EQ(groups.count("layers.1.proj.ffn_down"), 1u);
}

TEST_F(CheckInt8ConvRot, RefusesEachBadLayoutNamingTheTensor) {
  const std::string o = "layers.1.proj.o.";
  struct Case {
    std::function<void(std::map<std::string, Tensor>&)> edit;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[&](auto& t) { t.erase(o + "weight_scale"); }, 1, "missing tensor layers.1.proj.o.weight_scale"},
      {[&](auto& t) { t[o + "weight_scale"] = host_tensor(DType::F32, {192, 2}); }, 1,
       "layers.1.proj.o.weight_scale: F32 [192, 2], expected F32 [192] or [192, 1]"},
      {[&](auto& t) { t[o + "weight_scale"] = host_tensor(DType::F32, {191}); }, 1, "F32 [191], expected"},
      {[&](auto& t) { t[o + "weight_scale"] = host_tensor(DType::BF16, {192, 1}); }, 1, "BF16 [192, 1], expected F32"},
      {[&](auto& t) { t[o + "weight_scale"] = host_tensor(DType::F32, {192}); }, -1, ""},  // [out] is accepted
      {[&](auto& t) { t[o + "weight"] = host_tensor(DType::BF16, {192, 192}); }, 1,
       "layers.1.proj.o.weight: BF16 [192, 192], expected I8 [192, 192]"},
      {[&](auto& t) { t["layers.0.proj.qkv.weight"] = host_tensor(DType::I8, {192, 192}); }, 1, "expected I8 [576, 192]"},
      {[&](auto& t) { t[o + "comfy_quant"] = bytes(R"({"format": "convrot_w4a4", "convrot_groupsize": 64})"); }, 2,
       "layers.1.proj.o.comfy_quant: quantization format 'convrot_w4a4' is not supported"},
      {[&](auto& t) { t[o + "comfy_quant"] = bytes(R"({"format": "int8_tensorwise"})"); }, 2, "without convrot"},
      {[&](auto& t) { t[o + "comfy_quant"] = bytes(convrot::comfy_quant_json(256)); }, 1,
       "layers.1.proj.o.comfy_quant: convrot_groupsize 256 does not divide the input width 192"},
      {[&](auto& t) {
         t["text_embedder.blocks.0.qkv.weight"] = host_tensor(DType::I8, {576, 192});
         t["text_embedder.blocks.0.qkv.weight_scale"] = host_tensor(DType::F32, {576, 1});
         t["text_embedder.blocks.0.qkv.comfy_quant"] = bytes(convrot::comfy_quant_json(64));
       },
       2, "text_embedder.blocks.0.qkv.comfy_quant: quantized, but this layer stays bf16"},
      {[&](auto& t) { t["final_linear_video.weight"] = host_tensor(DType::I8, {128, 192}); }, 2,
       "final_linear_video.weight: quantized, but this layer stays bf16"},
  };
  for (const Case& c : cases) {
    const auto [code, message] = check_edited(c.edit);
    EXPECT_EQ(code, c.code) << c.message << " | " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace moss
