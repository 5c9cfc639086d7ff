// --jobs FILE.jsonl: one request per line, in the server's JSON form (frontend/a1111_request.h)
// plus "output" (the line's PNG; a %d pattern when the line asks for several images), all made
// with one model load. Blank lines are skipped. The command line's generation flags are the
// lines' defaults; a line without "output" takes -o, numbered over the whole file. Every line is
// read and checked before anything runs: a bad one is refused (exit 2) as FILE:LINE: field: why.
#pragma once
#include <string>
#include <vector>

#include "cli/options.h"
#include "pipeline/request.h"

namespace moss {

// `origins`, when given, gets each image's line as "FILE:LINE" (what a later refusal of that
// image, by the engine with the model open, is named by).
std::vector<GenerationRequest> read_jobs_file(const RunOptions& o, std::vector<std::string>* origins = nullptr);

}  // namespace moss
