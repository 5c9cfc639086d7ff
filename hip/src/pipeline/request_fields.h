// The settings of a GenerationRequest a person gives, in one table: each one's name in a body
// (and a jobs line), its key in a PNG's generation record, its flag on the command line, its
// limits and its messages. The command line sets them from its text, a body from its JSON values; both reach
// the same checks (the numbers through util/numbers.h), so a value is refused with the same
// reason wherever it comes from, and a new setting is added here once.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/request.h"

namespace moss {

enum class RequestField { Prompt, Negative, Width, Height, Steps, Cfg, Shift, Seed, SkipLayers, MaxSeq, Tier, Sampler, Scheduler, Lora };

struct FieldNames {
  RequestField field;
  const char* name;    // in a body: "steps"
  const char* flag;    // on the command line: "--steps"
  const char* record;  // in a PNG's generation record (pipeline/record.cpp): "steps"
};
const std::vector<FieldNames>& request_fields();
const FieldNames& field_names(RequestField field);
const FieldNames* find_field_by_flag(const std::string& flag);  // nullptr: not a request setting

// A value refused, worded for where it came from: `cli` names the flag ("--steps '0': must be
// between 1 and 1000"), `body` the body's field ("steps '0': must be between 1 and 1000").
struct FieldError : std::runtime_error {
  // `problem` follows the field's name in both: " '0': must be between 1 and 1000".
  FieldError(RequestField field, const std::string& problem);
  FieldError(RequestField field, std::string cli, std::string body);
  RequestField field;
  std::string cli, body;
};

// The command line's text for `field` (a JSON value's checks are the same, below).
void set_field(GenerationRequest& r, RequestField field, const std::string& text);
// A JSON value for `field`: null leaves r's value (the default) as it is; a value of the wrong
// JSON type is refused naming what it got.
void set_field(GenerationRequest& r, RequestField field, const nlohmann::json& value);

// What no single field decides: the size's area, prompts in UTF-8, a side that is a multiple of 8
// and not of 16 only where the request may crop (crop_to_size). Throws FieldError.
void check_request(const GenerationRequest& r);

// The seeds of `count` images made from `seed` (seed, seed + 1, ...: a batch, n_iter) all fit 64
// bits; else FieldError(Seed) saying which would not (never wrapped to 0).
void check_batch_seeds(uint64_t seed, int64_t count);

// A request that asks for a random seed (seed -1, or none at a server without --seed) gets a
// fresh one here, below 2^32 as A1111's (JavaScript clients read seeds as doubles).
void draw_seed_if_asked(GenerationRequest& r);

}  // namespace moss
