// The text encoder: Qwen3.5's language tower (docs/model.md section 3, docs/text_encoder.md
// sections 1-3 and 6). Gated DeltaNet layers and gated full-attention layers, zero-centred
// RMSNorms, a SwiGLU MLP; the output is last_hidden_state (after the final norm).
// Written once against Backend&; where the layer weights live (uploaded on use, streamed two at a
// time, or resident) is the weight source's business (model/te_weights.h).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "io/model_folder.h"
#include "io/safetensors.h"
#include "model/te_weights.h"
#include "ops/backend.h"

namespace moss {

enum class TextLayerKind { LinearAttention, FullAttention };

// Sizes from config.json's text_config (or a bare text config).
struct TextEncoderConfig {
  std::string file;  // where it was read, for messages
  int64_t hidden = 0, layers = 0, intermediate = 0, vocab = 0;
  std::vector<TextLayerKind> layer_types;  // one per layer
  // Full attention: q_proj emits, per head, head_dim query columns then head_dim gate columns.
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  int64_t rot_dim = 0;  // int(head_dim · partial_rotary_factor): RoPE on the first rot_dim dims
  double rope_theta = 0;
  // Gated DeltaNet.
  int64_t linear_key_heads = 0, linear_key_dim = 0, linear_value_heads = 0, linear_value_dim = 0;
  int64_t conv_kernel = 0;
  float eps = 1e-6f;  // every RMSNorm, the gated one included

  int64_t linear_key_width() const { return linear_key_heads * linear_key_dim; }
  int64_t linear_value_width() const { return linear_value_heads * linear_value_dim; }
  int64_t conv_width() const { return 2 * linear_key_width() + linear_value_width(); }
};

// Reads and validates the config; a missing or bad key is refused (exit 1) naming file and key.
TextEncoderConfig parse_text_encoder_config(const std::string& config_json_path);
// The same from a parsed document; `source` names it in messages and in TextEncoderConfig::file.
TextEncoderConfig text_encoder_config_from_json(const nlohmann::json& config, const std::string& source);

// Every tensor the encoder reads, with the dtypes and shapes the config implies.
std::vector<ExpectedTensor> text_encoder_expected_tensors(const TextEncoderConfig& cfg, const std::string& prefix);
// Tensors of the text_encoder folder that are never loaded (vision tower, mtp.*, an lm_head).
std::vector<std::string> text_encoder_ignored_prefixes();
// "language_model." (official files) or "model.language_model." (HF layout); anything else is
// refused naming the folder.
std::string text_encoder_prefix(const WeightFiles& weights);

// Seconds of the last encode_many: load_s brings the weights to the device before the pass
// (the resident source's one-time load; 0 when the layers stream or upload on use), encode_s is
// the pass itself (streamed: copies included).
struct TextEncoderTimes {
  double load_s = 0, encode_s = 0;
};

class TextEncoder {
 public:
  // `residency`: where the layer weights live (model/te_weights.h); Auto streams on a device.
  TextEncoder(Backend& be, const WeightFiles& weights, const TextEncoderConfig& cfg,
              TeResidency residency = TeResidency::Auto);

  // last_hidden_state [T, hidden] as a host f32 tensor. layer_hook, when given, sees each
  // layer's output (before the final norm) as a host f32 view valid during the call only.
  Tensor encode(const std::vector<int32_t>& ids, const std::function<void(int, const Tensor&)>& layer_hook = {});
  // Several prompts (the prompt and the negative) in one pass over the layers, their rows stacked
  // so each layer's weights are read once for all of them. Results equal encode() of each, bit
  // for bit, wherever the kernels treat rows independently (the host reference does).
  // layer_hook is called only when there is one prompt.
  std::vector<Tensor> encode_many(const std::vector<std::vector<int32_t>>& prompts,
                                  const std::function<void(int, const Tensor&)>& layer_hook = {});

  const TextEncoderTimes& times() const { return times_; }
  TeResidency residency() const { return residency_; }

 private:
  // The prompts of one pass stacked row-wise: prompt p owns rows [start[p], start[p] + len[p]).
  // Per-token ops (projections, norms, gates, MLP) run once over all rows, so each weight is
  // read once per layer; the causal conv, the delta rule and attention run per prompt on its rows.
  struct Batch {
    std::vector<int64_t> start, len;
    Tensor x, xn, delta;  // [rows, hidden]: residual stream, normalised input, mixer/MLP output
    Tensor sin, cos;      // RoPE tables [rows, rot_dim], each prompt's positions from 0
  };

  Tensor weight(int layer, const std::string& name);  // from the weight source, valid during the layer
  Tensor embed(const std::vector<int32_t>& ids);
  Batch make_batch(const std::vector<std::vector<int32_t>>& prompts);
  void run_layer(int layer, Batch& b);
  // The first layer of each kind on a throwaway batch of the pass's shapes, while the resident
  // layers load: first launches (module loads, allocator growth) leave the timed pass.
  void warm_up(int layer, const std::vector<std::vector<int32_t>>& prompts, std::unique_ptr<Batch>& warm);
  // y's column blocks = x · w_iᵀ for the layer's weights `names` (te_fused_groups), as one GEMM over
  // the stacked weight when the source has it, else one GEMM per weight.
  void fused_linear(int layer, const std::vector<std::string>& names, const Tensor& x, Tensor& y);
  void attention_mixer(int layer, const Batch& b, Tensor& y);
  void deltanet_mixer(int layer, const Batch& b, Tensor& y);
  void mlp(int layer, const Tensor& xn, Tensor& y);

  Backend& be_;
  WeightFiles weights_;
  TextEncoderConfig cfg_;
  std::string prefix_;
  TeResidency residency_;
  std::unique_ptr<TeWeightSource> source_;  // made on the first encode (the resident load happens there)
  TextEncoderTimes times_;
};

}  // namespace moss
