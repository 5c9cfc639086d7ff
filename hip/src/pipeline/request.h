// One image to make: what the command line (cli/options.h), a jobs-file line and a server body
// (frontend/a1111_request.h) all fill, and what the engine and the record read. Its settings are
// set and checked in one place, pipeline/request_fields.h, whatever the source.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace moss {

// A LoRA a request applies (model/lora.h, docs/loras.md): a file (the command line, a record) or a
// name looked up in --lora-dir (a server's prompt tag), and its weight.
struct LoraChoice {
  std::string path;   // empty until a name is looked up
  std::string name;   // the file name less .safetensors
  float weight = 1.0f;
  std::string hash;   // the first 12 hex digits of the file's SHA-256, once applied (the record's)
};
constexpr int kMaxLoras = 16;

struct GenerationRequest {
  std::string prompt;
  std::string negative;
  int64_t width = 1024, height = 1024;  // the size generated: multiples of 16
  // A side asked as a multiple of 8 and not of 16 (AIYA's 520): generated at the next multiple of
  // 16 (width, height above) and centre-cropped to this; 0 when not cropped. Only where
  // crop_to_size allows it (a server always; the command line with --crop-to-size).
  int64_t crop_width = 0, crop_height = 0;
  bool crop_to_size = false;
  int64_t output_width() const { return crop_width ? crop_width : width; }
  int64_t output_height() const { return crop_height ? crop_height : height; }
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
  std::vector<LoraChoice> loras;   // in the order they merge
  // Where the outputs go; both empty: the image is only returned (the server).
  std::string output_png, latent_out;
  bool no_metadata = false;
};

}  // namespace moss
