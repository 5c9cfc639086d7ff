// The text encoder's config, tensor list and tensor-name prefix (docs/model.md sections 1 and 3).
#include <cmath>

#include "model/text_encoder.h"
#include "util/error.h"

namespace moss {

using nlohmann::json;

namespace {

// RoPE settings live in rope_parameters (transformers 5) or at the top of the text config.
double rope_number(const json& tc, const std::string& key, const std::string& file) {
  if (tc.contains("rope_parameters") && tc["rope_parameters"].is_object() && tc["rope_parameters"].contains(key))
    return config_number(tc["rope_parameters"], key, file);
  return config_number(tc, key, file);
}

std::vector<TextLayerKind> parse_layer_types(const json& tc, int64_t layers, const std::string& file) {
  std::vector<TextLayerKind> kinds;
  if (!tc.contains("layer_types")) {
    // Qwen3.5's default: every full_attention_interval-th layer is full attention.
    const int64_t interval = tc.contains("full_attention_interval") ? config_int(tc, "full_attention_interval", file) : 4;
    if (interval <= 0) throw failure(file + ": key 'full_attention_interval' must be positive");
    for (int64_t i = 0; i < layers; ++i)
      kinds.push_back((i + 1) % interval == 0 ? TextLayerKind::FullAttention : TextLayerKind::LinearAttention);
    return kinds;
  }
  const json& lt = tc["layer_types"];
  if (!lt.is_array() || int64_t(lt.size()) != layers)
    throw failure(file + ": key 'layer_types' must list num_hidden_layers (" + std::to_string(layers) + ") entries");
  for (const json& e : lt) {
    const std::string s = e.is_string() ? e.get<std::string>() : e.dump();
    if (s == "linear_attention")
      kinds.push_back(TextLayerKind::LinearAttention);
    else if (s == "full_attention")
      kinds.push_back(TextLayerKind::FullAttention);
    else
      throw failure(file + ": key 'layer_types' has unknown layer type '" + s + "'");
  }
  return kinds;
}

}  // namespace

TextEncoderConfig parse_text_encoder_config(const std::string& path) {
  return text_encoder_config_from_json(read_json_file(path), path);
}

TextEncoderConfig text_encoder_config_from_json(const json& root, const std::string& path) {
  const json& tc = root.contains("text_config") ? root["text_config"] : root;
  const std::string file = root.contains("text_config") ? path + " (text_config)" : path;
  TextEncoderConfig c;
  c.file = path;
  // Sizes and counts: positive (config_int's lower bound) and bounded.
  read_config_ints(tc, file,
                   {{c.hidden, "hidden_size"}, {c.layers, "num_hidden_layers", kConfigLayersMax},
                    {c.intermediate, "intermediate_size"}, {c.vocab, "vocab_size"}, {c.heads, "num_attention_heads"},
                    {c.kv_heads, "num_key_value_heads"}, {c.head_dim, "head_dim"},
                    {c.linear_key_heads, "linear_num_key_heads"}, {c.linear_key_dim, "linear_key_head_dim"},
                    {c.linear_value_heads, "linear_num_value_heads"}, {c.linear_value_dim, "linear_value_head_dim"},
                    {c.conv_kernel, "linear_conv_kernel_dim"}});
  c.eps = float(config_number(tc, "rms_norm_eps", file));
  c.rope_theta = rope_number(tc, "rope_theta", file);
  const double partial = rope_number(tc, "partial_rotary_factor", file);

  if (c.heads % c.kv_heads != 0)
    throw failure(file + ": key 'num_attention_heads' must be a multiple of 'num_key_value_heads'");
  if (c.linear_value_heads % c.linear_key_heads != 0)
    throw failure(file + ": key 'linear_num_value_heads' must be a multiple of 'linear_num_key_heads'");
  if (!(c.eps > 0)) throw failure(file + ": key 'rms_norm_eps' must be positive");
  if (!(c.rope_theta > 0)) throw failure(file + ": key 'rope_theta' must be positive");
  // transformers takes int(head_dim · factor) as the rotary width.
  if (!(partial > 0 && partial <= 1))
    throw failure(file + ": key 'partial_rotary_factor' must lie in (0, 1]");
  c.rot_dim = int64_t(double(c.head_dim) * partial);
  if (c.rot_dim < 2 || c.rot_dim % 2 != 0)
    throw failure(file + ": key 'partial_rotary_factor' gives an unusable rotary width " + std::to_string(c.rot_dim));
  if (tc.contains("hidden_act") && tc["hidden_act"] != "silu")
    throw usage_error(file + ": key 'hidden_act' is " + tc["hidden_act"].dump() + "; only silu is supported");
  c.layer_types = parse_layer_types(tc, c.layers, file);
  return c;
}

std::vector<ExpectedTensor> text_encoder_expected_tensors(const TextEncoderConfig& c, const std::string& prefix) {
  // Matrices must be bf16 (the device kernels read bf16); the small vectors (norms, A_log,
  // dt_bias) may be stored in fp32 as well.
  const std::vector<DType> matrix = {DType::BF16}, vec = {DType::BF16, DType::F32};
  std::vector<ExpectedTensor> out;
  auto add = [&](const std::string& name, const std::vector<DType>& dt, std::vector<int64_t> shape) {
    out.push_back({prefix + name, dt, std::move(shape), false});
  };
  add("embed_tokens.weight", matrix, {c.vocab, c.hidden});
  add("norm.weight", vec, {c.hidden});
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", vec, {c.hidden});
    add(p + "post_attention_layernorm.weight", vec, {c.hidden});
    add(p + "mlp.gate_proj.weight", matrix, {c.intermediate, c.hidden});
    add(p + "mlp.up_proj.weight", matrix, {c.intermediate, c.hidden});
    add(p + "mlp.down_proj.weight", matrix, {c.hidden, c.intermediate});
    if (c.layer_types[size_t(l)] == TextLayerKind::FullAttention) {
      const std::string a = p + "self_attn.";
      add(a + "q_proj.weight", matrix, {2 * c.heads * c.head_dim, c.hidden});
      add(a + "k_proj.weight", matrix, {c.kv_heads * c.head_dim, c.hidden});
      add(a + "v_proj.weight", matrix, {c.kv_heads * c.head_dim, c.hidden});
      add(a + "o_proj.weight", matrix, {c.hidden, c.heads * c.head_dim});
      add(a + "q_norm.weight", vec, {c.head_dim});
      add(a + "k_norm.weight", vec, {c.head_dim});
    } else {
      const std::string a = p + "linear_attn.";
      add(a + "in_proj_qkv.weight", matrix, {c.conv_width(), c.hidden});
      add(a + "in_proj_z.weight", matrix, {c.linear_value_width(), c.hidden});
      add(a + "in_proj_b.weight", matrix, {c.linear_value_heads, c.hidden});
      add(a + "in_proj_a.weight", matrix, {c.linear_value_heads, c.hidden});
      add(a + "conv1d.weight", matrix, {c.conv_width(), 1, c.conv_kernel});
      add(a + "dt_bias", vec, {c.linear_value_heads});
      add(a + "A_log", vec, {c.linear_value_heads});
      add(a + "norm.weight", vec, {c.linear_value_dim});
      add(a + "out_proj.weight", matrix, {c.hidden, c.linear_value_width()});
    }
  }
  return out;
}

std::vector<std::string> text_encoder_ignored_prefixes() {
  return {"model.visual.", "visual.", "mtp.", "lm_head."};
}

std::string text_encoder_prefix(const WeightFiles& weights) {
  for (const char* p : {"model.language_model.", "language_model."})
    if (weights.has(std::string(p) + "embed_tokens.weight")) return p;
  throw failure(weights.folder() +
                ": no 'language_model.embed_tokens.weight' or 'model.language_model.embed_tokens.weight'; "
                "not a Qwen3.5 text encoder folder");
}

}  // namespace moss
