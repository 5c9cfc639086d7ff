// The op interface, text-encoder family (Qwen3.5): Gated DeltaNet and its causal conv.
#pragma once
#include "tensor/tensor.h"

namespace moss {

class TextOps {
 public:
  virtual ~TextOps() = default;
};

}  // namespace moss
