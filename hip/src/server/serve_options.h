// The command line of `moss-infer-hip serve`: --host, --port, --queue, --drain-seconds,
// --sampler-fallback, --cors-origin, --allowed-host, --api-auth, --api-auth-file, --metrics-auth,
// and the CLI's own flags (model, memory, device, and the
// generation flags, which become the defaults of every request).
#pragma once
#include <string>
#include <vector>

#include "cli/options.h"
#include "server/request_guard.h"

namespace moss {

struct ServeOptions {
  std::string host = "127.0.0.1";  // localhost unless told otherwise
  int port = 7860;                 // A1111's
  int queue = 16;                  // --queue: requests that may wait for a busy engine
  int drain_seconds = 60;          // --drain-seconds: how long SIGTERM's drain lets jobs finish
  RunOptions run;                  // --model, --vram-budget, ..., and as a GenerationRequest the
                                   // defaults of requests (seed_drawn: each request draws a seed)
  bool sampler_fallback = false;   // --sampler-fallback euler: unknown samplers run as Euler
  std::vector<std::string> cors_origins;  // --cors-origin ORIGIN (repeatable; "*": any)
  GuardRules guard;                // what every request passes (server/request_guard.h): --host,
                                   // --allowed-host, --cors-origin, --api-auth(-file), --metrics-auth
  bool help = false;
};

// Throws moss::Error (exit 2) naming the option: the CLI's checks, and the flags that make no
// sense for a server (outputs, batches, jobs, replay, prompt files).
ServeOptions parse_serve_args(const std::vector<std::string>& args);

std::string serve_help_text();

}  // namespace moss
