// The model folder (diffusers tree, docs/model.md section 1): configs, weights per component, and
// the check of every tensor's dtype and shape against what the configs imply. Each model
// (text encoder, DiT, VAE) states what it expects through an ExpectedTensor list; this layer
// compares, and refuses a folder that does not match with a message naming file and tensor.
#pragma once
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace moss {

struct ExpectedTensor {
  std::string name;
  std::vector<DType> dtypes;  // accepted dtypes (bf16 weights; fp32 for the VAE and rope.bands)
  std::vector<int64_t> shape;
  bool optional = false;      // may be absent (e.g. buffers that are recomputed)
};

// Parses a JSON file; a missing or malformed file is refused (exit 1) naming the file.
nlohmann::json read_json_file(const std::string& path);

// Typed config access with messages that name the file and key (exit 1 on a bad value).
// Integers must lie in [lo, hi] (sizes and counts: positive and far below what would exhaust
// memory), so a corrupt config is refused naming the key instead of failing later.
constexpr int64_t kConfigIntMax = int64_t(1) << 20;
constexpr int64_t kConfigLayersMax = 4096;
int64_t config_int(const nlohmann::json& j, const std::string& key, const std::string& file, int64_t lo = 1,
                   int64_t hi = kConfigIntMax);
double config_number(const nlohmann::json& j, const std::string& key, const std::string& file);

// One integer key of a config, for read_config_ints: the field it fills and its upper bound.
struct ConfigInt {
  int64_t& field;
  const char* key;
  int64_t hi = kConfigIntMax;
};

// Fills each listed field with config_int(j, key, file, 1, hi), in list order, so that of several
// bad keys the first listed is the one named. Every such field is positive afterwards.
void read_config_ints(const nlohmann::json& j, const std::string& file, std::initializer_list<ConfigInt> keys);

// Checks `weights` against `expected`: dtype, shape, presence. Tensors not listed whose names
// start with one of `ignored_prefixes` are allowed (the text encoder's vision tower, mtp.*);
// other unexpected tensors are refused. Quantized dtypes get exit 2 (unsupported).
void check_tensors(const WeightFiles& weights, const std::vector<ExpectedTensor>& expected,
                   const std::vector<std::string>& ignored_prefixes = {});

}  // namespace moss
