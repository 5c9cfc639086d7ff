// One image to make: what the command line, a jobs-file line and a server request all fill
// (cli/request_flags.h, frontend/a1111_request.h), and what the engine and the record read.
// The values are already checked (by the command-line parser, the one place that checks them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moss {

struct GenerationRequest {
  std::string prompt;
  std::string negative;
  int64_t width = 1024, height = 1024;
  int steps = 50;                  // requested; snapping to the training grid may run fewer
  float cfg = 3.0f, shift = 5.0f;
  uint64_t seed = 42;              // the seed that runs (a random one is drawn before it gets here)
  bool seed_drawn = false;         // drawn at random (--seed -1, "seed": -1): printed even with --quiet
  std::vector<int> skip_layers{22};
  std::string skip_layers_text = "22";
  int64_t max_seq = 4096;
  std::string tier = "reference";
  // Where the outputs go; both empty: the image is only returned (the server).
  std::string output_png, latent_out;
  bool no_metadata = false;
};

}  // namespace moss
