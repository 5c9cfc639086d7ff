#include "server/error_body.h"

namespace moss {
namespace {

using json = nlohmann::json;

// OpenAI's error types: a request the client must change is an invalid_request_error.
const char* openai_error_type(int status) {
  switch (status) {
    case 404: return "not_found_error";
    case 499: return "client_closed";
    case 503: return "server_busy";
    default: return status >= 400 && status < 500 ? "invalid_request_error" : "server_error";
  }
}

bool openai_path(const std::string& path) { return path.compare(0, 4, "/v1/") == 0; }

}  // namespace

json openai_error_body(int status, const std::string& message, const std::string& param, const char* code) {
  if (!code && status == 401) code = "invalid_api_key";
  return {{"error", {{"message", message}, {"type", openai_error_type(status)},
                     {"param", param.empty() ? json() : json(param)}, {"code", code ? json(code) : json()}}}};
}

json error_body(const std::string& path, int status, const std::string& message) {
  if (openai_path(path)) return openai_error_body(status, message);
  return {{"error", message}, {"detail", message}};
}

}  // namespace moss
