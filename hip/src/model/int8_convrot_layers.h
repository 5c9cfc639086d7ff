// Which DiT layers an INT8 ConvRot file quantizes, and under which names: the Comfy-Org layout
// (docs/int8_convrot.md section 5). The one place that list lives: `quantize` writes by it, and
// the loader to come will check a file against it.
#pragma once
#include <string>
#include <vector>

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

}  // namespace moss
