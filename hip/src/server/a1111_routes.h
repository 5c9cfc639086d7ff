// The AUTOMATIC1111 web API subset image clients use, on the server's engines:
//   POST /sdapi/v1/txt2img     a request body as A1111 clients send it (frontend/a1111_request.h);
//                              base64 PNGs with their records, `parameters`, and `info` (JSON text)
//   GET  /sdapi/v1/progress    progress of the running request (0..1), its step and eta; with
//                              several engines, of the one that has run longest
//   POST /sdapi/v1/interrupt   ends the running requests' denoise within a second (inside a step);
//                              each answers with its image as of its last finished step (decoded),
//                              marked interrupted (none when no step had finished)
//   GET  /sdapi/v1/sd-models, /scripts (none)
//   GET  /sdapi/v1/options     the settings; POST accepts only the values they already have
//   the list routes clients probe at start (server/a1111_lists.h), and CORS when asked (server/cors.h)
// Errors are JSON {"error": message, "field": name}: 400 for a body that is not JSON (or not an
// object, or nested deeper than 64 levels), 422 for a field this engine cannot honour, 503 with Retry-After when the queue is
// full or the server drains or stops, 500 for a failure of the run; 404 / 405 / 413 come from
// the library, as JSON too, and the limits of server/guarded_server.h (405, 408, 413, 415, 431,
// ...) from there.
#pragma once
#include <memory>
#include <string>

#include <httplib.h>

#include "frontend/a1111_request.h"
#include "frontend/a1111_settings.h"
#include "frontend/lora_library.h"
#include "pipeline/engine_pool.h"
#include "server/generation_queue.h"
#include "server/guarded_server.h"
#include "server/metrics.h"
#include "server/serve_options.h"

namespace moss {

class A1111Routes {
 public:
  // The model's answers (its identity, its checks) come from the first engine: every engine
  // runs the same model.
  A1111Routes(EnginePool& pool, GenerationQueue& queue, Metrics& metrics, const ServeOptions& options,
              const Reporter& rep);
  void install(GuardedServer& server);

  // A body read against the server's defaults and settings and checked by the engine (its
  // memory); a refusal is logged under `route` and thrown (RequestError).
  A1111Request read_request(const nlohmann::json& body, const char* route) const;
  // The request's images, through the one queue: status 200 with what was made (interrupted:
  // up to the interrupt), or the status and message of why not (503 with retry_after when the
  // queue is full or closed, 499 when the client left, 422 naming a field, 500).
  struct Generated {
    int status = 200;
    std::string message, field;
    bool retry_after = false;
    std::vector<GeneratedImage> made;
    bool interrupted = false;
    std::string timestamp;  // A1111's job_timestamp
  };
  Generated generate(const httplib::Request& req, const A1111Request& request, const char* route);
  const Engine& engine() const { return engine_; }
  A1111Settings settings() const;  // what GET /options reports, and what overrides must equal

 private:
  void txt2img(const httplib::Request& req, httplib::Response& res);
  // The request's images on engine `engine` (its own thread), following job's interrupt and
  // cancel; what it made goes to `made`.
  void make_images(Job& job, size_t engine, const std::vector<GenerationRequest>& images,
                   std::vector<GeneratedImage>& made);
  void progress(httplib::Response& res) const;
  void interrupt(httplib::Response& res);
  nlohmann::json options_json() const;
  void set_options(const httplib::Request& req, httplib::Response& res) const;

  EnginePool& pool_;
  Engine& engine_;
  GenerationQueue& queue_;
  Metrics& metrics_;
  const ServeOptions& options_;
  const Reporter& rep_;
  std::unique_ptr<LoraLibrary> loras_;  // serve --lora-dir (null without)
};

}  // namespace moss
