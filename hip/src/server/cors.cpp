#include "server/cors.h"

#include <algorithm>

namespace moss {
namespace {

// The value of Access-Control-Allow-Origin for this request; empty when it is not allowed.
std::string allowed_origin(const std::vector<std::string>& origins, const httplib::Request& req) {
  const std::string origin = req.get_header_value("Origin");
  if (origin.empty()) return "";
  if (std::find(origins.begin(), origins.end(), "*") != origins.end()) return "*";
  return std::find(origins.begin(), origins.end(), origin) != origins.end() ? origin : "";
}

}  // namespace

void install_cors(GuardedServer& s, const std::vector<std::string>& origins) {
  if (origins.empty()) return;  // a preflight then gets guarded_server.h's 405, naming --cors-origin
  s.Options(R"(.*)", [origins](const httplib::Request& req, httplib::Response& res) {
    const std::string allow = allowed_origin(origins, req);
    if (allow.empty()) {
      res.status = 403;
      res.set_content(R"json({"error":"origin not allowed (serve --cors-origin)"})json", "application/json");
      return;
    }
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Content-Type, Authorization" : asked);
    res.set_header("Access-Control-Max-Age", "600");
  });
  // Every answer (the preflight's too) names the allowed origin; Vary keeps caches per origin.
  s.set_post_routing_handler([origins](const httplib::Request& req, httplib::Response& res) {
    const std::string allow = allowed_origin(origins, req);
    if (allow.empty()) return;
    res.set_header("Access-Control-Allow-Origin", allow);
    if (allow != "*") res.set_header("Vary", "Origin");
  });
}

}  // namespace moss
