// A txt2img request in the AUTOMATIC1111 web API's form (the fields image clients send), which is
// also the form of a jobs-file line: the images it asks for, checked before any compute. Its
// settings are set through pipeline/request_fields.h, the checks the command line uses too, so a
// body is refused exactly where the CLI would refuse the same setting.
//
// Every field A1111 knows has its JSON type checked (a wrong one is a 422 naming the field), text
// converted to numbers and booleans where A1111's pydantic 1 models convert it; null is the
// field's default, as in A1111's optional fields. The leniency rule (docs/clients.md): a value
// that changes nothing here is accepted (enable_hr false, style names, save_images, A1111 options
// with no meaning here or at A1111's default, ...) and named in `not_used`; one that asks for
// what this engine does not run (another sampler, hires fix, img2img, LoRA, a script, ...) is
// refused naming it.
// Fields A1111 itself ignores in txt2img (eta, hr_* without enable_hr, ...) are ignored, and
// unknown fields too, as A1111 does; neither is echoed back.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontend/a1111_settings.h"
#include "pipeline/request.h"
#include "util/error.h"

namespace moss {

class LoraLibrary;  // frontend/lora_library.h

// The most images one request may ask for (batch_size × n_iter).
constexpr int64_t kMaxImagesPerRequest = 64;
// The deepest nesting of arrays and objects a body may have: A1111's fields nest three levels.
constexpr int kMaxJsonDepth = 64;
// What the server's log adds to a sampler or scheduler refusal, for its operator.
constexpr const char* kSamplerFallbackHint = "serve --sampler-fallback euler runs Euler for samplers this engine does not have";

// A refused request: `status` 400 (not JSON, nested too deep, not an object) or 422 (a field's
// value), `field` the body field it concerns (empty when none).
struct RequestError : std::runtime_error {
  RequestError(int status, std::string field, const std::string& message)
      : std::runtime_error(message), status(status), field(std::move(field)) {}
  int status;
  std::string field;
};

// What a body is read against.
struct RequestContext {
  GenerationRequest defaults;  // what the body does not set (seed_drawn: a seed is drawn per request)
  A1111Settings settings;      // override_settings entries equal to these are accepted
  bool allow_output = false;   // a jobs line may name its PNG ("output"); a server body may not
  bool sampler_fallback = false;  // serve --sampler-fallback euler: unknown samplers run as Euler
  const LoraLibrary* loras = nullptr;  // --lora-dir: the names <lora:NAME:WEIGHT> tags may use
};

struct A1111Request {
  std::vector<GenerationRequest> images;  // batch_size × n_iter, seeds seed, seed+1, ...
  int64_t batch_size = 1;
  bool send_images = true;
  std::string sampler_note;   // set when an unknown sampler or scheduler runs as Euler (the fallback)
  std::string lora_note;      // set when the negative prompt's LoRA tags were dropped
  nlohmann::json parameters;  // the body's known fields, with the values that ran
  // What the body asked that changes nothing here, accepted and named in the reply's info
  // ("override_settings.sd_hypernetwork", "styles.None").
  std::vector<std::string> not_used;
};

// A body's text as JSON, nesting at most kMaxJsonDepth levels. Throws RequestError (400).
nlohmann::json parse_request_json(const std::string& text);

A1111Request parse_a1111_request(const nlohmann::json& body, const RequestContext& context);

// A usage error of the engine's checks (a size the memory cannot hold), named by the body
// field it concerns ("--steps '0': ..." -> field "steps", "steps '0': ...").
RequestError request_error(const Error& e);

}  // namespace moss
