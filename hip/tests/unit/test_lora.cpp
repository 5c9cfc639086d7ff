// LoRAs (model/lora.h): every format read and mapped onto the tiny model's weight names, the
// merge W' = bf16(float(W) + sum weight*scale*dW) checked element by element against the formula
// computed here in double, the refusals (each names file and tensor, exit 2), the --lora request
// field and the record's LoRA entries. The PyTorch/peft reference check is
// hip/tests/lora/lora_reference_test.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "frontend/a1111_request.h"
#include "frontend/lora_library.h"
#include "model/dit_streaming.h"
#include "model/lora.h"
#include "pipeline/record.h"
#include "pipeline/request_fields.h"
#include "test_support.h"
#include "streaming/block_names.h"
#include "util/sha256.h"

using namespace moss;

namespace {

const std::string kTiny = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss";

struct Base {
  WeightFiles dit = WeightFiles::open_folder(kTiny + "/transformer");
  WeightFiles te = WeightFiles::open_folder(kTiny + "/text_encoder");
};
const Base& base() {
  static Base b;
  return b;
}

Tensor random_tensor(std::vector<int64_t> dims, std::mt19937& rng, float scale = 0.05f) {
  Tensor t = host_tensor(DType::F32, dims);
  std::normal_distribution<float> n(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.ptr<float>()[i] = n(rng);
  return t;
}
Tensor scalar(float v) {
  Tensor t = host_tensor(DType::F32, std::vector<int64_t>{});
  t.ptr<float>()[0] = v;
  return t;
}

using Named = std::vector<std::pair<std::string, Tensor>>;
std::string write_lora(const std::string& file, const Named& tensors) {
  const std::string path = testing::TempDir() + file + ".safetensors";
  write_safetensors(path, tensors);
  return path;
}

// dW in double from the documented formulas, over a module's tensors by role.
std::vector<double> ref_matmul(const Tensor& a, const Tensor& b) {
  const int64_t o = a.shape[0], r = a.shape[1], n = b.shape[1];
  std::vector<double> c(size_t(o * n));
  const std::vector<float> x = to_f32_vector(a), y = to_f32_vector(b);
  for (int64_t i = 0; i < o; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < r; ++k) s += double(x[size_t(i * r + k)]) * y[size_t(k * n + j)];
      c[size_t(i * n + j)] = s;
    }
  return c;
}

// Checks the merged tensor `target` against bf16(W + coef * dW[rows row0..]) within one bf16 step.
void expect_merged(const WeightFiles& merged, const std::string& target, const std::vector<double>& dw, double coef) {
  const std::vector<float> w = to_f32_vector(base().dit.has(target) ? base().dit.get(target) : base().te.get(target));
  const std::vector<float> got = to_f32_vector(merged.get(target));
  ASSERT_EQ(got.size(), w.size()) << target;
  int off_by_one = 0, changed = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double want = double(w[i]) + coef * dw[i];
    const float rounded = round_bf16(float(want));
    if (got[i] != w[i]) ++changed;
    if (got[i] == rounded) continue;
    const float ulp = std::fabs(bf16_to_f32(uint16_t(f32_to_bf16(rounded) + 1)) - rounded);
    ASSERT_LE(std::fabs(got[i] - rounded), ulp * 1.01f) << target << " element " << i;
    ++off_by_one;
  }
  EXPECT_LE(off_by_one, int(w.size() / 50)) << target;  // only ties of the fp32 sum flip
  EXPECT_GT(changed, int(w.size() / 4)) << target << ": the LoRA changed too few weights";
}

struct Case {
  std::string name;
  Named tensors;
  std::vector<std::string> targets;  // where dW lands, in its row order (fused qkv: three)
  std::function<std::vector<double>(const Named&)> delta;
  double scale;
  LoraFormat format;
};

const Tensor& part(const Named& t, const std::string& suffix) {
  for (const auto& [name, tensor] : t)
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return tensor;
  throw std::logic_error("no tensor " + suffix);
}

