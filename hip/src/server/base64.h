// Base64 (RFC 4648, with padding): the images of a txt2img answer, and the credentials of an
// HTTP Basic Authorization header.
#pragma once
#include <string>

namespace moss {

std::string base64_encode(const std::string& bytes);
// False for anything but canonical padded base64 (white space, a wrong length, stray padding).
bool base64_decode(const std::string& text, std::string& bytes);

}  // namespace moss
