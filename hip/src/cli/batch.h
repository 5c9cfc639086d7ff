// Several images for one model load (--batch-count, a jobs file): the requests of a batch and
// the names of their files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/options.h"
#include "pipeline/request.h"

namespace moss {

// The file of image `index` (1-based) of `count`: a path with a %d or %0Nd pattern (N: 1 to 9)
// gets the index formatted into it ("%%" is a literal %); otherwise, with count > 1, a
// "-0001" style suffix goes before the extension; one image keeps the path as it is. Throws
// moss::Error (exit 2) naming `flag` for any other % in the path.
std::string numbered_output(const std::string& flag, const std::string& path, int64_t index, int64_t count);
bool has_number_pattern(const std::string& path);

// --batch-count N of the options: seeds seed, seed+1, ... (wrapping at 2^64), outputs numbered.
std::vector<GenerationRequest> batch_requests(const RunOptions& o);

}  // namespace moss
