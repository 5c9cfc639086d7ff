#include "model/full_size_config.h"

namespace moss {

using nlohmann::json;

json full_size_dit_config(int layers) {
  return {{"_class_name", "MOSSImageTransformer"}, {"dim", 3072}, {"ffn_dim", 8192}, {"num_heads", 24},
          {"num_layers", layers}, {"text_dim", 4096}, {"freq_dim", 256}, {"latent_channels", 128},
          {"rope_base", 10000.0}};
}

json full_size_text_encoder_config(int layers) {
  // Every fourth layer full attention, the others Gated DeltaNet (spec/model.md).
  json layer_types = json::array();
  for (int i = 0; i < layers; ++i) layer_types.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  return {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
          {"model_type", "qwen3_5"},
          {"torch_dtype", "bfloat16"},
          {"text_config",
           {{"model_type", "qwen3_5_text"}, {"vocab_size", 248320}, {"hidden_size", 4096},
            {"intermediate_size", 12288}, {"num_hidden_layers", layers}, {"num_attention_heads", 16},
            {"num_key_value_heads", 4}, {"head_dim", 256}, {"hidden_act", "silu"}, {"rms_norm_eps", 1e-6},
            {"attention_bias", false}, {"linear_conv_kernel_dim", 4}, {"linear_key_head_dim", 128},
            {"linear_value_head_dim", 128}, {"linear_num_key_heads", 16}, {"linear_num_value_heads", 32},
            {"layer_types", layer_types}, {"max_position_embeddings", 262144},
            {"partial_rotary_factor", 0.25},
            {"rope_parameters",
             {{"rope_type", "default"}, {"rope_theta", 10000000.0}, {"partial_rotary_factor", 0.25},
              {"mrope_section", {11, 11, 10}}, {"mrope_interleaved", true}}}}}};
}

json full_size_vae_config() {
  return {{"_class_name", "AutoencoderKLFlux2"}, {"act_fn", "silu"}, {"batch_norm_eps", 0.0001},
          {"batch_norm_momentum", 0.1}, {"block_out_channels", {128, 256, 512, 512}},
          {"decoder_block_out_channels", {96, 192, 384, 384}},
          {"down_block_types", {"DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D"}},
          {"up_block_types", {"UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"}},
          {"in_channels", 3}, {"out_channels", 3}, {"latent_channels", 32}, {"layers_per_block", 2},
          {"mid_block_add_attention", true}, {"norm_num_groups", 32}, {"patch_size", {2, 2}},
          {"sample_size", 1024}, {"force_upcast", true}, {"use_post_quant_conv", true},
          {"use_quant_conv", true}};
}

}  // namespace moss
