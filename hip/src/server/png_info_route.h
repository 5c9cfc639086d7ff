// POST /sdapi/v1/png-info, as A1111 answers it: a PNG (base64, or a data: URL as browsers and the
// AIYA Discord bot send it) in, its generation text out: {"info": the `parameters` text chunk,
// "items": the other text chunks this engine writes ("generation", the record), "parameters": the
// infotext's fields ({"Prompt", "Negative prompt", "Steps", "Size-1", "Size-2", ...})}. A PNG
// without a record answers info "" as A1111 does; an image that is not base64 or not a PNG is a
// 422 naming "image". Only the text chunks are read (io/png_text.h), never the pixels.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "server/guarded_server.h"

namespace moss {

void install_png_info(GuardedServer& server);

// The fields of an A1111 infotext ("prompt\nNegative prompt: n\nSteps: 2, Size: 32x32, ..."):
// what A1111's parse_generation_parameters gives for it, its values as text.
nlohmann::json infotext_fields(const std::string& infotext);

}  // namespace moss
