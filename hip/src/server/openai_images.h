// The OpenAI Images API on the server's engines, for the clients that speak only it (Open WebUI's
// "openai" engine, LibreChat's image tools, LiteLLM, the openai Python and Node SDKs):
//   POST /v1/images/generations  {"prompt", "n", "size": "WxH" | "auto", "response_format":
//                                "url" | "b64_json" (OpenAI's default: b64_json for a "model"
//                                gpt-image-*, else url), "output_format": "png"};
//                                "model", "quality", "style", "background", "moderation",
//                                "output_compression", "user" are accepted and change nothing.
//                                The request becomes an A1111 body (n images, the size) read by
//                                the one request path, so it is checked and run exactly as a
//                                txt2img body; answers {"created", "data": [{"b64_json"} | {"url"}]}
//   GET  /v1/images/file?id=ID   the image a "url" answer named, for kUrlLifetimeSeconds after it
//                                was made; the newest kUrlImages are kept (older ones go first)
//   GET  /v1/models              the loaded model, as OpenAI lists models
// Errors in OpenAI's shape, {"error": {"message", "type", "param", "code"}}, so that the SDKs
// show the message: 400 for a request this engine cannot honour (param names the OpenAI field),
// 404 for an unknown or expired image, 503 / 500 as txt2img's. An Authorization header is
// accepted (what it is checked against, when the server has credentials, is the server's rule
// for every route).
#pragma once
#include <chrono>
#include <deque>
#include <mutex>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/a1111_routes.h"
#include "server/guarded_server.h"

namespace moss {

// How long, and how many, images a "url" answer keeps for its client to download.
constexpr int kUrlLifetimeSeconds = 600;
constexpr size_t kUrlImages = 64;

// The answer's form: the body's response_format, else OpenAI's default for its model ("b64_json"
// for a gpt-image model, else "url").
std::string response_format(const nlohmann::json& body);

// An OpenAI body as the A1111 body that asks for the same images (throws RequestError naming the
// OpenAI field): prompt, n -> batch_size, size -> width and height ("auto": the server's size).
nlohmann::json openai_to_a1111(const nlohmann::json& body);

class OpenAiImages {
 public:
  explicit OpenAiImages(A1111Routes& a1111) : a1111_(a1111) {}
  void install(GuardedServer& server);

 private:
  void generations(const httplib::Request& req, httplib::Response& res);
  void file(const httplib::Request& req, httplib::Response& res);
  std::string keep(const std::string& png);  // the new image's id

  A1111Routes& a1111_;
  struct Kept {
    std::string id, png;
    std::chrono::steady_clock::time_point made;
  };
  std::mutex mutex_;
  std::deque<Kept> kept_;  // oldest first
};

}  // namespace moss
