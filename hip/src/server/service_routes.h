// The routes a deployment's tools use (README "Health and metrics", docs/deploy.md):
//   GET /health   200 while the process serves (also while it drains)
//   GET /ready    200 when a txt2img now would be taken: the model is open (it is before the server
//                 listens) and the queue has room; 503 with Retry-After while draining or full
//   GET /metrics  the Prometheus text exposition of server/metrics.h
// and the count of every answer by route and status.
#pragma once
#include <atomic>

#include <httplib.h>

#include "server/generation_queue.h"
#include "server/guarded_server.h"
#include "server/metrics.h"

namespace moss {

class ServiceRoutes {
 public:
  ServiceRoutes(GenerationQueue& queue, Metrics& metrics, const std::atomic<bool>& draining)
      : queue_(queue), metrics_(metrics), draining_(draining) {}
  void install(GuardedServer& server);

 private:
  bool ready() const { return !draining_ && queue_.has_room(); }
  GenerationQueue& queue_;
  Metrics& metrics_;
  const std::atomic<bool>& draining_;
};

}  // namespace moss
