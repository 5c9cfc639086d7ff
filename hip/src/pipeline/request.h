// One image to make: what the command line (cli/options.h), a jobs-file line and a server body
// (frontend/a1111_request.h) all fill, and what the engine and the record read. Its settings are
// set and checked in one place, pipeline/request_fields.h, whatever the source.
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
  // The sampler and schedule by their names (pipeline/sampler.h, schedule.h): "euler", "moss";
  // the labels as the request spelled them ("DDIM", "Karras"), for `info` and A1111's parameters.
  std::string sampler = "euler", scheduler = "moss";
  std::string sampler_label = "Euler", scheduler_label = "MOSS-Image";
  uint64_t seed = 42;              // the seed that runs (a random one is drawn before it gets here)
  bool seed_drawn = false;         // drawn at random (--seed -1, "seed": -1): printed even with --quiet;
                                   // in a server's defaults: each request without a seed draws one
  std::vector<int> skip_layers{22};
  std::string skip_layers_text = "22";
  int64_t max_seq = 4096;
  std::string tier = "reference";
  // Where the outputs go; both empty: the image is only returned (the server).
  std::string output_png, latent_out;
  bool no_metadata = false;
};

}  // namespace moss
