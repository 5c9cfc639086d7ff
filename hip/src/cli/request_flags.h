// Every source of a request (the command line, a PNG's generation record, a jobs-file line, a
// server body) is turned into command-line flags and read by parse_args: one parser and one set
// of limits and messages for all of them. This file holds the two directions: options to a
// request (and back to flags), and flags with overrides to checked options.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/options.h"
#include "pipeline/request.h"

namespace moss {

using FlagValues = std::map<std::string, std::string>;  // "--steps" -> "20"

// The request the options describe (their seed already drawn when it was -1).
GenerationRequest request_from_options(const RunOptions& o);

// The flags that give o's generation settings again: --prompt, --negative, --width, --height,
// --steps, --cfg, --shift, --seed (-1 when o draws a random one), --skip-layers, --max-seq, --tier.
FlagValues generation_flags(const RunOptions& o);

// parse_args over `model` and `flags`; without -o or --latent-out (a request that writes no file)
// a placeholder output satisfies the parser's rule and is cleared again. Throws as parse_args.
RunOptions parse_generation_flags(const std::string& model, const FlagValues& flags);

// A JSON scalar as a flag's value: a string as it is, a number in the shortest decimal that reads
// back as the same value. Throws std::invalid_argument naming what it got otherwise.
std::string json_flag_value(const nlohmann::json& v);

}  // namespace moss
