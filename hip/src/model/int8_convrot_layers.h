// Which DiT layers an INT8 ConvRot file quantizes, and under which names: the Comfy-Org layout
// (docs/int8_convrot.md section 5). The one place that list lives: `quantize` writes by it, and
// the loader checks a file against it (pipeline/moss_model.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/dit.h"

namespace moss {

struct QuantizedDitLayer {
  std::string name;                  // "layers.N.proj.qkv": the file holds name + ".weight", ".weight_scale", ".comfy_quant"
  std::vector<std::string> sources;  // the official bf16 weights whose rows it stacks, in order (q, k, v for qkv)
  int block = 0;                     // the main block it belongs to
};

// Every main block's four projections, in block order: qkv (q | k | v rows), o, ffn_up_gate,
// ffn_down. Everything else of the DiT stays as it is in the bf16 file.
std::vector<QuantizedDitLayer> int8_convrot_dit_layers(const DitConfig& cfg);

// A DiT file in the INT8 ConvRot layout checked against the list above and the config, before
// anything is loaded: each quantized layer has its I8 weight [rows, in] (the stacked sources'
// rows and width), an F32 weight_scale [rows] or [rows, 1], and a comfy_quant record this engine
// runs (convrot::comfy_quant_group) whose group divides `in`; no other tensor is quantized (a
// weight_scale, comfy_quant or I8 tensor outside the list is refused: that layer stays bf16 in
// the layout). Returns each quantized layer's group size. Refusals name the tensor: exit 2 for
// what the engine does not run (another format, a layer quantized that must not be), exit 1 for
// a malformed layer (missing tensors, wrong dtypes or shapes).
std::map<std::string, int64_t> check_int8_convrot_dit(const WeightFiles& weights, const DitConfig& cfg);

// check_int8_convrot_dit's groups (per file layer) as the DiT runs them: per projection under
// its canonical name, qkv's group for each of q, k and v (DitConfig::int8_groups).
std::map<std::string, int64_t> int8_projection_groups(const std::map<std::string, int64_t>& layer_groups,
                                                      const DitConfig& cfg);

}  // namespace moss
