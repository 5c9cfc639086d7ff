// Base64 (RFC 4648, with padding): the images of a txt2img answer.
#pragma once
#include <string>

namespace moss {

std::string base64_encode(const std::string& bytes);

}  // namespace moss
