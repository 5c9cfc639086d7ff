// The AUTOMATIC1111 web API subset image clients use, on one loaded engine:
//   POST /sdapi/v1/txt2img     a request body as A1111 clients send it (frontend/a1111_request.h);
//                              base64 PNGs with their records, `parameters`, and `info` (JSON text)
//   GET  /sdapi/v1/progress    progress of the running request (0..1), its step and eta
//   POST /sdapi/v1/interrupt   stops the running request at its next step (the next one runs)
//   GET  /sdapi/v1/sd-models, /samplers (Euler), /schedulers (automatic), /scripts (none)
//   GET  /sdapi/v1/options     the settings; POST accepts only the values they already have
//   the list routes clients probe at start (server/a1111_lists.h), and CORS when asked (server/cors.h)
// Errors are JSON {"error": message, "field": name}: 400 for a body that is not JSON (or not an
// object, or nested deeper than 64 levels), 422 for a field this engine cannot honour, 503 when the queue is full or the server
// stops, 500 for a failure of the run; 404 / 405 / 413 come from the library, as JSON too.
#pragma once
#include <mutex>
#include <string>

#include <httplib.h>

#include "frontend/a1111_settings.h"
#include "pipeline/engine.h"
#include "server/generation_queue.h"
#include "server/serve_options.h"

namespace moss {

// Requests that may wait for the running one; more are answered 503.
constexpr size_t kMaxWaitingRequests = 16;

class A1111Routes {
 public:
  A1111Routes(Engine& engine, const ServeOptions& options, const Reporter& rep);
  void install(httplib::Server& server);

 private:
  void txt2img(const httplib::Request& req, httplib::Response& res);
  void progress(httplib::Response& res) const;
  void interrupt(httplib::Response& res);
  A1111Settings settings() const;  // what GET /options reports, and what overrides must equal
  nlohmann::json options_json() const;
  void set_options(const httplib::Request& req, httplib::Response& res) const;

  // What GET /progress reports; written by the running request's progress hook.
  struct Progress {
    bool active = false;
    int image = 0, images = 0;  // images finished, images of the request
    int step = 0, steps = 0;    // denoise steps of the current image
    std::string stage, job_timestamp;
    double started = 0;         // seconds on the steady clock
    bool interrupted = false;
  };

  Engine& engine_;
  const ServeOptions& options_;
  const Reporter& rep_;
  GenerationQueue queue_{kMaxWaitingRequests};
  mutable std::mutex progress_mutex_;
  Progress progress_;
};

}  // namespace moss