std::vector<Case> format_cases() {
  std::mt19937 rng(7);
  std::vector<Case> cases;
  auto low_rank = [](const std::string& up, const std::string& down) {
    return [up, down](const Named& t) { return ref_matmul(part(t, up), part(t, down)); };
  };
  const int r = 4;
  cases.push_back({"peft_transformer",
                   {{"transformer.layers.0.proj.q.lora_A.weight", random_tensor({r, 128}, rng)},
                    {"transformer.layers.0.proj.q.lora_B.weight", random_tensor({128, r}, rng)}},
                   {"layers.0.proj.q.weight"}, low_rank("lora_B.weight", "lora_A.weight"), 1.0, LoraFormat::Peft});
  cases.push_back({"peft_diffusion_model_alpha",
                   {{"diffusion_model.layers.2.proj.ffn_up_gate.lora_A.weight", random_tensor({r, 128}, rng)},
                    {"diffusion_model.layers.2.proj.ffn_up_gate.lora_B.weight", random_tensor({512, r}, rng)},
                    {"diffusion_model.layers.2.proj.ffn_up_gate.alpha", scalar(2.0f)}},
                   {"layers.2.proj.ffn_up_gate.weight"}, low_rank("lora_B.weight", "lora_A.weight"), 0.5,
                   LoraFormat::Peft});
  cases.push_back({"kohya",
                   {{"lora_unet_layers_3_proj_ffn_down.lora_down.weight", random_tensor({r, 256}, rng)},
                    {"lora_unet_layers_3_proj_ffn_down.lora_up.weight", random_tensor({128, r}, rng)},
                    {"lora_unet_layers_3_proj_ffn_down.alpha", scalar(8.0f)}},
                   {"layers.3.proj.ffn_down.weight"}, low_rank("lora_up.weight", "lora_down.weight"), 2.0,
                   LoraFormat::Kohya});
  cases.push_back({"comfy",
                   {{"diffusion_model.shared_block_modulation.lora_down.weight", random_tensor({r, 128}, rng)},
                    {"diffusion_model.shared_block_modulation.lora_up.weight", random_tensor({768, r}, rng)}},
                   {"shared_block_modulation.weight"}, low_rank("lora_up.weight", "lora_down.weight"), 1.0,
                   LoraFormat::Comfy});
  cases.push_back({"loha",
                   {{"lora_unet_layers_0_proj_o.hada_w1_a", random_tensor({128, r}, rng, 0.3f)},
                    {"lora_unet_layers_0_proj_o.hada_w1_b", random_tensor({r, 128}, rng, 0.3f)},
                    {"lora_unet_layers_0_proj_o.hada_w2_a", random_tensor({128, r}, rng, 0.3f)},
                    {"lora_unet_layers_0_proj_o.hada_w2_b", random_tensor({r, 128}, rng, 0.3f)},
                    {"lora_unet_layers_0_proj_o.alpha", scalar(2.0f)}},
                   {"layers.0.proj.o.weight"},
                   [](const Named& t) {
                     std::vector<double> a = ref_matmul(part(t, "w1_a"), part(t, "w1_b"));
                     const std::vector<double> b = ref_matmul(part(t, "w2_a"), part(t, "w2_b"));
                     for (size_t i = 0; i < a.size(); ++i) a[i] *= b[i];
                     return a;
                   },
                   0.5, LoraFormat::LoHa});
  cases.push_back({"lokr",
                   {{"lycoris_final_linear_video.lokr_w1", random_tensor({8, 4}, rng, 0.3f)},
                    {"lycoris_final_linear_video.lokr_w2_a", random_tensor({16, r}, rng, 0.3f)},
                    {"lycoris_final_linear_video.lokr_w2_b", random_tensor({r, 32}, rng, 0.3f)},
                    {"lycoris_final_linear_video.alpha", scalar(4.0f)}},
                   {"final_linear_video.weight"},
                   [](const Named& t) {
                     const std::vector<float> w1 = to_f32_vector(part(t, "lokr_w1"));
                     const std::vector<double> w2 = ref_matmul(part(t, "w2_a"), part(t, "w2_b"));
                     std::vector<double> d(128 * 128);
                     for (int i = 0; i < 8; ++i)
                       for (int j = 0; j < 4; ++j)
                         for (int k = 0; k < 16; ++k)
                           for (int l = 0; l < 32; ++l) d[size_t((i * 16 + k) * 128 + j * 32 + l)] = w1[size_t(i * 4 + j)] * w2[size_t(k * 32 + l)];
                     return d;
                   },
                   1.0, LoraFormat::LoKr});
  cases.push_back({"full_diff",
                   {{"diffusion_model.video_embedder.diff", random_tensor({128, 128}, rng)}},
                   {"video_embedder.weight"},
                   [](const Named& t) {
                     const std::vector<float> d = to_f32_vector(t[0].second);
                     return std::vector<double>(d.begin(), d.end());
                   },
                   1.0, LoraFormat::FullDelta});
  cases.push_back({"fused_qkv",
                   {{"transformer.layers.1.proj.qkv.lora_A.weight", random_tensor({r, 128}, rng)},
                    {"transformer.layers.1.proj.qkv.lora_B.weight", random_tensor({384, r}, rng)}},
                   {"layers.1.proj.q.weight", "layers.1.proj.k.weight", "layers.1.proj.v.weight"},
                   low_rank("lora_B.weight", "lora_A.weight"), 1.0, LoraFormat::Peft});
  cases.push_back({"text_encoder_kohya",
                   {{"lora_te_layers_3_self_attn_q_proj.lora_down.weight", random_tensor({r, 256}, rng)},
                    {"lora_te_layers_3_self_attn_q_proj.lora_up.weight", random_tensor({512, r}, rng)}},
                   {"model.language_model.layers.3.self_attn.q_proj.weight"},
                   low_rank("lora_up.weight", "lora_down.weight"), 1.0, LoraFormat::Kohya});
  return cases;
}

}  // namespace

