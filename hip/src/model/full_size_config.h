// MOSS-Image's published configs (transformer/config.json, text_encoder/config.json,
// vae/config.json), written down once: `bench` times these shapes with nothing on disk
// (diagnostics/bench_stages.cpp parses them as the CLI parses a model folder's files), and
// tools/bench_random_model.cpp writes them into a random-weight model folder. Only the layer
// counts vary (a shallow text encoder writes and loads in seconds).
#pragma once

#include <nlohmann/json.hpp>

namespace moss {

constexpr int kFullSizeDitLayers = 42;
constexpr int kFullSizeTextEncoderLayers = 32;

nlohmann::json full_size_dit_config(int layers = kFullSizeDitLayers);
nlohmann::json full_size_text_encoder_config(int layers = kFullSizeTextEncoderLayers);  // Qwen3.5-9B
nlohmann::json full_size_vae_config();                                                   // FLUX.2 small decoder

}  // namespace moss
