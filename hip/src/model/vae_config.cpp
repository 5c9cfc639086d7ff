// vae/config.json and the decoder's tensor list (docs/vae.md sections 3.5 and 3.7).
#include "model/vae_config.h"

#include "util/error.h"

namespace moss {

using nlohmann::json;

namespace {

std::vector<int64_t> int_list(const json& j, const std::string& key, const std::string& file) {
  if (!j.contains(key)) throw failure(file + ": missing key '" + key + "'");
  const json& v = j.at(key);
  if (!v.is_array() || v.empty()) throw failure(file + ": key '" + key + "' must be a non-empty list of integers");
  std::vector<int64_t> out;
  for (const json& e : v) {
    if (!e.is_number_integer() || e.get<int64_t>() <= 0)
      throw failure(file + ": key '" + key + "' must list positive integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

bool optional_bool(const json& j, const std::string& key, bool fallback, const std::string& file) {
  if (!j.contains(key)) return fallback;
  if (!j.at(key).is_boolean()) throw failure(file + ": key '" + key + "' must be true or false");
  return j.at(key).get<bool>();
}

// Keys that name the kind of VAE: anything but FLUX.2's decoder is a different model.
void require_supported_kind(const json& j, const std::string& file, int64_t levels) {
  auto require_string = [&](const json& v, const char* key, const char* want) {
    if (!v.is_string() || v.get<std::string>() != want)
      throw usage_error(file + ": key '" + key + "' is " + v.dump() + "; only " + want + " is supported");
  };
  if (j.contains("_class_name")) require_string(j["_class_name"], "_class_name", "AutoencoderKLFlux2");
  if (j.contains("act_fn")) require_string(j["act_fn"], "act_fn", "silu");
  if (j.contains("up_block_types")) {
    const json& t = j["up_block_types"];
    if (!t.is_array() || int64_t(t.size()) != levels)
      throw failure(file + ": key 'up_block_types' must list one block per decoder level (" +
                    std::to_string(levels) + ")");
    for (const json& e : t) require_string(e, "up_block_types", "UpDecoderBlock2D");
  }
}

int64_t patch_size(const json& j, const std::string& file) {
  if (!j.contains("patch_size")) return 2;  // diffusers' default
  const json& v = j["patch_size"];
  std::vector<int64_t> p;
  if (v.is_number_integer())
    p = {v.get<int64_t>(), v.get<int64_t>()};
  else
    p = int_list(j, "patch_size", file);
  if (p.size() != 2 || p[0] <= 0) throw failure(file + ": key 'patch_size' must be [p, p]");
  if (p[0] != p[1]) throw usage_error(file + ": key 'patch_size' " + v.dump() + ": only square patches are supported");
  return p[0];
}

void add(std::vector<ExpectedTensor>& out, const std::string& name, std::vector<int64_t> shape) {
  out.push_back({name, {DType::F32, DType::BF16, DType::F16}, std::move(shape), false});
}
void add_conv(std::vector<ExpectedTensor>& out, const std::string& name, int64_t cout, int64_t cin, int64_t k) {
  add(out, name + ".weight", {cout, cin, k, k});
  add(out, name + ".bias", {cout});
}
void add_norm(std::vector<ExpectedTensor>& out, const std::string& name, int64_t c) {
  add(out, name + ".weight", {c});
  add(out, name + ".bias", {c});
}
void add_resnet(std::vector<ExpectedTensor>& out, const std::string& p, int64_t cin, int64_t cout) {
  add_norm(out, p + ".norm1", cin);
  add_conv(out, p + ".conv1", cout, cin, 3);
  add_norm(out, p + ".norm2", cout);
  add_conv(out, p + ".conv2", cout, cout, 3);
  if (cin != cout) add_conv(out, p + ".conv_shortcut", cout, cin, 1);
}

}  // namespace

VaeConfig parse_vae_config(const std::string& path) { return vae_config_from_json(read_json_file(path), path); }

VaeConfig vae_config_from_json(const json& j, const std::string& path) {
  VaeConfig c;
  c.file = path;
  c.block_out_channels = int_list(j, j.contains("decoder_block_out_channels") ? "decoder_block_out_channels"
                                                                              : "block_out_channels", path);
  require_supported_kind(j, path, c.levels());
  c.latent_channels = config_int(j, "latent_channels", path);
  c.layers_per_block = config_int(j, "layers_per_block", path, 1, 64);
  c.norm_num_groups = config_int(j, "norm_num_groups", path);
  if (j.contains("batch_norm_eps")) c.batch_norm_eps = float(config_number(j, "batch_norm_eps", path));
  if (j.contains("out_channels")) c.out_channels = config_int(j, "out_channels", path);
  c.patch_size = patch_size(j, path);
  c.use_post_quant_conv = optional_bool(j, "use_post_quant_conv", true, path);
  c.mid_block_add_attention = optional_bool(j, "mid_block_add_attention", true, path);

  for (auto [v, key] : {std::pair<int64_t, const char*>{c.latent_channels, "latent_channels"},
                        {c.norm_num_groups, "norm_num_groups"}, {c.out_channels, "out_channels"}})
    if (v <= 0) throw failure(path + ": key '" + key + "' must be positive");
  if (c.layers_per_block < 0) throw failure(path + ": key 'layers_per_block' must not be negative");
  if (!(c.batch_norm_eps >= 0)) throw failure(path + ": key 'batch_norm_eps' must not be negative");
  for (int64_t ch : c.block_out_channels)
    if (ch % c.norm_num_groups != 0)
      throw failure(path + ": decoder width " + std::to_string(ch) + " is not a multiple of norm_num_groups (" +
                    std::to_string(c.norm_num_groups) + ")");
  if (c.levels() > 8) throw failure(path + ": more than 8 decoder levels");
  return c;
}

std::vector<ExpectedTensor> vae_expected_tensors(const VaeConfig& c) {
  std::vector<ExpectedTensor> out;
  const int64_t P = c.packed_channels(), L = c.latent_channels, n = c.levels();
  add(out, "bn.running_mean", {P});
  add(out, "bn.running_var", {P});
  out.push_back({"bn.num_batches_tracked", {DType::I64}, {}, true});
  if (c.use_post_quant_conv) add_conv(out, "post_quant_conv", L, L, 1);

  // The decoder runs its levels deepest first: up_blocks.i has width C(n-1-i).
  auto width = [&](int64_t up_block) { return c.block_out_channels[size_t(n - 1 - up_block)]; };
  const int64_t deepest = width(0);
  add_conv(out, "decoder.conv_in", deepest, L, 3);
  add_resnet(out, "decoder.mid_block.resnets.0", deepest, deepest);
  if (c.mid_block_add_attention) {
    const std::string a = "decoder.mid_block.attentions.0";
    add_norm(out, a + ".group_norm", deepest);
    for (const char* proj : {".to_q", ".to_k", ".to_v", ".to_out.0"}) {
      add(out, a + proj + ".weight", {deepest, deepest});
      add(out, a + proj + ".bias", {deepest});
    }
  }
  add_resnet(out, "decoder.mid_block.resnets.1", deepest, deepest);
  int64_t prev = deepest;
  for (int64_t i = 0; i < n; ++i) {
    const std::string p = "decoder.up_blocks." + std::to_string(i);
    for (int64_t r = 0; r <= c.layers_per_block; ++r) {
      add_resnet(out, p + ".resnets." + std::to_string(r), prev, width(i));
      prev = width(i);
    }
    if (i + 1 < n) add_conv(out, p + ".upsamplers.0.conv", prev, prev, 3);
  }
  add_norm(out, "decoder.conv_norm_out", prev);
  add_conv(out, "decoder.conv_out", c.out_channels, prev, 3);
  return out;
}

std::vector<std::string> vae_ignored_prefixes() { return {"encoder.", "quant_conv."}; }

}  // namespace moss