TEST(Lora, Sha256KnownDigests) {
  Sha256 empty;
  EXPECT_EQ(empty.hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 abc;
  abc.update("abc", 3);
  EXPECT_EQ(abc.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 two_blocks;  // FIPS 180-2's 448-bit message: the padding spills into a second block
  const std::string m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  two_blocks.update(m.data(), m.size());
  EXPECT_EQ(two_blocks.hex(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

namespace {

std::string sha256_hex(const std::string& m, Sha256::Path path) {
  Sha256 h(path);
  h.update(m.data(), m.size());
  return h.hex();
}

}  // namespace

// FIPS 180-2's vectors (appendix B and the 896-bit one of the NIST examples) on both compressions:
// the portable one and SHA-NI where this processor has it (else both are the portable one).
TEST(Lora, Sha256NistVectorsOnBothPaths) {
  const std::pair<std::string, const char*> vectors[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
      {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  RecordProperty("sha_ni", Sha256::accelerated_available() ? "yes" : "no");
  EXPECT_FALSE(Sha256(Sha256::Path::Portable).accelerated());
  EXPECT_EQ(Sha256().accelerated(), Sha256::accelerated_available());
  for (const auto& [message, digest] : vectors) {
    EXPECT_EQ(sha256_hex(message, Sha256::Path::Portable), digest) << message.size() << " bytes";
    EXPECT_EQ(sha256_hex(message, Sha256::Path::Fastest), digest) << message.size() << " bytes";
  }
}

// The fast compression against the portable one on random bytes of every length from 0 to 1100
// (every padding case, one to seventeen blocks), a few long ones, and the same messages fed in
// random pieces (blocks compressed straight from the caller's buffer, or through the partial
// block), so a lane or schedule slip in either shows as a differing digest.
TEST(Lora, Sha256FastPathEqualsPortable) {
  std::mt19937 rng(47);
  std::string data(size_t(1) << 20 | 77, '\0');
  for (char& c : data) c = char(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 1100; ++n) lengths.push_back(n);
  for (size_t n : {size_t(4095), size_t(4096), size_t(65537), data.size()}) lengths.push_back(n);
  for (size_t n : lengths) {
    const std::string m = data.substr(0, n);
    const std::string portable = sha256_hex(m, Sha256::Path::Portable);
    ASSERT_EQ(sha256_hex(m, Sha256::Path::Fastest), portable) << n << " bytes";
    Sha256 pieces;
    for (size_t at = 0; at < n;) {
      const size_t piece = std::min<size_t>(n - at, rng() % 200);
      pieces.update(m.data() + at, piece);
      at += piece;
    }
    ASSERT_EQ(pieces.hex(), portable) << n << " bytes in pieces";
  }
}

TEST(Lora, EveryFormatMapsAndMergesByTheFormula) {
  for (const Case& c : format_cases()) {
    SCOPED_TRACE(c.name);
    const std::string path = write_lora("lora_" + c.name, c.tensors);
    auto file = std::make_shared<LoraFile>(read_lora(path));
    ASSERT_EQ(file->modules.size(), 1u);
    EXPECT_EQ(file->modules[0].format, c.format);
    const BoundLora bound = bind_lora(file, base().dit, base().te);
    ASSERT_EQ(bound.modules[0].pieces.size(), c.targets.size());
    for (size_t i = 0; i < c.targets.size(); ++i) EXPECT_EQ(bound.modules[0].pieces[i].target, c.targets[i]);
    EXPECT_FLOAT_EQ(bound.modules[0].scale, float(c.scale));
    const float weight = -0.75f;
    const MergedWeights merged = merge_loras(base().dit, base().te, {{&bound, weight}});
    const std::vector<double> dw = c.delta(c.tensors);
    int64_t row0 = 0;
    for (const std::string& t : c.targets) {
      const WeightFiles& w = c.name.rfind("text_encoder", 0) == 0 ? merged.te : merged.dit;
      const int64_t in = w.info(t).shape[1];
      std::vector<double> slice(dw.begin() + row0 * in, dw.begin() + (row0 + w.info(t).shape[0]) * in);
      expect_merged(w, t, slice, double(weight) * c.scale);
      row0 += w.info(t).shape[0];
    }
    // Everything else is the mapped file's own tensor, not a copy.
    EXPECT_EQ(merged.dit.get("layers.0.norm1.weight").data, base().dit.get("layers.0.norm1.weight").data);
    EXPECT_EQ(merged.dit_tensors + merged.te_tensors, int(c.targets.size()));
  }
}

TEST(Lora, BiasDeltaAndOrderOfSeveral) {
  std::mt19937 rng(3);
  const Tensor diff = random_tensor({128, 256}, rng), diff_b = random_tensor({128}, rng);
  const std::string a = write_lora("lora_bias", {{"text_embedder.proj.diff", diff}, {"text_embedder.proj.diff_b", diff_b}});
  const BoundLora la = bind_lora(std::make_shared<LoraFile>(read_lora(a)), base().dit, base().te);
  // +w then -w: the fp32 sum returns to W before the one rounding, so the merge is the base bit for bit.
  const MergedWeights back = merge_loras(base().dit, base().te, {{&la, 0.5f}, {&la, -0.5f}});
  for (const char* t : {"text_embedder.proj.weight", "text_embedder.proj.bias"}) {
    const Tensor x = back.dit.get(t), y = base().dit.get(t);
    EXPECT_EQ(0, std::memcmp(x.data, y.data, x.nbytes())) << t;
  }
  const MergedWeights once = merge_loras(base().dit, base().te, {{&la, 1.0f}});
  const std::vector<float> d = to_f32_vector(diff_b);
  expect_merged(once.dit, "text_embedder.proj.bias", std::vector<double>(d.begin(), d.end()), 1.0);
}

// The engine's split (model/lora.h, LoraMergePlan): the DiT's resident weights merged in place
// after their upload, the others into host copies. Whatever the split, every target is merged
// once, by the same op, into the bits of the all-on-the-host merge. Here the "device" is the host
// backend (the op is the same; moss-check kernels --family lora checks the kernel's bits).
TEST(Lora, MergeSplitBetweenDeviceAndHostGivesTheSameBits) {
  std::vector<std::shared_ptr<LoraFile>> files;
  std::vector<BoundLora> bound;
  for (const Case& c : format_cases()) {
    files.push_back(std::make_shared<LoraFile>(read_lora(write_lora("split_" + c.name, c.tensors))));
    bound.push_back(bind_lora(files.back(), base().dit, base().te));
  }
  std::vector<WeightedLora> set;
  for (size_t i = 0; i < bound.size(); ++i) set.push_back({&bound[i], 0.3f * float(i) - 1.0f});
  const MergedWeights all = merge_loras(base().dit, base().te, set);
  const LoraMergePlan plan(set);
  auto host = make_host_backend();
  for (int resident : {0, 2, 4}) {
    SCOPED_TRACE("resident blocks " + std::to_string(resident));
    auto kept = [resident](const std::string& name) {
      const size_t at = name.rfind("layers.", 0) == 0 ? 7 : std::string::npos;
      return at == std::string::npos || std::stoi(name.substr(at)) < resident;
    };
    const LoraMergePlan::Merged rest = plan.merge_into_copies(base().dit, false, kept);
    int on_device = 0;
    for (const std::string& name : base().dit.names()) {
      Tensor t = host_tensor(base().dit.info(name).dtype, base().dit.info(name).shape);
      std::memcpy(t.data, rest.weights.get(name).data, t.nbytes());
      if (kept(name) && plan.merge_on_device(*host, name, t)) ++on_device;
      const Tensor want = all.dit.get(name);
      EXPECT_EQ(0, std::memcmp(t.data, want.data, t.nbytes())) << name;
    }
    EXPECT_EQ(on_device + rest.tensors, all.dit_tensors);
    EXPECT_GT(on_device, 0);
  }
  const LoraMergePlan::Merged te = plan.merge_into_copies(base().te, true);
  EXPECT_EQ(te.tensors, all.te_tensors);
  for (const std::string& name : base().te.names()) {
    const Tensor x = te.weights.get(name), y = all.te.get(name);
    EXPECT_EQ(0, std::memcmp(x.data, y.data, x.nbytes())) << name;
  }
}

// Where the engine merges resident DiT weights on a device: the streaming source's hook sees
// every tensor it keeps resident, once, right after its upload (the fixed part and the first
// `resident` blocks), and none of the streamed blocks' tensors.
TEST(Lora, ResidentHookSeesEveryResidentTensorOnce) {
  const DitConfig cfg = parse_dit_config(kTiny + "/transformer/config.json");
  auto be = make_host_backend();
  for (int resident : {0, 2, int(cfg.layers)}) {
    std::map<std::string, int> seen;
    auto source = make_resident_streaming_source(*be, base().dit, cfg, resident, kPackMinValues,
                                                 [&](const std::string& name, Tensor& t) {
                                                   ++seen[name];
                                                   EXPECT_EQ(t.numel(), base().dit.get(name).numel()) << name;
                                                 });
    size_t want = 0;
    for (const std::string& name : base().dit.names()) {
      if (name == "rope.bands") continue;  // recomputed, never uploaded
      const int b = block_index(name);
      const bool kept = b < 0 || b < resident;
      want += kept;
      EXPECT_EQ(seen.count(name) ? seen[name] : 0, kept ? 1 : 0) << name << " with " << resident << " resident";
    }
    EXPECT_EQ(seen.size(), want);
  }
}

TEST(Lora, RefusalsNameFileAndTensor) {
  std::mt19937 rng(11);
  struct Refusal {
    std::string name;
    Named tensors;
    std::string says;  // besides the file's path
  };
  const Tensor nan_down = [&] {
    Tensor t = random_tensor({4, 128}, rng);
    t.ptr<float>()[5] = std::nanf("");
    return t;
  }();
  const Tensor inf_up = [&] {
    Tensor t = random_tensor({128, 4}, rng);
    t.ptr<float>()[9] = INFINITY;
    return t;
  }();
  const std::vector<Refusal> refusals = {
      {"unknown_suffix", {{"layers.0.proj.q.weight", random_tensor({128, 128}, rng)}}, "'layers.0.proj.q.weight': not a LoRA tensor"},
      {"dora", {{"layers.0.proj.q.lora_A.weight", random_tensor({4, 128}, rng)}, {"layers.0.proj.q.dora_scale", random_tensor({128, 1}, rng)}}, "DoRA"},
      {"sdxl", {{"lora_unet_input_blocks_4_1_proj_in.lora_down.weight", random_tensor({4, 320}, rng)}, {"lora_unet_input_blocks_4_1_proj_in.lora_up.weight", random_tensor({320, 4}, rng)}}, "Stable Diffusion 1.x/2.x/XL UNet"},
      {"flux", {{"transformer.double_blocks.0.img_attn.qkv.lora_A.weight", random_tensor({4, 64}, rng)}, {"transformer.double_blocks.0.img_attn.qkv.lora_B.weight", random_tensor({192, 4}, rng)}}, "FLUX.1"},
      {"rank_mismatch", {{"transformer.layers.0.proj.q.lora_A.weight", random_tensor({4, 128}, rng)}, {"transformer.layers.0.proj.q.lora_B.weight", random_tensor({128, 8}, rng)}}, "rank mismatch"},
      {"shape_misfit", {{"transformer.layers.0.proj.q.lora_A.weight", random_tensor({4, 96}, rng)}, {"transformer.layers.0.proj.q.lora_B.weight", random_tensor({128, 4}, rng)}}, "is [128, 128]"},
      {"nan", {{"transformer.layers.0.proj.q.lora_A.weight", nan_down}, {"transformer.layers.0.proj.q.lora_B.weight", random_tensor({128, 4}, rng)}}, "NaN"},
      {"inf", {{"transformer.layers.0.proj.q.lora_A.weight", random_tensor({4, 128}, rng)}, {"transformer.layers.0.proj.q.lora_B.weight", inf_up}}, "Inf"},
      {"half_matches", {{"transformer.layers.0.proj.q.lora_A.weight", random_tensor({4, 128}, rng)}, {"transformer.layers.0.proj.q.lora_B.weight", random_tensor({128, 4}, rng)}, {"transformer.layers.9.proj.q.lora_A.weight", random_tensor({4, 128}, rng)}, {"transformer.layers.9.proj.q.lora_B.weight", random_tensor({128, 4}, rng)}}, "'transformer.layers.9.proj.q' matches no weight"},
      {"missing_up", {{"transformer.layers.0.proj.q.lora_A.weight", random_tensor({4, 128}, rng)}}, "'up' tensor is missing"},
      {"alpha_alone", {{"transformer.layers.0.proj.q.alpha", scalar(1)}}, "no LoRA weights"},
      {"alpha_not_scalar", {{"transformer.layers.0.proj.q.alpha", random_tensor({2}, rng)}}, "one value"},
      {"bias_on_biasless", {{"layers.0.proj.q.diff_b", random_tensor({128}, rng)}}, "has no bias"},
      {"conv", {{"lora_unet_layers_0_proj_q.lora_down.weight", random_tensor({4, 128, 1, 1}, rng)}, {"lora_unet_layers_0_proj_q.lora_up.weight", random_tensor({128, 4, 1, 1}, rng)}}, "2-D expected"},
  };
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.name);
    const std::string path = write_lora("refused_" + r.name, r.tensors);
    const Error e = error_of([&] { bind_lora(std::make_shared<LoraFile>(read_lora(path)), base().dit, base().te); });
    EXPECT_EQ(e.code(), ExitCode::Usage);
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(r.says), std::string::npos) << msg;
  }
  const Error pickle = error_of([&] { read_lora(testing::TempDir() + "style.ckpt"); });
  EXPECT_NE(std::string(pickle.what()).find(".safetensors files"), std::string::npos);
}

TEST(Lora, RequestFieldFromTextAndJson) {
  GenerationRequest r;
  set_field(r, RequestField::Lora, std::string("a/style.safetensors:0.5"));
  set_field(r, RequestField::Lora, std::string("b.safetensors"));
  set_field(r, RequestField::Lora, std::string("c:d.safetensors:-1.25"));
  set_field(r, RequestField::Lora, std::string("odd:name.safetensors"));
  ASSERT_EQ(r.loras.size(), 4u);
  EXPECT_EQ(r.loras[0].path, "a/style.safetensors");
  EXPECT_EQ(r.loras[0].name, "style");
  EXPECT_EQ(r.loras[0].weight, 0.5f);
  EXPECT_EQ(r.loras[1].weight, 1.0f);
  EXPECT_EQ(r.loras[2].path, "c:d.safetensors");
  EXPECT_EQ(r.loras[2].weight, -1.25f);
  EXPECT_EQ(r.loras[3].path, "odd:name.safetensors");
  for (const std::string bad : {"x.safetensors:101", "x.safetensors:-100.5", ":0.5"}) {
    GenerationRequest q;
    EXPECT_THROW(set_field(q, RequestField::Lora, bad), FieldError) << bad;
  }
  GenerationRequest many;
  for (int i = 0; i < kMaxLoras; ++i) set_field(many, RequestField::Lora, "l" + std::to_string(i) + ".safetensors");
  try {
    set_field(many, RequestField::Lora, std::string("one_more.safetensors"));
    ADD_FAILURE() << "a 17th LoRA was taken";
  } catch (const FieldError& e) {
    EXPECT_NE(e.cli.find("--lora 'one_more.safetensors': at most 16"), std::string::npos) << e.cli;
  }
  GenerationRequest j;
  set_field(j, RequestField::Lora,
            nlohmann::json::parse(R"([{"name": "s", "path": "/x/s.safetensors", "weight": 0.8, "hash": "0123456789ab"}, "t.safetensors:2"])"));
  ASSERT_EQ(j.loras.size(), 2u);
  EXPECT_EQ(j.loras[0].hash, "0123456789ab");
  EXPECT_EQ(j.loras[0].weight, 0.8f);
  EXPECT_EQ(j.loras[1].weight, 2.0f);
  for (const char* bad : {R"("x")", R"([1])", R"([{"weight": "1"}])", R"([{"path": "x", "weight": 500}])"}) {
    GenerationRequest q;
    EXPECT_THROW(set_field(q, RequestField::Lora, nlohmann::json::parse(bad)), FieldError) << bad;
  }
}

TEST(Lora, RecordListsNameWeightAndHash) {
  RunRecord rec;
  rec.request.loras = {{"/m/style.safetensors", "style", 0.8f, "0123456789ab"}, {"/m/fix.safetensors", "fix", -1, "ba9876543210"}};
  const std::string params = a1111_parameters(rec);
  EXPECT_NE(params.find("Lora hashes: \"style: 0123456789ab, fix: ba9876543210\""), std::string::npos) << params;
  EXPECT_NE(params.find("Lora weights: \"style: 0.8, fix: -1\""), std::string::npos) << params;
  const nlohmann::json j = nlohmann::json::parse(record_json(rec));
  ASSERT_EQ(j["loras"].size(), 2u);
  EXPECT_EQ(j["loras"][1]["path"], "/m/fix.safetensors");
  // The record's list reads back through the request field (what --from-png replay does).
  GenerationRequest back;
  set_field(back, RequestField::Lora, j["loras"]);
  ASSERT_EQ(back.loras.size(), 2u);
  EXPECT_EQ(back.loras[0].weight, 0.8f);
  EXPECT_EQ(back.loras[1].hash, "ba9876543210");
  RunRecord none;
  EXPECT_FALSE(nlohmann::json::parse(record_json(none)).contains("loras"));
  EXPECT_EQ(a1111_parameters(none).find("Lora"), std::string::npos);
}

TEST(Lora, PromptTagsTakenOut) {
  struct Case {
    std::string prompt, left;
    std::vector<std::pair<std::string, float>> tags;
  };
  const std::vector<Case> cases = {
      {"an apple <lora:style:0.8>", "an apple ", {{"style", 0.8f}}},
      {"<lora:a><lyco:b:-1.5> x <lora:c:2>", " x ", {{"a", 1.0f}, {"b", -1.5f}, {"c", 2.0f}}},
      {"no tags <lora", "no tags <lora", {}},
      {"<LORA:x:1> stays (A1111's tags are lower case)", "<LORA:x:1> stays (A1111's tags are lower case)", {}},
      {"ünïcode <lora:名前:0.5>!", "ünïcode !", {{"名前", 0.5f}}},
  };
  for (const Case& c : cases) {
    std::string p = c.prompt;
    const std::vector<LoraTag> tags = take_lora_tags(p);
    EXPECT_EQ(p, c.left) << c.prompt;
    ASSERT_EQ(tags.size(), c.tags.size()) << c.prompt;
    for (size_t i = 0; i < tags.size(); ++i) {
      EXPECT_EQ(tags[i].name, c.tags[i].first);
      EXPECT_EQ(tags[i].weight, c.tags[i].second);
    }
  }
  for (const std::string bad : {"<lora::1>", "<lora:a:x>", "<lora:a:1:2>", "<lora:a:101>", "<lora:a:>"}) {
    std::string p = bad;
    EXPECT_THROW(take_lora_tags(p), std::invalid_argument) << bad;
  }
}

TEST(Lora, LibraryFindsListsAndRescans) {
  const std::string dir = testing::TempDir() + "lora_library";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/sub");
  std::mt19937 rng(5);
  write_safetensors(dir + "/style.safetensors", {{"x.lora_A.weight", random_tensor({1, 2}, rng)}}, {{"ss_note", "hi"}});
  write_safetensors(dir + "/sub/fix.safetensors", {{"x.lora_A.weight", random_tensor({1, 2}, rng)}});
  std::ofstream(dir + "/readme.txt") << "not a LoRA";
  LoraLibrary lib(dir);
  EXPECT_EQ(lib.find("style"), dir + "/style.safetensors");
  EXPECT_EQ(lib.find("fix"), dir + "/sub/fix.safetensors");
  EXPECT_EQ(lib.find("readme"), "");
  const nlohmann::json list = lib.a1111_list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["name"], "fix");
  EXPECT_EQ(list[0]["path"], "sub/fix.safetensors");  // relative: the server's folders stay its own
  EXPECT_EQ(list[1]["alias"], "style");
  EXPECT_EQ(list[1]["metadata"]["ss_note"], "hi");
  std::filesystem::remove(dir + "/style.safetensors");
  write_safetensors(dir + "/new.safetensors", {{"x.lora_A.weight", random_tensor({1, 2}, rng)}});
  EXPECT_NE(lib.find("style"), "");  // until the rescan
  lib.rescan();
  EXPECT_EQ(lib.find("style"), "");
  EXPECT_EQ(lib.find("new"), dir + "/new.safetensors");
  EXPECT_EQ(error_of([&] { LoraLibrary none(dir + "/absent"); }).code(), ExitCode::Usage);
}

TEST(Lora, RequestBodiesTakeTagsFromTheLibrary) {
  const std::string dir = testing::TempDir() + "lora_bodies";
  std::filesystem::create_directories(dir);
  std::mt19937 rng(9);
  write_safetensors(dir + "/style.safetensors", {{"x.lora_A.weight", random_tensor({1, 2}, rng)}});
  LoraLibrary lib(dir);
  RequestContext server;
  server.loras = &lib;
  auto parse = [](const char* body, const RequestContext& c) { return parse_a1111_request(nlohmann::json::parse(body), c); };
  const A1111Request ok = parse(R"({"prompt": "an apple <lora:style:0.8>", "negative_prompt": "blur <lora:style:1>"})", server);
  const GenerationRequest& r = ok.images.at(0);
  EXPECT_EQ(r.prompt, "an apple ");
  EXPECT_EQ(r.negative, "blur ");
  ASSERT_EQ(r.loras.size(), 1u);
  EXPECT_EQ(r.loras[0].path, dir + "/style.safetensors");
  EXPECT_EQ(r.loras[0].weight, 0.8f);
  EXPECT_NE(ok.lora_note.find("negative prompt are ignored"), std::string::npos);
  const A1111Request off = parse(R"({"prompt": "a <lora:style:1>", "disable_extra_networks": true})", server);
  EXPECT_EQ(off.images.at(0).prompt, "a <lora:style:1>");
  EXPECT_TRUE(off.images.at(0).loras.empty());
  struct Refused {
    const char* body;
    const char* field;
    const char* says;
  };
  for (const Refused& f : {Refused{R"({"prompt": "a <lora:other:1>"})", "prompt", "unknown LoRA 'other'"},
                           Refused{R"({"prompt": "a <lora:style:9000>"})", "prompt", "between -100 and 100"},
                           Refused{R"({"prompt": "a", "lora": ["/etc/passwd"]})", "lora", "LoRA files named by a client"},
                           Refused{R"({"prompt": "a <hypernet:h:1>"})", "prompt", "not supported"}}) {
    try {
      parse(f.body, server);
      ADD_FAILURE() << f.body;
    } catch (const RequestError& e) {
      EXPECT_EQ(e.status, 422) << f.body;
      EXPECT_EQ(e.field, f.field) << f.body;
      EXPECT_NE(std::string(e.what()).find(f.says), std::string::npos) << e.what();
    }
  }
  RequestContext jobs;  // a jobs line may name files; its tags need --lora-dir
  jobs.allow_output = true;
  const A1111Request line = parse(R"({"prompt": "a", "lora": ["x.safetensors:0.5"]})", jobs);
  EXPECT_EQ(line.images.at(0).loras.at(0).path, "x.safetensors");
  EXPECT_THROW(parse(R"({"prompt": "a <lora:style:1>"})", jobs), RequestError);
}

namespace {

// A LoRA of one PEFT module per 2-D DiT weight of the tiny model (41 modules: enough to spread
// over the thread pool's workers), its factors of `dtype` filled with random finite bit patterns
// and the dtype's edge values (largest finite of each sign, smallest subnormal, -0).
struct DtypeLora {
  Named tensors;
  std::vector<std::string> modules;  // in the file's (sorted) order
};
Tensor random_finite_bits(DType dtype, std::vector<int64_t> dims, std::mt19937& rng) {
  const int bits = dtype == DType::F32 ? 32 : 16;
  const uint32_t exponent = dtype == DType::F32 ? 0x7f800000u : dtype == DType::BF16 ? 0x7f80u : 0x7c00u;
  const uint32_t sign = bits == 32 ? 0x80000000u : 0x8000u;
  const std::vector<uint32_t> edges = {exponent - 1, (exponent - 1) | sign, 1, sign};
  Tensor t = host_tensor(dtype, dims);
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint32_t v = uint32_t(rng()) & (bits == 32 ? 0xffffffffu : 0xffffu);
    if ((v & exponent) == exponent) v &= ~(exponent & ~(exponent >> 1));  // its top exponent bit off: finite
    if (i < int64_t(edges.size())) v = edges[size_t(i)];
    if (bits == 32) t.ptr<uint32_t>()[i] = v;
    else t.ptr<uint16_t>()[i] = uint16_t(v);
  }
  return t;
}
DtypeLora dtype_lora(DType dtype, std::mt19937& rng) {
  auto fill = [&](std::vector<int64_t> dims) { return random_finite_bits(dtype, dims, rng); };
  DtypeLora l;
  for (const std::string& name : base().dit.names()) {
    const TensorInfo& info = base().dit.info(name);
    if (name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0 || info.shape.size() != 2) continue;
    const std::string module = "transformer." + name.substr(0, name.size() - 7);
    l.tensors.push_back({module + ".lora_A.weight", fill({4, info.shape[1]})});
    l.tensors.push_back({module + ".lora_B.weight", fill({info.shape[0], 4})});
    l.modules.push_back(module);
  }
  std::sort(l.modules.begin(), l.modules.end());
  return l;
}

void set_bits(Tensor& t, int64_t i, uint32_t v) {
  if (t.dtype == DType::F32) t.ptr<uint32_t>()[i] = v;
  else t.ptr<uint16_t>()[i] = uint16_t(v);
}

}  // namespace

// NaN and Inf are found from the bits of each dtype a LoRA may hold (f32, bf16, f16): quiet and
// signalling NaN, both infinities, at the first and last value of a factor, in an early and a late
// module; the dtype's largest finite values and subnormals pass. With two bad modules, the first in
// the file's order is the one named, however the modules were split over the threads.
TEST(Lora, NonFiniteValuesRefusedInEveryDtype) {
  std::mt19937 rng(4747);
  for (const DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const DtypeLora clean = dtype_lora(dtype, rng);
    ASSERT_GT(clean.modules.size(), 8u);
    const std::string clean_path = write_lora(std::string("finite_") + dtype_name(dtype), clean.tensors);
    EXPECT_NO_THROW(bind_lora(std::make_shared<LoraFile>(read_lora(clean_path)), base().dit, base().te));
    const uint32_t exponent = dtype == DType::F32 ? 0x7f800000u : dtype == DType::BF16 ? 0x7f80u : 0x7c00u;
    const uint32_t sign = dtype == DType::F32 ? 0x80000000u : 0x8000u;
    const uint32_t top_mantissa = dtype == DType::F32 ? 0x00400000u : dtype == DType::BF16 ? 0x0040u : 0x0200u;
    const std::pair<uint32_t, const char*> bad_values[] = {
        {exponent | top_mantissa, "NaN"}, {exponent | 1, "NaN"}, {exponent | sign | 1, "NaN"},
        {exponent, "Inf"}, {exponent | sign, "Inf"}};
    const size_t late = clean.modules.size() - 2;
    for (const auto& [value, says] : bad_values)
      for (const size_t module : {size_t(0), late})
        for (const bool last : {false, true}) {
          Named t = clean.tensors;
          for (auto& [name, tensor] : t)
            if (name == clean.modules[module] + ".lora_B.weight") {
              Tensor copy = host_tensor(tensor.dtype, tensor.dims());
              std::memcpy(copy.data, tensor.data, copy.nbytes());
              const int64_t at = last ? copy.numel() - 1 : 0;
              set_bits(copy, at, value);
              tensor = copy;
            }
          const std::string path = write_lora(std::string("nonfinite_") + dtype_name(dtype), t);
          const Error e = error_of([&] { bind_lora(std::make_shared<LoraFile>(read_lora(path)), base().dit, base().te); });
          const std::string msg = e.what();
          const int64_t at = last ? base().dit.info(clean.modules[module].substr(12) + ".weight").shape[0] * 4 - 1 : 0;
          EXPECT_EQ(e.code(), ExitCode::Usage) << msg;
          EXPECT_NE(msg.find("module '" + clean.modules[module] + "': its up tensor holds " + says + " (value " +
                             std::to_string(at) + ")"),
                    std::string::npos)
              << msg;
        }
    // Two bad modules: the earlier one in the file is named.
    Named t = clean.tensors;
    for (auto& [name, tensor] : t)
      if (name == clean.modules[3] + ".lora_A.weight" || name == clean.modules[late] + ".lora_A.weight") {
        Tensor copy = host_tensor(tensor.dtype, tensor.dims());
        std::memcpy(copy.data, tensor.data, copy.nbytes());
        set_bits(copy, 1, exponent);
        tensor = copy;
      }
    const std::string path = write_lora(std::string("two_bad_") + dtype_name(dtype), t);
    const std::string msg =
        error_of([&] { bind_lora(std::make_shared<LoraFile>(read_lora(path)), base().dit, base().te); }).what();
    EXPECT_NE(msg.find("module '" + clean.modules[3] + "': its down tensor holds Inf (value 1)"), std::string::npos)
        << msg;
  }
}

// The factors a merge stages are the file's values widened exactly, whatever the dtype: bf16 and
// f32 take the thread pool's straight widening (a rank-1024 factor: split over the workers where
// there are several), f16 the element-by-element walk; a full delta's matrix the same way.
TEST(Lora, StagedFactorsAreTheFilesValuesWidened) {
  std::mt19937 rng(4748);
  const auto host = make_host_backend();
  const std::string low_rank = "layers.3.proj.ffn_up_gate", full = "layers.0.proj.q";
  const std::vector<int64_t> lr = base().dit.info(low_rank + ".weight").shape, fs = base().dit.info(full + ".weight").shape;
  for (const DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Named t = {{low_rank + ".lora_A.weight", random_finite_bits(dtype, {1024, lr[1]}, rng)},
                     {low_rank + ".lora_B.weight", random_finite_bits(dtype, {lr[0], 1024}, rng)},
                     {full + ".diff", random_finite_bits(dtype, fs, rng)}};
    const std::string path = write_lora(std::string("staged_") + dtype_name(dtype), t);
    const BoundLora bound = bind_lora(std::make_shared<LoraFile>(read_lora(path)), base().dit, base().te);
    int factors = 0;
    for (const LoraTarget& target : lora_targets({{&bound, 1.0f}})) {
      ASSERT_EQ(target.parts.size(), 1u) << target.name;
      const LoraModule& m = *target.parts[0].module->module;
      const LoraDelta delta = lora_deltas(target, *host)[0];
      std::vector<std::pair<const Tensor*, const Tensor*>> pairs;
      if (m.parts.count("diff")) pairs = {{&m.parts.at("diff"), &delta.f1.a}};
      else pairs = {{&m.parts.at("up"), &delta.f1.a}, {&m.parts.at("down"), &delta.f1.b}};
      for (const auto& [source, staged] : pairs) {
        ASSERT_EQ(staged->dtype, DType::F32);
        ASSERT_EQ(staged->numel(), source->numel());
        const std::vector<float> want = to_f32_vector(*source);
        EXPECT_EQ(std::memcmp(staged->data, want.data(), want.size() * sizeof(float)), 0) << m.key;
        ++factors;
      }
    }
    EXPECT_EQ(factors, 3);
  }
}
