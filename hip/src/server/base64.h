// Base64 (RFC 4648, with padding): the images of a txt2img answer, the PNGs clients upload
// (POST /sdapi/v1/png-info), and the credentials of an HTTP Basic Authorization header.
#pragma once
#include <optional>
#include <string>

namespace moss {

std::string base64_encode(const std::string& bytes);
// The bytes of `text` (padding optional, blanks and line ends skipped); nullopt when it holds any
// other character or a length no encoding gives.
std::optional<std::string> base64_decode(const std::string& text);

}  // namespace moss
