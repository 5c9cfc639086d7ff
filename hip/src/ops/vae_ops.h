// The op interface, VAE family (FLUX.2 small decoder): convolutions, group norm, upsampling.
#pragma once
#include "tensor/tensor.h"

namespace moss {

class VaeOps {
 public:
  virtual ~VaeOps() = default;
};

}  // namespace moss
