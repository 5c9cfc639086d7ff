// The JSON body of the server's error answers, in the dialect of the clients of the route asked
// for, so that every refusal (a route's, the request guard's, the 404 and 405 of a path no route
// has, a 503 for a busy server) reads the same way to the client that got it:
//  - under /v1/ (the OpenAI API: its SDKs, LiteLLM, Open WebUI, LibreChat) OpenAI's shape,
//    {"error": {"message", "type", "param", "code"}}: the SDKs put error.message in the message of
//    the error they throw, and a plain string there would be shown as a quoted JSON dump;
//  - elsewhere A1111's, {"error": MESSAGE, "detail": MESSAGE} (its clients read either).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace moss {

// OpenAI's error object for `status`; param null when the error concerns no field, code null
// unless given (a 401 says "invalid_api_key", as OpenAI's does).
nlohmann::json openai_error_body(int status, const std::string& message, const std::string& param = "",
                                 const char* code = nullptr);

// The body of an error answer to a request for `path`.
nlohmann::json error_body(const std::string& path, int status, const std::string& message);

}  // namespace moss
