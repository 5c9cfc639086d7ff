// `moss-infer-hip quantize`: a model folder's bf16 DiT written as one INT8 ConvRot safetensors
// file in the Comfy-Org layout (docs/int8_convrot.md section 6). Streams: the header is computed
// from the shapes, then each layer is read from the mapping, quantized row by row and appended,
// so the memory beyond the mapping is about one layer; the file appears only when complete.
#pragma once
#include <cstdint>
#include <string>

#include "tensor/int8_convrot.h"

namespace moss {

struct QuantizeOptions {
  std::string model;   // the model folder (its transformer/ is read)
  std::string out;     // the .safetensors file to write
  std::string format = "int8-convrot";
  int64_t group_size = convrot::kDefaultGroupSize;
};

struct QuantizeReport {
  int quantized_layers = 0;
  int copied_tensors = 0;
  uint64_t bytes = 0;  // of the file written
};

// Refusals (moss::Error): exit 2 for an unknown format, a group size that is not a power of 4 or
// does not divide a quantized layer's input width (naming the layer), an output path the one path
// check refuses, a folder that is not one or whose DiT is already quantized; exit 1 for a
// malformed folder, a weight with a non-finite value (naming it), a write error.
QuantizeReport quantize_dit(const QuantizeOptions& options);

}  // namespace moss
