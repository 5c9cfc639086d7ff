// A txt2img request in the AUTOMATIC1111 web API's form (the fields image clients send), which is
// also the form of a jobs-file line: the images it asks for, checked. Its values go through the
// command line's parser (cli/request_flags.h), so a body is refused exactly where the CLI would
// refuse the same setting. A1111's fields at their neutral values (enable_hr false, empty
// styles and scripts, scheduler "automatic", ...) are accepted; one that asks for what this
// engine does not run (another sampler, hires fix, img2img, LoRA, a script, ...) is refused
// naming it. Fields A1111 itself ignores in txt2img (eta, hr_* without enable_hr, ...) and unknown
// fields are ignored, as A1111 does.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/request_flags.h"
#include "pipeline/request.h"
#include "util/error.h"

namespace moss {

// The most images one request may ask for (batch_size × n_iter).
constexpr int64_t kMaxImagesPerRequest = 64;

// A refused request: `status` 400 (not a JSON object) or 422 (a field's value), `field` the
// body field it concerns (empty when none).
struct RequestError : std::runtime_error {
  RequestError(int status, std::string field, const std::string& message)
      : std::runtime_error(message), status(status), field(std::move(field)) {}
  int status;
  std::string field;
};

struct A1111Request {
  std::vector<GenerationRequest> images;  // batch_size × n_iter, seeds seed, seed+1, ...
  RunOptions options;                     // the parsed settings (seed drawn when it was -1)
  bool send_images = true;
};

// `defaults`: the generation flags of the command line (generation_flags); `allow_output`: a
// jobs line may name its PNG ("output", a %d pattern for several images); a server body may not.
A1111Request parse_a1111_request(const nlohmann::json& body, const FlagValues& defaults, const std::string& model,
                                 bool allow_output);

// A usage error of the flag parser or of the engine's checks, named by the body field it concerns
// ("--steps '0': ..." -> field "steps", "steps '0': ...").
RequestError request_error(const Error& e);

}  // namespace moss
