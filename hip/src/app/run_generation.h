// One run of the program: the images the command line asks for (one, a --batch-count batch, or a
// --jobs file), each refused before any compute if it cannot run, then made by one engine
// (pipeline/engine.h) with progress on stderr (docs/product.md section 4).
#pragma once
#include "cli/options.h"

namespace moss {

// Returns the exit status; user-facing problems arrive as moss::Error.
int run_generation(const RunOptions& options);

}  // namespace moss
