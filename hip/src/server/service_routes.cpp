#include "server/service_routes.h"

#include <nlohmann/json.hpp>

namespace moss {

void ServiceRoutes::install(GuardedServer& s) {
  s.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{\"status\":\"ok\"}", "application/json");
  });
  s.Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    if (ready()) return res.set_content("{\"ready\":true}", "application/json");
    res.status = 503;
    res.set_header("Retry-After", "1");
    const nlohmann::json body = {{"ready", false},
                                 {"error", draining_ ? "draining: no new requests" : "the queue is full"}};
    res.set_content(body.dump(), "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    Metrics::Now now;
    now.queue_depth = queue_.waiting();
    now.queue_capacity = queue_.capacity();
    now.in_flight = queue_.running_per_engine();
    now.ready = ready();
    now.draining = draining_;
    res.set_content(metrics_.render(now), "text/plain; version=0.0.4; charset=utf-8");
  });
  // Every answer, counted once written, with the status it was sent with. The route label is one
  // of this server's route patterns or "other" (GuardedServer::route_label): a client cannot make
  // new label values, nor invalid UTF-8 in them.
  s.set_logger([this, &s](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_request(s.route_label(req.path), GuardedServer::status_sent(res.status));
  });
}

}  // namespace moss
