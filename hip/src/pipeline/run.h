// One run of the program: request -> model folder -> backend -> tokens -> text encoder ->
// sampler (DiT) -> VAE -> outputs, with progress on stderr (product.md section 4).
#pragma once
#include "cli/options.h"

namespace moss {

// Returns the exit status; user-facing problems arrive as moss::Error.
int run_generation(const RunOptions& options);

}  // namespace moss
