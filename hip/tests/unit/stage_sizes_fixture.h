// Stage sizes shaped like the real model at 1024x1024, for the planner's tests.
#pragma once

#include "pipeline/planner.h"

namespace moss {

// DiT block 0.21 GiB x 42, fixed part 0.61 GiB, activations 0.80; VAE weights 0.10, decode 1.50;
// text encoder layer 0.42 GiB (no all-layers figure: tests of residency set their own).
inline StageSizes real_like_stage_sizes() {
  StageSizes s;
  s.dit_blocks = 42;
  s.dit_block_bytes = size_t(0.21 * double(kGiB));
  s.dit_slot_bytes = s.dit_block_bytes;  // the real model's tensors are all multiples of 256 bytes
  s.dit_fixed_bytes = size_t(0.61 * double(kGiB));
  s.dit_activation_bytes = size_t(0.80 * double(kGiB));
  s.vae_weight_bytes = size_t(0.10 * double(kGiB));
  s.vae_decode_bytes = size_t(1.50 * double(kGiB));
  s.te_layer_bytes = size_t(0.42 * double(kGiB));
  s.te_fixed_bytes = size_t(0.01 * double(kGiB));
  s.te_activation_bytes = size_t(0.05 * double(kGiB));
  return s;
}

}  // namespace moss
